# SPDX-License-Identifier: Apache-2.0
"""Krum, MultiKrum, Bulyan, DP clipping and noise (sql_robust.c) against
Flower's own arithmetic. Flower is not installable here, so its functions
are copied below as small NumPy references, each citing the file it follows
(flwr/serverapp/strategy/multikrum.py, bulyan.py, strategy_utils.py and
flwr/common/differential_privacy.py, Flower 1.2x):

- selection: Flower computes the distances by the Gram formula in the
  model's dtype (float32 BLAS); we compute exact differences in double. The
  scores are compared within 1e-6 relative to Flower's formula run in
  float64, and the selected rows must be the same on data without near-ties.
- aggregation of the selected rows: bit for bit (aggregate_arrayrecords
  computes in the model's dtype, rows in score order; so do we).
- Bulyan: np.argpartition leaves the order of the beta values it picks
  unspecified, and np.mean adds them in that order in float32; we add them
  in double. Bit for bit on data whose sums are exact, within 1e-6 relative
  otherwise.
- clipping: Flower's norm is float32 (np.linalg.norm of float32); ours is
  double. Bit for bit against the reference with a float64 norm, within
  1e-6 relative of the float32 one."""

import sqlite3

import numpy as np
from arlib import connect, load_npy, record_bytes
from mathlib import error_of, one


def parse(con, blob):
    rows = con.execute("SELECT key, ar_get(?, key) FROM array_record(?)", (blob, blob)).fetchall()
    return {k: load_npy(v) for k, v in rows}


def table(con, recs, weights):
    con.execute("DROP TABLE IF EXISTS u")
    con.execute("CREATE TABLE u(id INTEGER PRIMARY KEY, rec BLOB, n)")
    for r, w in zip(recs, weights):
        con.execute("INSERT INTO u(rec, n) VALUES (?, ?)", (record_bytes(list(r.items())), w))


# --- Flower's code, on lists of {key: ndarray} --------------------------------


def compute_distances(records, dtype=None):
    """multikrum.py compute_distances (dtype=np.float64: the same formula in double)."""
    flat_w = np.stack([np.concatenate(list(rec.values()), axis=None).ravel() for rec in records], axis=0)
    if dtype is not None:
        flat_w = flat_w.astype(dtype)
    norms = np.square(flat_w).sum(axis=1)
    return norms[:, None] + norms[None, :] - 2 * flat_w @ flat_w.T


def krum_scores(records, f, dtype=None):
    """multikrum.py select_multikrum, up to the scores."""
    distance_matrix = compute_distances(records, dtype)
    num_closest = max(1, len(records) - f - 2)
    closest = [np.argsort(d)[1 : num_closest + 1].tolist() for d in distance_matrix]
    return [np.sum(distance_matrix[i, closest[i]]) for i in range(len(distance_matrix))]


def select_multikrum(records, f, k):
    """multikrum.py select_multikrum: the indices selected, in score order."""
    return list(np.argsort(krum_scores(records, f))[:k])


def aggregate_arrayrecords(records, weights):
    """strategy_utils.py aggregate_arrayrecords."""
    total_weight = sum(weights)
    weight_factors = [w / total_weight for w in weights]
    agg = {}
    for record, weight in zip(records, weight_factors):
        for key, value in record.items():
            if key not in agg:
                agg[key] = value * weight
            else:
                agg[key] += value * weight
    return agg


def aggregate_n_closest_weights(ref_weights, weights_list, beta):
    """bulyan.py aggregate_n_closest_weights."""
    out = []
    for layer_id, ref_layer in enumerate(ref_weights):
        layer_stack = np.stack([w[layer_id] for w in weights_list])
        diffs = np.abs(layer_stack - ref_layer)
        idx = np.argpartition(diffs, beta - 1, axis=0)[:beta]
        closest = np.take_along_axis(layer_stack, idx, axis=0)
        out.append(np.mean(closest, axis=0))
    return out


def bulyan(records, f):
    """bulyan.py Bulyan.aggregate_train, the arrays part."""
    theta = len(records) - 2 * f
    beta = theta - 2 * f
    sel = [records[i] for i in select_multikrum(records, f, theta)]
    keys = list(sel[0].keys())
    nd = [[r[k] for k in keys] for r in sel]
    median = [np.median(arr, axis=0) for arr in zip(*nd)]
    return dict(zip(keys, aggregate_n_closest_weights(median, nd, beta)))


