# SPDX-License-Identifier: Apache-2.0
"""The Python package's layout and its input checks.

Layout: importing sqlite_arrayrecord (or any of its modules) imports
neither torch nor flwr, no module but those of the flower package imports flwr
(the flower package is not imported by the package, and imports flwr at its
top), and the torch module imports torch inside its functions only; every
public name is the same object in its module and at the top of the package
(the flower package's: in their module and at the top of the flower
package), and the README's module table lists each module.

Checks: a NumPy item whose dtype or shape field disagrees with its .npy
header is refused by from_record, from_recorddict and to_recorddict with
the extension's own words (tests/bad/record_mismatch, and random items
compared with ar_valid/ar_error); anything but bytes is a TypeError naming
the function.
"""

import ast
import contextlib
import glob
import importlib
import io
import os
import random
import re
import subprocess
import sys

import numpy as np
from arlib import EXT, ROOT, _field, array_message, npy_bytes, varint
from arlib import connect as ar_connect
from test_package_recorddict import expect_error

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
    "tracking": ["runs", "rounds"],
    "logcheck": ["check_log"],
    "store": ["pack_database", "unpack_database", "store_of", "schema_script"],
}
# The package's __all__ as it has always been (the two constants are public
# but were never in it).
PACKAGE_ALL = (
    "loadable_path load connect register ExtensionLoadingUnavailable to_npy from_npy to_record from_record "
    "from_state_dict to_state_dict to_recorddict from_recorddict MetricRecord ConfigRecord runs rounds check_log "
    "pack_database unpack_database store_of schema_script"
).split()


# The flower package's public names, by the module that defines them, and
# its private modules.
FLOWER_LAYOUT = {
    "logging_strategy": ["LoggingStrategy"],
    "result": ["read_result"],
    "errors": ["ResumeError", "LogWriteError"],
}
FLOWER_PRIVATE = {"__init__", "_database", "_round_log", "_runs", "_state", "_wire"}
# The export package's public names, by the module that defines them (each
# the only importer of its tool), and its private modules.
EXPORT_LAYOUT = {"mlflow": ["to_mlflow"], "tensorboard": ["to_tensorboard"]}
EXPORT_PRIVATE = {"__init__", "_source", "_cli"}
TOOLS = {"mlflow": "mlflow", "tensorboard": "tensorboard"}  # module -> the tool it alone imports


def package_modules(sub=""):
    """The modules of the package (or of its subpackage `sub`), by name."""
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(PKG_DIR, sub, "*.py")))


def test_import_imports_neither_torch_nor_flwr():
    imports = "; ".join(f"import sqlite_arrayrecord.{m}" for m in package_modules() if m != "__init__")
    script = (
        "import sys; import sqlite_arrayrecord; first = sorted(sys.modules); "
        + imports
        + "; print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'flwr')), "
        "'sqlite_arrayrecord.torch' in first)"
    )
    assert isolated(script) == "[] True"


def isolated(script):
    """What a script prints in a Python of its own that imports this checkout's package."""
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=PKG_SRC),
        check=True,
    )
    return out.stdout.strip()


