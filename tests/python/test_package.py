# SPDX-License-Identifier: Apache-2.0
"""The Python package (bindings/python, import sqlite_arrayrecord).

Most tests import the package from its source folder and load the
extension under test (AR_EXTENSION); test_pip_install_* installs it as a
user would, into a fresh venv from a copy of the tree, and runs a script and
the README's Python quick start with the venv's Python. The PyTorch test
needs Debian's python3-torch and sqlite-utils' test the sqlite-utils
command; without them they are SKIPPED with the install line.
"""

import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np
from arlib import EXT, ROOT, npy_bytes, record_bytes, small_cnn
from arlib import connect as ar_connect
from runner import Skip

PKG_SRC = os.path.join(ROOT, "bindings", "python")
sys.path.insert(0, PKG_SRC)
os.environ["AR_EXTENSION"] = EXT
import sqlite_arrayrecord as sar  # noqa: E402


def sample_arrays():
    rng = np.random.default_rng(5)
    return {
        "conv.weight": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "fortran": np.asfortranarray(rng.standard_normal((3, 5))),
        "scalar": np.array(7, np.int64),
        "big_endian": np.arange(6, dtype=">i4").reshape(2, 3),
        "empty": np.zeros((0, 3), np.float16),
        "mask": np.array([True, False, True]),
        "": np.arange(4, dtype=np.complex64),
        "strided": np.arange(20, dtype=np.uint16)[::3],
        "ключ": np.arange(3, dtype=np.int8),
    }


def sql_ar(con, arrays):
    args = []
    for key, value in arrays.items():
        args += [key, npy_bytes(value)]
    return con.execute(f"SELECT ar({', '.join('?' * len(args))})", args).fetchone()[0]


def test_to_npy_is_numpy_save():
    for key, arr in sample_arrays().items():
        assert sar.to_npy(arr) == npy_bytes(arr), key
    assert sar.to_npy([[1, 2], [3, 4]]) == npy_bytes(np.array([[1, 2], [3, 4]]))
    try:
        sar.to_npy(np.array([object()]))
    except ValueError as e:
        assert "pickl" in str(e), e
    else:
        raise AssertionError("object array accepted")


def test_from_npy():
    for key, arr in sample_arrays().items():
        back = sar.from_npy(npy_bytes(arr))
        assert back.dtype == arr.dtype and back.shape == arr.shape and np.array_equal(back, arr), key
        assert back.flags.writeable
    assert sar.from_npy(None) is None
    rec = sar.to_record({"w": np.ones(2)})
    for blob, words in (
        (rec, "got a record, not a .npy file: take an array out with ar_get(rec, key)"),
        (b"hello world", "not a .npy file"),
        (npy_bytes(np.array(["a"])), "unsupported dtype"),
        (npy_bytes(np.ones(4))[:-3], "truncated"),
    ):
        try:
            sar.from_npy(blob)
        except ValueError as e:
            assert words in str(e) and str(e).startswith("from_npy: "), e
        else:
            raise AssertionError(f"from_npy accepted {blob[:20]!r}")


def test_to_record_matches_ar_and_independent_encoder():
    con = ar_connect()
    arrays = sample_arrays()
    rec = sar.to_record(arrays)
    assert rec == record_bytes(list(arrays.items()))
    assert rec == sql_ar(con, arrays)
    assert con.execute("SELECT ar_valid(?)", (rec,)).fetchone()[0] == 1
    assert sar.to_record({}) == b""
    # a list gets keys "0", "1", ...
    lst = [np.ones(2, np.float32), np.zeros((2, 2))]
    assert sar.to_record(lst) == record_bytes([("0", lst[0]), ("1", lst[1])])


def test_to_record_ten_thousand_arrays():
    arrays = {f"layer{i}.weight": np.full((i % 7 + 1,), i, np.float32) for i in range(10_000)}
    rec = sar.to_record(arrays)
    con = ar_connect()
    assert con.execute("SELECT ar_len(?), ar_valid(?)", (rec, rec)).fetchone() == (10_000, 1)
    assert (
        con.execute("SELECT npy_to_json(ar_get(?, 'layer9999.weight'))", (rec,)).fetchone()[0]
        == "[9999.0,9999.0,9999.0,9999.0]"
    )
    back = sar.from_record(rec, copy=False)
    assert list(back) == list(arrays) and all(np.array_equal(back[k], v) for k, v in arrays.items())


def test_from_record_views_and_copies():
    arrays = sample_arrays()
    rec = sar.to_record(arrays)
    start = np.frombuffer(rec, np.uint8).ctypes.data
    for copy in (True, False):
        back = sar.from_record(rec, copy=copy)
        assert list(back) == list(arrays)
        for key, arr in arrays.items():
            got = back[key]
            assert got.dtype == arr.dtype and got.shape == arr.shape and np.array_equal(got, arr), key
            assert got.flags.writeable == copy, key
            if got.size:
                assert (start <= got.ctypes.data < start + len(rec)) == (not copy), (key, copy)
    assert sar.from_record(rec, copy=False)["fortran"].flags.f_contiguous
    assert sar.from_record(None) is None


