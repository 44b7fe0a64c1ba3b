# SPDX-License-Identifier: Apache-2.0
"""rd_mean and ar_server_step against Flower's strategy arithmetic, bit for bit.

Flower itself cannot be installed here (no PyPI), so the reference below
reproduces, line for line in NumPy, the code of Flower's message-based
strategies (flwr 1.2x, py/flwr/serverapp/strategy/):
  - strategy_utils.py: aggregate_arrayrecords, aggregate_metricrecords
    (what FedAvg.aggregate_train, fedavg.py, returns);
  - fedopt.py: FedOpt._compute_deltat_and_mt (delta_t, m_t);
  - fedadam.py, fedyogi.py, fedadagrad.py: v_t and the model update
    (FedAdam's bias correction with server_round + 1);
  - fedavgm.py: the pseudo-gradient, the momentum vector (the raw
    pseudo-gradient in the first round), the server learning rate.
Every strategy runs 10 rounds on float32 and float64 models; the global
model, the optimizer's arrays and rd_mean's RecordDict must be identical
(and within 1e-6 of max(1, |x|) in any case). The reference runs on NumPy
1.x, so ar_server_step gets the option {"numpy": 1} (NumPy 1's value-based
casting of FedAdam's eta_norm); tests/flower/test_strategies.py checks the
default, NumPy 2's rules, against flwr itself."""

import json
import math

import numpy as np
from arlib import connect, decode_record, error_of, load_npy, one, record_bytes

# --- Flower's code, in NumPy ---------------------------------------------------


def flower_aggregate(replies, key="num-examples"):
    """strategy_utils.aggregate_arrayrecords + aggregate_metricrecords.
    replies: list of (arrays dict, metrics dict)."""
    weights = [m[key] for _, m in replies]
    total_weight = sum(weights)
    weight_factors = [w / total_weight for w in weights]
    agg = {}
    for (arrays, _), weight in zip(replies, weight_factors):
        for k, value in arrays.items():
            if k not in agg:
                agg[k] = value * weight
            else:
                agg[k] += value * weight
    metrics = {}
    for (_, m), weight in zip(replies, weight_factors):
        for k, value in m.items():
            if k == key:
                continue
            if k not in metrics:
                metrics[k] = [v * weight for v in value] if isinstance(value, list) else value * weight
            elif isinstance(value, list):
                metrics[k] = [c + v * weight for c, v in zip(metrics[k], value)]
            else:
                metrics[k] = metrics[k] + value * weight
    return {k: np.asarray(v) for k, v in agg.items()}, metrics


def _power(x, y):
    """np.power(x, y) for two Python floats, as NumPy computes it on CPUs
    without AVX-512: C's pow (correctly rounded in glibc). On AVX-512 CPUs
    NumPy >= 1.22 calls SVML's pow instead, which can be 1 ulp off (0.99**2:
    0x1.f5cfaacd9e83fp-1 instead of ...3ep-1), so Flower's own eta_norm
    depends on the CPU; ar_server_step takes C's pow everywhere."""
    return np.float64(math.pow(x, y))


class FedOpt:
    """fedopt.py's state and _compute_deltat_and_mt."""

    def __init__(self, eta, eta_l, beta_1, beta_2, tau):
        self.eta, self.eta_l, self.beta_1, self.beta_2, self.tau = eta, eta_l, beta_1, beta_2, tau
        self.current_arrays = None
        self.m_t = None
        self.v_t = None

    def configure_train(self, arrays):
        self.current_arrays = dict(arrays)

    def _compute_deltat_and_mt(self, aggregated_ndarrays):
        delta_t = {k: x - self.current_arrays[k] for k, x in aggregated_ndarrays.items()}
        if not self.m_t:
            self.m_t = {k: np.zeros_like(v) for k, v in aggregated_ndarrays.items()}
        self.m_t = {k: self.beta_1 * v + (1 - self.beta_1) * delta_t[k] for k, v in self.m_t.items()}
        return delta_t, self.m_t, aggregated_ndarrays


