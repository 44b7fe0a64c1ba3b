# SPDX-License-Identifier: Apache-2.0
"""Simulate a few federated rounds of a small model and keep everything in
SQLite, the way a Flower server would log it.

Each client trains a small MLP on its own (non-IID) synthetic data with
NumPy, and sends its weights back as a Flower ArrayRecord BLOB — the bytes
Flower's serde writes, built here by sqlite_arrayrecord.to_record from the
arrays, no Flower install needed. The server aggregates each round with
FedAvg *in SQL* (the round_fedavg view, i.e. ar_mean(rec, num_examples)),
checks the result against a NumPy FedAvg, stores the new global model and
prints a per-round summary from the views in sql/views.sql.

    /usr/bin/python3 examples/flower_log.py --db runs.db
    /usr/bin/python3 examples/plot_rounds.py --db runs.db --out rounds.png
"""

import argparse
import json
import os
import sys

import numpy as np

try:
    import sqlite_arrayrecord as sar
except ImportError:  # not installed: the package's source in this checkout, with build/arrayrecord.so from make
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
    import sqlite_arrayrecord as sar

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sql")
FEATURES, HIDDEN, CLASSES = 8, 16, 3


def init_model(rng):
    return {
        "fc1.weight": (rng.standard_normal((HIDDEN, FEATURES)) * 0.3).astype(np.float32),
        "fc1.bias": np.zeros(HIDDEN, np.float32),
        "fc2.weight": (rng.standard_normal((CLASSES, HIDDEN)) * 0.3).astype(np.float32),
        "fc2.bias": np.zeros(CLASSES, np.float32),
    }


def make_data(rng, n, skew):
    """Three Gaussian classes in 8-d; `skew` shifts the class balance (non-IID)."""
    probs = np.exp(skew) / np.exp(skew).sum()
    y = rng.choice(CLASSES, size=n, p=probs)
    centers = np.linspace(-1.5, 1.5, CLASSES)[:, None] * np.ones((CLASSES, FEATURES))
    x = centers[y] + rng.standard_normal((n, FEATURES))
    return x.astype(np.float32), y


def forward(m, x):
    h = np.maximum(0, x @ m["fc1.weight"].T + m["fc1.bias"])
    logits = h @ m["fc2.weight"].T + m["fc2.bias"]
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    return h, p / p.sum(axis=1, keepdims=True)


def evaluate(m, x, y):
    _, p = forward(m, x)
    loss = float(-np.log(p[np.arange(len(y)), y] + 1e-12).mean())
    return loss, float((p.argmax(axis=1) == y).mean())


def train(m, x, y, rng, epochs=2, lr=0.1, batch=32):
    m = {k: v.copy() for k, v in m.items()}
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for i in range(0, len(y), batch):
            idx = order[i : i + batch]
            xb, yb = x[idx], y[idx]
            h, p = forward(m, xb)
            g = p.copy()
            g[np.arange(len(yb)), yb] -= 1
            g /= len(yb)
            dh = (g @ m["fc2.weight"]) * (h > 0)
            m["fc2.weight"] -= lr * (g.T @ h)
            m["fc2.bias"] -= lr * g.sum(axis=0)
            m["fc1.weight"] -= lr * (dh.T @ xb)
            m["fc1.bias"] -= lr * dh.sum(axis=0)
    return {k: v.astype(np.float32) for k, v in m.items()}


