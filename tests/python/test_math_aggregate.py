# SPDX-License-Identifier: Apache-2.0
"""Aggregates over rows of records, cross-checked with Flower's FedAvg
vectors and with NumPy: ar_mean (FedAvg) to Flower's float tolerance and to
a float64 reference within 1e-12; ar_sum, ar_min, ar_max, ar_median,
ar_trimmed_mean (FedTrimmedAvg) and ar_stack against NumPy; NULL handling,
errors, and the memory bound of the accumulating aggregates."""

import ctypes
import ctypes.util
import functools

import numpy as np
from arlib import connect, data, load_npy, manifest, npy_bytes, record_bytes
from mathlib import error_of, f64, one, quiet, sample


def parse(con, blob):
    """A record as [(key, ndarray)] in its order, read through SQL."""
    rows = con.execute("SELECT key, ar_get(?, key) FROM array_record(?)", (blob, blob)).fetchall()
    return [(k, load_npy(v)) for k, v in rows]


def table(con, recs, weights=None):
    con.execute("DROP TABLE IF EXISTS u")
    con.execute("CREATE TABLE u(id INTEGER PRIMARY KEY, rec BLOB, n)")
    for i, r in enumerate(recs):
        con.execute("INSERT INTO u(rec, n) VALUES (?, ?)", (r, None if weights is None else weights[i]))


def f32_within_half_ulp(got, ref64):
    """float32 results rounded once from an exact value: within half an ulp
    of the float64 reference (plus its own rounding)."""
    ulp = np.spacing(np.abs(ref64).astype(got.dtype)).astype(np.float64)
    return np.all(np.abs(got.astype(np.float64) - ref64) <= 0.5 * ulp * (1 + 1e-6) + 1e-300)


def test_fedavg_matches_flower_vectors():
    con = connect()
    cases = manifest()["fedavg"]
    assert {c["case"] for c in cases} == {"f32", "f64", "mixed_int"}
    for case in cases:
        clients = [data(c) for c in case["clients"]]
        weights = case["weights"]
        table(con, clients, weights)
        got = one(con, "SELECT ar_mean(rec, n) FROM u ORDER BY id")
        flower = data(case["result"])
        # same items, dtypes, shapes and .npy headers as Flower's record
        meta = "SELECT key, dtype, shape, stype FROM array_record(?)"
        assert con.execute(meta, (got,)).fetchall() == con.execute(meta, (flower,)).fetchall(), case["case"]
        rows = [dict(parse(con, c)) for c in clients]
        total = sum(weights)
        for (k, g), (k2, fl) in zip(parse(con, got), parse(con, flower)):
            assert k == k2 and g.dtype == fl.dtype and g.shape == fl.shape
            ref = sum(f64(r[k]) * (w / total) for r, w in zip(rows, weights))
            if g.dtype == np.float64:
                assert np.allclose(g, ref, rtol=1e-12, atol=0), (case["case"], k)
                assert np.allclose(g, fl, rtol=1e-12, atol=1e-15), (case["case"], k)  # Flower: float64 too
            else:
                # Flower accumulates float32 in float32; we round once from double
                assert f32_within_half_ulp(g, ref), (case["case"], k)
                assert np.allclose(g, fl, rtol=1e-5, atol=1e-6), (case["case"], k)


def test_fedavg_float64_reference_1e12():
    con = connect()
    rng = np.random.default_rng(11)
    models = [
        [("conv.w", rng.standard_normal((8, 3, 3, 3)) + 1), ("fc.b", rng.standard_normal(10) * 100)] for _ in range(10)
    ]
    weights = [int(w) for w in rng.integers(1, 1000, 10)]
    table(con, [record_bytes(m) for m in models], weights)
    got = parse(con, one(con, "SELECT ar_mean(rec, n) FROM u ORDER BY id"))
    total = sum(weights)
    for k, g in got:
        ref = sum(dict(m)[k] * (w / total) for m, w in zip(models, weights))
        scale = max(abs(x).max() for x in (dict(m)[k] for m in models))
        assert np.all(np.abs(g - ref) <= 1e-12 * np.abs(ref) + 1e-15 * scale), k
    # unweighted: the plain mean
    got = parse(con, one(con, "SELECT ar_mean(rec) FROM u ORDER BY id"))
    for k, g in got:
        assert np.allclose(g, np.mean([dict(m)[k] for m in models], axis=0), rtol=1e-12, atol=1e-15)


