# SPDX-License-Identifier: Apache-2.0
"""ar_median and ar_trimmed_mean (src/math/orderstat.c) against NumPy:
every dtype we support (both byte orders), every row count from 1 to 130
(odd and even) and some past the sorting network's 2048, values with many
ties, NaN of several bit patterns, +-inf and -0.0, beta at its edges, on one
thread and on two.

The median must be np.median(np.stack(rows), axis=0) bit for bit, dtype
included. NaN: NumPy 2 (Flower's) answers with the bits of the NaN its
partition put last, NumPy 1 with a plain NaN; under NumPy 1 a NaN answer is
checked to be a NaN (tests/flower checks the bits under NumPy 2). The
trimmed mean must be the exact mean of the kept values rounded once (within
the double sum's rounding for float64 results), NaN and infinities exactly
where they belong, and within 8 ulps of the layer's largest magnitude of
FedTrimmedAvg's trim_mean (np.partition at the two cuts, then np.mean in
float32) on client updates."""

import contextlib
import math

import numpy as np
from arlib import connect, load_npy, record_bytes
from mathlib import one, quiet

NUMPY2 = int(np.__version__.split(".")[0]) >= 2
TYPES = ["f4", "f8", "f2", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "?", ">f4", ">i8", ">f2"]
NAN_BITS = {
    2: [0x7E00, 0xFE00, 0x7E01, 0x7C01],
    4: [0x7FC00000, 0xFFC00000, 0x7FC00001, 0x7F800001],
    8: [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF8000000000001, 0x7FF0000000000001],
}
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
BETAS = [0.0, 1e-9, 0.1, 0.2, 0.25, 1 / 3, 0.49, 0.4999999]


@contextlib.contextmanager
def threads(con, n):
    """ar_threads(n), min_elements 1 so that small arrays are split too; put back after."""
    before = one(con, "SELECT ar_threads(?, 1)", n)
    try:
        yield
    finally:
        one(con, "SELECT ar_threads(?, 262144)", before)


def column_values(rng, dtype, n, cols, special):
    """n rows of `cols` values: few distinct ones (ties), and for floats
    -0.0, +-inf and NaNs of several bit patterns when `special`."""
    dtype = np.dtype(dtype)
    native = dtype.newbyteorder("=")
    if dtype.kind == "b":
        x = rng.integers(0, 2, (n, cols)).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(native)
        pool = np.array([info.min, info.max, 0, 1, 2, 3, 7, info.max - 1], dtype=native)
        x = rng.choice(pool, size=(n, cols))
    else:
        pool = [0.0, 1.0, -1.0, 2.5, 0.1, 3.0, -7.25]
        if special:
            pool += [-0.0, np.inf, -np.inf]
        x = rng.choice(np.array(pool), size=(n, cols)).astype(native)
        if special:
            bits = x.view(UINT[native.itemsize])
            nan = rng.random((n, cols)) < rng.choice([0.0, 0.03, 0.3])
            bits[nan] = rng.choice(NAN_BITS[native.itemsize], size=int(nan.sum())).astype(bits.dtype)
    return x.astype(dtype)


def run_table(con, rows):
    con.execute("DROP TABLE IF EXISTS u")
    con.execute("CREATE TABLE u(id INTEGER PRIMARY KEY, rec BLOB)")
    con.executemany("INSERT INTO u(rec) VALUES (?)", [(record_bytes([("w", r)]),) for r in rows])


def same_median(got, want):
    """Bit for bit (NumPy 1: any NaN where NumPy's is a NaN)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if NUMPY2 or want.dtype.kind != "f":
        return got.tobytes() == want.tobytes()
    nan = np.isnan(want)
    return bool(np.array_equal(np.isnan(got), nan) and got[~nan].tobytes() == want[~nan].tobytes())


def trim_mean(stack, beta):
    """FedTrimmedAvg's trim_mean (flwr/serverapp/strategy/fedtrimmedavg.py)."""
    nobs = stack.shape[0]
    low = int(beta * nobs)
    high = nobs - low
    part = np.partition(stack, (low, high - 1), axis=0)
    return np.mean(part[low:high], axis=0)


