# SPDX-License-Identifier: Apache-2.0
"""The ClientApp: trains and evaluates the MLP of task.py on this node's
partition.

The partition comes from the SuperNode's node config, e.g.
`flower-supernode ... --node-config "partition-id=0 num-partitions=2"`.
A train reply holds the new arrays ("arrays") and a MetricRecord with
"train-loss" and "num-examples" (FedAvg's weight); an evaluate reply holds
"eval-loss", "eval-acc" and "num-examples". Both carry the partition id in a
ConfigRecord ("node"): the node's stable label, which LoggingStrategy keeps
(clients.info), while node ids change with every run in simulation.
"""

import importlib.util
from logging import INFO

from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp
from flwr.common.logger import log

from flower_app import task

app = ClientApp()


def _partition(context):
    return int(context.node_config["partition-id"]), int(context.node_config["num-partitions"])


def _arrays(msg):
    return {k: a.numpy() for k, a in msg.content["arrays"].items()}


@app.train()
def train(msg: Message, context: Context) -> Message:
    pid, parts = _partition(context)
    seed = int(context.run_config["seed"])
    config = msg.content["config"]
    server_round = int(config["server-round"])
    x, y = task.load_partition(seed, pid, parts, "train")
    arrays, loss = task.train(
        _arrays(msg),
        x,
        y,
        epochs=int(context.run_config["local-epochs"]),
        lr=float(config["lr"]),
        shuffle_seed=(seed, pid, server_round),
    )
    # Where this process would import sqlite_arrayrecord from (not imported:
    # the ClientApp needs flwr and NumPy only); the tests read it in the
    # SuperNode's log to check the environment the apps run in.
    spec = importlib.util.find_spec("sqlite_arrayrecord")
    log(
        INFO,
        "flower_app client: partition %d round %d: %d examples, loss %.6f, sqlite_arrayrecord at %s",
        pid,
        server_round,
        len(y),
        loss,
        spec.origin if spec else None,
    )
    content = RecordDict(
        {
            "arrays": ArrayRecord({k: Array(v) for k, v in arrays.items()}),
            "metrics": MetricRecord({"train-loss": loss, "num-examples": len(y)}),
            "node": ConfigRecord({"partition-id": pid}),
        }
    )
    return Message(content=content, reply_to=msg)


@app.evaluate()
def evaluate(msg: Message, context: Context) -> Message:
    pid, parts = _partition(context)
    x, y = task.load_partition(int(context.run_config["seed"]), pid, parts, "test")
    loss, accuracy = task.evaluate(_arrays(msg), x, y)
    metrics = MetricRecord({"eval-loss": loss, "eval-acc": accuracy, "num-examples": len(y)})
    return Message(content=RecordDict({"metrics": metrics, "node": ConfigRecord({"partition-id": pid})}), reply_to=msg)
