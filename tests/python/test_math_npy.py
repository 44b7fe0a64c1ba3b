# SPDX-License-Identifier: Apache-2.0
"""npy_* math cross-checked with NumPy: reductions and elementwise functions
for every dtype family, both byte orders, C and Fortran order, NaN/Inf and
empty arrays. Elementwise results must be the very bytes np.save writes for
NumPy's own result."""

import json

import numpy as np
from arlib import connect, load_npy, npy_bytes
from mathlib import (
    DTYPES,
    FLOATS,
    SHAPES,
    as_complex,
    close,
    error_of,
    f64,
    one,
    quiet,
    sample,
    sql_number,
    variants,
)

OPS = {"npy_add": np.add, "npy_sub": np.subtract, "npy_mul": np.multiply}


def check_number(got, want, what, rtol=1e-12):
    if isinstance(want, complex):
        assert isinstance(got, str), (what, got)
        g = as_complex(got)
        assert abs(g - want) <= rtol * max(abs(want), 1e-300) or g == want, (what, g, want)
        return
    want = sql_number(want)
    assert close(got, want, rtol), (what, got, want)


def test_reductions_every_dtype_order_and_shape():
    con = connect()
    checked = 0
    with quiet():
        for dt in DTYPES:
            for shape in SHAPES:
                for a in variants(dt, shape, seed=len(shape)):
                    b = npy_bytes(a)
                    ref = f64(a)
                    cplx = a.dtype.kind == "c"
                    s = ref.sum()
                    check_number(one(con, "SELECT npy_sum(?)", b), complex(s) if cplx else float(s), ("sum", dt, shape))
                    mean = one(con, "SELECT npy_mean(?)", b)
                    if a.size == 0:
                        assert mean is None
                    else:
                        m = ref.mean()
                        check_number(mean, complex(m) if cplx else float(m), ("mean", dt, shape))
                    std = one(con, "SELECT npy_std(?)", b)
                    assert (std is None) if a.size == 0 else close(std, float(np.std(ref)), 1e-12, 1e-12), (
                        dt,
                        shape,
                        std,
                    )
                    for ord_sql, ord_np in (("2", 2), ("1", 1), ("'inf'", np.inf)):
                        got = one(con, f"SELECT npy_norm(?, {ord_sql})", b)
                        if a.size == 0:
                            assert got == (None if ord_np == np.inf else 0.0), (dt, shape, ord_sql, got)
                        else:
                            assert close(got, float(np.linalg.norm(ref.ravel(), ord_np)), 1e-12), (dt, shape, ord_sql)
                    assert one(con, "SELECT npy_count_nonfinite(?)", b) == 0
                    if cplx:
                        assert (
                            error_of(con, "SELECT npy_min(?)", b)
                            == f"npy_min: complex arrays have no order (dtype {a.dtype})"
                        )
                        continue
                    mn, mx = con.execute("SELECT npy_min(?), npy_max(?)", (b, b)).fetchone()
                    if a.size == 0:
                        assert mn is None and mx is None
                        continue
                    want_mn, want_mx = a.min(), a.max()
                    if a.dtype.kind in "biu":
                        assert type(mn) is int and mn == int(want_mn) and mx == int(want_mx), (dt, shape)
                    else:
                        assert mn == float(want_mn) and mx == float(want_mx), (dt, shape)
                    checked += 1
    assert checked > 200


def test_reductions_with_nan_and_inf():
    con = connect()
    with quiet():
        for dt in FLOATS + ["c8", "c16"]:
            for order in ("C", "F"):
                for byteorder in ("<", ">"):
                    a = sample(dt, (4, 5), 3, order, byteorder, special=True)
                    b = npy_bytes(a)
                    assert one(con, "SELECT npy_count_nonfinite(?)", b) == 3
                    if a.dtype.kind == "c":
                        continue  # complex sums come back as "[re,im]" text
                    assert (
                        con.execute(
                            "SELECT npy_sum(?), npy_min(?), npy_max(?), npy_mean(?), npy_std(?),"
                            " npy_norm(?, 'inf'), npy_norm(?)",
                            (b,) * 7,
                        ).fetchone()
                        == (None,) * 7
                    )
        # infinities without NaN survive as +-Inf
        b = npy_bytes(np.array([1.0, np.inf, -2.0], dtype=np.float32))
        assert con.execute("SELECT npy_sum(?), npy_max(?), npy_min(?), npy_norm(?, 1)", (b, b, b, b)).fetchone() == (
            np.inf,
            np.inf,
            -2.0,
            np.inf,
        )
        b = npy_bytes(np.array([np.inf, -np.inf]))
        assert one(con, "SELECT npy_sum(?)", b) is None  # inf - inf = nan