def within_8_ulps(got, want):
    """NaN and infinities where want has them; elsewhere within 8 ulps of
    the layer's largest finite magnitude of want."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    fin = np.isfinite(want)
    if not (
        np.array_equal(np.isnan(got), np.isnan(want)) and np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
    ):
        return False
    if not fin.any():
        return True
    scale = np.abs(want[fin]).max()
    ulp = np.spacing(scale.astype(want.dtype)).astype(np.float64)
    return bool(np.all(np.abs(got[fin].astype(np.float64) - want[fin].astype(np.float64)) <= 8 * ulp))


def test_median_every_dtype_every_count_to_130():
    con = connect()
    rng = np.random.default_rng(31)
    with quiet():
        for dtype in TYPES:
            for n in range(1, 131):
                rows = column_values(rng, dtype, n, 23, special=n % 3 != 0)
                run_table(con, rows)
                want = np.median(np.stack([r.astype(r.dtype.newbyteorder("=")) for r in rows]), axis=0)
                got = load_npy(one(con, "SELECT ar_get(ar_median(rec), 'w') FROM u ORDER BY id"))
                assert same_median(got, want), (dtype, n, got, want)


def exact_trimmed(stack, beta):
    """The trimmed mean each element should have, from an exact sum: the
    values sorted NaN last, the cut ones dropped; NaN when a kept value is
    NaN or both infinities are kept, an infinity when one is; else the exact
    mean (math.fsum, then one division) as a float64. Also the kept values."""
    n = stack.shape[0]
    cut = int(beta * n)
    srt = np.sort(stack.astype(np.float64), axis=0)[cut : n - cut]
    flat = srt.reshape(srt.shape[0], -1)
    out = np.empty(flat.shape[1])
    for i in range(flat.shape[1]):
        col = flat[:, i]
        if np.isnan(col).any() or (np.isposinf(col).any() and np.isneginf(col).any()):
            out[i] = np.nan
        elif np.isinf(col).any():
            out[i] = col[np.isinf(col)][0]
        else:
            out[i] = math.fsum(col.tolist()) / len(col)
    return out.reshape(srt.shape[1:]), flat


def test_trimmed_mean_every_dtype_and_beta():
    """Against the exact mean of the kept values: a float32 or float16 result
    within its own ulp of it (the sum is kept in double, then rounded once),
    a float64 one within the rounding a double sum of the kept values allows."""
    con = connect()
    rng = np.random.default_rng(32)
    with quiet():
        for dtype in TYPES:
            native = np.dtype(dtype).newbyteorder("=")
            out = native if native.kind == "f" else np.dtype(np.float64)
            for n in list(range(1, 41)) + [63, 64, 99, 100, 101, 128, 130]:
                rows = column_values(rng, dtype, n, 19, special=n % 2 == 0)
                run_table(con, rows)
                stack = np.stack([r.astype(native) for r in rows])
                for beta in BETAS:
                    want, kept = exact_trimmed(stack, beta)
                    got = load_npy(one(con, "SELECT ar_get(ar_trimmed_mean(rec, ?), 'w') FROM u ORDER BY id", beta))
                    assert got.dtype == out and got.shape == want.shape, (dtype, got.dtype)
                    g = got.astype(np.float64).ravel()
                    w = want.ravel()
                    assert np.array_equal(np.isnan(g), np.isnan(w)), (dtype, n, beta, got, want)
                    inf = np.isinf(w)
                    assert np.array_equal(g[inf], w[inf]), (dtype, n, beta, got, want)
                    fin = np.isfinite(w)
                    if out == np.float64:
                        mag = np.abs(np.where(np.isfinite(kept), kept, 0)).sum(axis=0)
                        tol = 2.0**-52 * mag + 2 * np.spacing(np.abs(w))
                    else:
                        tol = np.spacing(np.abs(w.astype(out))).astype(np.float64)
                    assert np.all(np.abs(g - w)[fin] <= tol[fin]), (dtype, n, beta, got, want)


def test_trimmed_mean_against_fedtrimmedavg():
    """FedTrimmedAvg's own arithmetic (np.partition, then np.mean in
    float32) on updates as clients send them (a model plus noise, an attacker
    in ten): within 8 ulps of the layer's largest magnitude. (On values with
    many ties far larger than their mean, its float32 running sum can stray
    further from the exact mean than that; ours is the exact one rounded.)"""
    con = connect()
    rng = np.random.default_rng(36)
    base = rng.standard_normal(2000).astype(np.float32)
    with quiet():
        for n in list(range(1, 31)) + [50, 99, 100, 101, 130]:
            rows = [
                base + np.float32(0.01 * (1 + i % 7)) * rng.standard_normal(2000).astype(np.float32) for i in range(n)
            ]
            for i in range(0, n, 10):
                rows[i] = rows[i] + np.float32(5)
            run_table(con, rows)
            stack = np.stack(rows)
            for beta in BETAS:
                got = load_npy(one(con, "SELECT ar_get(ar_trimmed_mean(rec, ?), 'w') FROM u ORDER BY id", beta))
                assert within_8_ulps(got, trim_mean(stack, beta)), (n, beta)


def test_one_thread_and_two_give_the_same_bytes():
    con = connect()
    rng = np.random.default_rng(33)
    with quiet():
        for dtype, n, cols in (("f4", 37, 5000), ("f8", 100, 3001), ("f2", 12, 777), ("i4", 9, 4000), ("f4", 2100, 40)):
            rows = column_values(rng, dtype, n, cols, special=True)
            if dtype == "f4" and n < 100:  # also realistic updates: all distinct values
                rows = [rng.standard_normal(cols).astype(np.float32) for _ in range(n)]
            run_table(con, rows)
            out = {}
            for th in (1, 2):
                with threads(con, th):
                    out[th] = (
                        one(con, "SELECT ar_median(rec) FROM u ORDER BY id"),
                        one(con, "SELECT ar_trimmed_mean(rec, 0.2) FROM u ORDER BY id"),
                    )
            assert out[1] == out[2], (dtype, n)
            stack = np.stack(rows)
            assert same_median(load_npy(one(con, "SELECT ar_get(?, 'w')", out[2][0])), np.median(stack, axis=0))


def test_past_the_network_each_element_on_its_own():
    """More rows than the sorting network takes (2048): each element is
    selected on its own, with the same answers."""
    con = connect()
    rng = np.random.default_rng(34)
    with quiet():
        for dtype, n in (("f4", 2049), ("f8", 2050), ("i8", 2500)):
            rows = column_values(rng, dtype, n, 6, special=dtype != "i8")
            run_table(con, rows)
            stack = np.stack(rows)
            got = load_npy(one(con, "SELECT ar_get(ar_median(rec), 'w') FROM u ORDER BY id"))
            assert same_median(got, np.median(stack, axis=0)), (dtype, got, np.median(stack, axis=0))
            for beta in (0.0, 0.2, 0.49):
                got = load_npy(one(con, "SELECT ar_get(ar_trimmed_mean(rec, ?), 'w') FROM u ORDER BY id", beta))
                want, _ = exact_trimmed(stack, beta)
                assert np.array_equal(np.isnan(got), np.isnan(want)), (dtype, beta)
                fin = np.isfinite(want)
                assert np.allclose(got[fin], want[fin], rtol=1e-6, atol=1e-6), (dtype, beta, got, want)


def test_every_shape_of_key_and_row_order():
    """Several keys of several shapes, rows in the order the query gives
    them (np.median is row-order free, but which NaN it answers is not)."""
    con = connect()
    rng = np.random.default_rng(35)
    with quiet():
        shapes = [(), (1,), (3, 5), (17,), (2, 3, 4), (40, 13)]
        rows = []
        for _ in range(11):
            rows.append(
                [(f"k{i}", column_values(rng, "f4", 1, int(np.prod(s)), True).reshape(s)) for i, s in enumerate(shapes)]
            )
        con.execute("CREATE TABLE u(id INTEGER PRIMARY KEY, rec BLOB)")
        con.executemany("INSERT INTO u(id, rec) VALUES (?, ?)", [(10 - i, record_bytes(r)) for i, r in enumerate(rows)])
        rec = one(con, "SELECT ar_median(rec) FROM (SELECT rec FROM u ORDER BY id DESC)")
        for i, s in enumerate(shapes):
            want = np.median(np.stack([r[i][1] for r in rows]), axis=0)
            got = load_npy(one(con, "SELECT ar_get(?, ?)", rec, f"k{i}"))
            assert got.shape == s and same_median(got, np.asarray(want)), (s, got, want)
