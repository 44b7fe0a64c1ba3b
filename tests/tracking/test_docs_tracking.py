# SPDX-License-Identifier: Apache-2.0
"""The ```python tracking blocks of README.md, docs/*.md and the package's
README run as written in the tracking environment (pandas, matplotlib,
MLflow, TensorBoard), each in a folder holding runs.db: two runs,
"fedavg" and "fedadam", logged by LoggingStrategy over a stub grid (the
clients of tests/datasette/fixture.py; the server-side "loss" is the
global model's distance to where the clients pull it), and what a
`print(...)  # expected` line says it prints, it prints; a block that
saves a figure writes a PNG."""

import glob
import os
import random
import tempfile

import numpy as np
from test_readme import FLOWER_DOCS, python_blocks, run_block_in  # tests/python, on the runner's path
from trackenv import fixture  # tests/datasette/fixture.py


def blocks():
    return [(doc, line, code) for doc, line, kind, code in python_blocks(FLOWER_DOCS) if kind == "tracking"]


def two_runs(db):
    """runs.db of the docs: FedAvg and FedAdam(eta=0.05) over 5 rounds."""
    from flwr.app import Array, ArrayRecord, ConfigRecord, Context, MetricRecord, RecordDict
    from flwr.serverapp.strategy import FedAdam, FedAvg
    from stub_grid import StubGrid, quiet_flower, server_identity

    from sqlite_arrayrecord.flower import LoggingStrategy

    target = fixture._target()

    def evaluate_fn(server_round, arrays):
        d = sum(float(np.sum((arrays[k].numpy() - target[k]) ** 2)) for k in target)
        return MetricRecord({"loss": d})

    for i, (name, strategy) in enumerate((("fedavg", FedAvg()), ("fedadam", FedAdam(eta=0.05)))):
        grid = StubGrid(run_id=700 + i, nodes={n: fixture.make_answer() for n in (101, 102, 103)})
        context = Context(run_id=700 + i, node_id=1, node_config={}, state=RecordDict(), run_config={"lr": 0.1})
        random.seed(1)
        np.random.seed(1)
        initial = ArrayRecord({k: Array(a) for k, a in fixture.initial_model().items()})
        with server_identity(grid), quiet_flower():
            LoggingStrategy(strategy, db, name, context=context).start(
                grid=grid,
                initial_arrays=initial,
                num_rounds=5,
                train_config=ConfigRecord({"lr": 0.1}),
                evaluate_fn=evaluate_fn,
            )


def test_tracking_blocks_run():
    found = blocks()
    assert found, "no ```python tracking block in the docs"
    for doc, line, code in found:
        with tempfile.TemporaryDirectory() as tmp:
            two_runs(os.path.join(tmp, "runs.db"))
            run_block_in(doc, line, code, tmp)
            for png in glob.glob(os.path.join(tmp, "*.png")):
                with open(png, "rb") as fh:
                    assert fh.read(8) == b"\x89PNG\r\n\x1a\n", png