def test_fedavg_dtype_rules_and_layouts():
    """Floats and complex keep their dtype, bool and integers become float64;
    rows may differ in byte order and memory order; the result is native
    and in the first row's memory order, like Flower's value * w."""
    con = connect()
    with quiet():
        dts = ["f2", "f4", "f8", "c8", "c16", "i4", "u1", "?", "i8"]
        rows = []
        for i in range(5):
            order = "F" if i % 2 == 0 else "C"
            byteorder = ">" if i % 3 == 1 else "<"
            rows.append([(dt, sample(dt, (3, 4), 20 + i, order, byteorder)) for dt in dts])
        weights = [3, 1.5, 2, 0.25, 7]
        table(con, [record_bytes(r) for r in rows], weights)
        got = one(con, "SELECT ar_mean(rec, n) FROM u ORDER BY id")
        total = sum(weights)
        for k, g in parse(con, got):
            xs = [dict(r)[k] for r in rows]
            want_dtype = xs[0].dtype.newbyteorder("=") if xs[0].dtype.kind in "fc" else np.dtype(np.float64)
            assert g.dtype == want_dtype, (k, g.dtype)
            assert g.flags.f_contiguous and not g.flags.c_contiguous, k  # row 0 is Fortran
            ref = sum(f64(x) * w for x, w in zip(xs, weights)) / total
            assert np.allclose(g, ref, rtol=1e-3 if k == "f2" else 1e-6), k
            # the .npy header is the one np.save writes for that array
            assert npy_bytes(g) == one(con, "SELECT ar_get(?, ?)", got, k)


def stack_of(rows, k):
    return np.stack([dict(r)[k].astype(dict(r)[k].dtype.newbyteorder("=")) for r in rows])


def test_sum_min_max_against_numpy():
    con = connect()
    with quiet():
        dts = ["f4", "f8", "f2", "i2", "u2", "i8", "?", "u8"]
        rows = []
        for i in range(6):
            r = [(dt, sample(dt, (2, 5), 40 + i, "F" if i == 0 else "C", ">" if i == 2 else "<")) for dt in dts]
            r.append(("nan", sample("f4", (3, 3), 50 + i, special=(i == 3))))
            rows.append(r)
        table(con, [record_bytes(r) for r in rows])
        s, mn, mx = (
            parse(con, one(con, f"SELECT {f}(rec) FROM u ORDER BY id")) for f in ("ar_sum", "ar_min", "ar_max")
        )
        for k, g in s:
            xs = stack_of(rows, k)
            if xs.dtype.kind in "biu":
                want = np.sum(xs, axis=0)  # int64 / uint64, exact (wrapping)
                assert g.dtype == want.dtype and np.array_equal(g, want), k
            else:
                assert g.dtype == xs.dtype
                assert np.allclose(g, np.sum(f64(xs), axis=0), rtol=1e-3 if k == "f2" else 1e-6, equal_nan=True), k
        for (k, g), (_, h) in zip(mn, mx):
            xs = [dict(r)[k] for r in rows]
            # np.minimum / np.maximum row after row, in the first row's memory
            # order (as an in-place accumulation keeps it): same bytes
            for got, f in ((g, np.minimum), (h, np.maximum)):
                want = functools.reduce(f, xs)
                want = want.astype(want.dtype.newbyteorder("="), order="F" if xs[0].flags.f_contiguous else "C")
                assert npy_bytes(got) == npy_bytes(want), (k, f)
        # row 3 has NaN, +inf and -inf: NaN propagates, infinities win
        assert np.isnan(dict(mn)["nan"]).sum() == 1 and np.isneginf(dict(mn)["nan"]).sum() == 1
        assert np.isnan(dict(mx)["nan"]).sum() == 1 and np.isposinf(dict(mx)["nan"]).sum() == 1


def trim_mean_reference(stack, beta):
    """FedTrimmedAvg's trim_mean (NaN sorts last, as np.partition), in float64."""
    n = stack.shape[0]
    cut = int(beta * n)
    srt = np.sort(f64(stack), axis=0)
    return np.mean(srt[cut : n - cut], axis=0)


