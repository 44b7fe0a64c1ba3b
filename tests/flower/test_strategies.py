# SPDX-License-Identifier: Apache-2.0
"""Every strategy of flwr 1.42 that our SQL computes, run by Flower itself
(`Strategy.start` over a Grid of seeded fake clients, see strategy_grid.py),
against the same replies' serde bytes aggregated in SQL.

Models have several keys, float32 and float64 arrays of odd sizes; rounds
have 3 to 7 clients with different num-examples. Results are compared in
ulps of the wider dtype (the distance between the two values counted in
representable numbers): bit-identical where our arithmetic is Flower's,
otherwise the largest distance found is asserted and stated in the test's
docstring (docs/flower-strategies.md explains each).
"""

import json
import logging
import math

import numpy as np
from arlib import connect
from flwr.app import Array, ArrayRecord, MetricRecord, RecordDict
from flwr.serverapp import strategy as fs
from flwr.serverapp.strategy.multikrum import compute_distances, select_multikrum
from flwr.supercore.differential_privacy import clip_inputs_inplace, compute_stdv, get_norm
from strategy_grid import Client, ar_bytes, ar_from_bytes, fleet, model, rd_bytes, rd_from_bytes, run, to_numpy

logging.getLogger("flwr").setLevel(logging.ERROR)  # start() logs every round; fraction_evaluate=0 warns

F32, F64 = np.float32, np.float64
# odd sizes, both dtypes, a scalar-like key
SPEC = [
    ("conv.w", (3, 5, 7), F32),
    ("conv.b", (7,), F32),
    ("fc.w", (33, 31), F64),
    ("fc.b", (31,), F64),
    ("t", (1,), F32),
]
SPEC32 = [(k, s, F32) for k, s, _ in SPEC]  # a float32 model: Krum's float32 Gram matrix


def dtypes(spec):
    return {k: dt for k, _, dt in spec}


def initial(spec, seed=1):
    return model(np.random.default_rng(seed), spec)


# --- comparing ---------------------------------------------------------------------


def ulps(got, want):
    """Elementwise distance in ulps of the wider dtype (both cast to it)."""
    wide = np.result_type(got.dtype, want.dtype)
    itype = np.int32 if wide == F32 else np.int64
    a = np.ascontiguousarray(got, wide).view(itype).astype(np.int64)
    b = np.ascontiguousarray(want, wide).view(itype).astype(np.int64)
    # sign-magnitude to a monotonic integer line (-0.0 and 0.0 meet)
    lo = np.iinfo(itype).min
    a = np.where(a < 0, lo - a, a)
    b = np.where(b < 0, lo - b, b)
    return np.abs(a - b)


def max_ulps(got, want):
    """{key: largest ulp distance} of two {key: ndarray}; keys, order, shapes
    and dtypes must agree."""
    assert list(got) == list(want), (list(got), list(want))
    out = {}
    for k in want:
        assert got[k].shape == want[k].shape, (k, got[k].shape, want[k].shape)
        assert got[k].dtype == want[k].dtype, (k, got[k].dtype, want[k].dtype)
        out[k] = int(ulps(got[k], want[k]).max()) if got[k].size else 0
    return out


def assert_identical(got, want, what):
    d = max_ulps(got, want)
    assert all(v == 0 for v in d.values()), (what, d)
    for k in want:
        assert got[k].tobytes() == want[k].tobytes(), (what, k)


def ours_ar(blob):
    return to_numpy(ar_from_bytes(blob))


def store(con, grid):
    """The grid's replies into table replies(round, pos, node, content)."""
    con.execute("CREATE TABLE IF NOT EXISTS replies(round INTEGER, pos INTEGER, node INTEGER, content BLOB)")
    con.execute("DELETE FROM replies")
    con.executemany("INSERT INTO replies VALUES (?, ?, ?, ?)", grid.replies)


def one(con, sql, *args):
    """The first column of the first row; args positional, or one dict of named ones."""
    params = args[0] if len(args) == 1 and isinstance(args[0], dict) else args
    return con.execute(sql, params).fetchone()[0]


ROUND = "(SELECT content FROM replies WHERE round = ? ORDER BY pos)"
WEIGHT = "rd_value(content, 'metrics', 'num-examples')"


# --- FedAvg, FedProx and the train metrics -------------------------------------------


def _fedavg_like(make, n, rounds=2, seed=0):
    res, grid = run(make(), initial(SPEC), fleet(n, dtypes(SPEC), seed=10 + n), num_rounds=rounds, seed=seed)
    con = connect()
    store(con, grid)
    return res, grid, con


def test_fedavg_and_fedprox_bit_identical():
    """rd_mean is FedAvg.aggregate_train byte for byte: the serde bytes of
    Flower's RecordDict {arrays, metrics} equal rd_mean's, for FedAvg and
    FedProx (whose server side is FedAvg's), 3, 5 and 7 clients, 2 rounds
    (the second from the first's result)."""
    for n in (3, 5, 7):
        for make in (
            lambda: fs.FedAvg(fraction_evaluate=0.0),
            lambda: fs.FedProx(fraction_evaluate=0.0, proximal_mu=0.3),
        ):
            res, grid, con = _fedavg_like(make, n)
            last = max(r for r, *_ in grid.replies)
            ours = one(con, f"SELECT rd_mean(content) FROM {ROUND}", last)
            want = rd_bytes(RecordDict({"arrays": res.arrays, "metrics": res.train_metrics_clientapp[last]}))
            assert bytes(ours) == want, (n, type(make()).__name__)