def test_float64_reductions_match_numpy_to_1e12():
    """Pairwise summation in double against NumPy's own float64 results."""
    con = connect()
    rng = np.random.default_rng(7)
    x = rng.standard_normal(300_001) + 0.25
    y = rng.standard_normal(300_001) - 0.5
    xf = np.asfortranarray(x[:300_000].reshape(600, 500))
    yf = np.asfortranarray(y[:300_000].reshape(600, 500))
    for a, b2 in ((x, y), (x.astype(">f8"), y), (xf, yf)):
        ba, bb = npy_bytes(a), npy_bytes(b2)
        got = con.execute(
            "SELECT npy_sum(?), npy_mean(?), npy_std(?), npy_norm(?), npy_dot(?, ?), npy_cosine(?, ?)",
            (ba, ba, ba, ba, ba, bb, ba, bb),
        ).fetchone()
        want = (
            np.sum(a),
            np.mean(a),
            np.std(a),
            np.linalg.norm(a.ravel()),
            np.dot(a.ravel(), b2.ravel()),
            np.dot(a.ravel(), b2.ravel()) / (np.linalg.norm(a.ravel()) * np.linalg.norm(b2.ravel())),
        )
        for g, w in zip(got, want):
            assert abs(g - w) <= 1e-12 * abs(w), (g, w)


def expected_binary(op, a, b):
    """NumPy's result of the pair, promoted by dtype alone (NEP 50)."""
    t = np.promote_types(a.dtype, b.dtype)
    return op(a.astype(t), b.astype(t))


def npy_parts(blob):
    """The header (magic, version, length, dict and padding) and the payload of a version 1.0 .npy."""
    assert blob[:8] == b"\x93NUMPY\x01\x00", blob[:8]
    end = 10 + int.from_bytes(blob[8:10], "little")
    return blob[:end], blob[end:]


def check_complex_product(got, want, a, b, what):
    """Our complex product `got` of a and b against NumPy's `want`, part by part.

    We compute re = ar*br - ai*bi and im = ar*bi + ai*br with each product
    rounded to the result dtype, never fused, so the bits are the same on every
    CPU. Some NumPy builds fuse a product into the add (FMA), in some SIMD loops
    only: Debian's NumPy 1.24 on AVX-512 does for a complex128 array times a
    () complex scalar, and then its last bits depend on the CPU (with
    NPY_DISABLE_CPU_FEATURES="AVX512F AVX512CD AVX512_SKX" they are ours).
    So each real and imaginary part must be, bit for bit, the unfused product
    computed here with NumPy's float multiplications (which never fuse), or
    NumPy's own result; or, only where NumPy's result is not the unfused
    product (NumPy fused there), within 1 ulp of NumPy's. A tolerance alone
    would not do: where ar*br and ai*bi nearly cancel, fused and unfused
    results are many ulps apart, and a real error can be 1 ulp."""
    t = want.dtype
    assert got.dtype == t and got.shape == want.shape, what
    A, B = np.broadcast_arrays(a.astype(t), b.astype(t))
    ar, ai, br, bi = A.real, A.imag, B.real, B.imag
    unfused = (ar * br - ai * bi, ar * bi + ai * br)
    bits = np.dtype(f"u{t.itemsize // 2}")
    for part, ours, plain, numpys in zip(("real", "imag"), (got.real, got.imag), unfused, (want.real, want.imag)):
        ours_b, plain_b, numpys_b = (np.ascontiguousarray(v).view(bits) for v in (ours, plain, numpys))
        fused = numpys_b != plain_b
        ok = (
            (ours_b == plain_b) | (ours_b == numpys_b) | (fused & (np.abs(ours - numpys) <= np.abs(np.spacing(numpys))))
        )
        assert ok.all(), (part, ours[~ok], numpys[~ok], plain[~ok], what)


