# SPDX-License-Identifier: Apache-2.0
"""examples/flower_log.py simulates a Flower server without Flower; its
FedAvg (ar_mean in the round_fedavg view, stored in global_models) is Flower
1.42's FedAvg.aggregate_train on the same replies.

The example runs into a temporary database. Then, each round, Flower's own
FedAvg.configure_train sends the previous global model to one node per
client of the example (a StubGrid), each node answers with that client's
stored update, decoded from its BLOB by Flower's serde, and its
num-examples; FedAvg.aggregate_train of the replies is compared with the
example's new global model.
"""

import contextlib
import importlib.util
import io
import json
import os
import tempfile

from arlib import ROOT
from flwr.app import ConfigRecord, MetricRecord, RecordDict
from flwr.common.serde import array_record_from_proto
from flwr.proto.recorddict_pb2 import ArrayRecord as ArrayRecordProto
from flwr.serverapp.strategy import FedAvg
from stub_grid import StubGrid, quiet_flower, server_identity
from test_readme_flower import compare_fedavg

import sqlite_arrayrecord as sar

ROUNDS, CLIENTS = 3, 4


def load_example():
    path = os.path.join(ROOT, "examples", "flower_log.py")
    spec = importlib.util.spec_from_file_location("flower_log", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def from_blob(blob):
    return array_record_from_proto(ArrayRecordProto.FromString(blob))


def test_flower_log_fedavg_is_flowers():
    example = load_example()
    with tempfile.TemporaryDirectory() as tmp, quiet_flower():
        db = os.path.join(tmp, "runs.db")
        with contextlib.redirect_stdout(io.StringIO()):
            assert example.main(["--db", db, "--rounds", str(ROUNDS), "--clients", str(CLIENTS)]) == 0
        con = sar.connect(db)
        (run,) = con.execute("SELECT run FROM runs").fetchone()
        updates = {}  # (round, node_id) -> reply content
        for rnd, client, n, metrics, rec in con.execute(
            "SELECT round, client, num_examples, metrics, rec FROM client_updates WHERE run = ?", (run,)
        ):
            node = 1000 + int(client.split("-")[1])
            metrics = MetricRecord({"num-examples": n, **json.loads(metrics)})
            updates[rnd, node] = RecordDict({"arrays": from_blob(rec), "metrics": metrics})
        models = dict(con.execute("SELECT round, rec FROM global_models WHERE run = ?", (run,)))
        con.close()
        assert sorted(models) == list(range(ROUNDS + 1)) and len(updates) == ROUNDS * CLIENTS

        def node(rnd):
            def answer(node_id, message):
                assert message.content["arrays"] == from_blob(models[rnd - 1]), "the node got the global model"
                assert message.content["config"]["server-round"] == rnd
                return updates[rnd, node_id]

            return answer

        strategy = FedAvg(min_available_nodes=CLIENTS)
        for rnd in range(1, ROUNDS + 1):
            grid = StubGrid(run_id=run, nodes={1000 + c: node(rnd) for c in range(CLIENTS)})
            with server_identity(grid):
                messages = strategy.configure_train(rnd, from_blob(models[rnd - 1]), ConfigRecord({"lr": 0.1}), grid)
                replies = grid.send_and_receive(messages)
            assert len(replies) == CLIENTS and all(r.has_content() for r in replies)
            theirs, _ = strategy.aggregate_train(rnd, replies)
            assert theirs is not None, f"round {rnd}: Flower's FedAvg found the replies inconsistent"
            compare_fedavg(sar.from_record(models[rnd]), theirs, replies, f"round {rnd}")
