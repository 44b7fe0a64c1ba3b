# SPDX-License-Identifier: Apache-2.0
"""npy_repr and ar_repr against NumPy's own repr(ndarray) (default print
options) over arrays of every dtype, shape and value range the formatter
distinguishes: fixed and scientific notation, nan/inf, signs, wide rows that
wrap, nested axes, summarised arrays, 0-d and empty arrays."""

import numpy as np
from arlib import connect, npy_bytes, record_bytes

DTYPES = [
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
    ">f4",
    ">f8",
    ">i4",
    ">c16",
]

SHAPES = [(), (1,), (5,), (7,), (30,), (3, 4), (2, 3, 4), (2, 1, 2, 3), (40, 30), (1001,), (4, 300), (3, 3, 200)]


def check(con, arr, max_items=None):
    if max_items is None:
        got = con.execute("SELECT npy_repr(?)", (npy_bytes(arr),)).fetchone()[0]
        want = repr(arr)
    else:
        got = con.execute("SELECT npy_repr(?, ?)", (npy_bytes(arr), max_items)).fetchone()[0]
        with np.printoptions(threshold=max_items):
            want = repr(arr)
    assert got == want, "%s %s:\n got: %s\nwant: %s" % (arr.dtype, arr.shape, got, want)


def values(rng, kind, n):
    """Float values of one flavour."""
    if kind == "small":
        return rng.standard_normal(n)
    if kind == "round":
        return rng.integers(-20, 20, n) / 4
    if kind == "wide":
        return rng.standard_normal(n) * 10.0 ** rng.integers(-12, 12, n)
    if kind == "tiny":
        return rng.standard_normal(n) * 1e-6
    if kind == "huge":
        return rng.standard_normal(n) * 1e9
    if kind == "ints":
        return rng.integers(-1000, 1000, n).astype(float)
    if kind == "exp100":
        return rng.standard_normal(n) * 10.0 ** rng.choice([-150, 0, 150], n)
    return rng.random(n) * 10.0 ** rng.integers(0, 7, n)


KINDS = ["small", "round", "wide", "tiny", "huge", "ints", "exp100", "mixed"]


def make(rng, dtype, shape, kind):
    n = int(np.prod(shape))
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return (rng.random(n) < 0.5).reshape(shape).astype(dt)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo, hi = (int(info.min), int(info.max)) if kind == "wide" else (max(int(info.min), -50), 100)
        return (
            rng.integers(lo, hi, n, dtype=np.int64 if dt.kind == "i" else np.uint64, endpoint=True)
            .astype(dt)
            .reshape(shape)
        )
    with np.errstate(over="ignore"):
        if dt.kind == "c":
            a = values(rng, kind, n) + 1j * values(rng, KINDS[(KINDS.index(kind) + 1) % 8], n)
        else:
            a = values(rng, kind, n)
        a = a.astype(dt)
    if n > 3 and rng.random() < 0.3:
        a[rng.integers(0, n)] = np.nan
        a[rng.integers(0, n)] = -np.inf if rng.random() < 0.5 else np.inf
    return a.reshape(shape)


def test_repr_matches_numpy_random():
    con = connect()
    rng = np.random.default_rng(7)
    count = 0
    for dtype in DTYPES:
        for shape in SHAPES:
            for kind in KINDS:
                if np.dtype(dtype).kind in "biu" and kind not in ("small", "wide"):
                    continue
                check(con, make(rng, dtype, shape, kind))
                count += 1
    assert count > 500


def test_repr_special_values():
    con = connect()
    cases = [
        np.array([[0.5, -1.0], [2.0, 3.0]], dtype=np.float32),
        np.array(1.5, dtype=np.float32),
        np.array(1.0),
        np.array(-0.0),
        np.array(np.nan),
        np.array(np.inf, dtype=np.float32),
        np.array(True),
        np.array(False),
        np.array(-5, dtype=np.int8),
        np.array(1 + 2j),
        np.array(np.nan + 1j, dtype=np.complex64),
        np.array([], dtype=np.float32),
        np.array([]),
        np.zeros((0, 3), dtype=np.float32),
        np.zeros((2, 0), dtype=np.int64),
        np.zeros((0,), dtype=np.bool_),
        np.zeros((1, 0, 2), dtype=">f4"),
        np.array([np.nan, np.inf, -np.inf]),
        np.array([np.nan]),
        np.array([-np.inf], dtype=np.float16),
        np.array([0.0, -0.0]),
        np.array([1e-5, 1.0]),
        np.array([1e-5, 1e100]),
        np.array([1e8]),
        np.array([99999999.0]),
        np.array([0.0001, 0.1]),
        np.array([1, 1000.0]),
        np.array([1, 1001.0]),
        np.array([1 / 3, 2 / 3]),
        np.array([0.1, 0.2, 0.3], dtype=np.float32),
        np.array([65504.0, 6e-08], dtype=np.float16),
        np.array([1.0000000001, 2.0]),
        np.array([123456.789012345, 0.5]),
        np.array([67108872.0], dtype=np.float32),
        np.array([1.5, np.nan, 2.25], dtype=np.complex64),
        np.array([1 - 1j, np.inf * 1j, -2.5 + 0j]),
        np.arange(24, dtype=np.uint64).reshape(2, 3, 4) * np.uint64(2**62),
        np.array([np.iinfo(np.int64).min, 0]),
        np.array([True, False, True]),
        np.arange(2000, dtype=np.float32),
        np.arange(2002).reshape(2, 7, 11, 13) % 17,
        np.ones((2, 2), dtype=">f8"),
        np.ones(3, dtype=">i8"),
        np.full(80, 1e-20, dtype=np.float64),
        np.linspace(0, 1, 100, dtype=np.float32).reshape(10, 10),
    ]
    for arr in cases:
        check(con, arr)


def test_repr_fortran_order():
    con = connect()
    arr = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4) / 7)
    check(con, arr)


def test_repr_max_items():
    con = connect()
    rng = np.random.default_rng(3)
    for limit in (0, 5, 6, 7, 23, 24, 100):
        for shape in ((24,), (4, 6), (2, 3, 4), (10, 10)):
            check(con, rng.standard_normal(shape).astype(np.float32), limit)
    big = np.arange(5000, dtype=np.int32)
    check(con, big, 10**6)


def test_ar_repr_matches_dict_of_reprs():
    con = connect()
    rng = np.random.default_rng(11)
    arrays = {
        "fc.weight": rng.standard_normal((3, 4)).astype(np.float32),
        "b": np.arange(3, dtype=np.int64),
        "it's": np.array(2.5),
        'q"\n': np.zeros((0, 2)),
        "big": np.arange(3000, dtype=np.float32),
    }
    blob = record_bytes(list(arrays.items()))
    got = con.execute("SELECT ar_repr(?)", (blob,)).fetchone()[0]
    want = "{" + ",\n ".join("%r: %r" % (k, v) for k, v in arrays.items()) + "}"
    assert got == want, "\n%s\n%s" % (got, want)
    assert con.execute("SELECT ar_repr(?)", (record_bytes([]),)).fetchone()[0] == "{}"