def test_from_record_legacy_raw_items():
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    rec = record_bytes(
        [
            ("w", ("float32", [2, 3], "", w.tobytes())),
            ("b", (">f8", [2], "legacy", np.array([1.5, 2], ">f8").tobytes())),
        ]
    )
    for copy in (True, False):
        back = sar.from_record(rec, copy=copy)
        assert np.array_equal(back["w"], w) and back["b"].tolist() == [1.5, 2.0]
    bad = record_bytes([("w", ("float32", [2, 3], "", w.tobytes()[:-4]))])
    for blob, words in (
        (bad, "raw array data has 20 bytes, dtype and shape need 24 (item 0, key 'w')"),
        (
            record_bytes([("h", ("BF16", [2], "safetensors", b"\0\0\0\0"))]),
            "dtype 'BF16' (stype 'safetensors') has no NumPy dtype; to_state_dict reads it as a torch tensor "
            "(item 0, key 'h')",
        ),
        (sar.to_record({"w": w})[:-5], "truncated"),
        (npy_bytes(w), "got a .npy file, not a record: wrap it with ar('key', npy)"),
    ):
        try:
            sar.from_record(blob)
        except ValueError as e:
            assert words in str(e) and str(e).startswith("from_record: "), e
        else:
            raise AssertionError("accepted")


def test_sqlite3_adapters_and_converters():
    con = sar.connect(":memory:")
    con.execute("CREATE TABLE t(a NPY, r ARRAYRECORD)")
    arr = np.arange(6, dtype=np.float32).reshape(2, 3)
    con.execute("INSERT INTO t VALUES (?, ar('x', ?))", (arr, arr))
    a, r = con.execute("SELECT a, r FROM t").fetchone()
    assert np.array_equal(a, arr) and a.dtype == np.float32 and np.array_equal(r["x"], arr)
    assert con.execute("SELECT npy_shape(?), ?", (arr, np.int64(3))).fetchone() == ("[2,3]", 3)


class NoExtensions(sqlite3.Connection):
    """A connection like pyenv's and macOS's Pythons give: no enable_load_extension."""

    @property
    def enable_load_extension(self):
        raise AttributeError("enable_load_extension")


def test_clear_error_without_extension_loading():
    for call in (
        lambda: sar.connect(":memory:", factory=NoExtensions),
        lambda: sar.load(sqlite3.connect(":memory:", factory=NoExtensions)),
    ):
        try:
            call()
        except sar.ExtensionLoadingUnavailable as e:
            assert "without extension loading" in str(e) and "--enable-loadable-sqlite-extensions" in str(e), e
        else:
            raise AssertionError("no error")


def test_import_does_not_import_torch():
    out = subprocess.run(
        [sys.executable, "-c", "import sys, sqlite_arrayrecord; print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=PKG_SRC),
        check=True,
    )
    assert out.stdout.strip() == "False", out


def test_torch_state_dict_roundtrip():
    try:
        import torch
    except ImportError:
        raise Skip("torch is missing: install it with 'apt-get install -y python3-torch'") from None
    torch.manual_seed(0)

    net = small_cnn(torch)
    net.train()
    x = torch.randn(2, 3, 8, 8)
    net(x)  # BatchNorm's running stats and num_batches_tracked (int64) move
    net.eval()
    sd = net.state_dict()
    assert sd["1.num_batches_tracked"].dtype == torch.int64
    rec = sar.from_state_dict(sd)
    assert sar.from_record(rec)["0.weight"].dtype == np.float32
    fresh = small_cnn(torch)
    fresh.load_state_dict(sar.to_state_dict(rec))
    fresh.eval()
    assert torch.equal(net(x), fresh(x))
    # every dtype, bit for bit: float32/64, float16, bfloat16, int64
    tensors = {
        "f32": torch.randn(3, 4),
        "f64": torch.randn(5, dtype=torch.float64),
        "f16": torch.randn(2, 3).half(),
        "bf16": torch.randn(4, 2).bfloat16(),
        "i64": torch.tensor(12345678901, dtype=torch.int64),
        "empty": torch.zeros(0, 2),
    }
    rec = sar.from_state_dict(tensors)
    back = sar.to_state_dict(rec)
    assert list(back) == list(tensors)
    for k, t in tensors.items():
        assert back[k].dtype == t.dtype and back[k].shape == t.shape, k
        assert torch.equal(
            back[k].view(torch.int16) if t.dtype == torch.bfloat16 else back[k],
            t.view(torch.int16) if t.dtype == torch.bfloat16 else t,
        ), k
    # bfloat16 is stored as ar_from_safetensors stores it: the extension agrees
    con = ar_connect()
    st = con.execute("SELECT ar_to_safetensors(?)", (rec,)).fetchone()[0]
    assert con.execute("SELECT ar_from_safetensors(?) = ?", (st, rec)).fetchone()[0] == 1
    assert con.execute("SELECT dtype, stype FROM array_record(?) WHERE key = 'bf16'", (rec,)).fetchone() == (
        "BF16",
        "safetensors",
    )


def test_sqlite_utils_load_extension():
    tool = shutil.which("sqlite-utils")
    if not tool:
        raise Skip("sqlite-utils not found: install it with 'apt-get install -y sqlite-utils'")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "runs.db")
        out = subprocess.run(
            [
                tool,
                "query",
                db,
                "SELECT ar_len(ar('w', npy_from_json('[1,2]'))) AS n",
                f"--load-extension={sar.loadable_path()}",
            ],
            capture_output=True,
            text=True,
        )
    assert out.returncode == 0 and '"n": 1' in out.stdout, out