class FedAdam(FedOpt):
    def __init__(self, eta=1e-1, eta_l=1e-1, beta_1=0.9, beta_2=0.99, tau=1e-3):
        super().__init__(eta, eta_l, beta_1, beta_2, tau)

    def aggregate_train(self, server_round, aggregated_ndarrays):
        delta_t, m_t, aggregated_ndarrays = self._compute_deltat_and_mt(aggregated_ndarrays)
        if not self.v_t:
            self.v_t = {k: np.zeros_like(v) for k, v in aggregated_ndarrays.items()}
        self.v_t = {k: self.beta_2 * v + (1 - self.beta_2) * (delta_t[k] ** 2) for k, v in self.v_t.items()}
        eta_norm = (
            self.eta
            * np.sqrt(1 - _power(self.beta_2, server_round + 1.0))
            / (1 - _power(self.beta_1, server_round + 1.0))
        )
        return {k: x + eta_norm * m_t[k] / (np.sqrt(self.v_t[k]) + self.tau) for k, x in self.current_arrays.items()}


class FedYogi(FedOpt):
    def __init__(self, eta=1e-2, eta_l=0.0316, beta_1=0.9, beta_2=0.99, tau=1e-3):
        super().__init__(eta, eta_l, beta_1, beta_2, tau)

    def aggregate_train(self, server_round, aggregated_ndarrays):
        delta_t, m_t, aggregated_ndarrays = self._compute_deltat_and_mt(aggregated_ndarrays)
        if not self.v_t:
            self.v_t = {k: np.zeros_like(v) for k, v in aggregated_ndarrays.items()}
        self.v_t = {
            k: v - (1.0 - self.beta_2) * (delta_t[k] ** 2) * np.sign(v - delta_t[k] ** 2) for k, v in self.v_t.items()
        }
        return {k: x + self.eta * m_t[k] / (np.sqrt(self.v_t[k]) + self.tau) for k, x in self.current_arrays.items()}


class FedAdagrad(FedOpt):
    def __init__(self, eta=1e-1, eta_l=1e-1, tau=1e-3):
        super().__init__(eta, eta_l, 0.0, 0.0, tau)

    def aggregate_train(self, server_round, aggregated_ndarrays):
        delta_t, m_t, aggregated_ndarrays = self._compute_deltat_and_mt(aggregated_ndarrays)
        if not self.v_t:
            self.v_t = {k: np.zeros_like(v) for k, v in aggregated_ndarrays.items()}
        self.v_t = {k: v + (delta_t[k] ** 2) for k, v in self.v_t.items()}
        return {k: x + self.eta * m_t[k] / (np.sqrt(self.v_t[k]) + self.tau) for k, x in self.current_arrays.items()}


class FedAvgM:
    def __init__(self, server_learning_rate=1.0, server_momentum=0.0):
        self.server_learning_rate = server_learning_rate
        self.server_momentum = server_momentum
        self.server_opt = (self.server_momentum != 0.0) or (self.server_learning_rate != 1.0)
        self.current_arrays = None
        self.momentum_vector = None

    def configure_train(self, arrays):
        if self.current_arrays is None:
            self.current_arrays = dict(arrays)

    def aggregate_train(self, server_round, aggregated):
        if not self.server_opt:
            return aggregated
        keys = list(aggregated.keys())
        ndarrays = list(self.current_arrays.values())
        aggregated_ndarrays = list(aggregated.values())
        pseudo_gradient = [old - new for new, old in zip(aggregated_ndarrays, ndarrays)]
        if self.server_momentum > 0.0:
            if self.momentum_vector is None:
                self.momentum_vector = pseudo_gradient
            else:
                self.momentum_vector = [
                    self.server_momentum * mv + pg for mv, pg in zip(self.momentum_vector, pseudo_gradient)
                ]
            pseudo_gradient = self.momentum_vector
        updated = [np.asarray(old - self.server_learning_rate * pg) for old, pg in zip(ndarrays, pseudo_gradient)]
        self.current_arrays = dict(zip(keys, updated))
        return self.current_arrays


STRATEGIES = {"fedadam": FedAdam, "fedyogi": FedYogi, "fedadagrad": FedAdagrad, "fedavgm": FedAvgM}

# --- helpers ---------------------------------------------------------------------


