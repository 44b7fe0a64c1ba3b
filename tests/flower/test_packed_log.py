# SPDX-License-Identifier: Apache-2.0
"""What a logged run costs on disk: LoggingStrategy with its defaults (the
packed store) against packed=False (the raw store) and lossy="float16", on
real training (tests/python/realruns.py: a NumPy MLP on scikit-learn's
digits, 6 clients, SGD with momentum, 20 rounds). The clients' replies are
the run's, replayed through Flower's FedAvg and the logger on a StubGrid;
the database file after VACUUM is compared with Flower's bytes of every
record it holds. Every logged record reads back bit for bit as Flower
serialized it, and a resumed packed run continues bit-exact.

`make bench --only packing` prints the same figures with the CNN run and
the entropy floor beside them.
"""

import os
import tempfile

import numpy as np
import realruns
from arlib import recipes
from flwr.app import Array, ArrayRecord, MetricRecord, RecordDict
from flwr.serverapp.strategy import FedAvg
from runner import Skip
from stub_grid import StubGrid, quiet_flower, server_identity

import sqlite_arrayrecord as sar
from sqlite_arrayrecord.flower import LoggingStrategy
from sqlite_arrayrecord.flower._wire import ar_bytes, rd_bytes

ROUNDS = 20
_RUN = {}


def mlp_rounds():
    """The MLP run's rounds (computed once per process)."""
    if realruns.digits_path() is None:
        raise Skip(f"scikit-learn's digits data is missing: {realruns.SKLEARN_INSTALL}")
    if "mlp" not in _RUN:
        _RUN["mlp"] = list(realruns.mlp_run(rounds=ROUNDS))
    return _RUN["mlp"]


def arrays(state):
    return ArrayRecord({k: Array(np.asarray(v)) for k, v in state.items()})


class InOrderGrid(StubGrid):
    """Replies in node order, whatever order Flower sampled the nodes in:
    FedAvg then sums them in one order, and two runs give the same bits."""

    def send_and_receive(self, messages, *, timeout=None):
        return sorted(super().send_and_receive(messages), key=lambda m: m.metadata.src_node_id)


def grid_of(rounds):
    """A grid of the run's clients: node 201 + i answers client i's reply of the round."""
    nodes = {}
    for i in range(len(rounds[0].replies)):

        def answer(node, msg, i=i):
            rnd = int(msg.content["config"]["server-round"])
            _, n, state = rounds[rnd - 1].replies[i]
            if msg.metadata.message_type != "train":
                return RecordDict({"metrics": MetricRecord({"num-examples": n, "eval_loss": 0.5})})
            return RecordDict({"arrays": arrays(state), "metrics": MetricRecord({"num-examples": n})})

        nodes[201 + i] = answer
    return InOrderGrid(run_id=91, nodes=nodes)


def log_run(db, rounds, num_rounds, **options):
    grid = grid_of(rounds)
    with server_identity(grid), quiet_flower():
        return LoggingStrategy(FedAvg(), db, "mlp", **options).start(
            grid=grid, initial_arrays=arrays(rounds[0].base), num_rounds=num_rounds
        )


def flower_bytes(con):
    """Flower's bytes of every record the log holds (global models, reply
    contents, strategy state, instructions), as the raw store keeps them."""
    total = 0
    for sql in (
        "SELECT sum(length(rec)) FROM global_models",
        "SELECT sum(length(content)) FROM replies",
        "SELECT sum(length(state)) FROM strategy_state",
        "SELECT sum(length(content)) FROM instructions",
    ):
        total += con.execute(sql).fetchone()[0] or 0
    return total


def file_size(db):
    con = sar.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA journal_mode = DELETE")
    con.execute("VACUUM")
    con.close()
    return os.path.getsize(db)


