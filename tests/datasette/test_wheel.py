# SPDX-License-Identifier: Apache-2.0
"""The package as a wheel: built from bindings/python of a copy of the
working tree as a clean checkout has it (no build artefact of an earlier
build in it; pip wheel, no build isolation: this environment's setuptools
and wheel), installed (not
editable) into a fresh virtual environment, where every public module
imports from the installed copy — the flower package and the Datasette
plugin included — and the extension, schema.sql and views.sql inside it
work (LoggingStrategy creates a database from the installed copies)."""

import glob
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

from test_package import ROOT, tree_copy  # tests/python/test_package.py

CHECK = r"""
import importlib, json, os, sys, tempfile
out = {}
import sqlite_arrayrecord as sar
for name in ("npy", "record", "recorddict", "torch", "tracking", "logcheck", "_check_cli", "_extension", "_protobuf", "__main__", "export",
             "export._source", "export._cli", "datasette", "datasette.svg",
             "flower", "flower.logging_strategy", "flower.result", "flower.errors", "flower._round_log",
             "flower._runs", "flower._state", "flower._database", "flower._wire"):
    mod = importlib.import_module("sqlite_arrayrecord." + name)
    out[name] = mod.__file__
from sqlite_arrayrecord.flower import LoggingStrategy, ResumeError, read_result
from sqlite_arrayrecord.flower._database import open_log
out["extension"] = sar.loadable_path()
with tempfile.TemporaryDirectory() as tmp:
    con = open_log(os.path.join(tmp, "log.db"))
    out["tables"] = sorted(r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"))
    out["version"] = con.execute("SELECT ar_version()").fetchone()[0]
    con.close()
print(json.dumps(out))
"""


def test_the_wheel_installs_and_imports_every_public_module():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "src")
        tree_copy(src)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                "-w",
                tmp,
                os.path.join(src, "bindings", "python"),
            ],
            check=True,
            env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
        )
        (wheel,) = glob.glob(os.path.join(tmp, "sqlite_arrayrecord-*.whl"))
        names = zipfile.ZipFile(wheel).namelist()
        for want in (
            "sqlite_arrayrecord/arrayrecord.so",
            "sqlite_arrayrecord/sql/schema.sql",
            "sqlite_arrayrecord/sql/views.sql",
            "sqlite_arrayrecord/flower/__init__.py",
            "sqlite_arrayrecord/flower/logging_strategy.py",
            "sqlite_arrayrecord/datasette/templates/arrayrecord_run.html",
            "sqlite_arrayrecord/datasette/templates/arrayrecord_runs_compare.html",
            "sqlite_arrayrecord/export/mlflow.py",
            "sqlite_arrayrecord/export/tensorboard.py",
        ):
            assert want in names, (want, names)
        assert "sqlite_arrayrecord/flower.py" not in names, names  # a package now
        venv = os.path.join(tmp, "venv")
        subprocess.run(["/usr/bin/python3", "-m", "venv", venv], check=True)
        py = os.path.join(venv, "bin", "python")
        subprocess.run(
            [py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel],
            check=True,
            env=dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1"),
        )
        site = subprocess.run(
            [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        # flwr, NumPy and Datasette come from this environment, after the
        # venv's own site-packages (a plain path entry: this environment's
        # editable finder of the package is not activated there)
        with open(os.path.join(site, "zz_test_env.pth"), "w") as f:
            f.write(sysconfig.get_paths()["purelib"] + "\n")
        env = {k: v for k, v in os.environ.items() if k not in ("AR_EXTENSION", "PYTHONPATH")}
        res = subprocess.run([py, "-c", CHECK], capture_output=True, text=True, env=env, cwd=tmp)
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout.strip().splitlines()[-1])
        for name, path in out.items():
            if name in ("tables", "version"):
                continue
            assert path.startswith(site + os.sep), (name, path, site)
        assert {"runs", "flower_runs", "rounds", "replies", "client_updates", "global_models"} <= set(out["tables"])
        with open(os.path.join(ROOT, "VERSION"), encoding="utf-8") as f:
            assert out["version"] == f.read().strip()