def test_binary_every_dtype_pair_is_numpy_bytes():
    """Every result is byte for byte what np.save writes for NumPy's result,
    except that complex products may differ from NumPy's in the last bit
    where NumPy fuses a multiply-add (check_complex_product); their .npy
    headers are still NumPy's bytes."""
    con = connect()
    checked = 0
    with quiet():
        for x in DTYPES:
            for y in DTYPES:
                a_c, b_c = sample(x, (3, 4), 1), sample(y, (3, 4), 2)
                pairs = [
                    (a_c, b_c),
                    (np.asfortranarray(a_c), np.asfortranarray(b_c)),
                    (np.asfortranarray(a_c), b_c),
                    (a_c.astype(a_c.dtype.newbyteorder(">")), b_c),
                    (a_c, sample(y, (), 5)),
                    (sample(x, (), 6), np.asfortranarray(b_c)),
                    (sample(x, (0, 4), 1), sample(y, (0, 4), 2)),
                ]
                for name, op in OPS.items():
                    for a, b in pairs:
                        if name == "npy_sub" and a.dtype.kind == b.dtype.kind == "b":
                            assert error_of(con, f"SELECT {name}(?, ?)", npy_bytes(a), npy_bytes(b)) == (
                                "npy_sub: boolean subtract is not supported, as in NumPy (cast to an integer type first)"
                            )
                            continue
                        want = expected_binary(op, a, b)
                        got = one(con, f"SELECT {name}(?, ?)", npy_bytes(a), npy_bytes(b))
                        what = (name, x, y, a.shape, b.shape, load_npy(got), want)
                        if name == "npy_mul" and want.dtype.kind == "c":
                            assert npy_parts(got)[0] == npy_parts(npy_bytes(want))[0], what
                            assert len(got) == len(npy_bytes(want)), what
                            check_complex_product(load_npy(got), want, a, b, what)
                        else:
                            assert got == npy_bytes(want), what
                        checked += 1
    assert checked > 3000


def test_binary_nan_inf_and_wrapping():
    con = connect()
    with quiet():
        a = np.array([np.nan, np.inf, -np.inf, 1.0, -0.0], dtype=np.float32)
        b = np.array([1.0, np.inf, np.inf, np.inf, 0.0], dtype=np.float32)
        for name, op in OPS.items():
            assert one(con, f"SELECT {name}(?, ?)", npy_bytes(a), npy_bytes(b)) == npy_bytes(op(a, b))
        i = np.array([127, -128, 100], dtype=np.int8)
        j = np.array([1, -1, 100], dtype=np.int8)
        for name, op in OPS.items():
            assert one(con, f"SELECT {name}(?, ?)", npy_bytes(i), npy_bytes(j)) == npy_bytes(op(i, j))


def test_binary_shape_mismatch():
    con = connect()
    msg = error_of(con, "SELECT npy_add(?, ?)", npy_bytes(np.zeros((2, 3))), npy_bytes(np.zeros(3)))
    assert (
        msg == "npy_add: shapes [2,3] and [3] differ (arrays combine when their shapes are equal or one is a () scalar)"
    )


def test_scale_every_dtype():
    con = connect()
    with quiet():
        for dt in DTYPES:
            for a in variants(dt, (3, 4), seed=4):
                for s in (2.5, -3, 0.1, 0):
                    got = one(con, "SELECT npy_scale(?, ?)", npy_bytes(a), s)
                    want = a * float(s)
                    assert got == npy_bytes(want), (dt, s, load_npy(got), want)
        z = np.array([np.inf + 0j, 1 + 1j], dtype=np.complex64)  # inf * (2+0j): nan imaginary, as NumPy
        assert one(con, "SELECT npy_scale(?, 2)", npy_bytes(z)) == npy_bytes(z * 2.0)
    assert error_of(con, "SELECT npy_scale(?, 'x')", npy_bytes(np.zeros(2))) == (
        "npy_scale: argument 2 must be the factor (a number), got text"
    )