def clip_inputs(arrays, clipping_norm, input_norm=None):
    """differential_privacy.py clip_inputs_inplace (get_norm), or with the
    norm given (computed in double)."""
    arrays = [a.copy() for a in arrays]
    if input_norm is None:
        norms = [np.linalg.norm(a.flat) for a in arrays]
        input_norm = float(np.sqrt(sum([n**2 for n in norms])))
    scaling_factor = min(1, clipping_norm / input_norm)
    for a in arrays:
        a *= scaling_factor
    return arrays


# --- data ---------------------------------------------------------------------


def clients(n, seed=0, bad=(), dtype=np.float32):
    rng = np.random.default_rng(seed)
    base = {"w": rng.standard_normal((7, 5)), "b": rng.standard_normal(11)}
    out = []
    for i in range(n):
        rec = {}
        for k, v in base.items():
            x = v + 0.1 * (1 + i % 3) * rng.standard_normal(v.shape)
            if i in bad:
                x = x + 10 + 5 * rng.standard_normal(v.shape)
            rec[k] = x.astype(dtype)
        out.append(rec)
    return out


def same_bits(got, ref):
    assert set(got) == set(ref)
    for k in ref:
        assert got[k].dtype == ref[k].dtype and got[k].shape == ref[k].shape, k
        assert got[k].tobytes() == ref[k].tobytes(), k


# --- Krum / MultiKrum ------------------------------------------------------------


def test_krum_scores_match_flower_formula():
    con = connect()
    for n, f in ((5, 1), (9, 2), (12, 0), (3, 2)):
        recs = clients(n, seed=n, bad=(1,))
        table(con, recs, [10] * n)
        got = np.array(eval(one(con, "SELECT ar_krum_scores(rec, ?) FROM u ORDER BY id", f)))
        ref = np.array(krum_scores(recs, f, np.float64))
        assert np.allclose(got, ref, rtol=1e-6, atol=1e-9), (got, ref)


def test_krum_and_multikrum_bit_for_bit():
    con = connect()
    for dtype in (np.float32, np.float64, np.float16):
        for n, f, k in ((6, 1, 1), (10, 2, 1), (10, 2, 4), (7, 0, 7), (1, 0, 1)):
            recs = clients(n, seed=3 * n + k, bad=(0, 3), dtype=dtype)
            weights = [int(w) for w in np.random.default_rng(n).integers(1, 100, n)]
            table(con, recs, weights)
            got = parse(con, one(con, "SELECT ar_krum(rec, n, ?, ?) FROM u ORDER BY id", f, k))
            sel = select_multikrum(recs, f, k)
            if dtype == np.float16:
                # Flower's Gram-formula distances in float16 lose most of their
                # digits, so its order is noise there: ours is the exact one
                sel = list(np.argsort(krum_scores(recs, f, np.float64), kind="stable")[:k])
            if k <= n - 2 and n > 3:
                assert 0 not in sel and 3 not in sel, (n, f, k, sel)
            ref = aggregate_arrayrecords([recs[i] for i in sel], [weights[i] for i in sel])
            same_bits(got, ref)
    # Krum is k = 1; float weights, integer arrays (float64 results)
    recs = [{"i": np.arange(6, dtype=np.int32) * (j + 1), "x": np.full(3, j, np.float32)} for j in range(6)]
    w = [0.5, 1.25, 2.0, 3.5, 0.75, 1.0]
    table(con, recs, w)
    got = parse(con, one(con, "SELECT ar_krum(rec, n, 1) FROM u ORDER BY id"))
    sel = select_multikrum(recs, 1, 1)
    same_bits(got, aggregate_arrayrecords([recs[i] for i in sel], [w[i] for i in sel]))
    got = parse(con, one(con, "SELECT ar_krum(rec, n, 1, 3) FROM u ORDER BY id"))
    sel = select_multikrum(recs, 1, 3)
    same_bits(got, aggregate_arrayrecords([recs[i] for i in sel], [w[i] for i in sel]))


