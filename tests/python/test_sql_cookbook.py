# SPDX-License-Identifier: Apache-2.0
"""sql/schema.sql, sql/views.sql and sql/queries.sql against a tracking
database filled here with a simulated federated run whose answers are known:
round 3 triples every client's fc2.weight (a layer whose norm jumps), and in
round 2 the client "mallory" sends an update pointing away from everyone
else's. Each view and each cookbook recipe is checked against NumPy.
"""

import json
import os
import re
import sqlite3
import tempfile

import numpy as np
from arlib import connect, decode_record, load_npy, npy_bytes, read_sql, recipes, record_bytes

CLIENTS = {"alice": 120, "bob": 80, "carol": 200, "mallory": 50}
ROUNDS = 3


def model(rng, scale=1.0):
    return {
        "fc1.weight": (rng.standard_normal((8, 4)) * scale).astype(np.float32),
        "fc1.bias": (rng.standard_normal(8) * scale).astype(np.float32),
        "fc2.weight": (rng.standard_normal((3, 8)) * scale).astype(np.float32),
        "fc2.bias": (rng.standard_normal(3) * scale).astype(np.float32),
        "bn.num_batches_tracked": np.array(7, dtype=np.int64),
    }


def fedavg(models, weights):
    """Flower's FedAvg with double accumulation; ints become float64."""
    total = float(sum(weights))
    out = {}
    for key in models[0]:
        acc = sum(m[key].astype(np.float64) * (w / total) for m, w in zip(models, weights))
        dtype = models[0][key].dtype
        out[key] = np.asarray(acc).astype(dtype if dtype.kind in "fc" else np.float64)
    return out


def as_record(m):
    return record_bytes(list(m.items()))


def simulate():
    rng = np.random.default_rng(42)
    globals_ = {0: model(rng)}
    updates = {}
    for r in range(1, ROUNDS + 1):
        prev = globals_[r - 1]
        honest_direction = {
            k: rng.standard_normal(v.shape).astype(np.float32) * 0.1
            for k, v in prev.items()
            if k != "bn.num_batches_tracked"
        }
        clients = {}
        for name in CLIENTS:
            m = {}
            for k, v in prev.items():
                if k == "bn.num_batches_tracked":  # an integer buffer, as in PyTorch
                    m[k] = np.array(7 + r, dtype=np.int64)
                    continue
                step = honest_direction[k] + rng.standard_normal(v.shape).astype(np.float32) * 0.01
                if r == 2 and name == "mallory":
                    step = -5 * honest_direction[k]
                m[k] = (v + step).astype(np.float32)
                if r == 3 and k == "fc2.weight":
                    m[k] = (m[k] * 3).astype(np.float32)
            clients[name] = m
        updates[r] = clients
        globals_[r] = fedavg(list(clients.values()), list(CLIENTS.values()))
    return globals_, updates


def tracking_db(path):
    con = connect(path)
    con.executescript(read_sql("schema.sql"))
    con.executescript(read_sql("views.sql"))
    globals_, updates = simulate()
    con.execute("INSERT INTO runs(run, name, config) VALUES (1, 'sim', '{\"strategy\": \"FedAvg\"}')")
    for name in CLIENTS:
        con.execute("INSERT INTO clients(client) VALUES (?)", (name,))
    for r in range(0, ROUNDS + 1):
        con.execute("INSERT INTO rounds(run, round) VALUES (1, ?)", (r,))
        con.execute("INSERT INTO global_models VALUES (1, ?, ?)", (r, as_record(globals_[r])))
        for name, m in updates.get(r, {}).items():
            con.execute(
                "INSERT INTO client_updates(run, round, client, num_examples, rec) VALUES (1, ?, ?, ?, ?)",
                (r, name, CLIENTS[name], as_record(m)),
            )
    con.commit()
    return con, globals_, updates


def delta(a, b):
    """a - b, exact: in float64 (the views compare records with ar_compare,
    which takes each difference in double, not rounded to float32 as
    ar_sub would)."""
    return {k: a[k].astype(np.float64) - b[k].astype(np.float64) for k in a}


def flat(d):
    return np.concatenate([np.ravel(v) for v in d.values()])


