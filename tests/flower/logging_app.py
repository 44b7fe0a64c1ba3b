# SPDX-License-Identifier: Apache-2.0
"""A ServerApp's main for the LoggingStrategy tests (a helper of
test_logging.py, not a test module): Flower's own Strategy.start over a
StubGrid of deterministic fake clients, wrapped in LoggingStrategy.

A client's reply depends on its node id, the round and the arrays it got
only, so a run gives the same bytes in any process. Run as a script it is
the ServerApp process the tests kill mid-round and resume:

    python logging_app.py DB RUN STRATEGY NUM_ROUNDS [--resume] [--block ROUND MARKER] [--run-id ID]

--block makes node 102 create MARKER and then wait forever when it is
asked to train in round ROUND (the test SIGKILLs the process then).
--run-id is Flower's run id of the process (default 77).
The final Result is written next to DB as RUN.result.npz.
"""

import os
import random
import sys
import time

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Error, MetricRecord, RecordDict
from flwr.common.constant import ErrorCode
from flwr.serverapp.strategy import (
    DifferentialPrivacyServerSideFixedClipping,
    FedAdagrad,
    FedAdam,
    FedAvg,
    FedAvgM,
    FedYogi,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stub_grid import StubGrid, quiet_flower, server_identity  # noqa: E402

from sqlite_arrayrecord.flower import LoggingStrategy  # noqa: E402

NODES = (101, 102, 103, 104)
STRATEGIES = {
    "FedAvg": lambda: FedAvg(fraction_evaluate=0.5),
    "FedAvgM": lambda: FedAvgM(server_learning_rate=0.7, server_momentum=0.9),
    "FedAdam": lambda: FedAdam(eta=0.05, beta_1=0.9, beta_2=0.99),
    "FedYogi": lambda: FedYogi(eta=0.05, beta_1=0.9, beta_2=0.99),
    "FedAdagrad": lambda: FedAdagrad(eta=0.05),
    "DP(FedYogi)": lambda: DifferentialPrivacyServerSideFixedClipping(
        FedYogi(eta=0.05), noise_multiplier=0.2, clipping_norm=50.0, num_sampled_clients=4
    ),
}


def initial_arrays(batchnorm=True):
    """float32 weights, a float64 array and, with batchnorm, a BatchNorm
    layer's parameters and buffers as PyTorch's state_dict has them
    (num_batches_tracked a 0-d int64 counter) and a 0-d float32. Without
    batchnorm, the model of the logs in tests/data/logs."""
    rng = np.random.default_rng(5)
    arrays = {
        "fc.weight": Array(rng.normal(0, 1, (5, 7)).astype(np.float32)),
        "fc.bias": Array(rng.normal(0, 1, (5,)).astype(np.float32)),
        "scale": Array(rng.normal(0, 1, (3, 2)).astype(np.float64)),
    }
    if batchnorm:
        arrays.update(
            {
                "bn.weight": Array(np.ones(5, np.float32)),
                "bn.bias": Array(np.zeros(5, np.float32)),
                "bn.running_mean": Array(np.zeros(5, np.float32)),
                "bn.running_var": Array(np.ones(5, np.float32)),
                "bn.num_batches_tracked": Array(np.array(0, np.int64)),
                "temperature": Array(np.array(1.5, np.float32)),
            }
        )
    return ArrayRecord(arrays)


COUNTER = "bn.num_batches_tracked"


def _train(arrays, rng):
    """A client's training: every array moves by noise (the running variance
    stays positive), then the batch counter advances by the steps taken, as
    BatchNorm's does (a server optimizer hands it back as a float). The
    generator's draws for a model without a counter are those of the logs
    in tests/data/logs."""
    out = {}
    for k, a in arrays.items():
        x = a.numpy()
        if k != COUNTER:
            moved = x + rng.normal(0, 0.1, x.shape)
            out[k] = np.asarray(np.abs(moved) if k == "bn.running_var" else moved).astype(x.dtype)
    loss, steps = float(rng.random()), int(rng.integers(9))
    if COUNTER in arrays:
        x = arrays[COUNTER].numpy()
        out[COUNTER] = np.asarray(x + steps).astype(x.dtype)
    return {k: Array(out[k]) for k in arrays}, loss, steps


def make_answer(block=None, errors=()):
    """A node's ClientApp: train replies arrays + metrics, evaluate replies
    metrics; nodes in `errors` reply with an Error in every round."""

    def answer(node, msg):
        rnd = int(msg.content["config"]["server-round"])
        if block and node == 102 and rnd == block[0] and msg.metadata.message_type == "train":
            with open(block[1], "w") as f:
                f.write("blocked")
            while True:
                time.sleep(60)
        if node in errors:
            return Error(
                code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=f"node {node}: out of memory in round {rnd}"
            )
        rng = np.random.default_rng([node, rnd])
        n = 10 * (node - 100) + rnd
        if msg.metadata.message_type != "train":
            return RecordDict({"metrics": MetricRecord({"num-examples": n, "eval_loss": float(rng.random())})})
        out, loss, steps = _train(msg.content["arrays"], rng)
        metrics = MetricRecord({"num-examples": n, "train_loss": loss, "steps": steps})
        return RecordDict({"arrays": ArrayRecord(out), "metrics": metrics})

    return answer


def evaluate_fn(server_round, arrays):
    w = arrays["fc.weight"].numpy()
    return MetricRecord({"norm": float(np.linalg.norm(w)), "round": server_round})


def main(
    db,
    run,
    strategy_name,
    num_rounds,
    resume=False,
    block=None,
    errors=(),
    strategy=None,
    batchnorm=True,
    run_id=77,
    initial=None,
    **kw,
):
    """Seeds Python's and NumPy's generators as a ServerApp would, runs the
    wrapped strategy's start over a StubGrid (Flower's run id run_id) from
    the model `initial` (default initial_arrays(batchnorm)) and returns
    (Result, grid)."""
    grid = StubGrid(run_id=run_id, nodes={n: make_answer(block, errors) for n in NODES})
    context = Context(run_id=run_id, node_id=1, node_config={}, state=RecordDict(), run_config={"lr": 0.1, "db": db})
    random.seed(1234)
    np.random.seed(1234)
    strategy = strategy if strategy is not None else STRATEGIES[strategy_name]()
    logged = LoggingStrategy(strategy, db, run, context=context, resume=resume, **kw)
    with server_identity(grid), quiet_flower():
        result = logged.start(
            grid=grid,
            initial_arrays=initial if initial is not None else initial_arrays(batchnorm),
            num_rounds=num_rounds,
            train_config=ConfigRecord({"lr": 0.1}),
            evaluate_fn=evaluate_fn,
        )
    return result, grid


def save_result(result, path):
    np.savez(path, **{k: a.numpy() for k, a in result.arrays.items()})


if __name__ == "__main__":
    args = sys.argv[1:]
    resume = "--resume" in args
    block = None
    if "--block" in args:
        i = args.index("--block")
        block = (int(args[i + 1]), args[i + 2])
        del args[i : i + 3]
    run_id = 77
    if "--run-id" in args:
        i = args.index("--run-id")
        run_id = int(args[i + 1])
        del args[i : i + 2]
    args = [a for a in args if a != "--resume"]
    db, run, name, rounds = args[0], args[1], args[2], int(args[3])
    result, _ = main(db, run, name, rounds, resume=resume, block=block, run_id=run_id)
    save_result(result, os.path.join(os.path.dirname(db), run + ".result.npz"))