def test_train_metrics_as_flower():
    """rd_mean's MetricRecord is Flower's default train_metrics_aggr_fn
    (aggregate_metricrecords): the same keys (num-examples left out), the
    same doubles (ints times float factors, lists element by element), every
    round of a 3-round FedAvg run with 6 clients."""
    res, grid, con = _fedavg_like(lambda: fs.FedAvg(fraction_evaluate=0.0), 6, rounds=3)
    for rnd in (1, 2, 3):
        ours = rd_from_bytes(one(con, f"SELECT rd_mean(content) FROM {ROUND}", rnd))["metrics"]
        want = res.train_metrics_clientapp[rnd]
        assert list(ours.keys()) == list(want.keys()) == ["loss", "steps", "accs"], (list(ours.keys()), list(want))
        for k in want:
            assert ours[k] == want[k], (rnd, k, ours[k], want[k])
            assert type(ours[k]) is type(want[k]), (k, type(ours[k]))


def summation_bound(terms, dtype):
    """Higham's bound for adding n terms in order in `dtype`, each a rounded
    product: |error| <= gamma_(n+1) * sum |term|, gamma_k = k u / (1 - k u)."""
    u = np.finfo(dtype).eps / 2
    k = len(terms) + 1
    return k * u / (1 - k * u) * np.sum(np.abs(np.stack(terms).astype(F64)), axis=0)


def test_ar_mean_against_fedavg():
    """ar_mean accumulates in double and rounds once; Flower adds `value *
    w` in the dtype, n roundings. Every difference is within the summation
    bound of Flower's sum (summation_bound), and at most 16 ulps on float64
    keys and 3 on float32 keys (found at elements near 0, where the terms,
    of size ~1, cancel: the ulp of the result is small there), 3, 5 and 7
    clients."""
    worst = {}
    for n in (3, 5, 7):
        res, grid, con = _fedavg_like(lambda: fs.FedAvg(fraction_evaluate=0.0), n, rounds=1)
        ours = ours_ar(one(con, f"SELECT ar_mean(rd_array_record(content), {WEIGHT}) FROM {ROUND}", 1))
        flower = to_numpy(res.arrays)
        contents = [rd_from_bytes(b) for r, _, _, b in grid.replies if r == 1]
        w = [c["metrics"]["num-examples"] for c in contents]
        for k, v in max_ulps(ours, flower).items():
            worst[k] = max(worst.get(k, 0), v)
            terms = [c["arrays"][k].numpy() * (wi / sum(w)) for c, wi in zip(contents, w)]
            diff = np.abs(ours[k].astype(F64) - flower[k].astype(F64))
            assert np.all(diff <= summation_bound(terms, flower[k].dtype)), (n, k)
    assert max(worst[k] for k, _, dt in SPEC if dt == F64) == 16, worst
    assert max(worst[k] for k, _, dt in SPEC if dt == F32) == 3, worst


# --- FedMedian, FedTrimmedAvg ----------------------------------------------------------


def test_fedmedian_bit_identical():
    """ar_median is FedMedian bit for bit (odd counts pick a value; even
    counts average two in the array's type, as np.median's mean does), 3 to
    7 clients; the metrics as FedAvg's."""
    for n in (3, 4, 5, 6, 7):
        res, grid, con = _fedavg_like(lambda: fs.FedMedian(fraction_evaluate=0.0), n, rounds=1)
        ours = ours_ar(one(con, f"SELECT ar_median(rd_array_record(content)) FROM {ROUND}", 1))
        assert_identical(ours, to_numpy(res.arrays), ("FedMedian", n))
        metrics = rd_from_bytes(one(con, f"SELECT rd_mean(content) FROM {ROUND}", 1))["metrics"]
        assert dict(metrics) == dict(res.train_metrics_clientapp[1])


def _special_layers(rng, n, dt, shape):
    """n layers of few distinct values (ties), -0.0, +-inf and NaNs of
    several bit patterns (both signs, payloads, a signalling one)."""
    pool = np.array([0.0, -0.0, 1.0, -1.0, 2.5, np.inf, -np.inf, 0.1], dtype=dt)
    x = rng.choice(pool, size=(n, *shape)).astype(dt)
    nans = {
        F32: [0x7FC00000, 0xFFC00000, 0x7FC00001, 0x7F800001],
        F64: [0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001],
        np.float16: [0x7E00, 0xFE00, 0x7E01, 0x7C01],
    }[dt]
    bits = x.view({F32: np.uint32, F64: np.uint64, np.float16: np.uint16}[dt])
    hit = rng.random(x.shape) < rng.choice([0.0, 0.05, 0.3])
    bits[hit] = rng.choice(nans, size=int(hit.sum())).astype(bits.dtype)
    return list(x)


def test_fedmedian_special_values_to_130_clients():
    """FedMedian's arithmetic (np.median(np.stack(layers), axis=0) on the
    layers Flower's serde decodes) bit for bit, NumPy 2's NaN included (the
    bits of the NaN np.partition leaves last): 1 to 130 clients, float32,
    float64 and float16 layers of ties, -0.0, +-inf and NaNs of several bit
    patterns; and one FedMedian.start over 100 clients."""
    rng = np.random.default_rng(130)
    con = connect()
    con.execute("CREATE TABLE r(id INTEGER PRIMARY KEY, rec BLOB)")
    for n in range(1, 131):
        spec = {"a": (F32, (7, 3)), "b": (F64, (5,)), "c": (np.float16, (4,))}
        layers = {k: _special_layers(rng, n, dt, shape) for k, (dt, shape) in spec.items()}
        con.execute("DELETE FROM r")
        con.executemany(
            "INSERT INTO r(rec) VALUES (?)", [(ar_bytes({k: layers[k][i] for k in spec}),) for i in range(n)]
        )
        ours = ours_ar(one(con, "SELECT ar_median(rec) FROM (SELECT rec FROM r ORDER BY id)"))
        with np.errstate(all="ignore"):
            flower = {k: np.asarray(np.median(np.stack(v), axis=0)) for k, v in layers.items()}
        assert_identical(ours, flower, ("median", n))
    res, grid, con = _fedavg_like(lambda: fs.FedMedian(fraction_evaluate=0.0), 100, rounds=1)
    ours = ours_ar(one(con, f"SELECT ar_median(rd_array_record(content)) FROM {ROUND}", 1))
    assert_identical(ours, to_numpy(res.arrays), ("FedMedian", 100))


