# SPDX-License-Identifier: Apache-2.0
"""make flower-demo: examples/flower_app on a real Flower federation on this
machine, logged with LoggingStrategy, then questions asked of the log.

    build/flwr/bin/python examples/flower_app/run_demo.py [--db PATH] [--rounds N]

tests/flower/federation.py starts a SuperLink (--database in a temporary
folder), two SuperNodes and `flwr run ... --stream`, every address on
127.0.0.1 at a free port, FLWR_HOME in the temporary folder; it stops every
process at the end and bounds each step in time. The run is logged into
--db (default build/flower-demo.db, replaced), then this script prints
answers from sql/views.sql and a few sql/queries.sql recipes.
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "flower"))
sys.path.insert(0, os.path.join(ROOT, "examples"))

from federation import Federation  # noqa: E402
from replay_strategies import recipes  # noqa: E402  (examples/replay_strategies.py)

import sqlite_arrayrecord as sar  # noqa: E402


def show(con, title, sql, params=()):
    cur = con.execute(sql, params)
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    print(f"\n{title}\n  " + " | ".join(names))
    for row in rows:
        print("  " + " | ".join(_cell(v) for v in row))
    if not rows:
        print("  (no rows)")
    return rows


def _cell(v):
    if isinstance(v, bytes):
        return f"<{len(v)} bytes>"
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=os.path.join(ROOT, "build", "flower-demo.db"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds the run may take")
    args = ap.parse_args(argv)
    db = os.path.abspath(args.db)
    os.makedirs(os.path.dirname(db), exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db + suffix):
            os.remove(db + suffix)

    t0 = time.monotonic()
    with Federation(os.path.join(ROOT, "examples", "flower_app"), supernodes=2) as fed:
        print(f"SuperLink on 127.0.0.1:{fed.superlink_port}, SuperNodes on {fed.supernode_ports} ({fed.workdir})")
        run = fed.run({"num-server-rounds": args.rounds, "db": db, "run-name": "flower-demo"}, timeout=args.timeout)
        if not run.ok:
            print(run.log + fed.tails(), file=sys.stderr)
            print(f"flower-demo: the run failed: {run!r}", file=sys.stderr)
            return 1
    wall = time.monotonic() - t0
    print(f"flwr run: run {run.run_id} finished in {run.seconds:.1f} s ({wall:.1f} s with start and stop)")

    con = sar.connect(db)
    (rid,) = con.execute("SELECT run FROM runs WHERE name = 'flower-demo'").fetchone()
    p = {"run": rid}
    show(
        con,
        "runs:",
        "SELECT run, name, flower_run_id, strategy, num_rounds, started_at, finished_at FROM runs WHERE run = :run",
        p,
    )
    show(
        con,
        "rounds (metrics as FedAvg aggregated them):",
        "SELECT round, replies, errors, bytes_sent, bytes_received, json_extract(train_metrics, '$.\"train-loss\"') AS "
        "train_loss, json_extract(evaluate_metrics, '$.\"eval-acc\"') AS eval_acc, "
        "round(json_extract(timings, '$.round'), 3) AS seconds FROM rounds WHERE run = :run ORDER BY round",
        p,
    )
    show(
        con,
        "the logged global model equals rd_mean over the round's replies in arrival order (Flower's FedAvg, bit for bit):",
        "SELECT g.round, rd_array_record((SELECT rd_mean(content) FROM (SELECT content FROM replies WHERE run = g.run "
        "AND round = g.round AND phase = 'train' AND content IS NOT NULL ORDER BY pos))) = g.rec AS identical "
        "FROM global_models AS g WHERE g.run = :run AND g.round > 0 ORDER BY g.round",
        p,
    )
    show(con, "view model_sizes:", "SELECT round, arrays, parameters, bytes FROM model_sizes WHERE run = :run", p)
    show(
        con,
        "view round_fedavg (ar_mean(rec, num_examples), rounded once from double sums):",
        "SELECT f.round, f.clients, f.num_examples, ar_allclose(f.rec, g.rec, 1e-5, 1e-6) AS close_to_logged "
        "FROM round_fedavg AS f JOIN global_models AS g USING (run, round) WHERE run = :run",
        p,
    )
    show(
        con,
        "view client_update_stats:",
        "SELECT round, client, num_examples, round(update_norm, 4) AS update_norm, "
        "round(cosine_to_global_update, 4) AS cos_update, round(cosine_to_global_model, 4) AS cos_model "
        "FROM client_update_stats WHERE run = :run ORDER BY round, client",
        p,
    )
    show(
        con,
        "view update_arrays (round 1):",
        "SELECT client, key, dtype, shape, numel FROM update_arrays WHERE run = :run AND round = 1 ORDER BY client, position",
        p,
    )
    r = recipes()
    show(con, "recipe fedavg_check:", r["fedavg_check"], p)
    show(con, "recipe largest_updates (last round):", r["largest_updates"], dict(p, round=args.rounds))
    show(
        con,
        "recipe diff_checkpoints (round 0 to the last):",
        r["diff_checkpoints"],
        dict(p, round_a=0, round_b=args.rounds),
    )
    show(con, "recipe layer_norm_jumps (ratios above 1.5):", r["layer_norm_jumps"], p)
    show(con, "recipe shrink_to_float16:", r["shrink_to_float16"], p)
    con.close()
    rel = os.path.relpath(db, ROOT)
    print(
        f"\nThe log: {rel} (run {rid}, 'flower-demo'). Open it from the repository's root with\n"
        f"  sqlite3 {rel}\n  sqlite> .load ./build/arrayrecord\n  sqlite> .param set :run {rid}\n"
        "and paste a recipe of sql/queries.sql; from Python: sqlite_arrayrecord.connect(path),\n"
        "sqlite_arrayrecord.flower.read_result(path, 'flower-demo').\n"
        f"flower-demo: {wall:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