def test_krum_errors():
    con = connect()
    table(con, clients(4), [1] * 4)
    assert "ar_krum: f (the number of malicious clients) must be >= 0, got -1" in error_of(
        con, "SELECT ar_krum(rec, n, -1) FROM u"
    )
    assert "ar_krum: f = 4 malicious clients needs more than 4 rows" in error_of(
        con, "SELECT ar_krum(rec, n, 4) FROM u"
    )
    assert "ar_krum: k = 5 rows to select, but only 4 rows" in error_of(con, "SELECT ar_krum(rec, n, 1, 5) FROM u")
    assert "ar_krum: k (the number of rows to select) must be >= 1, got 0" in error_of(
        con, "SELECT ar_krum(rec, n, 1, 0) FROM u"
    )
    assert "ar_krum: f must be an integer (row 0)" in error_of(con, "SELECT ar_krum(rec, n, 1.5) FROM u")
    assert "ar_krum_scores: f must be the same in every row (2 in row 1, 1 before)" in error_of(
        con, "SELECT ar_krum_scores(rec, id) FROM u ORDER BY id"
    )
    con.execute("INSERT INTO u(rec, n) VALUES (?, 1)", (record_bytes([("w", np.zeros((7, 4), np.float32))]),))
    assert "ar_bulyan: key 'w' has shape [7,4] in row 4 but [7,5] in row 0" in error_of(
        con, "SELECT ar_bulyan(rec, 0) FROM u ORDER BY id"
    )
    con.execute("DELETE FROM u WHERE id = 5")
    con.execute("INSERT INTO u(rec, n) VALUES (?, 1)", (record_bytes([("w", np.zeros((7, 5), np.float32))]),))
    assert "ar_krum: key 'b' is missing from row 4" in error_of(con, "SELECT ar_krum(rec, n, 0) FROM u ORDER BY id")
    assert "ar_bulyan: Bulyan needs at least 4f + 3 = 7 rows for f = 1, got 4" in error_of(
        con, "SELECT ar_bulyan(rec, 1) FROM u WHERE id < 5"
    )
    assert one(con, "SELECT ar_krum(rec, n, 0) FROM u WHERE 0") is None


def test_krum_rows_kept_capped_by_limit_length():
    con = connect()
    table(con, clients(5), [1] * 5)
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 700)  # a record is ~460 bytes, a row kept 184
    assert "ar_krum: the rows kept would exceed SQLITE_LIMIT_LENGTH (700 bytes) at row 3" in error_of(
        con, "SELECT ar_krum(rec, n, 1) FROM u"
    )


# --- Bulyan -------------------------------------------------------------------


def test_bulyan_matches_flower():
    con = connect()
    for dtype in (np.float32, np.float64):
        for n, f in ((7, 1), (11, 2), (5, 0), (12, 1)):
            recs = clients(n, seed=n, bad=(2,) if f else (), dtype=dtype)
            table(con, recs, [1] * n)
            got = parse(con, one(con, "SELECT ar_bulyan(rec, ?) FROM u ORDER BY id", f))
            ref = bulyan(recs, f)
            for k in ref:
                assert got[k].dtype == ref[k].dtype and got[k].shape == ref[k].shape
                assert np.allclose(got[k], ref[k], rtol=1e-6, atol=0), k
    # dyadic values: every sum is exact, so the order of the additions does not matter
    rng = np.random.default_rng(5)
    recs = [
        {"x": (rng.integers(-64, 64, (4, 6)) / 8).astype(np.float32), "i": rng.integers(-9, 9, 5).astype(np.int64)}
        for _ in range(11)
    ]
    table(con, recs, [1] * 11)
    got = parse(con, one(con, "SELECT ar_bulyan(rec, 2) FROM u ORDER BY id"))
    ref = bulyan(recs, 2)
    assert got["i"].dtype == np.float64
    same_bits(got, ref)


# --- differential privacy ---------------------------------------------------------


