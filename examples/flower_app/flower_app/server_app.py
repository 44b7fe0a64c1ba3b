# SPDX-License-Identifier: Apache-2.0
"""The ServerApp: FedAvg over every connected node for num-server-rounds.

With a `db` path in the run config (absolute) the strategy is
sqlite_arrayrecord's LoggingStrategy around FedAvg: the run is logged into
that SQLite file (sql/schema.sql: runs, rounds, instructions, replies,
global_models, strategy_state; sql/views.sql) under the name `run-name`
(default "flower-app-<run id>"); `resume=true` continues that run from its
last complete round. runs.notes holds the versions and paths this process
used (JSON), and the table flower_result(run, arrays, train_metrics,
evaluate_metrics) the Result Flower's start() returned (arrays as Flower's
serde bytes, metrics as JSON keyed by round). With `db` empty it runs FedAvg
unlogged.
"""

import json
import os
import time
from logging import INFO

from flwr.app import Array, ArrayRecord, ConfigRecord, Context
from flwr.common.logger import log
from flwr.common.serde import array_record_to_proto
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import FedAvg

from flower_app import task

app = ServerApp()

RESULT_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS flower_result(run INTEGER PRIMARY KEY, arrays BLOB, "
    "train_metrics TEXT, evaluate_metrics TEXT)"
)


def record_bytes(arrays: ArrayRecord) -> bytes:
    """The ArrayRecord as Flower's serde writes it."""
    return array_record_to_proto(arrays).SerializeToString()


def _metrics_json(by_round):
    return json.dumps({str(r): dict(m) for r, m in sorted(by_round.items())}, sort_keys=True)


def _meta():
    """The versions and paths this process uses, as JSON."""
    import flwr
    import numpy

    import sqlite_arrayrecord as sar

    con = sar.connect()
    try:
        ar_version = con.execute("SELECT ar_version()").fetchone()[0]
    finally:
        con.close()
    return json.dumps(
        {
            "flwr": flwr.__version__,
            "numpy": numpy.__version__,
            "sqlite_arrayrecord": os.path.dirname(os.path.abspath(sar.__file__)),
            "extension": sar.loadable_path(),
            "ar_version": ar_version,
            "pid": str(os.getpid()),
        }
    )


def save_result(path, run_name, result):
    """Flower's Result, next to the log of run_name (table flower_result)."""
    import sqlite_arrayrecord as sar

    con = sar.connect(path)
    try:
        with con:
            con.execute(RESULT_SCHEMA)
            (run,) = con.execute("SELECT run FROM runs WHERE name = ?", (run_name,)).fetchone()
            con.execute(
                "INSERT OR REPLACE INTO flower_result VALUES (?, ?, ?, ?)",
                (
                    run,
                    record_bytes(result.arrays),
                    _metrics_json(result.train_metrics_clientapp),
                    _metrics_json(result.evaluate_metrics_clientapp),
                ),
            )
    finally:
        con.close()


def hold(grid, path, server_round, timeout=120.0):
    """Tests only: holds the train messages of server_round at two points,
    before they are pushed and before their replies are pulled. At each the
    ServerApp writes the stage ("push", "pull") to <path>.at and waits until
    <path>.<stage> exists, so a test can look at the SuperLink meanwhile."""
    push, pull = grid.push_messages, grid.pull_messages
    held = set()
    train_pushes = [0]  # Flower's strategies leave group_id empty: count the rounds

    def wait(stage):
        with open(path + ".at", "w") as f:
            f.write(stage)
        deadline = time.monotonic() + timeout
        while not os.path.exists(f"{path}.{stage}"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"hold-file: {path}.{stage} did not appear in {timeout:.0f} s")
            time.sleep(0.05)

    def push_messages(messages):
        messages = list(messages)
        if not any(m.metadata.message_type == "train" for m in messages):
            return push(messages)
        train_pushes[0] += 1
        if train_pushes[0] != server_round:
            return push(messages)
        wait("push")
        ids = list(push(messages))
        held.update(ids)
        return ids

    def pull_messages(message_ids):
        message_ids = list(message_ids)
        if held and held.intersection(message_ids):
            held.clear()
            wait("pull")
        return pull(message_ids)

    grid.push_messages, grid.pull_messages = push_messages, pull_messages


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    if str(cfg.get("hold-file", "")):
        hold(grid, str(cfg["hold-file"]), int(cfg.get("hold-round", 1)))
    num_rounds = int(cfg["num-server-rounds"])
    db = str(cfg.get("db", ""))
    initial = ArrayRecord({k: Array(v) for k, v in task.init_model(int(cfg["seed"])).items()})
    strategy = FedAvg(
        fraction_train=float(cfg["fraction-train"]),
        fraction_evaluate=float(cfg["fraction-evaluate"]),
        min_train_nodes=int(cfg.get("min-train-nodes", 2)),
        min_evaluate_nodes=int(cfg.get("min-evaluate-nodes", 2)),
        min_available_nodes=int(cfg.get("min-available-nodes", 2)),
    )
    run_name = str(cfg.get("run-name", "")) or f"flower-app-{context.run_id}"
    if db:
        if not os.path.isabs(db):
            raise ValueError(f"run config db must be an absolute path, got {db!r}")
        from sqlite_arrayrecord.flower import LoggingStrategy  # only a ServerApp that logs needs it

        strategy = LoggingStrategy(
            strategy, db, run_name=run_name, context=context, resume=bool(cfg.get("resume", False)), notes=_meta()
        )

    def on_round(server_round, arrays):
        return None  # a server-side evaluation would go here; LoggingStrategy logs what it returns

    result = strategy.start(
        grid=grid,
        initial_arrays=initial,
        num_rounds=num_rounds,
        timeout=float(cfg.get("round-timeout", 3600)),
        train_config=ConfigRecord({"lr": float(cfg["lr"])}),
        evaluate_fn=on_round,
    )
    if db:
        save_result(db, run_name, result)
    log(
        INFO,
        "flower_app server: %d rounds done, final train metrics %s",
        num_rounds,
        _metrics_json(result.train_metrics_clientapp),
    )