def test_only_the_exporters_import_their_tools():
    """export/mlflow.py alone imports mlflow, export/tensorboard.py alone
    tensorboard (at its top); importing the package, the export package
    and its other modules imports neither (nor does the CLI's entry)."""
    for sub in ("", "flower", "datasette", "export"):
        for name in package_modules(sub):
            with open(os.path.join(PKG_DIR, sub, name + ".py"), encoding="utf-8") as f:
                tree = ast.parse(f.read())
            used = imported_modules(tree, False) & set(TOOLS.values())
            if sub == "export" and name in TOOLS:
                assert imported_modules(tree, True) & set(TOOLS.values()) == {TOOLS[name]}, (sub, name)
            else:
                assert not used, (sub, name, used)
    script = (
        "import sys, sqlite_arrayrecord, sqlite_arrayrecord.export, sqlite_arrayrecord.export._source, "
        "sqlite_arrayrecord.export._cli, sqlite_arrayrecord.__main__; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlflow', 'tensorboard')))"
    )
    assert isolated(script) == "[]"


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
    for name in package_modules("flower"):
        with open(os.path.join(PKG_DIR, "flower", name + ".py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        assert "torch" not in imported_modules(tree, False), name
    with open(os.path.join(PKG_DIR, "flower", "logging_strategy.py"), encoding="utf-8") as f:
        assert "flwr" in imported_modules(ast.parse(f.read()), True)  # the check sees its imports
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
    assert set(package_modules()) == set(LAYOUT) | {
        "__init__",
        "_protobuf",
        "_packed",
        "__main__",
        "_check_cli",
        "_store_cli",
    }
    assert set(package_modules("flower")) == set(FLOWER_LAYOUT) | FLOWER_PRIVATE
    assert set(package_modules("export")) == set(EXPORT_LAYOUT) | EXPORT_PRIVATE
    export = importlib.import_module("sqlite_arrayrecord.export")
    assert sorted(export.__all__) == sorted(n for names in EXPORT_LAYOUT.values() for n in names)
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
    modules = (
        set(LAYOUT)
        | {"_protobuf", "__main__", "_check_cli", "_store_cli"}
        | set(FLOWER_LAYOUT)
        | FLOWER_PRIVATE
        | set(EXPORT_LAYOUT)
    )
    for modname in (modules | EXPORT_PRIVATE) - {"__init__"}:
        assert f"`{modname}.py`" in layout, modname
    assert "| `flower/` |" in layout and "| `datasette/` |" in layout and "| `export/` |" in layout
    # its example runs and prints what its comment says
    (code,) = re.findall(r"```python\n(.*?)```", layout, re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "bindings/python/README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().strip() == code.strip().rsplit("# ", 1)[1], out.getvalue()


# --- dtype and shape fields against the .npy header ----------------------------------


def bad_inputs(group):
    """(input bytes, expected substring) of each input of a tests/bad manifest."""
    out = []
    with open(os.path.join(ROOT, "tests", "bad", group + ".manifest"), encoding="utf-8") as f:
        for line in f:
            if " | " in line and not line.startswith("#"):
                rel, words = line.rstrip("\n").split(" | ", 1)
                with open(os.path.join(ROOT, "tests", "bad", rel), "rb") as g:
                    out.append((g.read(), words))
    return out


def python_error(fn, *args):
    """The message of the ValueError fn raises, None when it returns."""
    try:
        fn(*args)
    except ValueError as e:
        assert str(e).startswith(fn.__name__ + ": "), str(e)
        return str(e)
    return None


def recorddict_of(name, record):
    """A RecordDict holding one ArrayRecord, written by hand (to_recorddict checks what it is given)."""
    return _field(1, _field(1, name.encode()) + _field(2, record))


def test_record_mismatch_inputs_refused_with_the_extensions_words():
    con = ar_connect()
    inputs = bad_inputs("record_mismatch")
    assert len(inputs) >= 9, inputs
    for blob, words in inputs:
        # The extension refuses it with these words...
        assert con.execute("SELECT ar_valid(?)", (blob,)).fetchone()[0] == 0, words
        assert words in con.execute("SELECT ar_error(?)", (blob,)).fetchone()[0], words
        # ...and so does every Python reader.
        for copy in (True, False):
            msg = python_error(sar.from_record, blob, copy)
            assert msg is not None and words in msg, (words, msg)
        rd = recorddict_of("r", blob)
        assert con.execute("SELECT rd_valid(?)", (rd,)).fetchone()[0] == 0, words
        assert words in con.execute("SELECT rd_error(?)", (rd,)).fetchone()[0], words
        msg = python_error(sar.from_recorddict, rd)
        assert msg is not None and words in msg and "array record 'r'" in msg, (words, msg)
        msg = python_error(sar.to_recorddict, {"r": blob})
        assert msg is not None and words in msg and "are not an ArrayRecord" in msg, (words, msg)


def test_record_mismatch_messages():
    w = np.zeros((2, 3), np.float32)
    blob = _field(1, _field(1, b"w") + _field(2, array_message("float64", [2, 3], "numpy.ndarray", npy_bytes(w))))
    assert python_error(sar.from_record, blob) == (
        "from_record: dtype 'float64' does not match the .npy dtype 'float32' (item 0, key 'w')"
    )
    blob = _field(1, _field(1, b"w") + _field(2, array_message("float32", [3, 2], "numpy.ndarray", npy_bytes(w))))
    assert python_error(sar.from_record, blob) == "from_record: shape does not match the .npy shape (item 0, key 'w')"
    assert python_error(sar.from_recorddict, recorddict_of("m", blob)) == (
        "from_recorddict: array record 'm' (at byte 9): shape does not match the .npy shape (item 0, key 'w')"
    )


def array_value(rng, arr, choice):
    """Item.value occurrences for arr with the dtype and shape fields a choice makes."""
    dtype, shape = str(arr.dtype), list(arr.shape)
    data = npy_bytes(arr)
    if choice == "descr":
        dtype = arr.dtype.str
    elif choice == "other dtype":
        dtype = "int16" if dtype != "int16" else "int32"
    elif choice == "no dtype":
        dtype = ""
    elif choice == "no shape":
        shape = []
    elif choice == "extra dim":
        shape = shape + [1]
    elif choice == "dim differs":
        shape = shape[:-1] + [shape[-1] + 1] if shape else [1]
    elif choice == "reversed shape":
        shape = shape[::-1]
    elif choice == "split":  # two Item.value messages: protobuf merges them, shapes add up
        cut = rng.randrange(len(shape) + 1)
        first = _field(2, array_message("", shape[:cut], "", b""))
        return first + _field(2, array_message(dtype, shape[cut:], "numpy.ndarray", data))
    elif choice == "unpacked":
        fields = _field(1, dtype.encode()) + b"".join(b"\x10" + varint(d) for d in shape)
        return _field(2, fields + _field(3, b"numpy.ndarray") + _field(4, data))
    elif choice == "raw":  # a legacy raw item: its fields are its dtype and shape, nothing to disagree with
        return _field(2, array_message(dtype, shape, "", arr.tobytes()))
    return _field(2, array_message(dtype, shape, "numpy.ndarray", data))


CHOICES = [
    "same",
    "descr",
    "other dtype",
    "no dtype",
    "no shape",
    "extra dim",
    "dim differs",
    "reversed shape",
    "split",
    "unpacked",
    "raw",
]
DTYPES = ["?", "<i1", "<u1", "<i2", ">i2", "<u4", "<i8", ">f2", "<f4", ">f4", "<f8", ">c8", "<c16"]


def test_random_items_refused_exactly_when_ar_valid_refuses():
    con, rng = ar_connect(), random.Random(11)
    outcomes = set()
    for _ in range(600):
        items = []
        for k in range(rng.randrange(1, 4)):
            shape = tuple(rng.randrange(1, 4) for _ in range(rng.randrange(0, 4)))
            arr = (np.arange(int(np.prod(shape))) % 3).astype(rng.choice(DTYPES)).reshape(shape)
            if rng.random() < 0.3:
                arr = np.asfortranarray(arr)
            choice = rng.choice(CHOICES) if rng.random() < 0.5 else "same"
            items.append(_field(1, _field(1, f"k{k}".encode()) + array_value(rng, arr, choice)))
        blob = b"".join(items)
        valid, c_msg = con.execute("SELECT ar_valid(?), ar_error(?)", (blob, blob)).fetchone()
        msg = python_error(sar.from_record, blob, False)
        if valid:
            assert msg is None, msg
            assert python_error(sar.from_recorddict, recorddict_of("r", blob)) is None
        else:
            assert msg == "from_record: " + c_msg, (msg, c_msg)
            assert c_msg in python_error(sar.from_recorddict, recorddict_of("r", blob))
        outcomes.add(msg.split(" (")[0].split(" '")[0] if msg else "ok")
    # both outcomes and both kinds of disagreement came up
    assert outcomes == {"ok", "from_record: dtype", "from_record: shape does not match the .npy shape"}, outcomes


def test_raw_items_keep_their_fields():
    # stype other than numpy.ndarray: dtype and shape are the array's, nothing to disagree with
    con, arr = ar_connect(), np.arange(6, dtype=">i4").reshape(2, 3)
    for stype in ("", "legacy", "safetensors", "numpy.ndarray "):
        rec = _field(1, _field(1, b"w") + _field(2, array_message(">i4", [2, 3], stype, arr.tobytes())))
        assert con.execute("SELECT ar_valid(?)", (rec,)).fetchone()[0] == 1, stype
        for back in (sar.from_record(rec)["w"], sar.from_recorddict(recorddict_of("r", rec))["r"]["w"]):
            assert back.dtype == np.dtype(">i4") and back.shape == (2, 3) and np.array_equal(back, arr), stype
        assert sar.from_recorddict(sar.to_recorddict({"r": rec}))["r"]["w"].tolist() == arr.tolist()


# --- bytes in ---------------------------------------------------------------------------


def readers():
    out = [sar.from_npy, sar.from_record, sar.from_recorddict]
    try:
        import torch  # noqa: F401
    except ImportError:
        pass  # to_state_dict imports torch before it looks at its argument
    else:
        out.append(sar.to_state_dict)
    return out


def test_non_bytes_input_is_a_type_error_naming_the_function():
    for fn in readers():
        for bad in ("hello", 123, 1.5, [1, 2], {"a": 1}, object()):
            expect_error(fn, bad, TypeError, "expected bytes, bytearray or memoryview", f"not {type(bad).__name__}")
        expect_error(fn, memoryview(bytes(range(16)))[::2], TypeError, "expected contiguous bytes")
        assert fn(None) is None


def test_bytes_like_inputs_read_alike():
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    npy, rec = sar.to_npy(arr), sar.to_record({"w": arr})
    rd = sar.to_recorddict({"r": {"w": arr}, "m": sar.MetricRecord(loss=0.5)})
    for wrap in (bytes, bytearray, memoryview, lambda b: np.frombuffer(b, np.uint8)):
        assert np.array_equal(sar.from_npy(wrap(npy)), arr)
        assert np.array_equal(sar.from_record(wrap(rec))["w"], arr)
        back = sar.from_recorddict(wrap(rd))
        assert np.array_equal(back["r"]["w"], arr) and back["m"] == {"loss": 0.5}
