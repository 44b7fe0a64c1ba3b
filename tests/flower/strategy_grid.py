# SPDX-License-Identifier: Apache-2.0
"""Runs Flower's own strategies as Flower runs them, and keeps every reply's
bytes for the SQL side (helpers of test_strategies.py; not a test module).

`RecordingGrid` is a `flwr.serverapp.Grid` whose nodes are seeded fake
clients: `send_and_receive` answers each instruction message with
`Message(content, reply_to=instruction)`, as a ClientApp's reply is made,
after a round trip of the content through Flower's serde (what the SuperLink
carries). `Strategy.start` then drives `configure_train` / `aggregate_train`
exactly as in a deployment, passing each round's result on as the next
round's arrays. Every reply is recorded as (round, position, node, serde
bytes of its RecordDict), in the order `aggregate_train` received them.
"""

import random

import numpy as np
from flwr.app import Array, ArrayRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.common import serde
from flwr.proto.recorddict_pb2 import ArrayRecord as ProtoArrayRecord
from flwr.proto.recorddict_pb2 import RecordDict as ProtoRecordDict
from flwr.serverapp import Grid
from flwr.supercore.task_identity import TaskIdentity

SUPERLINK_NODE_ID = 1  # the ServerApp's node id (flwr.common.constant)


def rd_bytes(rd):
    """Flower's wire bytes of a RecordDict."""
    return serde.recorddict_to_proto(rd).SerializeToString()


def rd_from_bytes(blob):
    return serde.recorddict_from_proto(ProtoRecordDict.FromString(bytes(blob)))


def ar_from_bytes(blob):
    return serde.array_record_from_proto(ProtoArrayRecord.FromString(bytes(blob)))


def ar_bytes(arrays):
    """Flower's wire bytes of an ArrayRecord made from a dict of ndarrays."""
    rec = ArrayRecord({k: Array(np.asarray(v)) for k, v in arrays.items()})
    return serde.array_record_to_proto(rec).SerializeToString()


def to_numpy(record):
    """An ArrayRecord as {key: ndarray}, in its order."""
    return {k: a.numpy() for k, a in record.items()}


def model(rng, spec):
    """A model from [(key, shape, dtype)], values ~ N(0, 1)."""
    return {k: rng.normal(0, 1, shape).astype(dt) for k, shape, dt in spec}


class Client:
    """A seeded fake client: trains by adding noise of scale `scale` to the
    arrays it receives, cast to its own dtypes first (as a framework loads a
    state dict into its parameters: a float32 model stays float32 whatever
    the server sends), or with dtypes None in the dtypes received (a NumPy
    client). Reports num-examples and train metrics."""

    def __init__(self, node_id, seed, dtypes, num_examples, scale=0.05, offset=0.0):
        self.node_id = node_id
        self.rng = np.random.default_rng(seed)
        self.dtypes = dtypes
        self.num_examples = num_examples
        self.scale = scale
        self.offset = offset

    def train(self, server_round, arrays):
        out = {}
        for k, a in arrays.items():
            x = a.numpy()
            dt = self.dtypes[k] if self.dtypes else x.dtype  # no dtypes: reply in the dtype received
            out[k] = (x.astype(dt) + self.offset + self.rng.normal(0, self.scale, x.shape)).astype(dt)
        metrics = {
            "num-examples": self.num_examples,
            "loss": float(self.rng.random()),
            "steps": int(self.rng.integers(1, 100)),
            "accs": [float(self.rng.random()), float(server_round)],
        }
        return RecordDict(
            {"arrays": ArrayRecord({k: Array(v) for k, v in out.items()}), "metrics": MetricRecord(metrics)}
        )


class RecordingGrid(Grid):
    """A Grid over fake clients; `replies` holds (round, pos, node, bytes)."""

    def __init__(self, clients):
        self.clients = {c.node_id: c for c in clients}
        self.replies = []
        self._run = None

    def set_run(self, run):
        self._run = run

    @property
    def run(self):
        return self._run

    def create_message(self, content, message_type, dst_node_id, group_id, ttl=None):
        return Message(content, dst_node_id, message_type, group_id=group_id, ttl=ttl)

    def get_node_ids(self):
        return list(self.clients)

    def push_messages(self, messages):
        raise NotImplementedError("send_and_receive only")

    def pull_messages(self, message_ids):
        raise NotImplementedError("send_and_receive only")

    def send_and_receive(self, messages, *, timeout=None):
        out = []
        for msg in messages:
            if msg.metadata.message_type != MessageType.TRAIN:
                continue  # the tests evaluate nothing (fraction_evaluate=0)
            rnd = int(msg.content["config"]["server-round"])
            arrays = next(iter(msg.content.array_records.values()))
            blob = rd_bytes(self.clients[msg.metadata.dst_node_id].train(rnd, arrays))
            self.replies.append((rnd, len(out), msg.metadata.dst_node_id, blob))
            out.append(Message(rd_from_bytes(blob), reply_to=msg))
        return out


def fleet(n, dtypes, seed, **kw):
    """n clients with different num-examples (7..997), seeds from `seed`."""
    rng = np.random.default_rng(seed)
    return [Client(1000 + i, seed * 100 + i, dtypes, int(rng.integers(7, 998)), **kw) for i in range(n)]


def run(strategy, initial, clients, num_rounds=1, seed=0, watch=None):
    """strategy.start over a RecordingGrid: (Result, grid). Python's random
    (Flower's node sampling) is seeded, so the reply order is fixed.
    grid.arrays[r] is the global model after round r (0: the initial one),
    as start() hands it to evaluate_fn; grid.watched[r] = watch(strategy)
    then (a strategy's state, copied)."""
    grid = RecordingGrid(clients)
    # What flwr's run_serverapp sets before the ServerApp's main runs.
    TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 4242, SUPERLINK_NODE_ID
    random.seed(seed)
    grid.arrays, grid.watched = {}, {}

    def evaluate_fn(server_round, arrays):
        grid.arrays[server_round] = {k: v.copy() for k, v in to_numpy(arrays).items()}
        if watch:
            grid.watched[server_round] = watch(strategy)
        return None

    result = strategy.start(
        grid=grid,
        initial_arrays=ArrayRecord({k: Array(v) for k, v in initial.items()}),
        num_rounds=num_rounds,
        evaluate_fn=evaluate_fn,
    )
    return result, grid