def test_median_and_trimmed_mean_against_numpy():
    con = connect()
    with quiet():
        for n in (1, 2, 5, 8):
            rows = []
            for i in range(n):
                r = [
                    ("f8", sample("f8", (4, 3), 60 + i, "F" if i == 1 else "C")),
                    ("f4", sample("f4", (7,), 70 + i, byteorder=">" if i == 2 else "<")),
                    ("i4", sample("i4", (2, 2), 80 + i)),
                    ("f2", sample("f2", (3,), 90 + i)),
                    ("nan", np.array([1.0, np.nan if i == 0 else 2.0, float(i)])),
                ]
                rows.append(r)
            table(con, [record_bytes(r) for r in rows])
            med = parse(con, one(con, "SELECT ar_median(rec) FROM u ORDER BY id"))
            for k, g in med:
                xs = stack_of(rows, k)
                want = np.median(xs, axis=0)
                assert g.dtype == (xs.dtype if xs.dtype.kind == "f" else np.float64), k
                assert not g.flags.f_contiguous or g.flags.c_contiguous  # C order
                # np.median's bits, float32 and float16 included (test_orderstat.py has more)
                assert g.tobytes() == want.tobytes(), (n, k, g, want)
            for beta in (0, 0.1, 0.2, 0.25, 0.49):
                got = parse(con, one(con, "SELECT ar_trimmed_mean(rec, ?) FROM u ORDER BY id", beta))
                for k, g in got:
                    want = trim_mean_reference(stack_of(rows, k), beta)
                    tol = 1e-3 if k == "f2" else 1e-6 if k == "f4" else 1e-12
                    assert np.allclose(g, want, rtol=tol, atol=tol, equal_nan=True), (n, beta, k, g, want)


def test_stack():
    con = connect()
    rows = [
        [
            ("w", sample("f4", (2, 3), i, "F" if i == 1 else "C", ">" if i == 2 else "<")),
            ("b", sample("i8", (3,), 10 + i)),
            ("s", sample("f8", (), 20 + i)),
        ]
        for i in range(4)
    ]
    table(con, [record_bytes(r) for r in rows])
    got = one(con, "SELECT ar_stack(rec) FROM u ORDER BY id")
    want = record_bytes([(k, stack_of(rows, k)) for k, _ in rows[0]])
    assert got == want
    table(con, [record_bytes(rows[0])])
    assert parse(con, one(con, "SELECT ar_stack(rec) FROM u"))[0][1].shape == (1, 2, 3)


def test_nulls_and_empties():
    con = connect()
    r = record_bytes([("w", np.arange(3.0))])
    table(con, [None, r, None, record_bytes([("w", np.arange(3.0) + 3)]), None], [1, 1, None, 3, 1])
    assert parse(con, one(con, "SELECT ar_mean(rec, n) FROM u ORDER BY id"))[0][1].tolist() == [2.25, 3.25, 4.25]
    for f in (
        "ar_sum(rec)",
        "ar_mean(rec)",
        "ar_mean(rec, n)",
        "ar_min(rec)",
        "ar_max(rec)",
        "ar_median(rec)",
        "ar_trimmed_mean(rec, 0.1)",
        "ar_stack(rec)",
    ):
        assert one(con, f"SELECT {f} FROM u WHERE 0") is None, f
        assert one(con, f"SELECT {f} FROM u WHERE rec IS NULL") is None, f
    table(con, [b"", b""])
    for f in ("ar_sum(rec)", "ar_mean(rec)", "ar_min(rec)", "ar_median(rec)", "ar_stack(rec)"):
        assert one(con, f"SELECT {f} FROM u") == b"", f


