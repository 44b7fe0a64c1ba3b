# SPDX-License-Identifier: Apache-2.0
"""ar_describe against what the package's own readers (from_record,
from_recorddict) and rd_metrics / rd_config make of the same BLOBs."""

import json
import os
import sys

import numpy as np
from arlib import ROOT, connect, npy_bytes

sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
from sqlite_arrayrecord import (  # noqa: E402
    ConfigRecord,
    MetricRecord,
    from_record,
    from_recorddict,
    to_record,
    to_recorddict,
)


def dtype_name(a):
    """str(dtype) as ar_describe writes it (">f4" for a non-native order)."""
    return str(a.dtype) if a.dtype.isnative or a.dtype.itemsize == 1 else a.dtype.str


def expected_record(blob, max_items=3):
    arrays = from_record(blob)
    items = [{"key": k, "dtype": dtype_name(a), "shape": list(a.shape)} for k, a in arrays.items()]
    return {
        "kind": "arrayrecord",
        "count": len(arrays),
        "numel": sum(a.size for a in arrays.values()),
        "nbytes": sum(a.nbytes for a in arrays.values()),
        "items": items[:max_items],
    }


def expected_recorddict(con, blob, max_items=3):
    records = from_recorddict(blob)
    items = []
    for name, rec in list(records.items())[:max_items]:
        kind = type(rec).__name__
        if kind == "MetricRecord":
            values = json.loads(con.execute("SELECT rd_metrics(?, ?)", (blob, name)).fetchone()[0])
            items.append({"name": name, "kind": "metric_record", "values": values})
        elif kind == "ConfigRecord":
            values = json.loads(con.execute("SELECT rd_config(?, ?)", (blob, name)).fetchone()[0])
            items.append({"name": name, "kind": "config_record", "values": values})
        else:
            nbytes = sum(a.nbytes for a in rec.values())
            items.append({"name": name, "kind": "array_record", "count": len(rec), "nbytes": nbytes})
    return {"kind": "recorddict", "count": len(records), "items": items}


def describe(con, blob, *more):
    text = con.execute("SELECT ar_describe(?%s)" % "".join(", ?" for _ in more), (blob, *more)).fetchone()[0]
    return None if text is None else json.loads(text)


def sample_arrays(rng):
    dtypes = ["f2", "f4", "f8", "<i1", ">i2", "i4", "<i8", "u1", ">u2", "u4", "u8", "?", "c8", ">c16", ">f4", ">f8"]
    shapes = [(), (0,), (3,), (2, 3), (4, 1, 2), (2, 3, 1, 2), (1, 2, 1, 2, 1)]
    out = {}
    for i, dt in enumerate(dtypes):
        shape = shapes[i % len(shapes)]
        a = np.asarray((rng.standard_normal(shape) * 50).astype(dt))
        if i % 3 == 0 and a.ndim >= 2:
            a = np.asfortranarray(a)
        out["layer%d.%s" % (i, "weight" if i % 2 else "bias")] = a
    return out


def test_describe_npy_matches_numpy():
    con = connect()
    rng = np.random.default_rng(1)
    for arrays in (sample_arrays(rng), sample_arrays(rng)):
        for a in arrays.values():
            got = describe(con, npy_bytes(a))
            want = {"kind": "npy", "dtype": dtype_name(a), "shape": list(a.shape), "numel": a.size, "nbytes": a.nbytes}
            assert got == want, (got, want)


def test_describe_record_matches_from_record():
    con = connect()
    rng = np.random.default_rng(2)
    arrays = sample_arrays(rng)
    blob = to_record(arrays)
    for max_items in (None, 0, 1, 5, 100):
        got = describe(con, blob) if max_items is None else describe(con, blob, max_items)
        want = expected_record(blob, 3 if max_items is None else max_items)
        assert got == want, (got, want)


def test_describe_recorddict_matches_from_recorddict():
    con = connect()
    rng = np.random.default_rng(3)
    records = {
        "arrays": sample_arrays(rng),
        "metrics": MetricRecord({"num-examples": 120, "loss": 0.25, "acc": [0.5, 1.0], "big": 2**63 + 1}),
        "config": ConfigRecord({"lr": 0.1, "name": "sgd", "flag": True, "raw": b"\x00\x01", "ints": [1, -2]}),
        "empty": {},
    }
    blob = to_recorddict(records)
    for max_items in (3, 0, 1, 4, 10):
        got = describe(con, blob, max_items)
        want = expected_recorddict(con, blob, max_items)
        assert got == want, (got, want)
    assert describe(con, blob)["items"] == expected_recorddict(con, blob)["items"]