def _rd(con, arrays, metrics, aname="arrays", mname="metrics"):
    return one(
        con,
        "select rd(?, 'array', ?, ?, 'metric', ?)",
        aname,
        record_bytes(list(arrays.items())),
        mname,
        json.dumps(metrics),
    )


def _arrays(con, rd, name):
    rec = one(con, "select rd_array_record(?, ?)", rd, name)
    return {k: load_npy(data) for k, _, _, _, data in decode_record(rec)}


def _same(got, want, what):
    assert got.keys() == want.keys(), what
    for k in want:
        g, w = got[k], np.asarray(want[k])
        assert g.dtype == w.dtype and g.shape == w.shape, (what, k, g.dtype, w.dtype)
        assert np.allclose(g, w, rtol=0, atol=1e-6 * max(1.0, float(np.max(np.abs(w))))), (what, k)
        assert g.tobytes() == w.tobytes(), (what, k, np.max(np.abs(g.astype(float) - w)))


def _replies(rng, model, n, dtype):
    out = []
    for c in range(n):
        arrays = {k: (v + rng.normal(0, 0.1, v.shape)).astype(dtype) for k, v in model.items()}
        metrics = {"num-examples": int(rng.integers(1, 1000)), "loss": float(rng.random()), "acc": [0.5, float(c)]}
        out.append((arrays, metrics))
    return out


def _run(strategy, dtype, options, rounds=10):
    con = connect()
    rng = np.random.default_rng(7)
    model = {"w": rng.normal(0, 1, (4, 3)).astype(dtype), "b": rng.normal(0, 1, (3,)).astype(dtype)}
    ref = STRATEGIES[strategy](**options)
    state = one(con, "select rd('arrays', 'array', ?)", record_bytes(list(model.items())))
    for rnd in range(1, rounds + 1):
        ref.configure_train(model)
        replies = _replies(rng, model, 3, dtype)
        agg, metrics = flower_aggregate(replies)
        con.execute("create temp table if not exists replies(round, content)")
        con.execute("delete from replies")
        for arrays, m in replies:
            con.execute("insert into replies values (?, ?)", (rnd, _rd(con, arrays, m)))
        mean = one(con, "select rd_mean(content) from replies")
        # byte-identical to Flower's serde of aggregate_train's result
        assert bytes(mean) == bytes(_rd(con, agg, metrics)), (strategy, dtype, rnd)
        model = ref.aggregate_train(rnd, agg)
        state = one(
            con,
            "select ar_server_step(?, ?, rd_array_record(?, 'arrays'), ?, ?)",
            strategy,
            state,
            mean,
            rnd,
            json.dumps({**options, "numpy": 1}),
        )
        _same(_arrays(con, state, "arrays"), model, (strategy, dtype, rnd, "arrays"))
        if strategy == "fedavgm":
            if ref.momentum_vector is not None:
                _same(
                    _arrays(con, state, "momentum_vector"),
                    dict(zip(model.keys(), ref.momentum_vector)),
                    (strategy, rnd, "momentum_vector"),
                )
        else:
            _same(_arrays(con, state, "m_t"), ref.m_t, (strategy, rnd, "m_t"))
            _same(_arrays(con, state, "v_t"), ref.v_t, (strategy, rnd, "v_t"))
    return con


# --- tests -----------------------------------------------------------------------


def test_fedadam_ten_rounds():
    for dt in (np.float32, np.float64):
        _run("fedadam", dt, {})
        _run("fedadam", dt, {"eta": 0.05, "beta_1": 0.8, "beta_2": 0.999, "tau": 1e-9})


def test_fedyogi_ten_rounds():
    for dt in (np.float32, np.float64):
        _run("fedyogi", dt, {})
        _run("fedyogi", dt, {"eta": 0.1, "tau": 1e-4})


def test_fedadagrad_ten_rounds():
    for dt in (np.float32, np.float64):
        _run("fedadagrad", dt, {})
        _run("fedadagrad", dt, {"eta": 0.3, "eta_l": 0.01})


def test_fedavgm_ten_rounds():
    for dt in (np.float32, np.float64):
        _run("fedavgm", dt, {})
        _run("fedavgm", dt, {"server_momentum": 0.9})
        _run("fedavgm", dt, {"server_learning_rate": 0.7})
        _run("fedavgm", dt, {"server_learning_rate": 1.3, "server_momentum": 0.5})