def test_fedtrimmedavg_many_clients():
    """FedTrimmedAvg over 10 to 130 clients (one FedTrimmedAvg.start each,
    beta 0.2 and 0.1): within 8 ulps of the layer's largest magnitude of
    Flower's result (docs/reference.md, ar_trimmed_mean)."""
    for n, beta in ((10, 0.2), (33, 0.1), (100, 0.2), (130, 0.2)):
        res, grid, con = _fedavg_like(lambda b=beta: fs.FedTrimmedAvg(fraction_evaluate=0.0, beta=b), n, rounds=1)
        ours = ours_ar(one(con, f"SELECT ar_trimmed_mean(rd_array_record(content), ?) FROM {ROUND}", beta, 1))
        flower = to_numpy(res.arrays)
        for k in flower:
            scale = np.abs(flower[k]).max()
            diff = np.abs(ours[k].astype(F64) - flower[k].astype(F64))
            assert np.all(diff <= 8 * np.spacing(scale)), (n, beta, k, diff.max() / np.spacing(scale))


def test_fedtrimmedavg():
    """ar_trimmed_mean against FedTrimmedAvg (beta 0.2, Flower's default, and
    0.3; 3 to 7 clients). Flower's np.mean adds the kept values in float32
    in np.partition's order and divides; ours rounds the double mean once.
    Every difference is within the summation bound of the kept values, and
    at most 8 ulps (float32) and 2 ulps (float64), found near 0."""
    worst = {}
    for beta in (0.2, 0.3):
        for n in (3, 4, 5, 6, 7):
            res, grid, con = _fedavg_like(lambda b=beta: fs.FedTrimmedAvg(fraction_evaluate=0.0, beta=b), n, rounds=1)
            ours = ours_ar(one(con, f"SELECT ar_trimmed_mean(rd_array_record(content), ?) FROM {ROUND}", beta, 1))
            for k, v in max_ulps(ours, to_numpy(res.arrays)).items():
                worst[(k, beta, n)] = v
            contents = [rd_from_bytes(b) for r, _, _, b in grid.replies if r == 1]
            flower = to_numpy(res.arrays)
            cut = int(beta * n)
            for k in ours:
                stack = np.sort(np.stack([c["arrays"][k].numpy() for c in contents]), axis=0)[cut : n - cut]
                bound = summation_bound(list(stack / len(stack)), flower[k].dtype)
                assert np.all(np.abs(ours[k].astype(F64) - flower[k].astype(F64)) <= bound), (k, beta, n)
    assert max(v for (k, _, _), v in worst.items() if k.startswith("fc")) == 2, worst
    assert max(v for (k, _, _), v in worst.items() if not k.startswith("fc")) == 8, worst


# --- Krum, MultiKrum, Bulyan -----------------------------------------------------------


def crowd(spec, scales, offsets=None, seed=5):
    """Clients with their own noise scales (and offsets: attackers), so that
    Krum scores have clear gaps; num-examples differ."""
    offsets = offsets or [0.0] * len(scales)
    return [
        Client(2000 + i, seed * 100 + i, dtypes(spec), 11 + 37 * i, scale=s, offset=o)
        for i, (s, o) in enumerate(zip(scales, offsets))
    ]


def flower_scores(contents, f):
    """select_multikrum's scores (multikrum.py), from Flower's own
    compute_distances (the Gram formula in the arrays' dtype)."""
    key = list(contents[0].array_records.keys())[0]
    dist = compute_distances([c[key] for c in contents])
    k = max(1, len(contents) - f - 2)
    return np.array([np.sum(dist[i, np.argsort(dist[i])[1 : k + 1]]) for i in range(len(dist))]), dist


def gram_bounds(contents, f):
    """How far Flower's float32 distances and scores can be from exact ones.
    flat vectors x_i of D elements, norms n_i = |x_i|^2: Flower's
    n_i + n_j - 2 x_i.x_j rounds n_i and the dot product (any summation
    order: gamma_D relative to n_i and to sum |x_i||x_j| <= (n_i + n_j) / 2),
    then one addition and one subtraction over magnitudes <= 2 (n_i + n_j):
    |error_ij| <= (2 gamma_D + 4u)(n_i + n_j) = err_ij. A score adds its k
    smallest distances (a 1-Lipschitz function of each) in float32:
    |score error_i| <= k max_j err_ij + gamma_k score_i."""
    key = list(contents[0].array_records.keys())[0]
    flat = np.stack([np.concatenate([a.numpy().ravel() for a in c[key].values()]).astype(F64) for c in contents])
    dtype = np.result_type(*[a.numpy().dtype for a in contents[0][key].values()])
    u = np.finfo(dtype).eps / 2
    D = flat.shape[1]
    gamma = lambda m: m * u / (1 - m * u)  # noqa: E731
    norms = np.sum(flat * flat, axis=1)
    err = (2 * gamma(D) + 4 * u) * (norms[:, None] + norms[None, :])
    exact = np.array([[np.sum((a - b) ** 2) for b in flat] for a in flat])
    k = max(1, len(contents) - f - 2)
    scores = np.array([np.sum(np.sort(np.delete(exact[i], i))[:k]) for i in range(len(flat))])
    bound = np.array([k * np.max(np.delete(err[i], i)) for i in range(len(flat))]) + gamma(k) * scores
    # Flower drops argsort(row)[0] as the node itself: exact while every
    # other distance clears the self-distance's error.
    self_first = all(np.min(np.delete(exact[i] - err[i], i)) > err[i, i] for i in range(len(flat)))
    return scores, bound, self_first