def fedavg_numpy(models, weights):
    total = float(sum(weights))
    return {
        k: sum(m[k].astype(np.float64) * (w / total) for m, w in zip(models, weights)).astype(np.float32)
        for k in models[0]
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default="flower_runs.db")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)

    rng = np.random.default_rng(args.seed)
    con = sar.connect(args.db)
    for name in ("schema.sql", "views.sql"):
        with open(os.path.join(SQL_DIR, name), encoding="utf-8") as f:
            con.executescript(f.read())

    run_name = f"mlp-fedavg-seed{args.seed}-{con.execute('SELECT count(*) FROM runs').fetchone()[0]}"
    config = {"strategy": "FedAvg", "rounds": args.rounds, "clients": args.clients, "lr": 0.1, "epochs": 2}
    run = con.execute("INSERT INTO runs(name, config) VALUES (?, ?)", (run_name, json.dumps(config))).lastrowid

    clients = []
    for c in range(args.clients):
        name = f"client-{c}"
        n = int(rng.integers(100, 400))
        x, y = make_data(rng, n, skew=rng.standard_normal(CLASSES) * 1.5)
        clients.append((name, x, y))
        con.execute("INSERT OR IGNORE INTO clients(client, info) VALUES (?, ?)", (name, json.dumps({"examples": n})))
    x_test, y_test = make_data(rng, 600, skew=np.zeros(CLASSES))

    global_model = init_model(rng)
    loss, acc = evaluate(global_model, x_test, y_test)
    con.execute(
        "INSERT INTO rounds(run, round, metrics) VALUES (?, 0, ?)", (run, json.dumps({"loss": loss, "accuracy": acc}))
    )
    con.execute("INSERT INTO global_models VALUES (?, 0, ?)", (run, sar.to_record(global_model)))

    for rnd in range(1, args.rounds + 1):
        con.execute(
            "INSERT INTO rounds(run, round, started_at) VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ','now'))", (run, rnd)
        )
        local_models, weights = [], []
        for name, x, y in clients:
            local = train(global_model, x, y, rng)
            l_loss, l_acc = evaluate(local, x, y)
            rec = sar.to_record(local)  # Flower ArrayRecord bytes
            con.execute(
                "INSERT INTO client_updates(run, round, client, num_examples, metrics, rec) VALUES (?,?,?,?,?,?)",
                (run, rnd, name, len(y), json.dumps({"loss": l_loss, "accuracy": l_acc}), rec),
            )
            local_models.append(local)
            weights.append(len(y))

        # FedAvg in SQL, checked against NumPy.
        (new_rec,) = con.execute("SELECT rec FROM round_fedavg WHERE run = ? AND round = ?", (run, rnd)).fetchone()
        new_model = sar.from_record(new_rec)
        expected = fedavg_numpy(local_models, weights)
        for key, value in expected.items():
            np.testing.assert_allclose(new_model[key], value, rtol=1e-6, atol=1e-7, err_msg=key)
        con.execute("INSERT INTO global_models VALUES (?, ?, ?)", (run, rnd, new_rec))
        global_model = new_model
        loss, acc = evaluate(global_model, x_test, y_test)
        con.execute(
            "UPDATE rounds SET finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now'), metrics = ? "
            "WHERE run = ? AND round = ?",
            (json.dumps({"loss": loss, "accuracy": acc}), run, rnd),
        )
        con.commit()

    print(f"run {run} ({run_name}) in {args.db}: FedAvg in SQL matches NumPy in every round")
    print(
        f"{'round':>5} {'clients':>7} {'examples':>8} {'mean |update|':>13} {'min cosine':>10} "
        f"{'test loss':>9} {'accuracy':>8}"
    )
    rows = con.execute(
        """
        SELECT r.round, f.clients, f.num_examples, s.mean_norm, s.min_cos,
               json_extract(r.metrics, '$.loss'), json_extract(r.metrics, '$.accuracy')
        FROM rounds r
        JOIN round_fedavg f USING (run, round)
        JOIN (SELECT run, round, avg(update_norm) AS mean_norm, min(cosine_to_global_update) AS min_cos
              FROM client_update_stats GROUP BY run, round) s USING (run, round)
        WHERE r.run = ? ORDER BY r.round""",
        (run,),
    ).fetchall()
    for rnd, n_clients, examples, mean_norm, min_cos, t_loss, t_acc in rows:
        print(f"{rnd:>5} {n_clients:>7} {examples:>8} {mean_norm:>13.4f} {min_cos:>10.3f} {t_loss:>9.4f} {t_acc:>8.3f}")
    size = con.execute(
        "SELECT parameters, bytes FROM model_sizes WHERE run = ? ORDER BY round DESC LIMIT 1", (run,)
    ).fetchone()
    print(f"global model: {size[0]} parameters, {size[1]} bytes per record")
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
