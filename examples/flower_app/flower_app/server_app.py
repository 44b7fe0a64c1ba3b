# SPDX-License-Identifier: Apache-2.0
"""The ServerApp: FedAvg (or the run config's `strategy`) over every
connected node for num-server-rounds.

`strategy` names Flower's strategy: fedavg (the default), fedavgm, fedadam,
fedyogi, fedadagrad, or dp-fedyogi (FedYogi inside server-side fixed
clipping); several, comma-separated, run one after the other, each a run of
its own. `batchnorm = true` gives the model a BatchNorm layer (task.py).

With a `db` path in the run config (absolute) each strategy is wrapped in
sqlite_arrayrecord's LoggingStrategy: the run is logged into that SQLite
file (sql/schema.sql: runs, flower_runs, rounds, instructions, replies,
global_models, strategy_state; sql/views.sql) under the name `run-name`
(empty: LoggingStrategy's own, "FedAvg-<Flower run id>"), with "-<strategy>"
appended when several run; `resume=true` continues that run from its last
complete round. runs.notes holds the versions and paths this process used
(JSON), and the table flower_result(run, arrays, train_metrics,
evaluate_metrics) the Result Flower's start() returned (arrays as Flower's
serde bytes, metrics as JSON keyed by round). With `db` empty it runs
unlogged.

Python's and NumPy's generators (Flower's node sampling, the DP noise) are
seeded from `seed` before each strategy starts, so a run gives the same bytes
every time; a resumed run takes them from the log.
"""

import json
import os
import random
import time
from logging import INFO

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context
from flwr.common.logger import log
from flwr.common.serde import array_record_to_proto
from flwr.serverapp import Grid, ServerApp
from flwr.serverapp.strategy import (
    DifferentialPrivacyServerSideFixedClipping,
    FedAdagrad,
    FedAdam,
    FedAvg,
    FedAvgM,
    FedYogi,
)

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


def make_strategy(name, cfg):
    """Flower's strategy `name`, with the run config's sampling settings."""
    sampling = dict(
        fraction_train=float(cfg["fraction-train"]),
        fraction_evaluate=float(cfg["fraction-evaluate"]),
        min_train_nodes=int(cfg.get("min-train-nodes", 2)),
        min_evaluate_nodes=int(cfg.get("min-evaluate-nodes", 2)),
        min_available_nodes=int(cfg.get("min-available-nodes", 2)),
    )
    makers = {
        "fedavg": lambda: FedAvg(**sampling),
        "fedavgm": lambda: FedAvgM(server_learning_rate=1.0, server_momentum=0.9, **sampling),
        "fedadam": lambda: FedAdam(eta=0.05, **sampling),
        "fedyogi": lambda: FedYogi(eta=0.05, **sampling),
        "fedadagrad": lambda: FedAdagrad(eta=0.05, **sampling),
        "dp-fedyogi": lambda: DifferentialPrivacyServerSideFixedClipping(
            FedYogi(eta=0.05, **sampling), noise_multiplier=0.1, clipping_norm=10.0, num_sampled_clients=2
        ),
    }
    if name not in makers:
        raise ValueError(f"run config strategy: {name!r} is not one of {', '.join(makers)}")
    return makers[name]()


@app.main()
def main(grid: Grid, context: Context) -> None:
    cfg = context.run_config
    if str(cfg.get("hold-file", "")):
        hold(grid, str(cfg["hold-file"]), int(cfg.get("hold-round", 1)))
    num_rounds = int(cfg["num-server-rounds"])
    db = str(cfg.get("db", ""))
    if db and not os.path.isabs(db):
        raise ValueError(f"run config db must be an absolute path, got {db!r}")
    seed = int(cfg["seed"])
    names = [n.strip() for n in str(cfg.get("strategy", "fedavg")).split(",")]
    initial = ArrayRecord(
        {k: Array(v) for k, v in task.init_model(seed, batchnorm=bool(cfg.get("batchnorm", False))).items()}
    )
    for i, name in enumerate(names):
        random.seed(seed * 1000 + i)
        np.random.seed(seed * 1000 + i)
        strategy = make_strategy(name, cfg)
        if db:
            from sqlite_arrayrecord.flower import LoggingStrategy  # only a ServerApp that logs needs it

            run_name = str(cfg.get("run-name", "")) or None
            if run_name and len(names) > 1:
                run_name += "-" + name
            strategy = LoggingStrategy(
                strategy, db, run_name, context=context, resume=bool(cfg.get("resume", False)), notes=_meta()
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
            save_result(db, strategy.run_name, result)
        log(
            INFO,
            "flower_app server: %s, %d rounds done, final train metrics %s",
            name,
            num_rounds,
            _metrics_json(result.train_metrics_clientapp),
        )
