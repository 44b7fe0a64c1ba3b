# SPDX-License-Identifier: Apache-2.0
"""Window forms of the aggregates against NumPy and exact fractions: sliding
ar_mean / ar_sum stay within one ulp of the exact frame mean after 10,000
slides with 1e30 entering and leaving next to 1.0; ar_ema; and the
per-array aggregates (npy_agg_*) over array_record rows grouped by key,
under a heap limit the whole-record aggregates cannot meet."""

import gc
import math
import os
import random
import tempfile
from fractions import Fraction

import numpy as np
from arlib import connect, load_npy, npy_bytes


def ulps(got, want, dtype):
    """Distance in ulps of dtype, at the exact result's magnitude."""
    want = np.asarray(want, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    spacing = np.spacing(np.abs(want).astype(dtype)).astype(np.float64)
    return np.max(np.abs(got - want) / spacing)


def values(rng, n, width):
    # 1e30 next to 1.0 and full-precision noise: the exact sums need more
    # than 106 bits, so double-double (or a compensated sum) drifts
    pick = rng.choice([1e30, -1e30, 1.0, -1.0, 0.5, 3e29], size=(n, width))
    noise = rng.normal(size=(n, width))
    return np.where(rng.random((n, width)) < 0.7, pick, noise)


def sliding(dtype, weights, frame, n=10000, width=3, seed=1):
    """ar_mean over a sliding frame (ROWS frame PRECEDING) against the exact
    mean of each frame (fractions, slid by adding and removing exactly):
    every result within 1 ulp of dtype."""
    rng = np.random.default_rng(seed)
    x = values(rng, n, width).astype(dtype)
    if weights == "int":
        w = [int(v) for v in rng.integers(1, 6, size=n)]
    elif weights == "real":  # products w * x are not exact in double
        w = [float(v) for v in rng.uniform(0.1, 7.0, size=n)]
    else:
        w = [1] * n
    con = connect()
    con.execute("CREATE TABLE u(round INTEGER, rec BLOB, n)")
    con.executemany("INSERT INTO u VALUES (?, ar('w', ?), ?)", [(i, npy_bytes(x[i]), w[i]) for i in range(n)])
    fn = "ar_mean(rec, n)" if weights else "ar_mean(rec)"
    rows = con.execute(
        f"SELECT round, ar_get({fn} OVER (ORDER BY round ROWS BETWEEN {frame} PRECEDING AND CURRENT ROW), 'w') FROM u ORDER BY round"
    ).fetchall()
    fx = [[Fraction(float(v)) for v in row] for row in x]
    fw = [Fraction(v) for v in w]
    sums, total = [Fraction(0)] * width, Fraction(0)
    worst = 0.0
    for i, blob in rows:
        sums = [sums[j] + fw[i] * fx[i][j] for j in range(width)]
        total += fw[i]
        if i - frame - 1 >= 0:
            k = i - frame - 1
            sums = [sums[j] - fw[k] * fx[k][j] for j in range(width)]
            total -= fw[k]
        got = load_npy(blob)
        assert got.dtype == dtype
        want = [float(sj / total) for sj in sums]  # correctly rounded
        worst = max(worst, ulps(got, want, dtype))
    assert worst <= 1.0, (dtype, weights, frame, worst)
    return worst


def test_sliding_mean_float64_10000_slides():
    assert sliding(np.float64, None, 4) <= 0.5  # unweighted: correctly rounded


def test_sliding_weighted_mean_float64():
    sliding(np.float64, "int", 7, seed=2)


def test_sliding_real_weighted_mean_float64():
    sliding(np.float64, "real", 5, n=3000, seed=7)


def test_sliding_mean_float32_random_frames():
    rng = random.Random(3)
    for k in range(3):
        sliding(np.float32, (None, "int", "real")[k], rng.randint(1, 12), n=2000, seed=10 + k)


def test_sliding_sum_huge_range():
    # 1e300 and 1e-300 in one frame: more than four 53-bit pieces; the sums
    # round at ~2^-200 of the largest part, so results stay close once it left
    con = connect()
    con.execute("CREATE TABLE u(i INTEGER, rec BLOB)")
    vals = [1e300, 1e-300, 3.0, -1e300, 2.5e-301, 1.0, 7.0, 1e-310]
    con.executemany("INSERT INTO u VALUES (?, ar('w', ?))", [(i, npy_bytes(np.array([v]))) for i, v in enumerate(vals)])
    got = [
        float(load_npy(b)[0])
        for (b,) in con.execute("SELECT ar_get(ar_sum(rec) OVER (ORDER BY i ROWS 2 PRECEDING), 'w') FROM u ORDER BY i")
    ]
    want = [float(sum(Fraction(v) for v in vals[max(0, i - 2) : i + 1])) for i in range(len(vals))]
    assert got == want, (got, want)


def test_sliding_sum_int_exact():
    rng = np.random.default_rng(4)
    x = rng.integers(-(2**62), 2**62, size=(500, 3))
    con = connect()
    con.execute("CREATE TABLE u(i INTEGER, rec BLOB)")
    con.executemany("INSERT INTO u VALUES (?, ar('w', ?))", [(i, npy_bytes(x[i])) for i in range(len(x))])
    got = [
        load_npy(b)
        for (b,) in con.execute("SELECT ar_get(ar_sum(rec) OVER (ORDER BY i ROWS 3 PRECEDING), 'w') FROM u ORDER BY i")
    ]
    for i, g in enumerate(got):
        want = x[max(0, i - 3) : i + 1].sum(axis=0)  # int64, wrapping as NumPy
        assert np.array_equal(g, want), i


def test_plain_mean_unchanged():
    rng = np.random.default_rng(5)
    x = values(rng, 50, 4)
    con = connect()
    con.execute("CREATE TABLE u(i INTEGER, rec BLOB)")
    con.executemany("INSERT INTO u VALUES (?, ar('w', ?))", [(i, npy_bytes(x[i])) for i in range(len(x))])
    got = load_npy(con.execute("SELECT ar_get(ar_mean(rec), 'w') FROM u").fetchone()[0])
    acc = np.zeros(4)
    for row in x:  # the plain aggregate: a double sum in row order, rounded once
        acc = acc + row
    assert np.array_equal(got, acc / 50)


def test_ema_matches_numpy():
    rng = np.random.default_rng(6)
    x = rng.normal(size=(40, 5)).astype(np.float32)
    alpha = rng.uniform(0.05, 1.0, size=40)
    con = connect()
    con.execute("CREATE TABLE u(i INTEGER, rec BLOB, a REAL)")
    con.executemany(
        "INSERT INTO u VALUES (?, ar('w', ?), ?)", [(i, npy_bytes(x[i]), float(alpha[i])) for i in range(len(x))]
    )
    rows = [
        load_npy(b) for (b,) in con.execute("SELECT ar_get(ar_ema(rec, a) OVER (ORDER BY i), 'w') FROM u ORDER BY i")
    ]
    ema = x[0].astype(np.float64)
    for i in range(len(x)):
        if i:
            ema = (1 - alpha[i]) * ema + alpha[i] * x[i].astype(np.float64)
        assert rows[i].dtype == np.float32
        assert np.array_equal(rows[i], ema.astype(np.float32)), i
    whole = load_npy(con.execute("SELECT ar_get(ar_ema(rec, a), 'w') FROM (SELECT * FROM u ORDER BY i)").fetchone()[0])
    assert np.array_equal(whole, rows[-1])


def per_array_under_heap_limit(clients, mb, heap_mb):
    """Median and trimmed mean of `clients` updates of two uint8 arrays of
    mb/2 MB each, generated in SQL into a temp file database, per key under
    PRAGMA hard_heap_limit; checked against NumPy."""
    half = mb * 1024 * 1024 // 2
    with tempfile.TemporaryDirectory() as d:
        con = connect(os.path.join(d, "u.db"))
        con.execute("PRAGMA page_size = 65536")
        con.execute("CREATE TABLE updates(client INTEGER, rec BLOB)")
        con.execute(
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ?2) "
            "INSERT INTO updates SELECT i, ar('a', npy(randomblob(?1), 'uint8', '[' || ?1 || ']'), 'b', npy(randomblob(?1), 'uint8', '[' || ?1 || ']')) FROM c",
            (half, clients),
        )
        con.commit()
        # The limit counts every SQLite allocation in the process: earlier
        # tests' connections that only the cycle collector frees count too.
        gc.collect()
        # The pool's kept blocks are SQLite memory too: empty it first (a
        # limit set below what it holds fails SQLite's own allocations).
        pool = con.execute("SELECT ar_pool(0)").fetchone()[0]
        con.execute(f"PRAGMA hard_heap_limit = {heap_mb * 1024 * 1024}")
        rec = con.execute(
            "SELECT ar_agg(key, med) FROM (SELECT key, npy_agg_median(a.data) med FROM updates, array_record(updates.rec) a GROUP BY key ORDER BY key)"
        ).fetchone()[0]
        tm = con.execute(
            "SELECT ar_agg(key, t) FROM (SELECT key, npy_agg_trimmed_mean(a.data, 0.1) t FROM updates, array_record(updates.rec) a GROUP BY key ORDER BY key)"
        ).fetchone()[0]
        try:
            con.execute("SELECT ar_median(rec) FROM updates").fetchone()
            whole_fits = True
        except Exception:
            whole_fits = False
        con.execute("PRAGMA hard_heap_limit = 0")
        con.execute("SELECT ar_pool(?)", (pool,))
        for key in ("a", "b"):
            stack = np.stack(
                [
                    np.frombuffer(load_npy(r), dtype=np.uint8)
                    for (r,) in con.execute("SELECT ar_get(rec, ?) FROM updates ORDER BY client", (key,))
                ]
            ).astype(np.float64)
            got = load_npy(con.execute("SELECT ar_get(?, ?)", (rec, key)).fetchone()[0])
            assert np.array_equal(got, np.median(stack, axis=0)), key
            cut = int(math.floor(0.1 * clients))
            srt = np.sort(stack, axis=0)
            want = srt[cut : clients - cut].mean(axis=0)
            got = load_npy(con.execute("SELECT ar_get(?, ?)", (tm, key)).fetchone()[0])
            assert np.allclose(got, want, rtol=1e-15, atol=0), key
        con.close()
        return whole_fits


