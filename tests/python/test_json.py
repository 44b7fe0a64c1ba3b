# SPDX-License-Identifier: Apache-2.0
"""npy_to_json against arr.tolist() and NumPy's repr of each float, and
npy_from_json round trips, range errors and dtype inference against
np.array, for every dtype."""

import json

import numpy as np
from arlib import (
    all_dtypes,
    assert_json_is_array,
    connect,
    error_of,
    json_values,
    load_npy,
    npy_bytes,
    one,
    random_array,
)


def test_npy_to_json_matches_tolist_for_every_dtype():
    con = connect()
    rng = np.random.default_rng(10)
    for dtype in all_dtypes():
        for shape in [(), (5,), (3, 4), (2, 3, 2), (1, 1, 6), (0,), (2, 0), (4, 0, 2)]:
            arr = random_array(rng, dtype, shape)
            for order in ("C", "F"):
                blob = npy_bytes(np.array(arr, order=order))
                text = one(con, "select npy_to_json(?)", blob)
                assert_json_is_array(text, arr, (dtype, shape, order))
                if dtype.kind in "biu":
                    # exact values: the JSON is arr.tolist() itself
                    assert json.loads(text) == arr.tolist()


def test_npy_to_json_special_values():
    con = connect()
    for dtype in ("<f2", ">f4", "<f8", ">c8", "<c16"):
        arr = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0], dtype=dtype)
        if arr.dtype.kind == "c":
            arr.imag = [np.nan, 1, -np.inf, 0, 2, -0.0]
        text = one(con, "select npy_to_json(?)", npy_bytes(arr))
        assert json.loads(text) == json.loads(json.dumps(json_values(arr.tolist()))), (dtype, text)
        assert_json_is_array(text, arr, dtype)
    # extremes of every float type, subnormals included
    for t in (np.float16, np.float32, np.float64):
        info = np.finfo(t)
        arr = np.array(
            [info.max, -info.max, info.tiny, info.smallest_subnormal, info.eps, -info.smallest_subnormal], dtype=t
        )
        assert_json_is_array(one(con, "select npy_to_json(?)", npy_bytes(arr)), arr, t)


def test_float_digits_match_numpy_repr_exhaustive_half_and_random():
    """Every float16 value, and random float32/float64 bit patterns, print as
    NumPy's repr of the scalar and read back to the same bits."""
    con = connect()
    halves = np.arange(65536, dtype=np.uint16).view(np.float16)
    assert_json_is_array(one(con, "select npy_to_json(?)", npy_bytes(halves)), halves, "all halves")
    rng = np.random.default_rng(11)
    for t, u in ((np.float32, np.uint32), (np.float64, np.uint64)):
        bits = rng.integers(0, np.iinfo(u).max, 20000, dtype=u, endpoint=True)
        arr = bits.view(t)
        assert_json_is_array(one(con, "select npy_to_json(?)", npy_bytes(arr)), arr, t)
        # and values near the positional/exponent switch and powers of ten
        near = np.array([10.0**k for k in range(-8, 20)] + [1e-4, 1e16], dtype=t)
        near = np.concatenate([near, np.nextafter(near, 0), np.nextafter(near, np.inf)]).astype(t)
        assert_json_is_array(one(con, "select npy_to_json(?)", npy_bytes(near)), near, t)


def test_npy_from_json_round_trips_npy_to_json():
    con = connect()
    rng = np.random.default_rng(12)
    for dtype in all_dtypes():
        for shape in [(), (6,), (2, 3), (3, 1, 2)]:
            arr = random_array(rng, dtype, shape)
            blob = npy_bytes(arr)
            back = one(con, "select npy_from_json(npy_to_json(?1), npy_descr(?1))", blob)
            assert back == blob, (dtype, shape)
    # NaN and infinities survive as strings
    arr = np.array([np.nan, np.inf, -np.inf, -0.0], dtype="<f4")
    back = load_npy(one(con, "select npy_from_json(npy_to_json(?), 'float32')", npy_bytes(arr)))
    assert back.tobytes()[4:] == arr.tobytes()[4:] and np.isnan(back[0])