def test_cast_every_pair():
    con = connect()
    vals = np.array([0, 1, 2, 100, 3, 7.5, -0.0, 0.25])
    with quiet():
        for x in DTYPES:
            src = (vals != 0) if x == "?" else vals.astype(x)
            for y in DTYPES + [">f4", ">i8", "<c16", "float", "int"]:
                for a in (src, np.asfortranarray(src.reshape(2, 4)), src.astype(src.dtype.newbyteorder(">"))):
                    got = one(con, "SELECT npy_cast(?, ?)", npy_bytes(a), y)
                    assert got == npy_bytes(a.astype(y)), (x, y, load_npy(got), a.astype(y))


def test_cast_refuses_values_numpy_leaves_undefined():
    con = connect()
    cases = [
        (np.array([1.0, np.nan]), "int32", "cannot cast nan to int32 (element 1)"),
        (np.array([np.inf]), "int64", "cannot cast inf to int64 (element 0)"),
        (np.array([300.0]), "int8", "cannot cast 300 to int8 (element 0)"),
        (np.array([-1.0], dtype=np.float32), "uint16", "cannot cast -1 to uint16 (element 0)"),
        (np.array([2.0**63]), "int64", "cannot cast 9.2233720368547758e+18 to int64 (element 0)"),
        (np.asfortranarray(np.array([[0.0, 1.0], [np.nan, 2.0]])), "int16", "cannot cast nan to int16 (element 2)"),
    ]
    for a, dt, msg in cases:
        assert error_of(con, "SELECT npy_cast(?, ?)", npy_bytes(a), dt) == "npy_cast: " + msg
    # integers wrap and complex drops its imaginary part, as astype
    with quiet():
        a = np.array([300, -1], dtype=np.int64)
        assert one(con, "SELECT npy_cast(?, 'uint8')", npy_bytes(a)) == npy_bytes(a.astype(np.uint8))
        z = np.array([1.9 - 2j, -2.5 + 1j])
        assert one(con, "SELECT npy_cast(?, 'int8')", npy_bytes(z)) == npy_bytes(z.astype(np.int8))
    assert error_of(con, "SELECT npy_cast(?, 'U3')", npy_bytes(a)) == (
        "npy_cast: unsupported dtype 'U3' (unicode strings are not numeric)"
    )


def test_reshape_like_numpy():
    con = connect()
    base = np.arange(24, dtype=">i2").reshape(2, 3, 4)
    for a in (base, np.asfortranarray(base), base.astype("<f4")):
        for shape in ([4, 6], [-1], [2, -1, 3], [24], [2, 3, 4], [2, 1, 3, 1, 4], [1, 24, 1], [4, 3, 2]):
            got = one(con, "SELECT npy_reshape(?, ?)", npy_bytes(a), json.dumps(shape))
            assert got == npy_bytes(a.reshape(shape)), (a.dtype, a.flags.f_contiguous, shape)
    assert one(con, "SELECT npy_reshape(?, -1)", npy_bytes(base)) == npy_bytes(base.reshape(-1))
    assert one(con, "SELECT npy_reshape(?, '[]')", npy_bytes(np.array([5.0]))) == npy_bytes(np.array(5.0))
    assert one(con, "SELECT npy_reshape(?, '[-1, 3]')", npy_bytes(np.zeros((0, 3)))) == npy_bytes(np.zeros((0, 3)))
    b = npy_bytes(base)
    assert error_of(con, "SELECT npy_reshape(?, '[5,-1]')", b) == (
        "npy_reshape: cannot reshape an array of 24 elements into shape [5,-1]"
    )
    assert error_of(con, "SELECT npy_reshape(?, '[-1,-1]')", b) == "npy_reshape: only one dimension can be -1"
    assert error_of(con, "SELECT npy_reshape(?, '[-2]')", b) == (
        "npy_reshape: shape must be a JSON array of non-negative integers (one may be -1)"
    )
    assert error_of(con, "SELECT npy_reshape(?, '[-1,0]')", npy_bytes(np.zeros(0))) == (
        "npy_reshape: cannot reshape an array of 0 elements into shape [-1,0]"
    )


