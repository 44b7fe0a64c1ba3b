# SPDX-License-Identifier: Apache-2.0
"""The Python package's layout.

Importing sqlite_arrayrecord (or any of its modules) imports neither torch
nor flwr, no module imports flwr at all and the torch module imports torch
inside its functions only; every public name is the same object in its
module and at the top of the package, and the README's module table lists
each module.
"""

import ast
import contextlib
import glob
import importlib
import io
import os
import re
import subprocess
import sys

from arlib import EXT, ROOT

PKG_SRC = os.path.join(ROOT, "bindings", "python")
PKG_DIR = os.path.join(PKG_SRC, "sqlite_arrayrecord")
sys.path.insert(0, PKG_SRC)
os.environ["AR_EXTENSION"] = EXT
import sqlite_arrayrecord as sar  # noqa: E402

# The public names, by the module that defines them.
LAYOUT = {
    "_extension": ["loadable_path", "load", "connect", "register", "ExtensionLoadingUnavailable"],
    "npy": ["to_npy", "from_npy"],
    "record": ["to_record", "from_record", "NUMPY_STYPE", "SAFETENSORS_STYPE"],
    "recorddict": ["to_recorddict", "from_recorddict", "MetricRecord", "ConfigRecord"],
    "torch": ["from_state_dict", "to_state_dict"],
}
# The package's __all__ as it has always been (the two constants are public
# but were never in it).
PACKAGE_ALL = (
    "loadable_path load connect register ExtensionLoadingUnavailable to_npy from_npy to_record from_record "
    "from_state_dict to_state_dict to_recorddict from_recorddict MetricRecord ConfigRecord"
).split()


def package_modules():
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(PKG_DIR, "*.py")))


def test_import_imports_neither_torch_nor_flwr():
    imports = "; ".join(f"import sqlite_arrayrecord.{m}" for m in package_modules() if m != "__init__")
    script = (
        "import sys; import sqlite_arrayrecord; first = sorted(sys.modules); "
        + imports
        + "; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'flwr')), "
        "'sqlite_arrayrecord.torch' in first)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=PKG_SRC),
        check=True,
    )
    assert out.stdout.strip() == "[] True", out


def imported_modules(tree, top_level_only):
    """The modules an AST imports (absolute imports only; relative ones are the package's own)."""
    nodes = tree.body if top_level_only else ast.walk(tree)
    out = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
            out.add(node.module.split(".")[0])
    return out


def test_no_module_imports_flwr_and_torch_only_lazily():
    for name in package_modules():
        with open(os.path.join(PKG_DIR, name + ".py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        assert "flwr" not in imported_modules(tree, False), name
        assert "torch" not in imported_modules(tree, True), name
        if name != "torch":
            assert "torch" not in imported_modules(tree, False), name
    with open(os.path.join(PKG_DIR, "torch.py"), encoding="utf-8") as f:
        assert "torch" in imported_modules(ast.parse(f.read()), False)  # the check above sees its imports


def test_public_names_in_their_module_and_the_package():
    assert sar.__all__ == PACKAGE_ALL
    assert set(package_modules()) == set(LAYOUT) | {"__init__", "_protobuf"}
    everything = []
    for modname, names in LAYOUT.items():
        mod = importlib.import_module("sqlite_arrayrecord." + modname)
        assert sorted(mod.__all__) == sorted(names), modname
        for name in names:
            ns = {}
            exec(f"from sqlite_arrayrecord.{modname} import {name}", ns)
            assert ns[name] is getattr(mod, name) is getattr(sar, name), (modname, name)
            exec(f"from sqlite_arrayrecord import {name}", ns)
            assert ns[name] is getattr(mod, name), name
        everything += names
    assert sorted(everything) == sorted(PACKAGE_ALL + ["NUMPY_STYPE", "SAFETENSORS_STYPE"])
    assert (sar.NUMPY_STYPE, sar.SAFETENSORS_STYPE) == ("numpy.ndarray", "safetensors")
    assert isinstance(sar.__version__, str) and sar.__version__
    with open(os.path.join(PKG_SRC, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    layout = readme.split("## Modules", 1)[1].split("\n## ", 1)[0]
    for modname in set(LAYOUT) | {"_protobuf"}:
        assert f"`{modname}.py`" in layout, modname
    # its example runs and prints what its comment says
    (code,) = re.findall(r"```python\n(.*?)```", layout, re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "bindings/python/README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().strip() == code.strip().rsplit("# ", 1)[1], out.getvalue()