def ours_scores(con, rnd, f):
    return np.array(json.loads(one(con, f"SELECT ar_krum_scores(rd_array_record(content), ?) FROM {ROUND}", f, rnd)))


def decided(scores, bound, k):
    """Is the set of the k lowest scores the same for every scores' within
    bound? (a gap wider than both bounds at the selection boundary)."""
    if k >= len(scores):
        return True
    order = np.argsort(scores, kind="stable")
    a, b = order[k - 1], order[k]
    return scores[b] - scores[a] > bound[a] + bound[b]


def _krum_round(make, spec, scales, offsets, f):
    res, grid = run(make(), initial(spec), crowd(spec, scales, offsets), num_rounds=1)
    con = connect()
    store(con, grid)
    contents = [rd_from_bytes(b) for _, _, _, b in grid.replies]
    return res, con, contents


def test_krum_and_multikrum_on_clear_gaps():
    """Krum (f=2) and MultiKrum (f=2, 3 selected) over 7 clients of a float32
    model (Flower's Gram matrix in float32), 5 honest with different noise
    and 2 attackers: our scores are within gram_bounds of Flower's (largest
    relative difference asserted below 1e-5), every score gap exceeds the
    bounds (the data is built so), and ar_krum's result is Flower's bit for
    bit (same rows, same order, aggregate_arrayrecords' arithmetic)."""
    scales, offsets = [0.02, 0.1, 0.15, 0.2, 0.25, 0.05, 0.1], [0, 0, 0, 0, 0, 1.5, -2.5]
    for k in (1, 3):
        make = lambda k=k: (  # noqa: E731
            fs.Krum(fraction_evaluate=0.0, num_malicious_nodes=2)
            if k == 1
            else fs.MultiKrum(fraction_evaluate=0.0, num_malicious_nodes=2, num_nodes_to_select=k)
        )
        res, con, contents = _krum_round(make, SPEC32, scales, offsets, 2)
        flower, _ = flower_scores(contents, 2)
        exact, bound, self_first = gram_bounds(contents, 2)
        ours = ours_scores(con, 1, 2)
        assert self_first
        assert np.all(np.abs(ours - exact) <= 1e-9 * exact), (ours, exact)  # ours: exact differences in double
        assert np.all(np.abs(flower - exact) <= bound), (flower, exact, bound)
        assert np.max(np.abs(flower - ours) / ours) < 1e-5, np.abs(flower - ours) / ours
        srt = np.sort(exact)
        gaps = np.diff(srt)
        b = np.sort(bound)  # generous: the two largest bounds against every gap
        assert np.all(gaps > b[-1] + b[-2]), (gaps, bound)  # clear gaps: every selection decided
        picked = select_multikrum([rd_from_bytes(rd_bytes(c)) for c in contents], 2, k)
        ours_pick = list(np.argsort(ours, kind="stable")[:k])
        assert [rd_bytes(p) for p in picked] == [rd_bytes(contents[i]) for i in ours_pick]
        got = ours_ar(one(con, f"SELECT ar_krum(rd_array_record(content), {WEIGHT}, 2, ?) FROM {ROUND}", k, 1))
        assert_identical(got, to_numpy(res.arrays), ("krum", k))


def test_krum_selection_gap_rule_on_random_data():
    """On random rounds (3 to 7 clients, random f and k, float32 and mixed
    models, clients of random noise), wherever the score gap at the
    selection boundary exceeds the float32 rounding bound, Flower's
    select_multikrum picks the same set as ar_krum_scores' ranking. At
    least 100 of the 120 rounds must be decided so (110 are; the rest are
    near-ties that float32 rounding may order either way)."""
    rng = np.random.default_rng(99)
    con = connect()
    con.execute("CREATE TABLE r(pos INTEGER, content BLOB)")
    checked = 0
    for trial in range(120):
        n = int(rng.integers(3, 8))
        f = int(rng.integers(0, n - 2)) if n > 3 else 0
        k = int(rng.integers(1, n + 1))
        spec = SPEC32 if trial % 2 else SPEC
        base = initial(spec, seed=trial)
        contents = []
        for _ in range(n):
            arrays = {
                key: (v + rng.normal(0, rng.uniform(0.01, 0.3), v.shape)).astype(v.dtype) for key, v in base.items()
            }
            contents.append(
                RecordDict(
                    {
                        "arrays": ArrayRecord({key: Array(v) for key, v in arrays.items()}),
                        "metrics": MetricRecord({"num-examples": int(rng.integers(1, 100))}),
                    }
                )
            )
        con.execute("DELETE FROM r")
        con.executemany("INSERT INTO r VALUES (?, ?)", [(i, rd_bytes(c)) for i, c in enumerate(contents)])
        ours = np.array(
            json.loads(
                one(
                    con,
                    "SELECT ar_krum_scores(rd_array_record(content), ?) FROM (SELECT content FROM r ORDER BY pos)",
                    f,
                )
            )
        )
        exact, bound, self_first = gram_bounds(contents, f)
        if not (self_first and decided(exact, bound, k)):
            continue
        checked += 1
        picked = select_multikrum(contents, f, k)
        idx = sorted(next(i for i, c in enumerate(contents) if c is p) for p in picked)
        assert idx == sorted(np.argsort(ours, kind="stable")[:k].tolist()), (trial, n, f, k)
    assert checked >= 100, checked