def test_npy_from_json_integer_range_errors():
    con = connect()
    for t in ("i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8"):
        dtype = np.dtype("<" + t)
        info = np.iinfo(dtype)
        ok = one(con, "select npy_from_json(?, ?)", f"[{info.min}, {info.max}]", dtype.str)
        assert ok == npy_bytes(np.array([info.min, info.max], dtype=dtype))
        for bad in (info.min - 1, info.max + 1):
            msg = error_of(con, "select npy_from_json(?, ?)", f"[0, {bad}]", dtype.str)
            assert msg == f"npy_from_json: value at byte 4 is out of range for {dtype.name}", msg
        # floats with an integer value are fine, others are not
        assert one(con, "select npy_from_json('[2.0, 1e2]', ?)", t) == npy_bytes(np.array([2, 100], dtype=dtype))
        assert (
            error_of(con, "select npy_from_json('[0.5]', ?)", t)
            == f"npy_from_json: value at byte 1 is not an integer, dtype is {dtype.name}"
        )
        assert (
            error_of(con, "select npy_from_json('[\"NaN\"]', ?)", t)
            == f"npy_from_json: value at byte 1 is not an integer, dtype is {dtype.name}"
        )


def test_npy_from_json_float_conversion_matches_astype():
    """Decimal text -> float16/32 rounds once, as np.array(x, dtype) does."""
    con = connect()
    rng = np.random.default_rng(13)
    vals = np.concatenate(
        [
            rng.standard_normal(3000) * 10.0 ** rng.integers(-9, 6, 3000),
            np.array(
                [
                    65519.999,
                    65520.0,
                    65504.0,
                    2.0**-24,
                    2.0**-25,
                    3 * 2.0**-26,
                    1e-8,
                    1 + 2.0**-11 + 2.0**-40,
                    1 + 2.0**-11,
                    3.4028235677973366e38,
                    1e39,
                ]
            ),
        ]
    )
    text = json.dumps([float(v) for v in vals])
    for t in ("<f2", ">f2", "<f4", ">f4", "<f8"):
        with np.errstate(over="ignore"):
            want = np.array([float(v) for v in vals], dtype=t)
        assert one(con, "select npy_from_json(?, ?)", text, t) == npy_bytes(want), t


def test_npy_from_json_inference_like_np_array():
    con = connect()
    for text in [
        "[1, 2]",
        "[1.0, 2]",
        "[true, false]",
        "[true, 1]",
        "[false, 0.5]",
        "[]",
        "[[]]",
        "3",
        "-0",
        "[9223372036854775808]",
        "[1, 9223372036854775808]",
        "[true, 18446744073709551615]",
        "[[1, 2], [3, 4]]",
        "[[[0.5]]]",
        "[1e400]",
    ]:
        want = np.array(json.loads(text))
        blob = one(con, "select npy_from_json(?)", text)
        assert one(con, "select npy_dtype(?)", blob) == str(want.dtype), text
        assert blob == npy_bytes(want), text


def test_npy_from_json_complex_pairs():
    con = connect()
    arr = np.array([[1 + 2j, -0.5j], [np.inf - 1j, 3 + 0j]], dtype=np.complex128)
    text = json.dumps(json_values(arr.tolist()))
    for t in ("complex128", ">c16", "complex64", "<c8"):
        got = one(con, "select npy_from_json(?, ?)", text, t)
        assert got == npy_bytes(arr.astype(t)), t
    assert (
        error_of(con, "select npy_from_json('[[1, 2, 3]]', 'complex64')")
        == "npy_from_json: complex values must be [re, im] pairs (innermost lists of length 2)"
    )


def test_npy_item_and_npy_each_values():
    con = connect()
    rng = np.random.default_rng(14)
    for dtype in all_dtypes():
        arr = random_array(rng, dtype, (3, 5))
        for order in ("C", "F"):
            blob = npy_bytes(np.array(arr, order=order))
            rows = con.execute("select i, value from npy_each(?)", (blob,)).fetchall()
            flat = arr.ravel(order="C")
            for i, value in rows:
                x = flat[i]
                assert value == one(con, "select npy_item(?, ?)", blob, i) or value is None
                if dtype.kind == "c":
                    got = [x.real.dtype.type(v) for v in json.loads(value)]
                    assert got[0] == x.real and got[1] == x.imag
                elif dtype.kind == "u" and x > 2**63 - 1:
                    assert isinstance(value, float) and value == float(x)
                elif dtype.kind == "f" and not np.isfinite(x):
                    assert value is None if np.isnan(x) else value == float(x)
                else:
                    assert value == x.item(), (dtype, i, value, x)