def test_describe_null_for_anything_else():
    con = connect()
    rng = np.random.default_rng(4)
    blob = to_record(sample_arrays(rng))
    for value in (None, "text", 3, 2.5, b"", b"\x00", b"\x93NUMPY", blob[:-1], blob[:7], b"\x0a\x00" * 3 + b"\xff"):
        assert describe(con, value) is None, value
    # every prefix and a few corruptions of a record and of a .npy: NULL or a
    # description the readers agree with, never an error
    npy = npy_bytes(np.arange(6, dtype="f4").reshape(2, 3))
    for src in (blob[:400], npy):
        for cut in range(len(src)):
            got = describe(con, src[:cut])
            assert got is None or got["kind"] in ("npy", "arrayrecord", "recorddict"), got
        for i in range(0, len(src), 7):
            bad = bytearray(src)
            bad[i] ^= 0xFF
            describe(con, bytes(bad))


# --- ar_inspect -------------------------------------------------------------------

REAL_DTYPES = [
    "<f2",
    ">f2",
    "<f4",
    ">f4",
    "<f8",
    ">f8",
    "i1",
    "<i2",
    ">i4",
    "<i8",
    ">i8",
    "u1",
    ">u2",
    "<u4",
    ">u8",
    "?",
]
SHAPES = [(), (0,), (1,), (7,), (1, 9), (9, 1), (5, 6), (0, 4), (3, 4, 5), (4, 3, 3, 3), (6, 2, 1, 3), (2, 3, 2, 2, 3)]


def finite_f64(a):
    x = np.asarray(a, dtype=np.float64).ravel()
    return x[np.isfinite(x)]


def hist_ref(a, bins):
    """np.histogram of the finite elements as float64 (None when there are none)."""
    f = finite_f64(a)
    if f.size == 0:
        return None
    try:
        with np.errstate(all="ignore"):
            counts, edges = np.histogram(f, bins)
    except (IndexError, ValueError):  # a range float64 cannot divide into bins: NumPy has no answer
        return None
    return {"lo": float(edges[0]), "hi": float(edges[-1]), "counts": [int(c) for c in counts]}


def matrix_of(a):
    x = np.asarray(a, dtype=np.float64)
    if a.ndim == 4:
        o, i, kh, kw = a.shape
        return x.transpose(0, 2, 1, 3).reshape(o * kh, i * kw), "kernels"
    if a.ndim == 2:
        return x, "matrix"
    return x.reshape(a.shape[0], -1), "matrix"


