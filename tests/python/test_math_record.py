# SPDX-License-Identifier: Apache-2.0
"""ar_* record math cross-checked with NumPy, key by key: results must be
the bytes of the record NumPy's arrays make (encoded by arlib's independent
protobuf writer), key sets must match, and errors name the key."""

import numpy as np
from arlib import connect, record_bytes
from mathlib import DTYPES, error_of, f64, one, quiet, sample


def model(seed, dtypes=("f4", "f8", "i8", "f2", "c8", "?"), order="C", byteorder="="):
    shapes = [(3, 4), (4,), (), (2, 3), (5,), (2, 2)]
    return [
        (f"layer{i}.{dt}", sample(dt, shapes[i % len(shapes)], seed + i, order, byteorder))
        for i, dt in enumerate(dtypes)
    ]


def test_add_sub_every_dtype_and_layout():
    con = connect()
    with quiet():
        for order, byteorder in (("C", "="), ("F", "="), ("C", ">"), ("F", ">")):
            a = model(1, DTYPES[1:], order, byteorder)  # bool - bool has no subtract
            b = model(2, DTYPES[1:])
            for name, op in (("ar_add", np.add), ("ar_sub", np.subtract)):
                got = one(con, f"SELECT {name}(?, ?)", record_bytes(a), record_bytes(b))
                want = record_bytes([(k, np.asarray(op(x, dict(b)[k]))) for k, x in a])
                assert got == want, (name, order, byteorder)


def test_keys_pair_up_in_any_order():
    con = connect()
    a = model(3)
    b = model(4)
    got = one(con, "SELECT ar_add(?, ?)", record_bytes(a), record_bytes(b[::-1]))
    assert got == record_bytes([(k, np.asarray(x + dict(b)[k])) for k, x in a])  # a's key order


def test_key_mismatch_names_the_key():
    con = connect()
    a, b = model(5), model(6)
    assert error_of(con, "SELECT ar_add(?, ?)", record_bytes(a), record_bytes(b[:-1])) == (
        "ar_add: key 'layer5.?' is missing from argument 2"
    )
    assert error_of(con, "SELECT ar_sub(?, ?)", record_bytes(a[1:]), record_bytes(b)) == (
        "ar_sub: key 'layer0.f4' of argument 2 is missing from argument 1"
    )
    b2 = [(k, np.zeros(7) if k == "layer1.f8" else v) for k, v in b]
    assert error_of(con, "SELECT ar_dot(?, ?)", record_bytes(a), record_bytes(b2)) == (
        "ar_dot: key 'layer1.f8': shapes [4] and [7] differ"
    )
    assert error_of(con, "SELECT ar_allclose(?, ?)", record_bytes(a), record_bytes(b2)) == (
        "ar_allclose: key 'layer1.f8': shapes [4] and [7] differ "
        "(arrays compare when their shapes are equal or one is a () scalar)"
    )
    assert error_of(con, "SELECT ar_add(?, ?)", record_bytes(a), record_bytes(b2)) == (
        "ar_add: key 'layer1.f8': shapes [4] and [7] differ "
        "(arrays combine when their shapes are equal or one is a () scalar)"
    )


def test_scale_and_cast():
    con = connect()
    a = model(7)
    with quiet():
        for s in (0.5, -2, 3):
            assert one(con, "SELECT ar_scale(?, ?)", record_bytes(a), s) == record_bytes(
                [(k, np.asarray(x * float(s))) for k, x in a]
            )
        # default: floating arrays only (the storage use: float32 -> float16)
        want = record_bytes([(k, x.astype(np.float16) if x.dtype.kind == "f" else x) for k, x in a])
        assert one(con, "SELECT ar_cast(?, 'float16')", record_bytes(a)) == want
        assert one(con, "SELECT ar_cast(?, 'float16', 'float')", record_bytes(a)) == want
        want = record_bytes([(k, x.astype(np.float64)) for k, x in a])
        assert one(con, "SELECT ar_cast(?, 'float64', 'all')", record_bytes(a)) == want
    assert error_of(con, "SELECT ar_cast(?, 'int8', 'some')", record_bytes(a)) == (
        "ar_cast: argument 3 must be 'float' or 'all'"
    )
    bad = [("w", np.array([1.0, np.nan]))]
    assert error_of(con, "SELECT ar_cast(?, 'int8')", record_bytes(bad)) == (
        "ar_cast: key 'w': cannot cast nan to int8 (element 1)"
    )