def test_per_array_median_under_heap_limit():
    # 64 clients x 1 MB (two 512 KB arrays each) under an 80 MB heap: the
    # per-key aggregates keep 32 MB at a time (grown by doubling). (Whether the whole-record
    # ar_median also fits depends on the allocator's realloc; not asserted.)
    per_array_under_heap_limit(64, 1, 80)


if __name__ == "__main__":
    import sys
    import time

    t = time.time()
    print(per_array_under_heap_limit(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])), time.time() - t)


def test_robust_windows_equal_the_aggregate_over_each_frame():
    # ar_krum (Krum and MultiKrum), ar_krum_scores and ar_bulyan over sliding
    # frames: each value bit for bit the plain aggregate over the frame's
    # rows in the same order; frames too small for f give NULL
    rng = np.random.default_rng(11)
    n, width = 40, 6
    x = rng.normal(size=(n, width)).astype(np.float32)
    x[rng.random(n) < 0.15] += 50  # attackers now and then
    con = connect()
    con.execute("CREATE TABLE u(i INTEGER, rec BLOB, w INTEGER)")
    con.executemany(
        "INSERT INTO u VALUES (?, ar('w', ?, 'b', ?), ?)",
        [(i, npy_bytes(x[i][:4].reshape(2, 2)), npy_bytes(x[i][4:]), int(rng.integers(1, 9))) for i in range(n)],
    )
    cases = [
        ("ar_krum(rec, w, 2)", 9),
        ("ar_krum(rec, w, 1, 3)", 5),
        ("ar_krum_scores(rec, 2)", 7),
        ("ar_bulyan(rec, 1)", 8),
    ]
    for fn, frame in cases:
        got = con.execute(f"SELECT {fn} OVER (ORDER BY i ROWS {frame - 1} PRECEDING) FROM u ORDER BY i").fetchall()
        nulls = 0
        for i, (g,) in enumerate(got):
            lo = max(0, i - frame + 1)
            try:
                (want,) = con.execute(
                    f"SELECT {fn} FROM (SELECT * FROM u WHERE i BETWEEN ? AND ? ORDER BY i)", (lo, i)
                ).fetchone()
            except Exception as e:  # too few rows for f or k: the window gives NULL
                assert "rows" in str(e), e
                want = None
            nulls += want is None
            assert g == want, (fn, i)
        assert 0 < nulls < frame, (fn, nulls)
    # a weight of the wrong kind still fails, naming the row
    try:
        con.execute("SELECT ar_krum(rec, 'x', 1) OVER (ORDER BY i ROWS 3 PRECEDING) FROM u").fetchall()
        raise AssertionError("a text weight was accepted")
    except Exception as e:
        assert "ar_krum" in str(e) and "row 0" in str(e), e
