# SPDX-License-Identifier: Apache-2.0
"""Every vector made by real NumPy and real Flower (tests/data, described by
MANIFEST.json) read through the extension and checked against the manifest
and against np.load."""

import hashlib
import json
import math

import numpy as np
from arlib import assert_json_is_array, connect, data, load_npy, manifest, npy_bytes, one


def _same(a, b):
    """Equality with NaN == NaN and -0.0 != 0.0."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return a == b and type(a) is type(b)


def test_npy_vectors_metadata_match_manifest():
    con = connect()
    entries = manifest()["npy"]
    assert len(entries) == 35
    for e in entries:
        blob = data(e["file"])
        row = con.execute(
            "select npy_dtype(?1), npy_descr(?1), npy_shape(?1), npy_ndim(?1), npy_numel(?1),"
            " npy_nbytes(?1), npy_fortran(?1), npy_version(?1), npy_valid(?1), npy_error(?1)",
            (blob,),
        ).fetchone()
        version = e["header_version"][0] if e["header_version"] else 1
        want = (
            e["dtype_str"],
            e["descr"],
            json.dumps(e["shape"], separators=(",", ":")),
            len(e["shape"]),
            e["numel"],
            e["nbytes"],
            int(e["fortran_order"]),
            version,
            1,
            None,
        )
        assert row == want, (e["file"], row, want)
        assert len(blob) == e["file_bytes"]


def test_npy_vectors_values_match_np_load():
    con = connect()
    for e in manifest()["npy"]:
        blob = data(e["file"])
        arr = load_npy(blob)
        assert str(arr.dtype) == e["dtype_str"] and list(arr.shape) == e["shape"]
        text = one(con, "select npy_to_json(?)", blob)
        assert_json_is_array(text, arr, e["file"])
        if "values_c_order" in e:
            flat = e["values_c_order"]
            got = np.ravel(arr).tolist()
            if arr.dtype.kind == "c":
                got = [[v.real, v.imag] for v in got]
            # the manifest writes NaN/Inf as null
            got = [None if isinstance(v, float) and not math.isfinite(v) else v for v in got]
            assert got == flat, e["file"]
        # npy_raw: C order, the file's own byte order
        raw = one(con, "select npy_raw(?)", blob)
        assert raw == arr.tobytes(order="C"), e["file"]
        # every element through npy_item and npy_each
        items = con.execute("select i, idx, value from npy_each(?)", (blob,)).fetchall()
        assert len(items) == arr.size
        for i, idx, value in items:
            index = np.unravel_index(i, arr.shape) if arr.ndim else ()
            assert json.loads(idx) == [int(x) for x in index]
            assert _same_sql(value, arr[index]), (e["file"], i, value, arr[index])
            if i % 7 == 0:
                assert _same_sql(one(con, "select npy_item(?, ?)", blob, i), arr[index])
                assert _same_sql(one(con, "select npy_item(?, ?)", blob, i - arr.size), arr[index])


def _same_sql(value, x):
    """A SQL value as npy_item/npy_each return element x."""
    if isinstance(x, np.complexfloating):
        specials = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
        parts = [x.real.dtype.type(specials.get(v, v)) for v in json.loads(value)]
        return _same([float(p) for p in parts], [float(x.real), float(x.imag)])
    x = x.item() if hasattr(x, "item") else x
    if isinstance(x, bool):
        return value == int(x) and isinstance(value, int)
    if isinstance(x, int):
        if -(2**63) <= x < 2**63:
            return value == x and isinstance(value, int)
        return isinstance(value, float) and value == float(x)
    if math.isnan(x):
        return value is None
    return isinstance(value, float) and value == x


def test_npy_vectors_rewritten_byte_identical():
    """npy(npy_raw(b), descr, shape) is numpy.save of the same array."""
    con = connect()
    for e in manifest()["npy"]:
        blob = data(e["file"])
        arr = load_npy(blob)
        ours = one(con, "select npy(npy_raw(?1), npy_descr(?1), npy_shape(?1))", blob)
        assert ours == npy_bytes(np.array(arr, order="C")), e["file"]
        if not e["fortran_order"] and e["header_version"] is None:
            assert ours == blob, e["file"]


def test_record_vectors_match_manifest():
    con = connect()
    entries = manifest()["records"]
    assert len(entries) == 5
    for e in entries:
        rec = data(e["file"])
        assert len(rec) == e["blob_bytes"]
        assert one(con, "select ar_len(?)", rec) == e["len"]
        assert one(con, "select ar_count_bytes(?)", rec) == e["count_bytes"]
        assert json.loads(one(con, "select ar_keys(?)", rec)) == [i["key"] for i in e["items"]]
        assert one(con, "select ar_valid(?)", rec) == 1
        summary = json.loads(one(con, "select ar_json(?)", rec))
        rows = con.execute(
            "select key, position, dtype, shape, ndim, numel, stype, nbytes, data from array_record(?)", (rec,)
        ).fetchall()
        assert len(rows) == e["len"]
        for pos, (item, row) in enumerate(zip(e["items"], rows)):
            key = item["key"]
            shape = json.dumps(item["shape"], separators=(",", ":"))
            assert row[:8] == (
                key,
                pos,
                item["dtype"],
                shape,
                len(item["shape"]),
                int(np.prod(item["shape"], dtype=np.int64)),
                item["stype"],
                item["nbytes"],
            )
            assert hashlib.sha256(row[8]).hexdigest() == item["data_sha256"]
            assert summary[key] == {
                "dtype": item["dtype"],
                "shape": item["shape"],
                "stype": item["stype"],
                "nbytes": item["nbytes"],
            }
            got = con.execute(
                "select ar_has(?1, ?2), ar_dtype(?1, ?2), ar_shape(?1, ?2), ar_stype(?1, ?2),"
                " ar_nbytes(?1, ?2), ar_data(?1, ?2), ar_get(?1, ?2)",
                (rec, key),
            ).fetchone()
            assert got[:6] == (1, item["dtype"], shape, item["stype"], item["nbytes"], row[8])
            arr = load_npy(got[6])
            if item["stype"] == "numpy.ndarray":
                assert got[6] == got[5]
                np.testing.assert_array_equal(arr, load_npy(got[5]))
            else:
                # legacy raw buffer: np.frombuffer(data, dtype).reshape(shape)
                want = np.frombuffer(got[5], dtype=item["dtype"]).reshape(item["shape"])
                np.testing.assert_array_equal(arr, want)
                assert got[6] == npy_bytes(want)
            assert str(arr.dtype) == item["dtype"] and list(arr.shape) == item["shape"]


def test_fedavg_vectors_read():
    con = connect()
    for case in manifest()["fedavg"]:
        for f in case["clients"] + [case["result"]]:
            rec = data(f)
            assert one(con, "select ar_valid(?)", rec) == 1, f
            keys = json.loads(one(con, "select ar_keys(?)", rec))
            for k in keys:
                arr = load_npy(one(con, "select ar_get(?, ?)", rec, k))
                assert json.loads(one(con, "select ar_shape(?, ?)", rec, k)) == list(arr.shape)
                assert one(con, "select ar_dtype(?, ?)", rec, k) == str(arr.dtype)
            # rebuilt from its own arrays it is the same bytes
            rebuilt = one(con, "select ar_agg(key, data) from array_record(?)", rec)
            assert rebuilt == rec, f


def test_bad_npy_vectors_match_numpy_verdict():
    """What NumPy refuses we refuse; of what it loads we accept only the
    numeric arrays (trailing bytes are ignored, as NumPy does)."""
    con = connect()
    for e in manifest()["bad_npy"]:
        blob = data(e["file"])
        valid = one(con, "select npy_valid(?)", blob)
        if e["file"].endswith("extra_trailing_bytes.npy"):
            assert valid == 1 and e["numpy_loads"]
            np.testing.assert_array_equal(
                load_npy(one(con, "select npy(npy_raw(?1), npy_descr(?1), npy_shape(?1))", blob)), load_npy(blob)
            )
        else:
            assert valid == 0, e["file"]