def test_bulyan():
    """ar_bulyan against Bulyan (f=1, 7 clients: MultiKrum keeps 5, then the
    3 values nearest the median at every element), on the mixed and the
    float32 model. The MultiKrum selection has clear gaps (checked).
    Flower's np.mean adds the 3 picked values in the dtype in
    np.argpartition's order; ours is the double mean rounded once. Every
    difference is within (gamma_4 + u) max|x| at that element; the largest:
    6 ulps (float32) and 5 ulps (float64), at elements near 0."""
    scales, offsets = [0.02, 0.05, 0.08, 0.11, 0.14, 0.17, 0.1], [0, 0, 0, 0, 0, 0, 2.0]
    worst = {}
    for spec in (SPEC, SPEC32):
        res, con, contents = _krum_round(
            lambda: fs.Bulyan(fraction_evaluate=0.0, num_malicious_nodes=1), spec, scales, offsets, 1
        )
        exact, bound, self_first = gram_bounds(contents, 1)
        assert self_first and decided(exact, bound, 5)
        got = ours_ar(one(con, f"SELECT ar_bulyan(rd_array_record(content), 1) FROM {ROUND}", 1))
        flower = to_numpy(res.arrays)
        for key, v in max_ulps(got, flower).items():
            worst[flower[key].dtype.name] = max(worst.get(flower[key].dtype.name, 0), v)
            # Flower's float32 mean of beta = 3 values (gamma_4 of their
            # magnitudes) and our one rounding (u): within (gamma_4 + u) max |x|
            u = np.finfo(flower[key].dtype).eps / 2
            top = np.max(np.abs(np.stack([c["arrays"][key].numpy() for c in contents])), axis=0)
            bound = (4 * u / (1 - 4 * u) + u) * top
            assert np.all(np.abs(got[key].astype(F64) - flower[key]) <= bound), key
    assert worst == {"float32": 6, "float64": 5}, worst


# --- server optimizers: FedAvgM, FedAdam, FedYogi, FedAdagrad ---------------------------

OPTIMIZERS = {"fedavgm": fs.FedAvgM, "fedadam": fs.FedAdam, "fedyogi": fs.FedYogi, "fedadagrad": fs.FedAdagrad}


def _copy(d):
    return None if d is None else {k: np.array(v) for k, v in d.items()}


def _state(strategy):
    if isinstance(strategy, fs.FedAvgM):
        mv = strategy.momentum_vector
        return {"momentum_vector": None if mv is None else dict(zip(strategy.current_arrays.keys(), map(np.array, mv)))}
    return {"m_t": _copy(strategy.m_t), "v_t": _copy(strategy.v_t)}


def _optimizer_rounds(name, options, n, client_dtypes, rounds=5, spec=SPEC):
    """start() for `rounds` rounds; the same in SQL, round after round:
    state = ar_server_step(name, state, FedAvg aggregate, round, options).
    Every round's model and optimizer arrays must be Flower's, bit for bit
    and dtype for dtype. Returns the dtypes of the last model."""
    strategy = OPTIMIZERS[name](fraction_evaluate=0.0, **options)
    res, grid = run(strategy, initial(spec), fleet(n, client_dtypes, seed=n), num_rounds=rounds, watch=_state)
    con = connect()
    store(con, grid)
    state = one(con, "SELECT rd('arrays', 'array', ?)", ar_bytes(initial(spec)))
    for rnd in range(1, rounds + 1):
        state = one(
            con,
            f"SELECT ar_server_step(?, ?, (SELECT rd_array_record(rd_mean(content)) FROM {ROUND}), ?, ?)",
            name,
            state,
            rnd,
            rnd,
            json.dumps(options),
        )
        ours = rd_from_bytes(state)
        what = (name, options, n, rnd)
        assert_identical(to_numpy(ours["arrays"]), grid.arrays[rnd], what)
        for attr, arrays in grid.watched[rnd].items():
            if arrays is None:
                assert attr not in ours, what
            else:
                assert_identical(to_numpy(ours[attr]), arrays, what + (attr,))
    return {k: v.dtype.name for k, v in grid.arrays[rounds].items()}


def test_fedavgm_five_rounds():
    """FedAvgM (no server optimization, learning rate, momentum, both) over
    5 rounds, 3 to 7 clients: bit-identical, dtypes kept."""
    for n, options in [
        (3, {}),
        (4, {"server_momentum": 0.9}),
        (5, {"server_learning_rate": 0.7}),
        (7, {"server_learning_rate": 1.3, "server_momentum": 0.5}),
    ]:
        assert _optimizer_rounds("fedavgm", options, n, dtypes(SPEC)) == {
            k: np.dtype(d).name for k, d in dtypes(SPEC).items()
        }


def test_fedyogi_fedadagrad_five_rounds():
    """FedYogi and FedAdagrad (defaults and others) over 5 rounds:
    bit-identical, dtypes kept (every scalar is a Python float)."""
    for name, n, options in [
        ("fedyogi", 3, {}),
        ("fedyogi", 6, {"eta": 0.1, "tau": 1e-4, "beta_1": 0.8}),
        ("fedadagrad", 5, {}),
        ("fedadagrad", 7, {"eta": 0.3, "eta_l": 0.01}),
    ]:
        assert _optimizer_rounds(name, options, n, dtypes(SPEC)) == {
            k: np.dtype(d).name for k, d in dtypes(SPEC).items()
        }