def test_dot_cosine_allclose():
    con = connect()
    with quiet():
        for x in DTYPES:
            for y in ("f4", "f8", "i4", "c8"):
                for a in variants(x, (3, 4), seed=8):
                    b = sample(y, (3, 4), 9, "F")
                    got = one(con, "SELECT npy_dot(?, ?)", npy_bytes(a), npy_bytes(b))
                    want = np.dot(f64(a).ravel(), f64(b).ravel())
                    if want.imag != 0 or a.dtype.kind == "c" or b.dtype.kind == "c":
                        assert abs(as_complex(got) - want) <= 1e-12 * abs(want)
                        continue
                    assert close(got, float(want.real), 1e-12), (x, y)
                    cos = one(con, "SELECT npy_cosine(?, ?)", npy_bytes(a), npy_bytes(b))
                    ra, rb = f64(a).ravel(), f64(b).ravel()
                    den = np.linalg.norm(ra) * np.linalg.norm(rb)
                    assert (cos is None) if den == 0 else close(cos, float(np.dot(ra, rb) / den), 1e-12), (x, y)
    zero = npy_bytes(np.zeros(3))
    assert one(con, "SELECT npy_cosine(?, ?)", zero, npy_bytes(np.ones(3))) is None
    assert error_of(con, "SELECT npy_cosine(?, ?)", npy_bytes(np.ones(2, np.complex64)), npy_bytes(np.ones(2))) == (
        "npy_cosine: cosine similarity of complex arrays is not supported (dtype complex64)"
    )
    assert error_of(con, "SELECT npy_dot(?, ?)", zero, npy_bytes(np.zeros(4))) == "npy_dot: shapes [3] and [4] differ"
    # allclose: NumPy's formula, defaults, NaN never close, equal infinities close, () broadcasts
    cases = [
        (np.array([1.0, 1e10]), np.array([1.0 + 1e-6, 1.00001e10]), ()),
        (np.array([1.0, np.nan]), np.array([1.0, np.nan]), ()),
        (np.array([np.inf, 1.0]), np.array([np.inf, 1.0]), ()),
        (np.array([np.inf]), np.array([-np.inf]), ()),
        (np.array([1.0, 1.1]), np.array(1.0), (0.2,)),
        (np.array([0.0]), np.array([1e-9]), (0.0, 0.0)),
        (np.array([1 + 1j, 2]), np.array([1 + 1.000001j, 2], dtype=np.complex64), ()),
        (np.arange(6).reshape(2, 3), np.asfortranarray(np.arange(6).reshape(2, 3)), ()),
        (np.zeros((0, 2)), np.zeros((0, 2)), ()),
    ]
    for a, b, tol in cases:
        args = ", ".join(["?"] * (2 + len(tol)))
        got = one(con, f"SELECT npy_allclose({args})", npy_bytes(a), npy_bytes(b), *tol)
        assert got == int(np.allclose(a, b, *tol)), (a, b, tol)
    assert error_of(con, "SELECT npy_allclose(?, ?)", zero, npy_bytes(np.zeros(4))) == (
        "npy_allclose: shapes [3] and [4] differ (arrays compare when their shapes are equal or one is a () scalar)"
    )


def test_empty_arrays():
    con = connect()
    e = npy_bytes(np.zeros((2, 0), dtype=np.float32))
    row = con.execute(
        "SELECT npy_sum(?), npy_mean(?), npy_min(?), npy_max(?), npy_std(?), npy_norm(?), npy_dot(?, ?),"
        " npy_allclose(?, ?), npy_count_nonfinite(?)",
        (e,) * 11,
    ).fetchone()
    assert row == (0.0, None, None, None, None, 0.0, 0.0, 1, 0)
    assert one(con, "SELECT npy_add(?, ?)", e, e) == e
    assert one(con, "SELECT npy_cast(?, 'int8')", e) == npy_bytes(np.zeros((2, 0), np.int8))


