# SPDX-License-Identifier: Apache-2.0
"""The ServerApp: FedAvg over every connected node for num-server-rounds.

With a `db` path in the run config it also writes, with sqlite_arrayrecord,
every round's global model and the final result to that SQLite file (the
ArrayRecords as Flower's serde bytes, the form the extension reads):

    rounds(run_id, round, arrays)      round 0 is the initial model
    result(run_id, arrays, train_metrics, evaluate_metrics)   metrics as JSON
    meta(run_id, key, value)           the versions and paths this process used

Flower's run ids are unsigned 64-bit numbers; run_id is stored as the SuperLink
stores it in its own database, the signed 64-bit integer of the same bits
(SQLite's INTEGER cannot hold ids of 2**63 and above).
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

SCHEMA = """
CREATE TABLE IF NOT EXISTS rounds(run_id INTEGER, round INTEGER, arrays BLOB, PRIMARY KEY (run_id, round));
CREATE TABLE IF NOT EXISTS result(run_id INTEGER PRIMARY KEY, arrays BLOB, train_metrics TEXT, evaluate_metrics TEXT);
CREATE TABLE IF NOT EXISTS meta(run_id INTEGER, key TEXT, value TEXT, PRIMARY KEY (run_id, key));
"""


def record_bytes(arrays: ArrayRecord) -> bytes:
    """The ArrayRecord as Flower's serde writes it."""
    return array_record_to_proto(arrays).SerializeToString()


def sqlite_run_id(run_id):
    """Flower's unsigned 64-bit run id as the signed integer of the same bits."""
    return run_id - (1 << 64) if run_id >= 1 << 63 else run_id


def _metrics_json(by_round):
    return json.dumps({str(r): dict(m) for r, m in sorted(by_round.items())}, sort_keys=True)


class RunLog:
    """The SQLite file of the run config's `db` key (nothing when it is empty)."""

    def __init__(self, path, run_id):
        self.run_id = run_id = sqlite_run_id(run_id)
        self.con = None
        if not path:
            return
        if not os.path.isabs(path):
            raise ValueError(f"run config db must be an absolute path, got {path!r}")
        import flwr
        import numpy

        import sqlite_arrayrecord as sar  # only a ServerApp that logs needs it

        self.con = sar.connect(path)
        with self.con:
            self.con.executescript(SCHEMA)
            meta = {
                "flwr": flwr.__version__,
                "numpy": numpy.__version__,
                "sqlite_arrayrecord": os.path.dirname(os.path.abspath(sar.__file__)),
                "extension": sar.loadable_path(),
                "ar_version": self.con.execute("SELECT ar_version()").fetchone()[0],
                "pid": str(os.getpid()),
            }
            self.con.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?, ?)", [(run_id, k, v) for k, v in meta.items()]
            )

    def round(self, server_round, arrays):
        if self.con is not None:
            with self.con:
                self.con.execute(
                    "INSERT OR REPLACE INTO rounds VALUES (?, ?, ?)", (self.run_id, server_round, record_bytes(arrays))
                )

    def result(self, result):
        if self.con is not None:
            with self.con:
                self.con.execute(
                    "INSERT OR REPLACE INTO result VALUES (?, ?, ?, ?)",
                    (
                        self.run_id,
                        record_bytes(result.arrays),
                        _metrics_json(result.train_metrics_clientapp),
                        _metrics_json(result.evaluate_metrics_clientapp),
                    ),
                )
            self.con.close()


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
    runlog = RunLog(str(cfg["db"]), context.run_id)
    initial = ArrayRecord({k: Array(v) for k, v in task.init_model(int(cfg["seed"])).items()})

    def on_round(server_round, arrays):
        runlog.round(server_round, arrays)
        return None

    strategy = FedAvg(fraction_train=float(cfg["fraction-train"]), fraction_evaluate=float(cfg["fraction-evaluate"]))
    result = strategy.start(
        grid=grid,
        initial_arrays=initial,
        num_rounds=num_rounds,
        train_config=ConfigRecord({"lr": float(cfg["lr"])}),
        evaluate_fn=on_round,
    )
    runlog.result(result)
    log(
        INFO,
        "flower_app server: %d rounds done, final train metrics %s",
        num_rounds,
        _metrics_json(result.train_metrics_clientapp),
    )