def cosine(a, b):
    a, b = flat(a), flat(b)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_schema_checks_records():
    with tempfile.TemporaryDirectory() as tmp:
        con, _, _ = tracking_db(os.path.join(tmp, "t.db"))
        # the CHECKs say why (ar_check / rd_check), not SQLite's bare "CHECK constraint failed"
        for sql, args, want in [
            ("INSERT INTO global_models VALUES (1, 0, x'0a')", (), "ar_check: record blob truncated at byte 1"),
            ("INSERT INTO global_models VALUES (1, 0, x'')", (), "ar_check: the record is empty"),
            (
                "INSERT INTO client_updates(run, round, client, num_examples, rec) VALUES (1, 1, 'zoe', 5, x'')",
                (),
                "ar_check: the record is empty",
            ),
            (
                "INSERT INTO replies(run, round, pos, client, content) VALUES (1, 1, 99, 'bob', ?)",
                (b"\x0a\x05",),
                "rd_check: ",
            ),
        ]:
            try:
                con.execute(sql, args)
                raise AssertionError(f"the schema let a bad record in: {sql}")
            except sqlite3.Error as e:
                assert want in str(e), (sql, e)
        # an error reply carries no content, and is accepted
        con.execute("INSERT OR IGNORE INTO clients(client) VALUES ('zoe')")
        con.execute(
            "INSERT INTO replies(run, round, pos, client, error_code, error_reason) VALUES (1, 1, 99, 'zoe', 3, 'lost')"
        )
        plan = " ".join(
            r[3]
            for r in con.execute(
                "EXPLAIN QUERY PLAN SELECT * FROM client_updates WHERE client = 'bob' ORDER BY run, round"
            )
        )
        assert "client_updates_by_client" in plan, plan


def test_views_match_numpy():
    with tempfile.TemporaryDirectory() as tmp:
        con, globals_, updates = tracking_db(os.path.join(tmp, "t.db"))
        # update_arrays: every array of every update
        rows = con.execute("SELECT count(*), count(DISTINCT key) FROM update_arrays").fetchone()
        assert rows == (ROUNDS * len(CLIENTS) * 5, 5), rows
        assert con.execute("SELECT shape FROM update_arrays WHERE key = 'fc2.weight' LIMIT 1").fetchone() == ("[3,8]",)
        # round_fedavg equals the NumPy FedAvg
        for r, clients, n, rec in con.execute("SELECT round, clients, num_examples, rec FROM round_fedavg"):
            assert clients == len(CLIENTS) and n == sum(CLIENTS.values())
            for k, v in globals_[r].items():
                got = load_npy(con.execute("SELECT ar_get(?, ?)", (rec, k)).fetchone()[0])
                assert got.dtype == v.dtype, (k, got.dtype, v.dtype)
                np.testing.assert_allclose(got, v, rtol=1e-6, atol=1e-7)
        # client_update_stats: norms and cosines
        stats = {
            (r, c): (n, cg, cm)
            for r, c, n, cg, cm in con.execute(
                "SELECT round, client, update_norm, cosine_to_global_update, cosine_to_global_model FROM client_update_stats"
            )
        }
        assert len(stats) == ROUNDS * len(CLIENTS)
        for (r, c), (n, cg, cm) in stats.items():
            d = delta(updates[r][c], globals_[r - 1])
            assert abs(n - np.linalg.norm(flat(d))) <= 1e-9 * max(1, n), (r, c)
            assert abs(cg - cosine(d, delta(globals_[r], globals_[r - 1]))) < 1e-9
            assert abs(cm - cosine({k: v.astype(np.float64) for k, v in updates[r][c].items()}, globals_[r])) < 1e-9
        assert stats[(2, "mallory")][1] < 0 and all(v[1] > 0 for (r, c), v in stats.items() if c != "mallory" or r != 2)
        # layer_update_norms
        n = con.execute(
            "SELECT update_norm FROM layer_update_norms WHERE round = 1 AND client = 'bob' AND key = 'fc1.bias'"
        ).fetchone()[0]
        assert (
            abs(n - np.linalg.norm(updates[1]["bob"]["fc1.bias"].astype(np.float64) - globals_[0]["fc1.bias"])) < 1e-9
        )
        # model_sizes
        for r, arrays, params, nbytes in con.execute("SELECT round, arrays, parameters, bytes FROM model_sizes"):
            assert arrays == 5 and params == 8 * 4 + 8 + 3 * 8 + 3 + 1
            assert nbytes == len(as_record(globals_[r]))


