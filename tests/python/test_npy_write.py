# SPDX-License-Identifier: Apache-2.0
"""Everything we write as .npy is byte-identical to numpy.save of the same
array, and everything we return loads with np.load: npy(raw, dtype, shape),
npy_from_json, ar_get of legacy raw arrays, npy_raw of C and Fortran files,
for random arrays of every dtype, both byte orders, and many shapes."""

import json

import numpy as np
from arlib import all_dtypes, connect, json_values, load_npy, npy_bytes, one, random_array, record_bytes

SHAPES = [
    (),
    (0,),
    (1,),
    (7,),
    (2, 0, 3),
    (3, 4),
    (2, 3, 4),
    (1, 1, 1, 1),
    (5, 1, 2),
    (2,) * 8,
    (1,) * 9 + (3,),
    (2, 1) * 5,
    (0, 5),
    (5, 0),
    (1000,),
    (3, 0, 2, 0),
]
# dimensions too large to hold data, with a zero so the array is empty
EMPTY_BIG = [(2**31 - 1, 0), (0, 10**12), (10**15, 0, 7), (12345678901234567, 0), (0,) * 32]


def _shape_json(shape):
    return json.dumps(list(shape), separators=(",", ":"))


def test_npy_from_raw_identical_to_np_save():
    con = connect()
    rng = np.random.default_rng(1)
    checked = 0
    for dtype in all_dtypes():
        for shape in SHAPES:
            arr = random_array(rng, dtype, shape)
            want = npy_bytes(arr)
            for dt in (dtype.str, str(dtype)):
                got = one(con, "select npy(?, ?, ?)", arr.tobytes(), dt, _shape_json(shape))
                assert got == want, (dtype, shape, dt)
            back = load_npy(got)
            assert back.dtype == dtype and back.shape == shape
            assert back.tobytes() == arr.tobytes()
            checked += 1
    assert checked == len(all_dtypes()) * len(SHAPES)


def test_npy_large_and_empty_dims_identical_to_np_save():
    con = connect()
    for dtype in (np.dtype("<f8"), np.dtype(">i2"), np.dtype("|b1"), np.dtype("<c16")):
        for shape in EMPTY_BIG:
            arr = np.zeros(shape, dtype=dtype)
            got = one(con, "select npy(x'', ?, ?)", dtype.str, _shape_json(shape))
            assert got == npy_bytes(arr), (dtype, shape)
            assert json.loads(one(con, "select npy_shape(?)", got)) == list(shape)
            assert one(con, "select npy_numel(?)", got) == 0
        # one large dimension with data: 1 MB of float64
        arr = random_array(np.random.default_rng(2), dtype, (131072,))
        assert one(con, "select npy(?, ?, '[131072]')", arr.tobytes(), dtype.str) == npy_bytes(arr)


def test_ndim_up_to_64_identical_to_np_save():
    """NumPy 1.24 saves at most 32 dimensions; we go to 64 (NumPy 2's limit)."""
    con = connect()
    for ndim in (8, 9, 16, 31, 32):
        shape = tuple([1] * (ndim - 2) + [2, 3])
        arr = np.arange(6, dtype="<u2").reshape(shape)
        assert one(con, "select npy(?, 'uint16', ?)", arr.tobytes(), _shape_json(shape)) == npy_bytes(arr)
    for ndim in (33, 64):
        got = one(con, "select npy(x'0700', 'uint16', ?)", _shape_json([1] * ndim))
        assert one(con, "select npy_ndim(?)", got) == ndim
        assert one(con, "select npy_to_json(?)", got) == "[" * ndim + "7" + "]" * ndim
    assert one(con, "select npy_error(?)", _npy_with_header_shape(64)) is None
    assert one(con, "select npy_error(?)", _npy_with_header_shape(65)) == "shape has 65 dimensions (at most 64)"


def _npy_with_header_shape(ndim):
    header = "{'descr': '<u2', 'fortran_order': False, 'shape': (%s), }" % ("1, " * ndim)
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\x07\x00"


def test_fortran_inputs():
    """npy_raw of a Fortran file is the C-order payload; rebuilt with npy()
    it is numpy.save of the C-contiguous array; every reader sees C order."""
    con = connect()
    rng = np.random.default_rng(3)
    for dtype in all_dtypes():
        for shape in [(3, 4), (2, 3, 4), (1, 5), (4, 1), (2, 2, 2, 2), (3,), (), (0, 3), (2, 0)]:
            arr = np.asfortranarray(random_array(rng, dtype, shape))
            blob = npy_bytes(arr)
            c_bytes = arr.tobytes(order="C")
            if arr.ndim >= 2 and arr.size > 1 and not arr.flags.c_contiguous:
                assert one(con, "select npy_fortran(?)", blob) == 1
            assert one(con, "select npy_raw(?)", blob) == c_bytes, (dtype, shape)
            rebuilt = one(con, "select npy(npy_raw(?1), npy_descr(?1), npy_shape(?1))", blob)
            assert rebuilt == npy_bytes(np.array(arr, order="C")), (dtype, shape)
            assert json.loads(one(con, "select npy_to_json(?)", blob)) == json.loads(
                one(con, "select npy_to_json(?)", rebuilt)
            )
            if arr.size:
                values = [v for (v,) in con.execute("select value from npy_each(?)", (blob,))]
                want = [v for (v,) in con.execute("select value from npy_each(?)", (rebuilt,))]
                assert values == want, (dtype, shape)