def test_null_in_null_out_and_bad_arguments():
    con = connect()
    x = npy_bytes(np.ones(2))
    for sql in (
        "npy_sum(NULL)",
        "npy_mean(NULL)",
        "npy_min(NULL)",
        "npy_max(NULL)",
        "npy_std(NULL)",
        "npy_norm(NULL)",
        "npy_norm(?, NULL)",
        "npy_count_nonfinite(NULL)",
        "npy_dot(?, NULL)",
        "npy_cosine(NULL, ?)",
        "npy_allclose(?, NULL)",
        "npy_allclose(?, ?, NULL)",
        "npy_add(NULL, ?)",
        "npy_sub(?, NULL)",
        "npy_mul(NULL, NULL)",
        "npy_scale(?, NULL)",
        "npy_cast(?, NULL)",
        "npy_reshape(NULL, '[2]')",
    ):
        args = (x,) * sql.count("?")
        assert one(con, f"SELECT {sql}", *args) is None, sql
    assert error_of(con, "SELECT npy_sum(x'00')") == "npy_sum: not a .npy file (bad magic)"
    assert error_of(con, "SELECT npy_sum('text')") == "npy_sum: argument 1 must be a .npy BLOB, got text"
    assert error_of(con, "SELECT npy_norm(?, 3)", x) == "npy_norm: ord must be 1, 2 or 'inf'"
    assert error_of(con, "SELECT npy_norm(?, 'fro')", x) == "npy_norm: ord must be 1, 2 or 'inf'"
    assert one(con, "SELECT npy_norm(?, 9e999)", x) == 1.0
    assert error_of(con, "SELECT npy_allclose(?, ?, 'a')", x, x) == (
        "npy_allclose: argument 3 must be rtol (a number), got text"
    )


def test_manifest_vectors_sum_min_max_l2():
    """Every .npy test vector with NumPy's float64 sum/min/max/l2 in MANIFEST
    (made by real NumPy; NaN/Inf there are null). MANIFEST's sums of integer
    arrays are float64 sums; ours are exact (np.sum is too, until it wraps),
    so integer sums are checked against Python's exact integer sum."""
    from arlib import data, manifest

    con = connect()
    checked = 0
    for entry in manifest()["npy"]:
        if "sum" not in entry:
            continue
        b = data(entry["file"])
        got = con.execute("SELECT npy_sum(?), npy_min(?), npy_max(?), npy_norm(?)", (b,) * 4).fetchone()
        kind = entry["descr"][1]
        for g, name in zip(got, ("sum", "min", "max", "l2")):
            if name not in entry:  # empty arrays give a sum only
                continue
            w = entry[name]
            if name == "sum" and kind in "biu":
                w = float(sum(int(v) for v in load_npy(b).ravel()))
            if kind == "c" and name in ("min", "max"):
                continue
            if isinstance(g, str):  # complex sum
                g = as_complex(g)
                w = complex(*w) if isinstance(w, list) else w
            if w is None:
                assert g is None, (entry["file"], name, g)
            else:
                assert close(g, w, 1e-12), (entry["file"], name, g, w)
        checked += 1
    assert checked >= 20


def test_cast_to_float16_keeps_numpy_nan_payloads():
    """float32 -> float16 keeps NaN payload bits (signalling NaNs too) as
    NumPy's npy_floatbits_to_halfbits does, and rounds ties at 65520 up."""
    con = connect()
    bits = np.array(
        [
            0x7FC00000,
            0x7F80205C,
            0xFF800001,
            0x7FFFFFFF,
            0x7F802000,
            0x477FF000,
            0x477FE000,
            0x33000000,
            0x33000001,
            0x387FF000,
        ],
        dtype=np.uint32,
    ).view(np.float32)
    with quiet():
        assert one(con, "SELECT npy_cast(?, 'float16')", npy_bytes(bits)) == npy_bytes(bits.astype(np.float16))
