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