def test_a_packed_log_costs_less_bit_for_bit():
    rounds = mlp_rounds()
    with tempfile.TemporaryDirectory() as tmp:
        sizes, results = {}, {}
        for name, options in (("raw", {"packed": False}), ("packed", {}), ("lossy", {"lossy": "float16"})):
            db = os.path.join(tmp, name + ".db")
            results[name] = log_run(db, rounds, ROUNDS, **options)
            con = sar.connect(db)
            store = con.execute("SELECT type FROM sqlite_master WHERE name = 'replies'").fetchone()[0]
            assert store == ("table" if name == "raw" else "view"), (name, store)
            raw = flower_bytes(con)
            # every reply as Flower serialized it (lossy: the global models only)
            for rnd, pos, content in con.execute(
                "SELECT round, pos, content FROM replies WHERE phase = 'train' ORDER BY round, pos"
            ):
                if name != "lossy":
                    assert content in sent(rounds, rnd), (name, rnd, pos)
            # fedavg_check says which runs' replies are lossy (their global models need not match)
            check = con.execute(recipes()["fedavg_check"], {"run": 1}).fetchall()
            assert [r[4] for r in check] == [("float16" if name == "lossy" else None)] * ROUNDS, check
            if name != "lossy":
                assert all(r[3] == 1 for r in check), check
            con.close()
            sizes[name] = (file_size(db), raw)
        for name in ("packed", "lossy"):
            assert results[name].arrays == results["raw"].arrays  # the run itself is the same
        raw_file, raw_bytes = sizes["raw"]
        packed_file, packed_bytes = sizes["packed"]
        lossy_file, _ = sizes["lossy"]
        assert packed_bytes == raw_bytes  # the same records, presented the same
        print(
            f"NumPy MLP on digits, 6 clients, {ROUNDS} rounds, {raw_bytes / 1e6:.1f} MB of Flower's bytes: "
            f"file after VACUUM / Flower's bytes: raw store {raw_file / raw_bytes:.3f}, "
            f"packed {packed_file / raw_bytes:.3f}, lossy float16 replies {lossy_file / raw_bytes:.3f}"
        )
        assert packed_file / raw_bytes <= 0.70, packed_file / raw_bytes
        # global models stay exact, packed on their own (0.85 of their bytes): with 6 replies a round
        # that leaves about 0.46 (a 10-client run takes about 0.40: make bench --only packing)
        assert lossy_file / raw_bytes <= 0.48, lossy_file / raw_bytes


def sent(rounds, rnd):
    """Flower's bytes of the train replies the clients sent in round rnd."""
    return {
        rd_bytes(RecordDict({"arrays": arrays(state), "metrics": MetricRecord({"num-examples": n})}))
        for _, n, state in rounds[rnd - 1].replies
    }


def test_a_packed_log_resumes_bit_exact():
    """Stopped after round 7 of 12, resumed to the end: the same global
    models and replies as the run made whole, packed the same way."""
    rounds = mlp_rounds()[:12]
    with tempfile.TemporaryDirectory() as tmp:
        whole, part = os.path.join(tmp, "whole.db"), os.path.join(tmp, "part.db")
        log_run(whole, rounds, 12)
        log_run(part, rounds, 7)
        grid = grid_of(rounds)
        with server_identity(grid), quiet_flower():
            LoggingStrategy(FedAvg(), part, "mlp", resume=True).start(
                grid=grid, initial_arrays=arrays(rounds[0].base), num_rounds=12
            )
        got = []
        for db in (whole, part):
            con = sar.connect(db)
            got.append(con.execute("SELECT round, rec FROM global_models ORDER BY round").fetchall())
            assert con.execute("SELECT count(*) FROM model_store WHERE packed = 1").fetchone()[0] == 13
            # every train reply against the model it started from, round 8's too (its base logged before the stop)
            assert con.execute(
                "SELECT count(*) FROM reply_store WHERE phase = 'train' AND base_round = round - 1"
            ).fetchone()[0] == 12 * len(rounds[0].replies)
            con.close()
        assert [r for r, _ in got[1]] == list(range(13)), [r for r, _ in got[1]]
        assert [r for r, _ in got[0]] == list(range(13)), [r for r, _ in got[0]]
        for (r, a), (_, b) in zip(*got):
            assert a == b, r
        assert ar_bytes(arrays(rounds[0].base)) == got[0][0][1]
