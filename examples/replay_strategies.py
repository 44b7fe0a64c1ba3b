# SPDX-License-Identifier: Apache-2.0
"""Replay a logged federated run under two server strategies and plot how
far apart their global models drift, round by round.

Builds a small tracking database (sql/schema.sql) with a synthetic run —
clients that each pull the model towards their own optimum, weighted by
their example counts — then runs sql/queries.sql's replay_strategies
recipe: FedAvg against FedAdam (Flower's defaults, or --options), each
stepped from the run's initial model over the same FedAvg aggregates. The
recipe computes one round per statement; this loop runs it for round 0, 1,
2, ... and hands each round the two states the previous one returned, so
only two states are ever held, whatever the model's size. Writes a PNG of
the per-round L2 distance between the two global models.

    /usr/bin/python3 examples/replay_strategies.py --out replay.png [--rounds 10] [--options '{"eta": 0.05}']
"""

import argparse
import io
import json
import os
import re
import sys

import numpy as np

try:
    import sqlite_arrayrecord as sar
except ImportError:  # not installed: the package's source in this checkout, with build/arrayrecord.so from make
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
    import sqlite_arrayrecord as sar

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sql")


def read_sql(name):
    with open(os.path.join(SQL_DIR, name), encoding="utf-8") as f:
        return f.read()


def recipes():
    """{name: sql} of queries.sql's '-- name:' recipes: each recipe's first
    statement, its comment lines dropped."""
    parts = re.split(r"^-- name: (\w+)\n", read_sql("queries.sql"), flags=re.M)
    out = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        code = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("--"))
        out[name] = code.split(";")[0].strip() + ";"
    return out


def recipe(name):
    """One recipe of queries.sql, by its '-- name:' line."""
    return recipes()[name]


def replay(con, run, strategy_a, strategy_b, options_a, options_b):
    """[(round, distance)]: the replay_strategies recipe, round by round,
    until the run has no updates for the next round."""
    sql, rows, state_a, state_b, r = recipe("replay_strategies"), [], None, None, 0
    while True:
        params = {
            "run": run,
            "round": r,
            "strategy_a": strategy_a,
            "strategy_b": strategy_b,
            "options_a": options_a,
            "options_b": options_b,
            "state_a": state_a,
            "state_b": state_b,
        }
        row = con.execute(sql, params).fetchone()
        if row is None:
            return rows
        _, state_a, state_b, distance = row
        rows.append((r, distance))
        r += 1


def build_run(con, rounds, rng):
    """A synthetic run: round 0's global model, then each round's client
    models (each client moves halfway to its own optimum) and the FedAvg
    global model the server kept."""
    con.executescript(read_sql("schema.sql"))
    shapes = {"fc1.weight": (16, 8), "fc1.bias": (16,), "fc2.weight": (4, 16), "fc2.bias": (4,)}
    clients = {f"client{i}": int(rng.integers(50, 500)) for i in range(5)}
    optimum = {c: {k: rng.normal(0, 1, s).astype(np.float32) for k, s in shapes.items()} for c in clients}
    model = {k: rng.normal(0, 0.1, s).astype(np.float32) for k, s in shapes.items()}
    con.execute("INSERT INTO runs(run, name, config) VALUES (1, 'synthetic', '{\"strategy\": \"FedAvg\"}')")
    con.executemany("INSERT INTO clients(client) VALUES (?)", [(c,) for c in clients])

    def ar(m):  # a Flower ArrayRecord BLOB of {key: ndarray}, built with ar()
        args = []
        for k, v in m.items():
            args += [k, _npy(v)]
        return con.execute("SELECT ar(" + ", ".join("?" * len(args)) + ")", args).fetchone()[0]

    for r in range(rounds + 1):
        con.execute("INSERT INTO rounds(run, round) VALUES (1, ?)", (r,))
        if r:
            for c, n in clients.items():
                local = {
                    k: (v + 0.5 * (optimum[c][k] - v) + rng.normal(0, 0.01, v.shape)).astype(np.float32)
                    for k, v in model.items()
                }
                con.execute(
                    "INSERT INTO client_updates(run, round, client, num_examples, rec) VALUES (1, ?, ?, ?, ?)",
                    (r, c, n, ar(local)),
                )
            (rec,) = con.execute(
                "SELECT ar_mean(rec, num_examples) FROM client_updates WHERE run = 1 AND round = ?", (r,)
            ).fetchone()
            model = {k: sar_load(con, rec, k) for k in model}
        con.execute("INSERT INTO global_models VALUES (1, ?, ?)", (r, ar(model)))
    con.commit()


def _npy(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def sar_load(con, rec, key):
    (blob,) = con.execute("SELECT ar_get(?, ?)", (rec, key)).fetchone()
    return np.load(io.BytesIO(blob), allow_pickle=False)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=":memory:")
    ap.add_argument("--out", default="replay.png")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--strategy", default="fedadam", help="the strategy compared with FedAvg")
    ap.add_argument("--options", default="{}", help="its options as JSON (Flower's parameter names)")
    args = ap.parse_args(argv)
    try:
        import matplotlib
    except ImportError:
        print("matplotlib is missing: install it with 'apt-get install -y python3-matplotlib'", file=sys.stderr)
        return 2
    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    con = sar.connect(args.db)
    build_run(con, args.rounds, np.random.default_rng(0))
    rows = replay(con, 1, "fedavg", args.strategy, "{}", args.options)
    for rnd, dist in rows:
        print(f"round {rnd:2d}: |FedAvg - {args.strategy}| = {dist:.6f}")

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    ax.plot([r for r, _ in rows], [d for _, d in rows], marker="o")
    ax.set_xlabel("round")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("L2 distance between global models")
    ax.set_title(f"FedAvg vs {args.strategy} {json.loads(args.options) or '(defaults)'}, replayed in SQL")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}: {len(rows) - 1} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
