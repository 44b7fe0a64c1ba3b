# SPDX-License-Identifier: Apache-2.0
"""The crash soak of a logged run (a helper of test_soak.py, and `make soak`).

A 10-round FedAdam run of a 4 MB model with a BatchNorm-like 0-d counter, 4
clients (tests/flower/logging_app.py over a StubGrid), is killed with
SIGKILL at seeded random moments and resumed each time, until it ends:

    train       while the round's clients train and their replies are logged
    evaluate    while evaluate_fn runs
    commit      inside the round's COMMIT (its WAL frames and fsync)
    checkpoint  inside the checkpoint that follows the commit

A kill is planned as (moment, n, delay): the n-th such moment of the
process, plus a random delay; the process kills itself (a timer thread
sends SIGKILL), so that the moment is hit wherever it falls. After each
kill: PRAGMA integrity_check is ok, every round in the log is complete
(rounds, global models, digests: check_log finds nothing), and the next
process resumes. At the end the run's every global model equals an
uninterrupted run's, bit for bit. The log is LoggingStrategy's default, the
packed store (every model packed, each reply against its base).

    python tests/flower/soak.py [--kills 20] [--seed 1] [--dir DIR]   # make soak
    python tests/flower/soak.py --child DB PLAN                        # one process of the run

PLAN is "moment:n:delay_ms" or "-" for none.
"""

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

ROUNDS = 10
RUN = "soak"
MOMENTS = ("train", "evaluate", "commit", "checkpoint")
DELAY_MS = {"train": 250.0, "evaluate": 30.0, "commit": 30.0, "checkpoint": 30.0}


def model():
    """logging_app's BatchNorm model and a 4 MB float32 array."""
    import logging_app
    import numpy as np
    from flwr.app import Array, ArrayRecord

    rng = np.random.default_rng(11)
    return ArrayRecord(
        {"w": Array(rng.normal(0, 1, (1024, 1024)).astype(np.float32)), **dict(logging_app.initial_arrays())}
    )


def child(db, plan):
    """One ServerApp process of the run: resumes it (or starts it) and,
    with a plan, kills itself at the planned moment."""
    import logging_app

    import sqlite_arrayrecord.flower._database as database

    counts = dict.fromkeys(MOMENTS, 0)
    moment, nth, delay = (None, 0, 0.0) if plan == "-" else plan.split(":")
    nth, delay = int(nth), float(delay) / 1000.0

    def arm(what):
        counts[what] += 1
        if what == moment and counts[what] == nth:
            t = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGKILL))
            t.daemon = True
            t.start()

    class Connection(sqlite3.Connection):
        def execute(self, sql, *args):
            if sql == "COMMIT":
                arm("commit")
            elif sql.startswith("PRAGMA wal_checkpoint"):
                arm("checkpoint")
            return super().execute(sql, *args)

    opened = database.connect
    database.connect = lambda path, **kw: opened(path, factory=Connection, **kw)

    answer = logging_app.make_answer()

    def train_answer(node, msg):
        if msg.metadata.message_type == "train" and node == logging_app.NODES[0]:
            arm("train")
        return answer(node, msg)

    original_evaluate = logging_app.evaluate_fn

    def evaluate_fn(rnd, arrays):
        arm("evaluate")
        return original_evaluate(rnd, arrays)

    logging_app.make_answer = lambda *a, **kw: train_answer
    logging_app.evaluate_fn = evaluate_fn
    logging_app.main(db, RUN, "FedAdam", ROUNDS, resume=True, initial=model())


def _state(db):
    """After a process ended: (integrity_check, rounds complete, rounds in
    the log, check_log's problems)."""
    import sqlite_arrayrecord as sar
    from sqlite_arrayrecord import check_log

    if not os.path.exists(db):
        return "ok", True, [], []
    con = sar.connect(db, detect_types=0)
    try:
        integrity = con.execute("PRAGMA integrity_check").fetchone()[0]
        rounds = con.execute("SELECT round, finished_at IS NOT NULL FROM rounds ORDER BY round").fetchall()
        models = [r for (r,) in con.execute("SELECT round FROM global_models ORDER BY round")]
        orphans = con.execute(
            "SELECT count(*) FROM replies p WHERE NOT EXISTS "
            "(SELECT 1 FROM rounds r WHERE r.run = p.run AND r.round = p.round AND r.finished_at IS NOT NULL)"
        ).fetchone()[0]
    finally:
        con.close()
    done = [r for r, f in rounds if f]
    complete = done == [r for r, _ in rounds] == models == list(range(len(done))) and orphans == 0
    return integrity, complete, done, check_log(db)