def test_errors_name_the_key_and_row():
    con = connect()
    a = [("w", np.zeros((2, 3), np.float32)), ("b", np.zeros(3, np.float32))]
    cases = [
        ([a, a[:1]], "ar_mean(rec)", "ar_mean: key 'b' is missing from row 1"),
        ([a, a + [("x", np.zeros(1))]], "ar_sum(rec)", "ar_sum: key 'x' is in row 1 but not in row 0"),
        (
            [a, [a[0], ("b", np.zeros(3))]],
            "ar_mean(rec)",
            "ar_mean: key 'b' has dtype float64 in row 1 but float32 in row 0",
        ),
        (
            [a, [a[0], ("b", np.zeros(4, np.float32))]],
            "ar_max(rec)",
            "ar_max: key 'b' has shape [4] in row 1 but [3] in row 0",
        ),
        ([a, a], "ar_mean(rec, 0)", "ar_mean: total weight is 0; the weights must sum to a positive number"),
        ([a, a], "ar_mean(rec, -id)", "ar_mean: total weight is -3; the weights must sum to a positive number"),
        ([a, a], "ar_mean(rec, NULL)", "ar_mean: weight is NULL in row 0"),
        ([a, a], "ar_mean(rec, 'x')", "ar_mean: weight must be a number (row 0)"),
        ([a, a], "ar_mean(rec, 9e999)", "ar_mean: weight must be finite (row 0)"),
        ([a, a], "ar_trimmed_mean(rec, 0.5)", "ar_trimmed_mean: beta must be in [0, 0.5), got 0.5 (row 0)"),
        ([a, a], "ar_trimmed_mean(rec, -0.1)", "ar_trimmed_mean: beta must be in [0, 0.5), got -0.1 (row 0)"),
        (
            [a, a],
            "ar_trimmed_mean(rec, id / 10.0)",
            "ar_trimmed_mean: beta must be the same in every row (0.2 in row 1, 0.1 before)",
        ),
        (
            [[("z", np.zeros(2, np.complex64))]],
            "ar_median(rec)",
            "ar_median: key 'z': complex arrays have no order (dtype complex64)",
        ),
        (
            [[("z", np.zeros(2, np.complex128))]],
            "ar_min(rec)",
            "ar_min: key 'z': complex arrays have no order (dtype complex128)",
        ),
    ]
    for recs, call, msg in cases:
        table(con, [record_bytes(r) for r in recs])
        assert error_of(con, f"SELECT {call} FROM u ORDER BY id") == msg, (call, msg)
    table(con, [record_bytes(a), b"\x0a"])
    assert (
        error_of(con, "SELECT ar_mean(rec) FROM u ORDER BY id")
        == "ar_mean: row 1: record blob truncated at byte 1 (item 0)"
    )
    bad = record_bytes([("w", ("float32", [2, 3], "numpy.ndarray", b"junk")), a[1]])
    table(con, [record_bytes(a), bad])
    assert error_of(con, "SELECT ar_sum(rec) FROM u ORDER BY id") == (
        "ar_sum: row 1: not a .npy file (bad magic) (item 0, key 'w')"
    )
    assert error_of(con, "SELECT ar_mean(1)") == "ar_mean: row 0: argument 1 must be a record BLOB, got an integer"


def sqlite_memory_highwater():
    """sqlite3_memory_highwater of the library Python's sqlite3 uses, or None."""
    path = ctypes.util.find_library("sqlite3")
    if not path:
        return None
    lib = ctypes.CDLL(path)
    lib.sqlite3_memory_highwater.restype = ctypes.c_int64
    lib.sqlite3_memory_highwater.argtypes = [ctypes.c_int]
    return lib.sqlite3_memory_highwater


def test_accumulating_aggregates_hold_one_model():
    """ar_mean over 20 rows of a 2 MB model peaks near one model of double
    accumulators plus one row, while ar_median (documented to keep rows)
    holds them all: measured with SQLite's own allocation high-water mark."""
    highwater = sqlite_memory_highwater()
    if highwater is None:
        from runner import Skip

        raise Skip("libsqlite3 not found for sqlite3_memory_highwater")
    con = connect()
    model = 2 << 20
    rng = np.random.default_rng(5)
    table(con, [record_bytes([("w", rng.standard_normal(model // 4).astype(np.float32))]) for _ in range(20)])
    con.execute("SELECT count(*) FROM u").fetchone()
    # The pool off: rows kept in blocks an earlier statement freed to it
    # would not move the high-water mark (kept blocks count as in use).
    pool = con.execute("SELECT ar_pool(0)").fetchone()[0]
    peaks = {}
    for f in ("ar_mean(rec)", "ar_sum(rec)", "ar_max(rec)", "ar_median(rec)"):
        con.execute("SELECT length(rec) FROM u").fetchall()
        highwater(1)
        base = highwater(0)
        con.execute(f"SELECT length({f}) FROM u").fetchone()
        peaks[f] = highwater(0) - base
    con.execute("SELECT ar_pool(?)", (pool,))
    for f in ("ar_mean(rec)", "ar_sum(rec)", "ar_max(rec)"):
        assert peaks[f] < 5 * model, (f, peaks)  # 2 MB of float32 -> 4 MB of doubles + a row
    assert peaks["ar_median(rec)"] > 15 * model, peaks