class _NumPyWithCPow:
    """numpy, but np.power of two Python floats is C's pow (glibc's,
    correctly rounded): what NumPy itself calls on CPUs without AVX-512.
    With AVX-512, NumPy >= 1.22 takes SVML's pow, which can be 1 ulp off
    (0.99 ** 3 on such a CPU), so Flower's own eta_norm depends on the CPU;
    ar_server_step takes C's pow everywhere."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def power(x, y):
        if isinstance(x, float) and isinstance(y, float):
            return np.float64(math.pow(x, y))
        return np.power(x, y)


FEDADAM_CASES = [
    (3, {}, dtypes(SPEC)),
    (5, {"eta": 0.05, "beta_1": 0.8, "beta_2": 0.999, "tau": 1e-9}, dtypes(SPEC)),
    (7, {}, None),
]


def test_fedadam_five_rounds_numpy2_promotes():
    """FedAdam over 5 rounds, bit-identical (fedadam.py's np.power as C's
    pow, see _NumPyWithCPow). On NumPy 2 its eta_norm (a float64 NumPy
    scalar) makes the new model float64 for float32 keys from round 1 (m_t,
    v_t stay float32 in round 1 and become float64 from round 2, when the
    model they meet is float64); clients that reply float32 (a framework's
    model) and clients that reply in the dtype received (a NumPy client)
    both give mixed-dtype rounds, followed by ar_server_step's default
    (option numpy 2)."""
    import flwr.serverapp.strategy.fedadam as fedadam

    saved = fedadam.np
    fedadam.np = _NumPyWithCPow()
    try:
        for n, options, client_dtypes in FEDADAM_CASES:
            assert set(_optimizer_rounds("fedadam", options, n, client_dtypes).values()) == {"float64"}
    finally:
        fedadam.np = saved


SPEC_BUFFER = SPEC32 + [("bn.num_batches_tracked", (1,), np.int64)]  # PyTorch's BatchNorm counter (0-d there)


def test_optimizers_with_an_int64_buffer():
    """A model with an int64 buffer, as a PyTorch state_dict has, and clients
    that reply it as int64: FedAvg's aggregate makes it float64, and every
    server optimizer computes on the int64 model as NumPy 2 does (int64 with
    float64 gives float64) — bit-identical to Flower over 3 rounds, the
    buffer float64 from round 1 on."""
    import flwr.serverapp.strategy.fedadam as fedadam

    saved = fedadam.np
    fedadam.np = _NumPyWithCPow()
    try:
        for name, options in [
            ("fedadam", {}),
            ("fedyogi", {}),
            ("fedadagrad", {}),
            ("fedavgm", {"server_momentum": 0.9}),
            ("fedavgm", {"server_learning_rate": 0.5}),
        ]:
            got = _optimizer_rounds(name, options, 4, dtypes(SPEC_BUFFER), rounds=3, spec=SPEC_BUFFER)
            assert got["bn.num_batches_tracked"] == "float64", (name, got)
    finally:
        fedadam.np = saved


def test_fedadam_with_this_cpus_pow():
    """FedAdam as flwr runs here, NumPy's own np.power: where it is C's pow
    (CPUs without AVX-512) bit-identical; otherwise eta_norm may be 1 ulp
    off, and every model element is within 1e-12 * max(1, |x|) of ours over
    5 rounds."""
    cpow = all(np.power(b, r + 1.0) == math.pow(b, r + 1.0) for b in (0.9, 0.99, 0.8, 0.999) for r in range(1, 6))
    for n, options, client_dtypes in FEDADAM_CASES[:2]:
        try:
            _optimizer_rounds("fedadam", options, n, client_dtypes)
            continue
        except AssertionError:
            if cpow:
                raise
        strategy = fs.FedAdam(fraction_evaluate=0.0, **options)
        res, grid = run(strategy, initial(SPEC), fleet(n, client_dtypes, seed=n), num_rounds=5)
        con = connect()
        store(con, grid)
        state = one(con, "SELECT rd('arrays', 'array', ?)", ar_bytes(initial(SPEC)))
        for rnd in range(1, 6):
            state = one(
                con,
                f"SELECT ar_server_step('fedadam', ?, (SELECT rd_array_record(rd_mean(content)) FROM {ROUND}), ?, ?)",
                state,
                rnd,
                rnd,
                json.dumps(options),
            )
            ours = to_numpy(rd_from_bytes(state)["arrays"])
            for k, want in grid.arrays[rnd].items():
                assert ours[k].dtype == want.dtype
                assert np.all(np.abs(ours[k] - want) <= 1e-12 * np.maximum(1, np.abs(want))), (n, rnd, k)


def test_fedadam_numpy1_option_keeps_float32():
    """{"numpy": 1} is NumPy 1's value-based casting (eta_norm cast to
    float32; tests/python/test_strategy.py checks its bits against Flower's
    code on NumPy 1.x): float32 keys stay float32, unlike flwr on NumPy 2."""
    con = connect()
    model = initial(SPEC)
    agg = {k: (v + 0.01).astype(v.dtype) for k, v in model.items()}
    for numpy, want in ((1, dtypes(SPEC)), (2, {k: F64 for k in model})):
        state = rd_from_bytes(
            one(
                con,
                "SELECT ar_server_step('fedadam', rd('arrays', 'array', ?), ?, 1, ?)",
                ar_bytes(model),
                ar_bytes(agg),
                json.dumps({"numpy": numpy}),
            )
        )
        assert {k: a.numpy().dtype for k, a in state["arrays"].items()} == {k: np.dtype(d) for k, d in want.items()}
        assert {a.numpy().dtype for a in state["m_t"].values()} == {np.dtype(F32), np.dtype(F64)}


# --- DifferentialPrivacyServerSideFixedClipping ----------------------------------------

CLIPPED_ROUND = """
    SELECT rd_mean(rd_set(content, 'arrays', 'array',
                          ar_add(:cur, ar_clip_norm(ar_sub(rd_array_record(content), :cur), :clip))))
    FROM (SELECT content FROM replies WHERE round = :round ORDER BY pos)"""


def test_dp_fixed_clipping_without_noise():
    """DifferentialPrivacyServerSideFixedClipping around FedAvg with
    noise_multiplier 0 (Flower permits it: the noise is N(0, 0)) over 3
    rounds, 5 clients whose updates are partly above and partly below the
    clipping norm, against the SQL replay (each reply clipped as current +
    ar_clip_norm(reply - current), then rd_mean; ar_add_noise with stddev
    compute_stdv = 0; the model carried from our own previous round).
    Clip factors: Flower's get_norm is float32 for float32 arrays (and its
    sum of squares mixes float32 and float64), ours is double; the factors
    agree within the float32 norm's rounding bound gamma_(D+4) / 2 + u
    relative (D elements), and within one float32 rounding u = 2^-24 in
    fact (observed 8.4e-9). Unclipped replies are bit-identical. Each model
    element differs from Flower's by at most its dtype's roundings plus the
    factors' difference times the largest update there (observed 6.1e-9 of
    it): 4 ulps on float32 keys, but 662700568 ulps on float64 keys, whose
    clip factor in Flower carries the float32 norm's error (1.5e-7 relative
    in float64 ulps)."""
    clip, n, rounds = 0.6, 5, 3
    scales = [0.005, 0.01, 0.02, 0.03, 0.05]
    strategy = fs.DifferentialPrivacyServerSideFixedClipping(fs.FedAvg(fraction_evaluate=0.0), 0.0, clip, n)
    clients = crowd(SPEC, scales, seed=8)
    res, grid = run(strategy, initial(SPEC), clients, num_rounds=rounds)
    con = connect()
    store(con, grid)
    D = sum(int(np.prod(s)) for _, s, _ in SPEC)
    u32 = np.finfo(F32).eps / 2
    factor_bound = (D + 4) * u32 / (1 - (D + 4) * u32) / 2 + u32
    cur = ar_bytes(initial(SPEC))
    kinds, worst, worst_factor, worst_rel = set(), {}, 0.0, 0.0
    for rnd in range(1, rounds + 1):
        current = to_numpy(ar_from_bytes(cur))
        top = {k: np.zeros(v.shape) for k, v in current.items()}  # max |update| per element
        for r, _, _, blob in grid.replies:
            if r != rnd:
                continue
            reply = rd_from_bytes(blob)["arrays"]
            update = [reply[k].numpy() - current[k] for k in current]
            for k, x in zip(current, update):
                top[k] = np.maximum(top[k], np.abs(x))
            flower_factor = min(1, clip / get_norm(update))
            ours_factor = min(1, clip / one(con, "SELECT ar_norm(ar_sub(?, ?))", ar_bytes(to_numpy(reply)), cur))
            kinds.add(flower_factor < 1)
            worst_factor = max(worst_factor, abs(flower_factor - ours_factor) / ours_factor)
            # Flower's clip_inputs_inplace on the update, against ar_clip_norm
            flower_clipped = [np.array(x) for x in update]
            clip_inputs_inplace(flower_clipped, clip)
            ours_clipped = ours_ar(
                one(con, "SELECT ar_clip_norm(ar_sub(?, ?), ?)", ar_bytes(to_numpy(reply)), cur, clip)
            )
            if flower_factor == 1:
                assert_identical(ours_clipped, dict(zip(current, flower_clipped)), ("unclipped", rnd))
        mean = one(con, CLIPPED_ROUND, {"cur": cur, "clip": clip, "round": rnd})
        stdv = compute_stdv(0.0, clip, n)
        cur = one(con, "SELECT ar_add_noise(rd_array_record(?), ?, ?)", mean, stdv, rnd)
        got = ours_ar(cur)
        for k, v in max_ulps(got, grid.arrays[rnd]).items():
            worst[k] = max(worst.get(k, 0), v)
            # the factors' difference times the update, plus the dtype's roundings
            want = grid.arrays[rnd][k]
            diff = np.abs(got[k].astype(F64) - want) - 4 * np.spacing(np.abs(want))
            worst_rel = max(worst_rel, float(np.max(diff / np.maximum(top[k], 1e-300))))
        metrics = rd_from_bytes(mean)["metrics"]
        assert dict(metrics) == dict(res.train_metrics_clientapp[rnd])
    assert kinds == {True, False}, kinds  # both clipped and unclipped replies
    assert worst_factor <= factor_bound, (worst_factor, factor_bound)
    assert worst_factor < u32, worst_factor
    assert worst_rel <= 2 * factor_bound and worst_rel < u32, (worst_rel, factor_bound)
    assert max(worst[k] for k, _, dt in SPEC if dt == F32) == 4, worst
    assert max(worst[k] for k, _, dt in SPEC if dt == F64) == 662700568, worst


def test_dp_noise_standard_deviation():
    """The noise: Flower's wrapper adds N(0, compute_stdv(noise_multiplier,
    clipping_norm, num_sampled_clients)) to the aggregate; ar_add_noise with
    that stddev adds the same distribution. Both noises (Flower's: its noisy
    result minus its noiseless one, same replies; ours: our noisy aggregate
    minus our noiseless one), over 250 000 elements (float64 and float32),
    have a sample standard deviation within 5 standard errors
    (sqrt(1 / (2N)) relative) of stdv and a mean within 5 sigma / sqrt(N)
    of 0; and different seeds give different noise."""
    spec = [("big", (400, 501), F64), ("big32", (250, 201), F32)]
    clip, nm, n = 0.6, 1.1, 4
    stdv = compute_stdv(nm, clip, n)
    noises = {}
    for multiplier in (0.0, nm):
        np.random.seed(17)  # Flower draws its noise from NumPy's global generator
        strategy = fs.DifferentialPrivacyServerSideFixedClipping(fs.FedAvg(fraction_evaluate=0.0), multiplier, clip, n)
        res, grid = run(strategy, initial(spec), crowd(spec, [0.001, 0.002, 0.003, 0.004], seed=9), num_rounds=1)
        noises[multiplier] = grid.arrays[1]
    flower_noise = np.concatenate([(noises[nm][k].astype(F64) - noises[0.0][k]).ravel() for k, *_ in spec])
    con = connect()
    store(con, grid)
    mean = one(con, CLIPPED_ROUND, {"cur": ar_bytes(initial(spec)), "clip": clip, "round": 1})
    base = ours_ar(one(con, "SELECT rd_array_record(?)", mean))
    ours = {}
    for seed in (1, 2):
        noisy = ours_ar(one(con, "SELECT ar_add_noise(rd_array_record(?), ?, ?)", mean, stdv, seed))
        ours[seed] = np.concatenate([(noisy[k].astype(F64) - base[k]).ravel() for k, *_ in spec])
    N = flower_noise.size
    assert N == 250_650
    for noise in (flower_noise, ours[1], ours[2]):
        assert abs(np.std(noise) / stdv - 1) < 5 / np.sqrt(2 * N), np.std(noise) / stdv
        assert abs(np.mean(noise)) < 5 * stdv / np.sqrt(N), np.mean(noise)
    assert not np.array_equal(ours[1], ours[2])


def test_dp_client_side_fixed_clipping_server_half():
    """DifferentialPrivacyClientSideFixedClipping: the clients clip (its
    fixedclipping_mod), the server aggregates with the wrapped strategy and
    adds noise. With noise_multiplier 0, 2 rounds of 4 clients: the model is
    rd_mean's bit for bit (ar_add_noise with stddev 0 adds zeros)."""
    n = 4
    strategy = fs.DifferentialPrivacyClientSideFixedClipping(fs.FedAvg(fraction_evaluate=0.0), 0.0, 0.6, n)
    res, grid = run(strategy, initial(SPEC), fleet(n, dtypes(SPEC), seed=21), num_rounds=2)
    con = connect()
    store(con, grid)
    for rnd in (1, 2):
        ours = one(
            con,
            f"SELECT ar_add_noise(rd_array_record(rd_mean(content)), ?, 7) FROM {ROUND}",
            compute_stdv(0.0, 0.6, n),
            rnd,
        )
        assert_identical(ours_ar(ours), grid.arrays[rnd], ("dp client side", rnd))