def tree_copy(dest):
    """The working tree as a clean checkout would have it: git-tracked files
    plus new untracked ones not ignored (so uncommitted work is tested), no build/."""
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for rel in files:
        rel = rel.decode()
        if not rel or rel.startswith("build/") or not os.path.isfile(os.path.join(ROOT, rel)):
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, rel), os.path.join(dest, rel))


USER_SCRIPT = r"""
import sys, numpy as np, sqlite_arrayrecord as sar
assert "torch" not in sys.modules
path = sar.loadable_path()
assert "site-packages" in path, path
con = sar.connect(":memory:")
models = [{"w": np.full((2, 2), c, np.float32), "b": np.arange(2, dtype=np.float32)} for c in range(64)]
con.execute("CREATE TABLE updates(n INTEGER, rec BLOB)")
con.executemany("INSERT INTO updates VALUES (?, ?)", [(i + 1, sar.to_record(m)) for i, m in enumerate(models)])
avg = sar.from_record(con.execute("SELECT ar_mean(rec, n) FROM updates").fetchone()[0])
w = np.array([i + 1 for i in range(64)], np.float64)
assert np.allclose(avg["w"], (w * np.arange(64)).sum() / w.sum()), avg
print("version", con.execute("SELECT ar_version()").fetchone()[0], sar.__version__)
"""


def readme_quick_start():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Python quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "no ```python block in README's Python quick start"
    return "\n".join(blocks)


def test_pip_install_into_fresh_venv():
    # A user's environment: none of the test run's own settings. Under make
    # sanitize, make exports CC and CFLAGS (clang, -fsanitize=...), which
    # setuptools would build the package with.
    drop = (
        "LD_PRELOAD",
        "AR_EXTENSION",
        "PYTHONPATH",
        "ASAN_OPTIONS",
        "UBSAN_OPTIONS",
        "CC",
        "CFLAGS",
        "LDFLAGS",
        "CPPFLAGS",
        "MAKEFLAGS",
        "MFLAGS",
        "MAKELEVEL",
    )
    env = {k: v for k, v in os.environ.items() if k not in drop}
    with tempfile.TemporaryDirectory() as tmp:
        src, venv = os.path.join(tmp, "src"), os.path.join(tmp, "venv")
        tree_copy(src)
        python = "/usr/bin/python3"
        res = subprocess.run([python, "-m", "venv", "--system-site-packages", venv], capture_output=True, env=env)
        if res.returncode != 0:
            raise Skip("python3 -m venv failed: install it with 'apt-get install -y python3-venv'")
        t = time.perf_counter()
        res = subprocess.run(
            [
                os.path.join(venv, "bin", "pip"),
                "install",
                "-q",
                "--no-build-isolation",
                "--no-index",
                os.path.join(src, "bindings", "python"),
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        took = time.perf_counter() - t
        assert res.returncode == 0, res.stdout + res.stderr
        print(f"pip install --no-build-isolation --no-index ./bindings/python: {took:.1f} s")
        vpy = os.path.join(venv, "bin", "python")
        work = os.path.join(tmp, "work")
        os.mkdir(work)
        with open(os.path.join(ROOT, "VERSION")) as f:
            version = f.read().strip()
        for name, script in (("user.py", USER_SCRIPT), ("quickstart.py", readme_quick_start())):
            with open(os.path.join(work, name), "w") as f:
                f.write(script)
            res = subprocess.run([vpy, name], cwd=work, capture_output=True, text=True, env=env, timeout=300)
            assert res.returncode == 0, (name, res.stdout + res.stderr)
        assert (
            f"version {version} {version}"
            in subprocess.run([vpy, "user.py"], cwd=work, capture_output=True, text=True, env=env).stdout
        )