def heat_ref(a, grid):
    """The heatmap's cells from NumPy: nanmean of the finite elements per block."""
    if a.ndim < 2 or a.size == 0:
        return None
    m, layout = matrix_of(a)
    rows, cols = m.shape
    rh, cw = -(-rows // grid), -(-cols // grid)
    cr, cc = -(-rows // rh), -(-cols // cw)
    values = []
    for r in range(cr):
        line = []
        for c in range(cc):
            blk = m[r * rh : (r + 1) * rh, c * cw : (c + 1) * cw]
            f = blk[np.isfinite(blk)]
            # the mean, and the scale its rounding is measured against: the
            # elements' own magnitude (a cell of +-9.2e18 int64 extremes
            # cancels to a small mean that no float64 sum gets to 1e-12)
            line.append((float(f.mean()), float(np.abs(f).mean())) if f.size else None)
        values.append(line)
    return {"rows": rows, "cols": cols, "layout": layout, "cell_rows": cr, "cell_cols": cc, "values": values}


def assert_heat(got, want, what):
    if want is None:
        assert got is None, (what, got)
        return
    assert got is not None, what
    for k in ("rows", "cols", "layout", "cell_rows", "cell_cols"):
        assert got[k] == want[k], (what, k, got[k], want[k])
    present = []
    for gline, wline in zip(got["values"], want["values"], strict=True):
        for g, w in zip(gline, wline, strict=True):
            assert (g is None) == (w is None), (what, g, w)
            if w is not None:
                mean, scale = w
                assert abs(g - mean) <= 1e-12 * max(abs(mean), scale, 1e-300), (what, g, w)
                present.append(g)
    assert got["min"] == (min(present) if present else None), what
    assert got["max"] == (max(present) if present else None), what


def sprinkle(rng, a):
    """NaN, +inf and -inf at random places of a float array."""
    if a.dtype.kind != "f" or a.size == 0:
        return a
    flat = a.copy().reshape(-1)
    for v in (np.nan, np.inf, -np.inf):
        flat[rng.integers(0, flat.size, max(1, flat.size // 10))] = v
    return flat.reshape(a.shape)


def make(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        a = rng.integers(0, 2, shape).astype(dt)
    elif dt.kind in "iu":
        info = np.iinfo(dt)
        a = rng.integers(max(info.min, -1000), min(info.max, 1000), shape, endpoint=True).astype(dt)
        if a.size >= 2:
            a.reshape(-1)[0], a.reshape(-1)[-1] = info.min, info.max  # extremes: int64 rounds to float64
    else:
        a = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4)).astype(dt)
        a = sprinkle(rng, a)
    return np.asarray(a)


def inspect_rows(con, blob, *args):
    sql = "SELECT * FROM ar_inspect(?%s)" % "".join(", ?" for _ in args)
    cur = con.execute(sql, (blob, *args))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def check_row(row, a, bins, grid, what):
    real = a.dtype.kind != "c"
    x = np.asarray(a, dtype=np.complex128 if not real else np.float64)
    assert row["dtype"] == dtype_name(a), what
    assert json.loads(row["shape"]) == list(a.shape), what
    assert row["numel"] == a.size and row["nbytes"] == a.nbytes, what
    if real:
        assert row["nan"] == int(np.isnan(x).sum()), what
        assert row["posinf"] == int(np.isposinf(x).sum()), what
        assert row["neginf"] == int(np.isneginf(x).sum()), what
    got_h = json.loads(row["histogram"]) if row["histogram"] is not None else None
    assert got_h == (hist_ref(a, bins) if real else None), (what, got_h, hist_ref(a, bins))
    assert_heat(
        json.loads(row["heatmap"]) if row["heatmap"] is not None else None, heat_ref(a, grid) if real else None, what
    )


def test_inspect_matches_numpy_every_dtype_and_layout():
    con = connect()
    rng = np.random.default_rng(10)
    n = 0
    for dtype in REAL_DTYPES:
        for shape in SHAPES:
            a = make(rng, dtype, shape)
            for order in ("C", "F"):
                arr = np.asfortranarray(a) if order == "F" else a
                for bins, grid in ((32, 32), (1, 1), (7, 3), (1024, 256)):
                    what = (dtype, shape, order, bins, grid)
                    rows = inspect_rows(con, npy_bytes(arr), bins, grid)
                    assert len(rows) == 1 and rows[0]["key"] is None and rows[0]["record"] is None, what
                    check_row(rows[0], arr, bins, grid, what)
                    n += 1
    assert n == len(REAL_DTYPES) * len(SHAPES) * 8


def test_inspect_edge_cases():
    con = connect()
    cases = {
        "all_nan": np.full((3, 4), np.nan),
        "all_inf": np.array([np.inf, -np.inf, np.inf], dtype="f4"),
        "one_value": np.full((5, 5), 2.5, dtype="f4"),
        "lo_eq_hi_big": np.full(4, 1e17),
        "lo_eq_hi_zero": np.zeros((2, 2), dtype="i8"),
        "row": np.arange(40, dtype="f8").reshape(1, 40),
        "column": np.arange(40, dtype="f8").reshape(40, 1),
        "scalar": np.array(3.5),
        "scalar_nan": np.array(np.nan, dtype="f2"),
        "empty_2d": np.zeros((0, 3), dtype="f4"),
        "tiny_range": np.array([1.0, np.nextafter(1.0, 2.0), 1.0 + 4e-16]),
        "subnormal": np.array([0.0, 5e-324, 1e-323]),
        "bools": np.array([[True, False], [True, True]]),
        "int64_extremes": np.array([-(2**63), 2**63 - 1, 0], dtype="i8"),
        "uint64_extremes": np.array([0, 2**64 - 1, 2**63], dtype="u8"),
        "nan_cells": np.array([[np.nan, np.nan, 1.0], [np.nan, np.nan, 2.0], [3.0, 4.0, 5.0]]),
        "kernels_1x1": np.arange(24, dtype="f4").reshape(4, 6, 1, 1),
        "kernels_big": np.random.default_rng(5).standard_normal((70, 40, 3, 3)).astype("f4"),
        "grid_bigger": np.arange(6, dtype="f4").reshape(2, 3),
        "ints_on_edges": np.arange(65, dtype="i4").reshape(5, 13),
        "floats_on_edges": np.concatenate([np.linspace(-3.1, 7.3, 33), np.linspace(-3.1, 7.3, 1025)]),
        "thirds": np.array([0.1 * k for k in range(-50, 51)] * 3).reshape(3, 101),
        "6d": np.arange(2 * 3 * 1 * 2 * 2 * 2, dtype="i2").reshape(2, 3, 1, 2, 2, 2),
    }
    for name, a in cases.items():
        for bins, grid in ((32, 32), (1, 1), (5, 2), (1024, 256)):
            rows = inspect_rows(con, npy_bytes(a), bins, grid)
            check_row(rows[0], a, bins, grid, (name, bins, grid))
    # complex: counts of NaN elements only, no histogram or heatmap
    z = np.array([[1 + 2j, np.nan + 0j], [complex(0, np.nan), np.inf]], dtype="c8")
    row = inspect_rows(con, npy_bytes(z))[0]
    assert (row["nan"], row["posinf"], row["neginf"], row["histogram"], row["heatmap"]) == (2, None, None, None, None)
    # a range float64 cannot span: no histogram (NumPy's would be meaningless)
    wide = inspect_rows(con, npy_bytes(np.array([-1.7e308, 1.7e308])))[0]
    assert wide["histogram"] is None and wide["nan"] == 0


def test_inspect_statistics_are_ar_stats():
    con = connect()
    rng = np.random.default_rng(11)
    arrays = {"%s_%d" % (dt, i): make(rng, dt, s) for i, (dt, s) in enumerate(zip(REAL_DTYPES, SHAPES * 2))}
    arrays["c"] = (rng.standard_normal((3, 2)) + 1j).astype("c16")
    blob = to_record(arrays)
    cols = "key, dtype, shape, numel, min, max, mean, std, l2"
    want = con.execute("SELECT %s FROM ar_stats(?)" % cols, (blob,)).fetchall()
    got = con.execute("SELECT %s FROM ar_inspect(?)" % cols, (blob,)).fetchall()
    assert got == want
    nonfinite = con.execute("SELECT nonfinite FROM ar_stats(?)", (blob,)).fetchall()
    counts = con.execute(
        "SELECT nan + coalesce(posinf, 0) + coalesce(neginf, 0) FROM ar_inspect(?)", (blob,)
    ).fetchall()
    assert counts[:-1] == nonfinite[:-1]  # complex: an element with a NaN part and an infinite one counts once


def test_inspect_recorddict_rows_in_order():
    con = connect()
    rng = np.random.default_rng(12)
    first = {"w": make(rng, "f4", (4, 3)), "b": make(rng, "f8", (3,))}
    second = {"k": make(rng, ">f2", (2, 2, 3, 3))}
    blob = to_recorddict(
        {"a": first, "metrics": MetricRecord({"loss": 0.5}), "empty": {}, "b": second, "config": ConfigRecord({})}
    )
    rows = inspect_rows(con, blob, 8, 4)
    assert [(r["position"], r["record"], r["key"]) for r in rows] == [(0, "a", "w"), (1, "a", "b"), (2, "b", "k")]
    for row, a in zip(rows, [first["w"], first["b"], second["k"]], strict=True):
        check_row(row, a, 8, 4, row["key"])
    assert con.execute("SELECT DISTINCT kind, bins, grid FROM ar_inspect(?, 8, 4)", (blob,)).fetchall() == [
        ("recorddict", 8, 4)
    ]
