# SPDX-License-Identifier: Apache-2.0
"""The sqlite_arrayrecord.flower package: its public names (LoggingStrategy,
ResumeError, read_result) are the same objects in the module that defines
each and at the top of the package, as they were when flower was one module;
every module of it imports (flwr present)."""

import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

from test_package_modules import FLOWER_LAYOUT, FLOWER_PRIVATE, package_modules  # noqa: E402


def test_public_names_of_the_flower_package():
    import sqlite_arrayrecord.flower as flower

    assert flower.__all__ == ["LoggingStrategy", "ResumeError", "LogWriteError", "read_result"], flower.__all__
    for modname, names in FLOWER_LAYOUT.items():
        mod = importlib.import_module("sqlite_arrayrecord.flower." + modname)
        for name in names:
            assert getattr(mod, name) is getattr(flower, name), (modname, name)
            assert getattr(mod, name).__module__ == mod.__name__, (modname, name)
    for modname in FLOWER_PRIVATE - {"__init__"}:
        importlib.import_module("sqlite_arrayrecord.flower." + modname)
    assert set(package_modules("flower")) == set(FLOWER_LAYOUT) | FLOWER_PRIVATE
    assert issubclass(flower.ResumeError, ValueError)