def test_npy_from_json_identical_to_np_save():
    con = connect()
    rng = np.random.default_rng(4)
    for dtype in all_dtypes():
        for shape in SHAPES:
            if dtype.kind == "c" and shape == ():
                continue  # a complex scalar is written as [re, im]: covered below
            arr = random_array(rng, dtype, shape)
            text = json.dumps(json_values(arr.tolist()))
            got = one(con, "select npy_from_json(?, ?)", text, dtype.str)
            if arr.size == 0 and arr.ndim > 1 and 0 in shape[:-1]:
                # tolist() of (2, 0, 3) is [[], []]: the axes after the first
                # zero are lost, so the array read back has shape (2, 0)
                continue
            assert got == npy_bytes(arr), (dtype, shape, text[:80])
    # complex scalars
    got = one(con, "select npy_from_json('[1.5, -2]', 'complex64')")
    assert got == npy_bytes(np.array(1.5 - 2j, dtype=np.complex64))


def test_npy_from_json_inferred_dtype_identical_to_np_save():
    con = connect()
    cases = [
        "[1, 2, 3]",
        "[[1.5, 2], [3, 4]]",
        "[true, false, true]",
        "[true, 2]",
        "7",
        "2.5",
        "[]",
        "[[], []]",
        "[9223372036854775807, -9223372036854775808]",
        "[9223372036854775808, 18446744073709551615]",
        "[-1, 9223372036854775808]",
        "[[[1]]]",
        "[0.1, 1e-300, 1e300, -0.0]",
        "true",
    ]
    for text in cases:
        want = np.array(json.loads(text))
        assert one(con, "select npy_from_json(?)", text) == npy_bytes(want), text


def test_legacy_raw_ar_get_identical_to_np_save():
    """ar_get converts a legacy raw item (stype "") to the .npy numpy.save
    would write for np.frombuffer(data, dtype).reshape(shape)."""
    con = connect()
    rng = np.random.default_rng(5)
    for dtype in all_dtypes():
        for shape in SHAPES:
            arr = random_array(rng, dtype, shape)
            for name in (str(dtype), dtype.str):
                rec = record_bytes([("w", (name, list(shape), "", arr.tobytes()))])
                got = one(con, "select ar_get(?, 'w')", rec)
                assert got == npy_bytes(arr), (dtype, shape, name)
                assert one(con, "select ar_data(?, 'w')", rec) == arr.tobytes()
                assert one(con, "select ar_valid(?)", rec) == 1
            # other legacy stypes are raw too
            rec = record_bytes([("w", (str(dtype), list(shape), "torch.Tensor", arr.tobytes()))])
            assert one(con, "select ar_get(?, 'w')", rec) == npy_bytes(arr)


def test_legacy_raw_size_mismatch_is_an_error():
    con = connect()
    rec = record_bytes([("w", ("float32", [2, 3], "", b"\0" * 20))])
    msg = "raw array data has 20 bytes, dtype and shape need 24 (item 0, key 'w')"
    assert one(con, "select ar_error(?)", rec) == msg
    try:
        one(con, "select ar_get(?, 'w')", rec)
    except Exception as e:
        assert str(e) == "ar_get: " + msg
    else:
        raise AssertionError("no error")
    rec = record_bytes([("w", ("<U3", [1], "", b"\0" * 12))])
    assert (
        one(con, "select ar_error(?)", rec)
        == "unsupported dtype '<U3' (unicode strings are not numeric) (item 0, key 'w')"
    )


def test_results_load_with_np_load():
    """Every .npy the extension returns loads with np.load(allow_pickle=False)."""
    con = connect()
    rng = np.random.default_rng(6)
    blobs = []
    for dtype in all_dtypes():
        arr = random_array(rng, dtype, (3, 2))
        blob = npy_bytes(np.asfortranarray(arr))
        rec = record_bytes([("raw", (str(dtype), [3, 2], "", arr.tobytes())), ("npy", arr)])
        blobs += [
            one(con, "select npy(npy_raw(?1), npy_descr(?1), npy_shape(?1))", blob),
            one(con, "select npy_from_json(npy_to_json(?1), npy_descr(?1))", blob),
            one(con, "select ar_get(?, 'raw')", rec),
            one(con, "select ar_get(?, 'npy')", rec),
            one(con, "select data from array_record(?) where key = 'npy'", rec),
        ]
        for b in blobs[-5:]:
            got = load_npy(b)
            assert got.dtype == dtype and got.shape == (3, 2)
            np.testing.assert_array_equal(got, arr)