def test_cookbook_recipes():
    q = recipes()
    assert set(q) >= {
        "layer_norm_jumps",
        "clients_against_consensus",
        "largest_updates",
        "export_layer",
        "diff_checkpoints",
        "fedavg_check",
        "shrink_to_float16",
        "replay_strategies",
    }, q.keys()
    with tempfile.TemporaryDirectory() as tmp:
        con, globals_, updates = tracking_db(os.path.join(tmp, "t.db"))
        rows = con.execute(q["layer_norm_jumps"], {"run": 1}).fetchall()
        assert rows and rows[0][0] == 3 and rows[0][1] == "fc2.weight", rows
        assert 2.5 < rows[0][4] < 3.5, rows
        rows = con.execute(q["clients_against_consensus"], {"run": 1}).fetchall()
        assert [(r[0], r[1]) for r in rows] == [(2, "mallory")], rows
        rows = con.execute(q["largest_updates"], {"run": 1, "round": 2}).fetchall()
        assert len(rows) == 5 and rows[0][0] == "mallory", rows

        def writefile(path, blob):  # the sqlite3 shell's writefile()
            with open(path, "wb") as f:
                f.write(blob)
            return len(blob)

        con.create_function("writefile", 2, writefile)
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            (written,) = con.execute(q["export_layer"], {"run": 1, "round": 3, "key": "fc1.weight"}).fetchone()
        finally:
            os.chdir(cwd)
        exported = np.load(os.path.join(tmp, "fc1.weight-round3.npy"), allow_pickle=False)
        assert written == len(npy_bytes(globals_[3]["fc1.weight"]))
        np.testing.assert_array_equal(exported, globals_[3]["fc1.weight"])
        rows = con.execute(q["diff_checkpoints"], {"run": 1, "round_a": 1, "round_b": 3}).fetchall()
        assert rows[0][0] == "fc2.weight", rows
        for key, l2, max_abs, close in rows:
            d = globals_[3][key].astype(np.float64) - globals_[1][key].astype(np.float64)
            assert abs(l2 - np.linalg.norm(d)) < 1e-5, (key, l2)
            assert abs(max_abs - np.max(np.abs(d))) < 1e-5, (key, max_abs)
            assert close == int(np.allclose(globals_[3][key], globals_[1][key])), key
        same = con.execute(q["diff_checkpoints"], {"run": 1, "round_a": 2, "round_b": 2}).fetchall()
        assert sorted(same) == sorted((k, 0.0, 0.0, 1) for k in globals_[2]), same
        rows = con.execute(q["fedavg_check"], {"run": 1}).fetchall()
        assert rows == [(r, len(CLIENTS), sum(CLIENTS.values()), 1, None) for r in range(1, ROUNDS + 1)], rows
        check_replay(con, q["replay_strategies"])
        before, after = con.execute(q["shrink_to_float16"], {"run": 1}).fetchone()
        assert after < before, (before, after)
        # floating arrays shrink; integer ones (a client's int64 counter) keep their dtype
        shrunk = con.execute("SELECT ar_cast(rec, 'float16') FROM client_updates WHERE round = 1").fetchone()[0]
        assert con.execute(
            "SELECT ar_dtype(?, 'fc1.weight'), ar_dtype(?, 'bn.num_batches_tracked')", (shrunk, shrunk)
        ).fetchone() == ("float16", "int64")


def replay(con, sql, run, strategy_a, strategy_b, options_a="{}", options_b="{}"):
    """Drive the replay_strategies recipe round by round, as
    examples/replay_strategies.py does: [(round, state_a, state_b, distance)]."""
    rows, state_a, state_b, r = [], None, None, 0
    while True:
        got = con.execute(
            sql,
            {
                "run": run,
                "round": r,
                "strategy_a": strategy_a,
                "strategy_b": strategy_b,
                "options_a": options_a,
                "options_b": options_b,
                "state_a": state_a,
                "state_b": state_b,
            },
        ).fetchall()
        if not got:
            return rows
        assert len(got) == 1 and got[0][0] == r, got
        rows.append(got[0])
        _, state_a, state_b, _ = got[0]
        r += 1