def test_clip_norm_matches_flower():
    con = connect()
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64, np.float16):
        upd = {"a": rng.standard_normal((5, 3)).astype(dtype), "b": rng.standard_normal(4).astype(dtype)}
        blob = record_bytes(list(upd.items()))
        norm = one(con, "SELECT ar_norm(?)", blob)
        for clip in (norm / 3, norm * 2, 0.01):
            got = parse(con, one(con, "SELECT ar_clip_norm(?, ?)", blob, clip))
            # the same norm in double (within an ulp of NumPy's float64 one), then Flower's arithmetic
            norm64 = float(np.sqrt(sum(np.sum(a.astype(np.float64) ** 2) for a in upd.values())))
            assert abs(norm - norm64) <= 4e-16 * norm64
            ref = dict(zip(upd, clip_inputs(list(upd.values()), clip, norm)))
            same_bits(got, ref)
            flower = clip_inputs(list(upd.values()), clip)
            for g, r in zip(got.values(), flower):
                assert np.allclose(g.astype(np.float64), r, rtol=1e-3 if dtype == np.float16 else 1e-6)
    assert "ar_clip_norm: clip must be a finite number > 0, got -1" in error_of(con, "SELECT ar_clip_norm(?, -1)", blob)
    assert "ar_clip_norm: clip must be a finite number > 0, got inf" in error_of(
        con, "SELECT ar_clip_norm(?, 9e999)", blob
    )
    assert "ar_clip_norm: clip must be a finite number > 0, got 0" in error_of(con, "SELECT ar_clip_norm(?, 0)", blob)
    zero = record_bytes([("z", np.zeros(3, np.float32))])
    assert parse(con, one(con, "SELECT ar_clip_norm(?, 1)", zero))["z"].tolist() == [0, 0, 0]


def _rng_reference(seed, count):
    """The documented generator, in Python: splitmix64 -> xoshiro256**,
    Marsaglia polar normals (math.log here: agrees within an ulp)."""
    import math

    M = (1 << 64) - 1
    x = seed & M
    s = []
    for _ in range(4):
        x = (x + 0x9E3779B97F4A7C15) & M
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        s.append(z ^ (z >> 31))

    def rotl(v, k):
        return ((v << k) | (v >> (64 - k))) & M

    def nxt():
        out = (rotl((s[1] * 5) & M, 7) * 9) & M
        t = (s[1] << 17) & M
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return out

    out = []
    while len(out) < count:
        while True:
            u = 2.0 * ((nxt() >> 11) * 2.0**-53) - 1.0
            v = 2.0 * ((nxt() >> 11) * 2.0**-53) - 1.0
            q = u * u + v * v
            if 0 < q < 1:
                break
        fct = math.sqrt(-2.0 * math.log(q) / q)
        out += [u * fct, v * fct]
    return np.array(out[:count])


def test_add_noise_generator_and_dtypes():
    con = connect()
    rec = {"a": np.zeros((3, 4), np.float32), "i": np.arange(3, dtype=np.int64), "d": np.ones(5)}
    blob = record_bytes(list(rec.items()))
    got = parse(con, one(con, "SELECT ar_add_noise(?, 0.5, 42)", blob))
    z = _rng_reference(42, 17)
    assert got["i"].tolist() == [0, 1, 2]  # integer arrays are left alone
    assert np.allclose(got["a"].ravel(), (0.5 * z[:12]).astype(np.float32), rtol=1e-6, atol=0)
    assert np.allclose(got["d"], 1 + 0.5 * z[12:17], rtol=1e-14, atol=0)
    assert got["a"].dtype == np.float32 and got["d"].dtype == np.float64
    # reproducible with a seed, different without
    assert one(con, "SELECT ar_add_noise(?, 1, 7) = ar_add_noise(?, 1, 7)", blob, blob) == 1
    assert one(con, "SELECT ar_add_noise(?, 1) = ar_add_noise(?, 1)", blob, blob) == 0
    assert parse(con, one(con, "SELECT ar_add_noise(?, 0, 7)", blob))["d"].tolist() == [1.0] * 5
    # the statistics of many draws
    big = record_bytes([("x", np.zeros(200000))])
    x = parse(con, one(con, "SELECT ar_add_noise(?, 2.0, 123)", big))["x"]
    assert abs(x.mean()) < 0.03 and abs(x.std() - 2.0) < 0.02
    assert "ar_add_noise: stddev must be a finite number >= 0, got -1" in error_of(
        con, "SELECT ar_add_noise(?, -1, 1)", blob
    )
    assert "seed" in error_of(con, "SELECT ar_add_noise(?, 1, 'x')", blob)


def test_add_noise_is_the_only_nondeterministic_function():
    con = connect()
    flags = con.execute(
        "SELECT narg, flags FROM pragma_function_list WHERE name = 'ar_add_noise' ORDER BY narg"
    ).fetchall()
    assert [(n, bool(f & 0x800)) for n, f in flags] == [(2, False), (3, True)]