def test_rd_mean_dtypes_and_weights():
    """float16 sums in float16, integers in float64, float weights, names kept."""
    con = connect()
    rng = np.random.default_rng(3)
    for dt in (np.float16, np.int32, np.uint8, np.bool_):
        replies = []
        for c in range(4):
            a = {"x": (rng.normal(0, 3, (5,)) if dt != np.bool_ else rng.random(5) > 0.5).astype(dt)}
            replies.append((a, {"n": float(rng.random()) if c % 2 else int(c + 1), "m": float(c)}))
        agg, metrics = flower_aggregate(replies, "n")
        blobs = [_rd(con, a, m, "global", "train") for a, m in replies]
        con.execute("create temp table if not exists t(b)")
        con.execute("delete from t")
        con.executemany("insert into t values (?)", [(b,) for b in blobs])
        got = one(con, "select rd_mean(b, 'n') from t")
        assert bytes(got) == bytes(_rd(con, agg, metrics, "global", "train")), dt


def test_errors():
    con = connect()
    m = np.ones(3, np.float32)
    state = one(con, "select rd('arrays', 'array', ?)", record_bytes([("w", m)]))
    agg = record_bytes([("w", m)])

    def err(*args):
        return error_of(con, "select ar_server_step(?, ?, ?, 1" + (", ?)" if len(args) > 3 else ")"), *args)

    assert "ar_server_step: unknown strategy 'fedprox'" in err("fedprox", state, agg)
    assert "ar_server_step: unknown option 'beta_1' for fedadagrad" in err("fedadagrad", state, agg, '{"beta_1": 0.5}')
    assert "ar_server_step: unknown option 'lr' for fedavgm" in err("fedavgm", state, agg, '{"lr": 0.5}')
    assert "ar_server_step: option 'eta' must be finite" in err("fedadam", state, agg, '{"eta": {"double": "NaN"}}')
    assert "no ArrayRecord 'arrays'" in err("fedadam", one(con, "select rd('x', 'array', ?)", agg), agg)
    assert "key 'v' is in the aggregate but not in the state's 'arrays'" in err(
        "fedadam", state, record_bytes([("w", m), ("v", m)])
    )
    assert "key 'w' of the state's 'arrays' is missing from the aggregate" in err(
        "fedadam", state, record_bytes([("v", m)])
    )
    assert "key 'w' has shape [4] in the aggregate but [3]" in err(
        "fedyogi", state, record_bytes([("w", np.ones(4, np.float32))])
    )
    assert "key 'w' has dtype complex64 in the aggregate; the arrays must be float32, float64, integer or bool" in err(
        "fedyogi", state, record_bytes([("w", np.ones(3, np.complex64))])
    )
    assert "ar_server_step: option 'numpy' must be 1 or 2" in err("fedadam", state, agg, '{"numpy": 3}')
    assert "ar_server_step: unknown option 'eta' for fedavg (options: numpy)" in err("fedavg", state, agg, '{"eta": 1}')
    bad_m = one(con, "select rd('arrays', 'array', ?, 'm_t', 'array', ?)", agg, record_bytes([("u", m)]))
    assert "key 'w' of the state's 'arrays' is missing from the state's 'm_t'" in err("fedadam", bad_m, agg)
    # rd_mean: replies that disagree name the row
    r0 = _rd(con, {"w": m}, {"num-examples": 2})
    r1 = _rd(con, {"w": np.ones(4, np.float32)}, {"num-examples": 2})
    r2 = _rd(con, {"w": m}, {"loss": 2})
    con.execute("create temp table r(i, b)")
    con.executemany("insert into r values (?, ?)", [(0, r0), (1, r1)])
    assert "rd_mean: row 1: array key 'w' has shape [4] but [3] in row 0" in error_of(
        con, "select rd_mean(b) from (select b from r order by i)"
    )
    con.execute("delete from r")
    con.executemany("insert into r values (?, ?)", [(0, r0), (1, r2)])
    assert "rd_mean: row 1: metric 'num-examples' of row 0 is missing" in error_of(
        con, "select rd_mean(b) from (select b from r order by i)"
    )