def check_replay(con, sql):
    """replay_strategies against Flower's FedAdam (test_strategy's NumPy
    copy of fedadam.py) stepped over the same FedAvg aggregates: on run 1,
    whose models hold an int64 buffer (bn.num_batches_tracked, which
    becomes float64 as in NumPy), and on run 2, the same without it."""
    from test_strategy import FedAdam, FedYogi

    con.execute("INSERT INTO runs(run, name) VALUES (2, 'floats')")
    con.execute("INSERT INTO rounds(run, round) SELECT 2, round FROM rounds WHERE run = 1")
    con.execute(
        "INSERT INTO global_models SELECT 2, round, ar_delete(rec, 'bn.num_batches_tracked') FROM global_models WHERE run = 1"
    )
    con.execute(
        "INSERT INTO client_updates(run, round, client, num_examples, rec) SELECT 2, round, client, num_examples, "
        "ar_delete(rec, 'bn.num_batches_tracked') FROM client_updates WHERE run = 1"
    )
    con.commit()
    for run in (1, 2):
        aggs = {
            r: {k: load_npy(d) for k, _, _, _, d in decode_record(rec)}
            for r, rec in con.execute(
                "SELECT round, ar_mean(rec, num_examples) FROM client_updates WHERE run = ? GROUP BY round", (run,)
            )
        }
        model0 = {
            k: load_npy(d)
            for k, _, _, _, d in decode_record(
                con.execute("SELECT rec FROM global_models WHERE run = ? AND round = 0", (run,)).fetchone()[0]
            )
        }
        assert (run == 1) == ("bn.num_batches_tracked" in model0)
        if run == 1:
            assert model0["bn.num_batches_tracked"].dtype == np.int64
        for strategy, cls, options in (("fedadam", FedAdam, {}), ("fedyogi", FedYogi, {"eta": 0.05})):
            rows = replay(con, sql, run, "fedavg", strategy, "{}", json.dumps(options))
            assert [r[0] for r in rows] == list(range(ROUNDS + 1)), rows
            assert rows[0][3] == 0.0, rows
            ref, model = cls(**options), dict(model0)
            for r in range(1, ROUNDS + 1):
                ref.configure_train(model)
                model = ref.aggregate_train(r, aggs[r])
                d = np.sqrt(
                    sum(np.sum((aggs[r][k].astype(np.float64) - model[k].astype(np.float64)) ** 2) for k in model)
                )
                assert abs(rows[r][3] - round(d, 6)) < 2e-6, (run, strategy, r, rows[r][3], d)
                # the state's model is Flower's, key by key; the int64 buffer becomes float64
                # (float32 keys: NumPy 2 makes FedAdam's float64, this NumPy 1 keeps float32)
                got = {
                    k: load_npy(dd)
                    for k, _, _, _, dd in decode_record(
                        con.execute("SELECT rd_array_record(?, 'arrays')", (rows[r][2],)).fetchone()[0]
                    )
                }
                for k, v in model.items():
                    if v.dtype != np.float32:
                        assert got[k].dtype == v.dtype, (run, strategy, r, k, got[k].dtype, v.dtype)
                    np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-7)
            assert rows[-1][3] > 0, rows


def test_group_by_uses_an_index():
    """Every GROUP BY of views.sql (and GROUP BY round over the updates) reads
    an index in order instead of sorting the BLOBs in a temporary B-tree."""
    con = connect()
    con.executescript(read_sql("schema.sql"))
    con.executescript(read_sql("views.sql"))
    views = re.findall(r"CREATE VIEW IF NOT EXISTS (\w+) AS\n(.*?);", read_sql("views.sql"), flags=re.S)
    grouped = [name for name, body in views if "GROUP BY" in body]
    assert grouped, "no view groups"
    queries = ["SELECT * FROM %s" % name for name in grouped]
    queries.append("SELECT round, ar_mean(rec, num_examples) FROM client_updates GROUP BY round")
    for sql in queries:
        plan = [row[3] for row in con.execute("EXPLAIN QUERY PLAN " + sql)]
        assert not any("TEMP B-TREE FOR GROUP BY" in p for p in plan), (sql, plan)
        assert any("USING INDEX" in p or "USING COVERING INDEX" in p for p in plan), (sql, plan)


def recipe_params(sql):
    return sorted(set(re.findall(r":(\w+)", sql)))


def test_recipe_parameters_listed_and_required():
    """The header of queries.sql lists every parameter a recipe uses, and a
    recipe run with one of them unset (NULL) fails naming it, rather than
    returning nothing."""
    text = read_sql("queries.sql")
    header = re.split(r"^-- name: ", text, flags=re.M)[0]
    q = recipes()
    with tempfile.TemporaryDirectory() as tmp:
        con, _, _ = tracking_db(os.path.join(tmp, "t.db"))
        con.create_function("writefile", 2, lambda path, blob: 0)
        values = {
            "run": 1,
            "round": 2,
            "round_a": 1,
            "round_b": 3,
            "key": "fc1.weight",
            "strategy_a": "fedavg",
            "strategy_b": "fedadam",
            "options_a": "{}",
            "options_b": "{}",
            "state_a": b"",
            "state_b": b"",
        }
        for name, sql in q.items():
            params = recipe_params(sql)
            assert params, name
            for p in params:
                assert ":" + p in header, "parameter :%s of %s is not listed in the header" % (p, name)
                args = {k: values[k] for k in params}
                args[p] = None
                try:
                    rows = con.execute(sql, args).fetchall()
                except Exception as e:  # sqlite3.OperationalError
                    assert "parameter :%s is not set" % p in str(e), (name, p, str(e))
                else:
                    raise AssertionError("%s ran without :%s and gave %r" % (name, p, rows))