def test_legacy_raw_items_are_arrays_too():
    """A legacy (non-.npy) item is read as the raw buffer its dtype/shape
    describe; results are written as numpy.ndarray items."""
    con = connect()
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    legacy = record_bytes([("w", ("float32", [2, 3], "", w.tobytes()))])
    assert one(con, "SELECT ar_scale(?, 2)", legacy) == record_bytes([("w", w * 2.0)])
    assert one(con, "SELECT ar_add(?, ?)", legacy, record_bytes([("w", w)])) == record_bytes([("w", w + w)])


def test_norm_dot_cosine_allclose_numel():
    con = connect()
    with quiet():
        a = model(8, ("f4", "f8", "i4", "f2", "u1"), "F")
        b = model(9, ("f4", "f8", "i4", "f2", "u1"), "C", ">")
        ra, rb = record_bytes(a), record_bytes(b)
        flat_a = np.concatenate([f64(x).ravel() for _, x in a])
        flat_b = np.concatenate([f64(dict(b)[k]).ravel() for k, _ in a])
        norm, dot, cos, numel = con.execute(
            "SELECT ar_norm(?), ar_dot(?, ?), ar_cosine(?, ?), ar_numel(?)", (ra, ra, rb, ra, rb, ra)
        ).fetchone()
        assert abs(norm - np.linalg.norm(flat_a)) <= 1e-12 * norm
        assert abs(dot - np.dot(flat_a, flat_b)) <= 1e-12 * abs(dot)
        assert abs(cos - np.dot(flat_a, flat_b) / (np.linalg.norm(flat_a) * np.linalg.norm(flat_b))) <= 1e-12
        assert numel == flat_a.size
        assert one(con, "SELECT ar_allclose(?, ?)", ra, ra) == 1
        assert one(con, "SELECT ar_allclose(?, ?)", ra, rb) == 0
        near = record_bytes(
            [(k, np.asarray(x * (1 + 1e-7)).astype(x.dtype) if x.dtype.kind == "f" else x) for k, x in a]
        )
        assert one(con, "SELECT ar_allclose(?, ?)", ra, near) == 1
        assert one(con, "SELECT ar_allclose(?, ?, 0, 0)", ra, near) == 0
        # complex dot is "[re,im]"; cosine refuses complex
        z = record_bytes([("z", np.array([1 + 2j, 3 - 1j]))])
        assert one(con, "SELECT ar_dot(?, ?)", z, z) == "[5.0,-2.0]"
        assert error_of(con, "SELECT ar_cosine(?, ?)", z, z) == (
            "ar_cosine: key 'z': cosine similarity of complex arrays is not supported"
        )
    empty = b""
    assert con.execute(
        "SELECT ar_norm(?), ar_numel(?), ar_dot(?, ?), ar_allclose(?, ?), ar_cosine(?, ?)", (empty,) * 8
    ).fetchone() == (0.0, 0, 0.0, 1, None)
    assert one(con, "SELECT ar_add(?, ?)", empty, empty) == b""


def test_null_and_bad_records():
    con = connect()
    r = record_bytes(model(10))
    for sql in (
        "ar_add(NULL, ?)",
        "ar_sub(?, NULL)",
        "ar_scale(?, NULL)",
        "ar_cast(?, NULL)",
        "ar_norm(NULL)",
        "ar_dot(NULL, ?)",
        "ar_cosine(?, NULL)",
        "ar_allclose(NULL, ?)",
        "ar_numel(NULL)",
    ):
        assert one(con, f"SELECT {sql}", *((r,) * sql.count("?"))) is None, sql
    assert error_of(con, "SELECT ar_norm(x'0a')") == "ar_norm: record blob truncated at byte 1 (item 0)"
    bad = record_bytes([("w", ("float32", [3], "numpy.ndarray", b"not a npy"))])
    assert error_of(con, "SELECT ar_norm(?)", bad) == "ar_norm: not a .npy file (bad magic) (item 0, key 'w')"