def soak(kills, seed, folder, timeout=600):
    """Runs the soak in folder: returns its figures (a dict). Raises
    AssertionError at the first kill after which the log is not sound, or
    when the final run differs from the uninterrupted one."""
    rng = random.Random(seed)
    db = os.path.join(folder, "soak.db")
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    figures = {"kills": 0, "by_moment": dict.fromkeys(MOMENTS, 0), "processes": 0, "checks": 0, "no_progress": 0}
    t0 = time.monotonic()
    last_done = -1
    while True:
        plan = "-"
        if figures["kills"] < kills:
            moment = rng.choice(MOMENTS)
            plan = f"{moment}:{rng.choice((1, 1, 2))}:{rng.uniform(0, DELAY_MS[moment]):.3f}"
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", db, plan],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        figures["processes"] += 1
        integrity, complete, done, problems = _state(db)
        figures["checks"] += 1
        where = f"after process {figures['processes']} (plan {plan}, exit {proc.returncode})"
        assert integrity == "ok", f"{where}: integrity_check: {integrity}"
        assert complete, f"{where}: a round in the log is not complete: {done}"
        assert problems == [], f"{where}: check_log: {problems}"
        if proc.returncode == -signal.SIGKILL:
            figures["kills"] += 1
            figures["by_moment"][plan.split(":")[0]] += 1
            figures["no_progress"] += (done[-1] if done else -1) == last_done
            last_done = done[-1] if done else -1
            continue
        assert proc.returncode == 0, f"{where}: {proc.stderr[-3000:]}"
        if done and done[-1] == ROUNDS:
            if figures["kills"] >= kills:
                break
            # the run ended before every kill was spent: another run, in a fresh database
            os.remove(db)
            last_done = -1
    figures["seconds"] = round(time.monotonic() - t0, 1)
    _same_as_uninterrupted(db, folder)
    return figures


def _same_as_uninterrupted(db, folder):
    import sqlite_arrayrecord as sar

    ref = os.path.join(folder, "reference.db")
    subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", ref, "-"],
        env=dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", "")),
        check=True,
        capture_output=True,
        timeout=600,
    )
    q = "SELECT round, rec FROM global_models ORDER BY round"
    a, b = sar.connect(db, detect_types=0), sar.connect(ref, detect_types=0)
    try:
        # the default log, the one soaked: the packed store, its models packed
        assert sar.store_of(a) == "packed" and a.execute("SELECT min(packed) FROM model_store").fetchone()[0] == 1
        got, want = a.execute(q).fetchall(), b.execute(q).fetchall()
        assert len(want) == ROUNDS + 1 and got == want, "the soaked run's global models are not the uninterrupted run's"
        q = "SELECT round, state FROM strategy_state"
        assert a.execute(q).fetchall() == b.execute(q).fetchall(), (
            "the soaked run's state is not the uninterrupted one's"
        )
    finally:
        a.close()
        b.close()


def main():
    p = argparse.ArgumentParser(description="crash soak of a logged Flower run (make soak)")
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dir", help="folder to work in (default: a temporary one, removed)")
    p.add_argument("--child", nargs=2, metavar=("DB", "PLAN"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(*args.child)
        return 0
    if args.dir:
        os.makedirs(args.dir, exist_ok=True)
        figures = soak(args.kills, args.seed, args.dir)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            figures = soak(args.kills, args.seed, tmp)
    print(json.dumps(figures))
    print(
        f"crash soak: {figures['kills']} kills with SIGKILL ({', '.join(f'{k} {v}' for k, v in figures['by_moment'].items())}), "
        f"{figures['processes']} processes, {figures['checks']} integrity checks ok and every round complete each time, "
        f"the final run bit for bit as an uninterrupted one; {figures['seconds']} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