# --- QFedAvg: a SQL recipe ---------------------------------------------------------------

QFEDAVG = """
    WITH k AS (SELECT ar_scale(ar_sub(:model, rd_array_record(content)), 1.0 / :lr) AS grad,    -- L (w - w_k)
                      rd_value(content, 'metrics', :loss_key) + 1e-10 AS loss
                 FROM replies WHERE round = :round),
         t AS (SELECT ar_scale(grad, pow(loss, :q)) AS delta,
                      :q * pow(loss, :q - 1) * pow(ar_norm(grad), 2) + 1.0 / :lr * pow(loss, :q) AS h
                 FROM k)
    SELECT ar_sub(ar_cast(:model, 'float64'), ar_scale(ar_cast(ar_sum(delta), 'float64'), 1.0 / sum(h))) FROM t"""


def test_qfedavg_recipe():
    """QFedAvg (q-FedAvg: new = w - sum_k loss_k^q L (w - w_k) / sum_k h_k)
    as the SQL recipe of docs/flower-strategies.md, over 3 rounds of 5
    clients, q 0.1 and 0.5. flwr on NumPy 2 returns float64 (its sum_h is a
    NumPy float64), and so does the recipe; Flower computes the gradients
    and their sum in float32, the recipe in double, so the models agree
    within 1e-6 of the largest update (observed 3.8e-7), not bit for bit."""
    worst = 0.0
    for q in (0.1, 0.5):
        lr = 0.05
        strategy = fs.QFedAvg(client_learning_rate=lr, q=q, train_loss_key="loss", fraction_evaluate=0.0)
        res, grid = run(strategy, initial(SPEC), fleet(5, dtypes(SPEC), seed=31), num_rounds=3)
        con = connect()
        store(con, grid)
        cur = ar_bytes(initial(SPEC))
        for rnd in (1, 2, 3):
            new = one(con, QFEDAVG, {"model": cur, "lr": lr, "q": q, "loss_key": "loss", "round": rnd})
            got, want, before = ours_ar(new), grid.arrays[rnd], to_numpy(ar_from_bytes(cur))
            for k in want:
                assert got[k].dtype == want[k].dtype == F64, (k, got[k].dtype, want[k].dtype)
                step = np.max(np.abs(want[k] - before[k]))
                worst = max(worst, float(np.max(np.abs(got[k] - want[k]))) / step)
            cur = new
    assert worst < 1e-6, worst
