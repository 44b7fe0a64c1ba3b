# SPDX-License-Identifier: Apache-2.0
"""sqlite_arrayrecord.flower.LoggingStrategy against flwr 1.42's own
Strategy.start over a StubGrid (logging_app.py: deterministic fake clients).

The wrapper changes nothing Flower does (same messages sent, same Result,
with and without it, for plain, server-optimizer, robust and DP
strategies); what it logs is Flower's bytes (replies and instructions are
Flower's serde output, the global model each instruction carried is stored
once); each round's logged global model is the SQL recipe of
docs/flower-strategies.md over that round's logged replies in arrival
order; the logged metrics are the Result's; every view and recipe of
sql/ answers on the logged database; error replies are logged; the
keep-less option keeps what it says; a reader of the WAL database during a
run sees complete rounds only; a ServerApp SIGKILLed mid-round and resumed
in a new process ends bit-identical to an uninterrupted run, for FedAvg,
FedAvgM, FedAdam, FedYogi and FedAdagrad; strategies whose state cannot be
stored are refused at resume with their name.
"""

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import logging_app
import numpy as np
from arlib import ROOT, recipes
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, MetricRecord, RecordDict
from flwr.common import serde
from flwr.common.constant import ErrorCode
from flwr.proto.recorddict_pb2 import ArrayRecord as ProtoArrayRecord
from flwr.proto.recorddict_pb2 import RecordDict as ProtoRecordDict
from flwr.serverapp.strategy import (
    DifferentialPrivacyServerSideFixedClipping,
    FedAdam,
    FedAvg,
    FedAvgM,
    FedMedian,
    Krum,
)
from stub_grid import StubGrid, quiet_flower, server_identity

import sqlite_arrayrecord as sar
from sqlite_arrayrecord.flower import LoggingStrategy, ResumeError, read_result

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "logging_app.py")


def rd_bytes(rd):
    return serde.recorddict_to_proto(rd).SerializeToString()


def rd_from(blob):
    return serde.recorddict_from_proto(ProtoRecordDict.FromString(bytes(blob)))


def ar_from(blob):
    return serde.array_record_from_proto(ProtoArrayRecord.FromString(bytes(blob)))


def same_arrays(a, b):
    """Two ArrayRecords with the same keys, dtypes, shapes and bits."""
    assert list(a) == list(b), (list(a), list(b))
    for k in a:
        x, y = a[k].numpy(), b[k].numpy()
        assert x.dtype == y.dtype and x.shape == y.shape, (k, x.dtype, y.dtype)
        assert x.tobytes() == y.tobytes(), f"{k}: arrays differ"


def same_result(r1, r2):
    same_arrays(r1.arrays, r2.arrays)
    for name in ("train_metrics_clientapp", "evaluate_metrics_clientapp", "evaluate_metrics_serverapp"):
        a, b = getattr(r1, name), getattr(r2, name)
        assert sorted(a) == sorted(b), (name, sorted(a), sorted(b))
        for rnd in a:
            assert dict(a[rnd]) == dict(b[rnd]), (name, rnd, a[rnd], b[rnd])


class SpyGrid(StubGrid):
    """A StubGrid that keeps what every pushed message was: (type, dst,
    group, message id, content bytes)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.sent = []

    def push_messages(self, messages):
        messages = list(messages)
        ids = super().push_messages(messages)
        for m in messages:
            meta = m.metadata
            self.sent.append((meta.message_type, meta.dst_node_id, meta.group_id, meta.message_id, rd_bytes(m.content)))
        return ids


def run_spy(strategy, num_rounds=3, wrap=None, errors=()):
    """strategy.start over a SpyGrid with logging_app's clients, the
    generators seeded: (Result, grid)."""
    grid = SpyGrid(run_id=77, nodes={n: logging_app.make_answer(errors=errors) for n in logging_app.NODES})
    random.seed(99)
    np.random.seed(99)
    s = wrap(strategy) if wrap else strategy
    with server_identity(grid), quiet_flower():
        result = s.start(
            grid=grid,
            initial_arrays=logging_app.initial_arrays(),
            num_rounds=num_rounds,
            evaluate_fn=logging_app.evaluate_fn,
        )
    return result, grid


def connect(db):
    con = sar.connect(db, detect_types=0)
    return con


STRATEGY_MAKERS = {
    "FedAvg": lambda: FedAvg(),
    "FedAvgM": lambda: FedAvgM(server_learning_rate=0.5, server_momentum=0.9),
    "FedAdam": lambda: FedAdam(eta=0.05, beta_1=0.9, beta_2=0.99),
    "FedMedian": lambda: FedMedian(),
    "Krum": lambda: Krum(num_malicious_nodes=1),
    "DP-server-clipping(FedAvg)": lambda: DifferentialPrivacyServerSideFixedClipping(
        FedAvg(), noise_multiplier=0.3, clipping_norm=2.0, num_sampled_clients=4
    ),
}


def test_same_messages_and_result_with_and_without_the_wrapper():
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, make) in enumerate(STRATEGY_MAKERS.items()):
            plain, g1 = run_spy(make(), 4)
            db = os.path.join(tmp, f"{i}.db")
            logged, g2 = run_spy(make(), 4, wrap=lambda s, db=db, name=name: LoggingStrategy(s, db, name))
            assert len(g1.sent) == len(g2.sent) > 0, name
            # (a message id is its object id, which covers its creation time)
            for a, b in zip(g1.sent, g2.sent):
                assert a[:3] + a[4:] == b[:3] + b[4:], f"{name}: message {a[:3]} differs"
            for a, b in zip(g1.delivered, g2.delivered):
                assert rd_bytes(a.content) == rd_bytes(b.content) if a.has_content() else a.error == b.error, name
            same_result(plain, logged)
            with connect(db) as con:
                assert con.execute("SELECT count(*) FROM rounds WHERE run = 1").fetchone()[0] == 5, name


def logged_run(tmp, strategy, num_rounds=3, errors=(), name="run", **kw):
    db = os.path.join(tmp, name + ".db")
    context = Context(run_id=77, node_id=1, node_config={}, state=RecordDict(), run_config={"lr": 0.25, "db": db})

    def wrap(s):
        return LoggingStrategy(s, db, name, context=context, **kw)

    result, grid = run_spy(strategy, num_rounds, wrap=wrap, errors=errors)
    return db, result, grid


def test_logged_bytes_are_flowers_serde():
    """Replies: the content column is Flower's serde bytes of each delivered
    reply, in arrival order. Instructions: content plus the global model
    (global_models, stored once) rebuild each sent content, and bytes_sent
    is the sum of the sent contents' serde sizes."""
    with tempfile.TemporaryDirectory() as tmp:
        db, result, grid = logged_run(tmp, FedAvg(fraction_evaluate=0.5), 3)
        con = connect(db)
        rows = con.execute(
            "SELECT round, phase, pos, node_id, message_id, reply_to, content FROM replies ORDER BY rowid"
        ).fetchall()
        assert len(rows) == len(grid.delivered) == 3 * (4 + 2), len(rows)
        for row, reply in zip(rows, grid.delivered):
            rnd, phase, pos, node, mid, reply_to, content = row
            meta = reply.metadata
            assert (node, mid, reply_to) == (meta.src_node_id, meta.message_id, meta.reply_to_message_id), row[:6]
            assert phase == meta.message_type and content == rd_bytes(reply.content), row[:6]
        # arrival positions, per round and phase
        for rnd, phase, poss in con.execute(
            "SELECT round, phase, json_group_array(pos) FROM (SELECT * FROM replies ORDER BY rowid) GROUP BY 1, 2"
        ):
            assert json.loads(poss) == list(range(len(json.loads(poss)))), (rnd, phase, poss)
        sent = {m[3]: m for m in grid.sent}
        total = {}
        for rnd, phase, node, mid, content, key in con.execute(
            "SELECT round, phase, node_id, message_id, content, global_arrays FROM instructions ORDER BY rowid"
        ):
            msg_type, dst, group, _, blob = sent.pop(mid)
            assert (msg_type, dst) == (phase, node), (rnd, phase, node)
            rd = rd_from(content)
            assert key == "arrays", key
            g = con.execute(
                "SELECT rec FROM global_models WHERE round = ?", (rnd - 1 if phase == "train" else rnd,)
            ).fetchone()[0]
            whole = rd_from(blob)
            assert serde.array_record_to_proto(whole[key]).SerializeToString() == bytes(g), (rnd, phase)
            assert list(rd) == [k for k in whole if k != key] and all(rd[k] == whole[k] for k in rd), list(rd)
            total[rnd] = total.get(rnd, 0) + len(blob)
        assert not sent, f"{len(sent)} sent messages not logged"
        for rnd, n in con.execute("SELECT round, bytes_sent FROM rounds WHERE round > 0"):
            assert n == total[rnd], (rnd, n, total[rnd])
        for rnd, n, m in con.execute(
            "SELECT r.round, r.bytes_received, (SELECT sum(length(content)) FROM replies p WHERE p.round = r.round) "
            "FROM rounds r WHERE round > 0"
        ):
            assert n == m > 0, (rnd, n, m)


class CopyingFedAvg(FedAvg):
    """Sends a copy of the global model, as QFedAvg does."""

    def configure_train(self, server_round, arrays, config, grid):
        return super().configure_train(server_round, arrays.copy(), config, grid)


def test_a_copy_of_the_global_model_is_not_stored_again():
    with tempfile.TemporaryDirectory() as tmp:
        db, _, grid = logged_run(tmp, CopyingFedAvg(), 2)
        con = connect(db)
        rows = con.execute("SELECT global_arrays, length(content) FROM instructions").fetchall()
        assert len(rows) == 2 * 8 and all(k == "arrays" and n < 200 for k, n in rows), rows
        total = sum(len(m[4]) for m in grid.sent)
        assert con.execute("SELECT sum(bytes_sent) FROM rounds").fetchone()[0] == total


def test_global_models_are_the_sql_recipes_over_the_logged_replies():
    """FedAvg: rd_mean over the round's replies in arrival order is the
    logged global model byte for byte (and the round_fedavg view within
    rounding); FedAvgM: ar_server_step carried over the rounds gives each
    logged global model byte for byte (FedAdam's np.power may differ by an
    ulp from C's pow: docs/flower-strategies.md); FedMedian: ar_median."""
    with tempfile.TemporaryDirectory() as tmp:
        db, result, _ = logged_run(tmp, FedAvg(), 4, name="fedavg")
        con = connect(db)
        for rnd in range(1, 5):
            ours, stored, close = con.execute(
                "SELECT rd_array_record(m), g.rec, ar_allclose(f.rec, g.rec, 1e-6, 1e-7) FROM "
                "(SELECT rd_mean(content) AS m FROM (SELECT content FROM replies WHERE round = ?1 AND phase = 'train' "
                "ORDER BY pos)), global_models g, round_fedavg f WHERE g.round = ?1 AND f.round = ?1",
                (rnd,),
            ).fetchone()
            assert ours == stored and close == 1, rnd
        same_arrays(ar_from(stored), result.arrays)

        db, result, _ = logged_run(tmp, FedAvgM(server_learning_rate=0.5, server_momentum=0.9), 4, name="fedavgm")
        con = connect(db)
        (state,) = con.execute("SELECT rd('arrays', 'array', rec) FROM global_models WHERE round = 0").fetchone()
        for rnd in range(1, 5):
            state, stored = con.execute(
                "SELECT ar_server_step('fedavgm', ?1, rd_array_record(m), ?2, "
                '\'{"server_learning_rate": 0.5, "server_momentum": 0.9}\'), g.rec '
                "FROM (SELECT rd_mean(content) AS m FROM (SELECT content FROM replies "
                "WHERE round = ?2 AND phase = 'train' ORDER BY pos)), global_models g WHERE g.round = ?2",
                (state, rnd),
            ).fetchone()
            (mine,) = con.execute("SELECT rd_array_record(?, 'arrays')", (state,)).fetchone()
            same_arrays(ar_from(mine), ar_from(stored))

        db, result, _ = logged_run(tmp, FedMedian(), 3, name="fedmedian")
        con = connect(db)
        for rnd in range(1, 4):
            ours, stored = con.execute(
                "SELECT ar_median(rec), (SELECT rec FROM global_models WHERE round = ?1) FROM "
                "(SELECT rec FROM client_updates WHERE round = ?1 ORDER BY pos)",
                (rnd,),
            ).fetchone()
            same_arrays(ar_from(ours), ar_from(stored))


def test_logged_metrics_are_the_results():
    with tempfile.TemporaryDirectory() as tmp:
        db, result, _ = logged_run(tmp, FedAvg(fraction_evaluate=0.5), 3)
        con = connect(db)
        rows = con.execute("SELECT round, result, metrics, train_metrics, evaluate_metrics FROM rounds ORDER BY round")
        seen = 0
        for rnd, blob, server, train, evaluate in rows:
            rd = rd_from(blob)
            for key, col, res in (
                ("server", server, result.evaluate_metrics_serverapp),
                ("train", train, result.train_metrics_clientapp),
                ("evaluate", evaluate, result.evaluate_metrics_clientapp),
            ):
                if rnd in res:
                    assert rd[key] == res[rnd] and json.loads(col) == dict(res[rnd]), (rnd, key, col, res[rnd])
                    seen += 1
                else:
                    assert key not in rd and col in (None, "{}"), (rnd, key)
        assert seen == 4 + 3 + 3, seen
        same_result(read_result(db, "run"), result)
        try:
            read_result(db, "other")
            raise AssertionError("read_result of a run not there")
        except ValueError as e:
            assert str(e) == f"read_result: no run 'other' in {db}", str(e)
        run = con.execute("SELECT flower_run_id, strategy, settings, config, num_rounds FROM runs").fetchone()
        assert run[:2] == (77, "flwr.serverapp.strategy.fedavg.FedAvg") and run[4] == 3, run
        assert json.loads(run[2])["fraction_evaluate"] == 0.5, run[2]
        assert json.loads(run[3]) == {"lr": 0.25, "db": db}, run[3]


def test_views_and_cookbook_answer_on_a_logged_run():
    with tempfile.TemporaryDirectory() as tmp:
        db, result, _ = logged_run(tmp, FedAvg(), 4)
        con = connect(db)
        con.create_function("writefile", 2, lambda path, blob: len(blob))
        with open(os.path.join(ROOT, "sql", "views.sql"), encoding="utf-8") as f:
            views = re.findall(r"CREATE VIEW IF NOT EXISTS (\w+)", f.read())
        assert len(views) >= 5, views
        for view in views + ["client_updates"]:
            n = con.execute(f"SELECT count(*) FROM {view}").fetchone()[0]
            assert n > 0, view
        n_updates = con.execute("SELECT count(*), sum(num_examples) FROM client_updates").fetchone()
        assert n_updates[0] == 16 and n_updates[1] > 0, n_updates
        params = {
            "run": 1,
            "round": 2,
            "key": "fc.weight",
            "round_a": 1,
            "round_b": 3,
            "strategy_a": "fedavg",
            "strategy_b": "fedadam",
            "options_a": "{}",
            "options_b": "{}",
        }
        answered = 0
        for name, sql in recipes().items():
            given = dict(params)
            if name == "replay_strategies":  # round by round, from round 0 (no states yet)
                given.update(round=0, state_a=None, state_b=None)
            rows = con.execute(sql, {k: v for k, v in given.items() if ":" + k in sql}).fetchall()
            if name == "fedavg_check":
                assert [r[3] for r in rows] == [1] * 4, rows
            if name not in ("layer_norm_jumps", "clients_against_consensus"):  # may find nothing to report
                assert rows, name
            answered += 1
        assert answered == len(recipes()) >= 8


def test_ids_of_2_to_the_63_and_above_are_logged():
    """Flower's node and run ids are unsigned 64-bit; about half are >= 2**63,
    which SQLite's INTEGER cannot hold: they are stored as the signed 64-bit
    integer of the same bits (as the SuperLink stores them), the client as
    the unsigned id in text."""
    big_node, big_run = 2**64 - 5, 2**63 + 7
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "big.db")
        context = Context(run_id=big_run, node_id=1, node_config={}, state=RecordDict(), run_config={"db": db})
        base = logging_app.make_answer()  # answers as node 102 (its num-examples come from the node id)
        grid = StubGrid(run_id=big_run, nodes={101: base, big_node: lambda _node, msg: base(102, msg)})
        random.seed(99)
        np.random.seed(99)
        with server_identity(grid), quiet_flower():
            LoggingStrategy(FedAvg(), db, "big", context=context).start(
                grid=grid, initial_arrays=logging_app.initial_arrays(), num_rounds=1
            )
        con = connect(db)
        assert con.execute("SELECT flower_run_id FROM runs").fetchone()[0] == big_run - 2**64
        rows = con.execute("SELECT client, node_id FROM replies WHERE node_id < 0").fetchall()
        assert rows and set(rows) == {(str(big_node), big_node - 2**64)}, rows


def test_error_replies_are_logged():
    with tempfile.TemporaryDirectory() as tmp:
        db, result, grid = logged_run(tmp, FedAvg(), 2, errors=(103,))
        con = connect(db)
        errs = con.execute(
            "SELECT round, phase, node_id, error_code, error_reason, content IS NULL FROM replies "
            "WHERE error_code IS NOT NULL ORDER BY round, phase"
        ).fetchall()
        assert errs == [
            (rnd, phase, 103, ErrorCode.CLIENT_APP_RAISED_EXCEPTION, f"node 103: out of memory in round {rnd}", 1)
            for rnd in (1, 2)
            for phase in ("evaluate", "train")
        ], errs
        assert con.execute("SELECT count(*) FROM client_updates WHERE client = '103'").fetchone()[0] == 0
        assert con.execute("SELECT group_concat(errors) FROM rounds WHERE round > 0").fetchone()[0] == "2,2"
        try:
            con.execute(
                "INSERT INTO replies(run, round, pos, client, content, error_code) VALUES (1, 1, 9, '101', x'', 1)"
            )
            raise AssertionError("a reply with content and an error was accepted")
        except sqlite3.IntegrityError as e:
            assert "CHECK constraint failed" in str(e), e


def test_keep_less_options():
    """replies_every=k logs replies' contents in rounds k, 2k, ... only and
    0 never; error replies, instructions, global models and metrics always."""
    with tempfile.TemporaryDirectory() as tmp:
        sizes = {}
        for every in (1, 2, 0):
            db, result, _ = logged_run(tmp, FedAvg(), 4, errors=(104,), name=f"every{every}", replies_every=every)
            con = connect(db)
            kept = [
                r for (r,) in con.execute("SELECT DISTINCT round FROM replies WHERE content IS NOT NULL ORDER BY 1")
            ]
            assert kept == {1: [1, 2, 3, 4], 2: [2, 4], 0: []}[every], (every, kept)
            assert con.execute("SELECT count(*) FROM replies WHERE error_code IS NOT NULL").fetchone()[0] == 8
            assert con.execute("SELECT count(*) FROM global_models").fetchone()[0] == 5
            assert con.execute("SELECT count(*) FROM instructions").fetchone()[0] == 4 * 8
            recv = [r for (r,) in con.execute("SELECT bytes_received FROM rounds WHERE round > 0 ORDER BY round")]
            assert [r is not None for r in recv] == [every and rnd % every == 0 for rnd in range(1, 5)], recv
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            con.close()
            sizes[every] = os.path.getsize(db)
        assert sizes[1] > sizes[2] > sizes[0], sizes


def test_wal_readers_see_complete_rounds_only():
    """A second connection reading while round 3 is under way (from inside
    a client's reply) sees rounds 0-2 whole, nothing of round 3; the file
    is in WAL mode."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "wal.db")
        seen = []

        def answer(node, msg):
            rnd = int(msg.content["config"]["server-round"])
            if rnd == 3 and node == 102 and msg.metadata.message_type == "train":
                r = sar.connect(db)  # a packed log reads through the extension
                seen.append(
                    r.execute(
                        "SELECT (SELECT group_concat(round) FROM rounds), (SELECT count(*) FROM rounds WHERE "
                        "finished_at IS NULL), (SELECT group_concat(round) FROM global_models), "
                        "(SELECT max(round) FROM replies), (SELECT max(round) FROM instructions), "
                        "(SELECT round FROM strategy_state), (SELECT journal_mode FROM pragma_journal_mode)"
                    ).fetchone()
                )
                r.close()
            return logging_app.make_answer()(node, msg)

        grid = StubGrid(run_id=77, nodes={n: answer for n in logging_app.NODES})
        with server_identity(grid), quiet_flower():
            LoggingStrategy(FedAvg(), db, "wal").start(
                grid=grid, initial_arrays=logging_app.initial_arrays(), num_rounds=4
            )
        assert seen == [("0,1,2", 0, "0,1,2", 2, 2, 2, "wal")], seen


def kill_and_resume(tmp, name):
    """Runs logging_app for 6 rounds in a process killed while node 102
    trains in round 4, then resumes it to 6 rounds in a new process."""
    db = os.path.join(tmp, name + ".db")
    marker = os.path.join(tmp, name + ".blocked")
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen([sys.executable, APP, db, name, name, "6", "--block", "4", marker], env=env)
    return db, marker, proc, env


def test_resume_after_a_kill_is_bit_exact():
    names = list(logging_app.STRATEGIES)
    with tempfile.TemporaryDirectory() as tmp:
        started = [kill_and_resume(tmp, n) for n in names]
        for name, (db, marker, proc, _) in zip(names, started):
            deadline = time.time() + 120
            while not os.path.exists(marker):
                assert proc.poll() is None, f"{name}: the ServerApp ended ({proc.returncode}) before round 4"
                assert time.time() < deadline, f"{name}: round 4 never started"
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            con = sar.connect(db)
            assert con.execute("SELECT group_concat(round) FROM rounds").fetchone()[0] == "0,1,2,3", name
            assert con.execute("SELECT max(round) FROM replies").fetchone()[0] == 3, name
            con.close()
        # resume every run, one process each (another Flower run: another run id)
        for name, (db, _, _, env) in zip(names, started):
            subprocess.run(
                [sys.executable, APP, db, name, name, "6", "--resume", "--run-id", "78"], env=env, check=True
            )
        for name, (db, _, _, _) in zip(names, started):
            ref_db = os.path.join(tmp, name + ".ref.db")
            ref, _ = logging_app.main(ref_db, name, name, 6)
            back = np.load(os.path.join(tmp, name + ".result.npz"))
            assert list(back) == list(ref.arrays), name
            for k, a in ref.arrays.items():
                x = a.numpy()
                assert back[k].dtype == x.dtype and back[k].tobytes() == x.tobytes(), f"{name}: {k} differs"
            a, b = connect(db), connect(ref_db)
            q = "SELECT round, rec FROM global_models ORDER BY round"
            assert a.execute(q).fetchall() == b.execute(q).fetchall(), name
            q = "SELECT round, phase, pos, node_id, content FROM replies ORDER BY round, phase, pos"
            assert a.execute(q).fetchall() == b.execute(q).fetchall(), name
            q = "SELECT round, result FROM rounds ORDER BY round"
            assert a.execute(q).fetchall() == b.execute(q).fetchall(), name
            q = "SELECT round, state FROM strategy_state"
            assert a.execute(q).fetchall() == b.execute(q).fetchall(), name
            # the resumed process's Result is the whole run's
            resumed, _ = logging_app.main(db, name, name, 6, resume=True, run_id=79)  # all done: read from the database
            same_result(resumed, ref)
            # every Flower run that wrote to it, with the rounds it logged and how it ended
            segments = a.execute(
                "SELECT segment, flower_run_id, first_round, last_round, ended, finished_at IS NOT NULL, error "
                "FROM flower_runs ORDER BY segment"
            ).fetchall()
            assert segments == [
                (1, 77, 0, 3, "interrupted", 0, None),
                (2, 78, 4, 6, "finished", 1, None),
            ], (name, segments)  # the third process trained nothing and wrote nothing


def same_values(x, y):
    """Two dicts or lists of arrays and NumPy scalars with the same keys, and
    values of the same type (ndarray or which scalar), dtype, shape and bits."""
    kx, ky = (list(x), list(y)) if isinstance(x, dict) else (range(len(x)), range(len(y)))
    if list(kx) != list(ky):
        return False
    return all(
        type(x[k]) is type(y[k])
        and x[k].dtype == y[k].dtype
        and np.shape(x[k]) == np.shape(y[k])
        and np.asarray(x[k]).tobytes() == np.asarray(y[k]).tobytes()
        for k in kx
    )


def test_resume_in_process_restores_the_strategy_state():
    """3 rounds, then the same run resumed to 6 by a fresh strategy object:
    FedAdam's m_t, v_t and current_arrays, FedAvgM's momentum and a DP
    wrapper's (its current_arrays, the FedAdam it wraps, NumPy's generator
    its noise comes from) equal the uninterrupted run's, and so does the
    Result. The model has 0-d arrays (a BatchNorm counter, a 0-d float32),
    so m_t, v_t and the momentum hold NumPy scalars beside arrays: each
    comes back as the type it was."""
    makers = dict(logging_app.STRATEGIES)
    makers["DP(FedAdam)"] = lambda: DifferentialPrivacyServerSideFixedClipping(
        FedAdam(eta=0.05), noise_multiplier=0.5, clipping_norm=3.0, num_sampled_clients=4
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("FedAdam", "FedAvgM", "DP(FedAdam)"):
            db, ref_db = os.path.join(tmp, name + ".db"), os.path.join(tmp, name + ".ref.db")
            logging_app.main(db, name, None, 3, strategy=makers[name]())
            s = makers[name]()
            resumed, _ = logging_app.main(db, name, None, 6, resume=True, strategy=s)
            r = makers[name]()
            ref, _ = logging_app.main(ref_db, name, None, 6, strategy=r)
            if name.startswith("DP"):
                same_arrays(s.current_arrays, r.current_arrays)
                s, r = s.strategy, r.strategy
            same_result(resumed, ref)
            for attr in ("m_t", "v_t", "current_arrays", "momentum_vector"):
                x, y = getattr(s, attr, None), getattr(r, attr, None)
                if isinstance(x, (dict, list)):
                    assert same_values(x, y), (name, attr)
                elif isinstance(x, ArrayRecord):
                    same_arrays(x, y)
                else:
                    assert x is None and y is None, (name, attr)


class HistoryFedAvg(FedAvg):
    """A user subclass whose state (a deque of metric records) the log cannot store."""

    def __init__(self):
        super().__init__()
        self.seen = None

    def aggregate_train(self, server_round, replies):
        out = super().aggregate_train(server_round, replies)
        self.seen = set([server_round])  # a set: not storable
        return out


class CountingFedAvg(FedAvg):
    """A user subclass whose state is storable: a counter and arrays."""

    def __init__(self):
        super().__init__()
        self.rounds_seen = 0
        self.last = None

    def aggregate_train(self, server_round, replies):
        arrays, metrics = super().aggregate_train(server_round, replies)
        self.rounds_seen += 1
        self.last = {k: a.numpy() * 2 for k, a in arrays.items()}
        return arrays, metrics


class ScalarsFedAvg(FedAvg):
    """A user subclass whose state mixes NumPy scalars of every kind with
    0-d and other arrays, in dicts, in lists and alone."""

    def __init__(self):
        super().__init__()
        self.by_key = None
        self.history = None
        self.alone = None
        self.zero_d = None

    def aggregate_train(self, server_round, replies):
        arrays, metrics = super().aggregate_train(server_round, replies)
        x = {k: a.numpy() for k, a in arrays.items()}
        self.by_key = {k: 0.9 * v + server_round for k, v in x.items()}  # 0-d arrays become np.float64
        self.history = [
            np.float32(server_round / 3),
            np.int16(-server_round),
            np.complex64(1 + 2j),
            np.bool_(server_round % 2),
            np.zeros((2, 0)),
            np.array(np.float16(0.1)),
        ]
        self.alone = np.uint64(2**64 - 1 - server_round)
        self.zero_d = np.array(-0.0 * server_round, np.float64)
        return arrays, metrics


def test_state_keeps_numpy_scalars_and_0d_arrays():
    """Every attribute comes back with its type (NumPy scalar or ndarray,
    0-d ones too), dtype and bits: resumed after 2 rounds to 4, the state
    equals an uninterrupted run's."""
    from sqlite_arrayrecord.flower._state import restore_state, state_bytes

    with tempfile.TemporaryDirectory() as tmp:
        a, b = ScalarsFedAvg(), ScalarsFedAvg()
        logging_app.main(os.path.join(tmp, "a.db"), "s", None, 2, strategy=a)
        res, _ = logging_app.main(os.path.join(tmp, "a.db"), "s", None, 4, resume=True, strategy=b)
        ref = ScalarsFedAvg()
        want, _ = logging_app.main(os.path.join(tmp, "ref.db"), "s", None, 4, strategy=ref)
        same_result(res, want)
        assert isinstance(b.by_key["bn.num_batches_tracked"], np.float64), type(b.by_key["bn.num_batches_tracked"])
        assert isinstance(b.by_key["fc.weight"], np.ndarray)
        for attr in ("by_key", "history"):
            assert same_values(getattr(b, attr), getattr(ref, attr)), attr
        fresh = ScalarsFedAvg()
        blob, unknown = state_bytes(ref)
        assert unknown == [], unknown
        restore_state(fresh, blob)
        for attr in ("by_key", "history"):
            assert same_values(getattr(fresh, attr), getattr(ref, attr)), attr
        for attr in ("alone", "zero_d"):
            x, y = getattr(fresh, attr), getattr(ref, attr)
            assert type(x) is type(y) and x.dtype == y.dtype and np.asarray(x).tobytes() == np.asarray(y).tobytes()


class OddStateFedAvg(FedAvg):
    """A user subclass whose state the log cannot store, in several ways."""

    def __init__(self):
        super().__init__()
        self.m_t = {"fc.weight": np.zeros(2), "bad": {1, 2}}
        self.hist = [np.zeros(1), object()]
        self.mixed = {"a": np.zeros(1), "b": 1.0}
        self.keyed = {3: np.zeros(1)}
        self.objs = np.array([None, 1], dtype=object)


def test_unstorable_state_is_named_down_to_the_value():
    """The message names the value the log cannot store, not its container:
    m_t['bad'], hist[1]; a container when only the mix cannot be stored; an
    object array (it would need pickling)."""
    from sqlite_arrayrecord.flower._state import state_bytes

    _, unknown = state_bytes(OddStateFedAvg())
    assert unknown == [
        "hist[1] (builtins.object)",
        "keyed (builtins.dict with keys that are not strings)",
        "m_t['bad'] (builtins.set)",
        "mixed (builtins.dict holding arrays beside other values)",
        "objs (numpy.ndarray)",
    ], unknown
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "odd.db")
        logging_app.main(db, "odd", None, 1, strategy=OddStateFedAvg())
        try:
            logging_app.main(db, "odd", None, 2, resume=True, strategy=OddStateFedAvg())
            raise AssertionError("resumed a state that was not stored")
        except ResumeError as e:
            assert "includes hist[1] (builtins.object), keyed (builtins.dict with keys" in str(e), str(e)
            assert "m_t['bad'] (builtins.set)" in str(e), str(e)


def test_resume_refused_when_state_cannot_be_restored():
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "r.db")
        logging_app.main(db, "h", None, 2, strategy=HistoryFedAvg())
        try:
            logging_app.main(db, "h", None, 4, resume=True, strategy=HistoryFedAvg())
            raise AssertionError("resumed a strategy whose state was not stored")
        except ResumeError as e:
            msg = str(e)
            assert "test_logging.HistoryFedAvg" in msg and "seen (builtins.set)" in msg, msg
        # another strategy, other settings, a taken name
        for strategy, words in (
            (FedAvgM(), "it ran test_logging.HistoryFedAvg, not flwr.serverapp.strategy.fedavgm.FedAvgM"),
        ):
            try:
                logging_app.main(db, "h", None, 4, resume=True, strategy=strategy)
                raise AssertionError(words)
            except ResumeError as e:
                assert words in str(e), str(e)
        logging_app.main(db, "f", "FedAvg", 2)
        try:
            logging_app.main(db, "f", None, 4, resume=True, strategy=FedAvg(fraction_evaluate=0.25))
            raise AssertionError("resumed with other settings")
        except ResumeError as e:
            assert "settings differ" in str(e) and '"fraction_evaluate": 0.25' in str(e), str(e)
        try:
            logging_app.main(db, "f", "FedAvg", 4)
            raise AssertionError("started a run under a name taken")
        except ResumeError as e:
            assert "run 'f' exists" in str(e) and "resume=True" in str(e), str(e)
        # nothing of the refused attempts was written
        con = connect(db)
        assert con.execute("SELECT group_concat(round) FROM rounds WHERE run = 1").fetchone()[0] == "0,1,2"
        # a user subclass with storable state resumes exactly
        c = CountingFedAvg()
        logging_app.main(db, "c", None, 2, strategy=c)
        c2 = CountingFedAvg()
        res, _ = logging_app.main(db, "c", None, 5, resume=True, strategy=c2)
        c3 = CountingFedAvg()
        ref, _ = logging_app.main(os.path.join(tmp, "ref.db"), "c", None, 5, strategy=c3)
        assert c2.rounds_seen == c3.rounds_seen == 5, (c2.rounds_seen, c3.rounds_seen)
        assert all(c2.last[k].tobytes() == c3.last[k].tobytes() for k in c3.last)
        same_result(res, ref)


def test_errors_name_the_problem():
    for args, kw, words in (
        (("not a strategy", "x.db", "r"), {}, "strategy must be a flwr Strategy, got str"),
        ((FedAvg(), "x.db", ""), {}, "run_name must be a non-empty string (or None for a new name)"),
        ((FedAvg(), "x.db"), {"resume": True}, "resume=True needs the run_name of the run to continue"),
        ((FedAvg(), "x.db", "r"), {"replies_every": -1}, "replies_every must be an integer >= 0, got -1"),
    ):
        try:
            LoggingStrategy(*args, **kw)
            raise AssertionError(words)
        except (TypeError, ValueError) as e:
            assert str(e) == "LoggingStrategy: " + words, str(e)
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "old.db")
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE client_updates(run, round, client, num_examples, rec)")
        con.commit()
        con.close()
        try:
            logging_app.main(db, "o", "FedAvg", 1)
            raise AssertionError("logged into an older schema")
        except ResumeError as e:
            assert "older schema (client_updates is a table)" in str(e), str(e)


def test_the_loggers_encoder_writes_flowers_serde_bytes():
    """The logger encodes ArrayRecords itself (one copy of the data instead
    of serde's two): byte-identical to recorddict_to_proto /
    array_record_to_proto for every dtype, 0-d, empty and large arrays,
    empty keys, empty records, metric and config records around them."""
    from sqlite_arrayrecord.flower._wire import ar_bytes as _ar_bytes
    from sqlite_arrayrecord.flower._wire import rd_bytes as _rd_bytes

    rng = np.random.default_rng(0)
    arrays = [
        np.asarray(rng.standard_normal(shape)).astype(dt)
        for shape in [(), (0,), (3, 0), (2, 3), (200, 70), (1,), (2, 1, 3, 1)]
        for dt in (np.float32, np.float64, np.float16, np.int64, np.uint8, np.bool_)
    ]
    records = [
        ArrayRecord({"": Array(arrays[0])}),
        ArrayRecord(),
        ArrayRecord({f"k{i}é": Array(a) for i, a in enumerate(arrays)}),
        ArrayRecord({"x": Array(dtype="", shape=(), stype="", data=b"")}),
        ArrayRecord({"big": Array(rng.standard_normal(300_000).astype(np.float32))}),
    ]
    others = [
        {},
        {"m": MetricRecord({"a": 1, "b": [1.5, 2.0], "c": -3})},
        {"": ConfigRecord({"s": "x", "b": b"\0", "l": ["a", "b"]})},
        {"c": ConfigRecord(), "m": MetricRecord()},
    ]
    n = 0
    for rec in records:
        assert _ar_bytes(rec) == serde.array_record_to_proto(rec).SerializeToString()
        for extra in others:
            for rd in (RecordDict({"arrays": rec, **extra}), RecordDict({**extra, "": rec})):
                assert _rd_bytes(rd) == rd_bytes(rd), list(rd)
                n += 1
    assert _rd_bytes(RecordDict()) == b"" and n == 40


class FlakyGrid(StubGrid):
    """A StubGrid whose link fails in round `fail_round`."""

    def __init__(self, fail_round, **kw):
        super().__init__(**kw)
        self.fail_round = fail_round
        self.round = 0

    def push_messages(self, messages):
        messages = list(messages)
        if messages and messages[0].metadata.message_type == "train":
            self.round += 1
            if self.round == self.fail_round:
                raise ConnectionError("the SuperLink went away")
        return super().push_messages(messages)


def test_a_failed_flower_run_is_recorded_and_resumed():
    """start() raising in round 3 rolls round 3 back and records its Flower
    run as 'failed' with the exception; the resumption continues from
    round 2 to the end, bit for bit as an uninterrupted run."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "f.db")
        grid = FlakyGrid(3, run_id=77, nodes={n: logging_app.make_answer() for n in logging_app.NODES})
        context = Context(run_id=77, node_id=1, node_config={}, state=RecordDict(), run_config={})
        random.seed(1234)
        np.random.seed(1234)
        try:
            with server_identity(grid), quiet_flower():
                LoggingStrategy(logging_app.STRATEGIES["FedAdam"](), db, "f", context=context).start(
                    grid=grid,
                    initial_arrays=logging_app.initial_arrays(),
                    num_rounds=5,
                    train_config=ConfigRecord({"lr": 0.1}),
                    evaluate_fn=logging_app.evaluate_fn,
                )
            raise AssertionError("the failing grid did not fail")
        except ConnectionError:
            pass
        con = connect(db)
        assert con.execute("SELECT group_concat(round) FROM rounds").fetchone()[0] == "0,1,2"
        got = con.execute("SELECT segment, first_round, last_round, ended, error FROM flower_runs").fetchall()
        assert got == [(1, 0, 2, "failed", "ConnectionError: the SuperLink went away")], got
        # the failed process's generators ran on; a ServerApp starts afresh (main seeds them)
        resumed, _ = logging_app.main(db, "f", "FedAdam", 5, resume=True, run_id=78)
        ref, _ = logging_app.main(os.path.join(tmp, "ref.db"), "f", "FedAdam", 5)
        same_result(resumed, ref)
        got = con.execute("SELECT segment, flower_run_id, first_round, last_round, ended FROM flower_runs").fetchall()
        assert got == [(1, 77, 0, 2, "failed"), (2, 78, 3, 5, "finished")], got


class LogLines:
    """Collects what Flower's logger says while the block runs."""

    def __enter__(self):
        import logging

        self.lines = []
        self.handler = logging.Handler()
        self.handler.emit = lambda record: self.lines.append(record.getMessage())
        self.logger = logging.getLogger("flwr")
        self.logger.addHandler(self.handler)
        self.level = self.logger.level
        self.logger.setLevel(logging.INFO)
        return self.lines

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)


def test_run_name_is_optional():
    """Without run_name a run gets a new name from the strategy's class and
    Flower's run id (the UTC time without a Context), "-2" when taken,
    said in the log with how to resume it; resume needs the name; resuming a
    finished run says so and trains nothing."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "n.db")
        names = []
        for _ in range(2):
            grid = StubGrid(run_id=77, nodes={n: logging_app.make_answer() for n in logging_app.NODES})
            context = Context(run_id=77, node_id=1, node_config={}, state=RecordDict(), run_config={})
            s = LoggingStrategy(FedAvg(), db, context=context)
            with server_identity(grid), LogLines() as lines:
                s.start(grid=grid, initial_arrays=logging_app.initial_arrays(), num_rounds=1)
            names.append(s.run_name)
            said = [line for line in lines if line.startswith("LoggingStrategy: logging run")]
            assert said == [
                f"LoggingStrategy: logging run {s.run_name!r} into {db} (continue it with "
                f"run_name={s.run_name!r}, resume=True)"
            ], lines
        assert names == ["FedAvg-77", "FedAvg-77-2"], names
        grid = StubGrid(run_id=77, nodes={n: logging_app.make_answer() for n in logging_app.NODES})
        s = LoggingStrategy(FedAvgM(), db)
        with server_identity(grid), quiet_flower():
            s.start(grid=grid, initial_arrays=logging_app.initial_arrays(), num_rounds=1)
        assert re.fullmatch(r"FedAvgM-\d{8}T\d{6}Z", s.run_name), s.run_name
        con = connect(db)
        assert [r for (r,) in con.execute("SELECT name FROM runs ORDER BY run")] == names + [s.run_name]
        # a finished run resumed: nothing trained, said so
        grid = StubGrid(run_id=80, nodes={n: logging_app.make_answer() for n in logging_app.NODES})
        with server_identity(grid), LogLines() as lines:
            LoggingStrategy(FedAvg(), db, "FedAvg-77", resume=True).start(
                grid=grid, initial_arrays=logging_app.initial_arrays(), num_rounds=1
            )
        assert (
            "LoggingStrategy: run 'FedAvg-77' is complete (1 of 1 rounds): nothing to train; "
            "returning its logged Result" in lines
        ), lines
        assert not grid.delivered
        assert con.execute("SELECT count(*) FROM rounds WHERE run = 1").fetchone()[0] == 2


def test_a_log_of_version_0_1_0_keeps_working():
    """A database logged by version 0.1.0 (tests/data/logs, before
    flower_runs): opened by today's logger it gets one flower_runs row per
    run (its first Flower run id, its complete rounds, 'finished' or
    'unknown'); its killed run resumes to the end bit for bit as an
    uninterrupted run of today's logger, whose bytes equal the old logger's
    (the finished run's rows); views answer."""
    import shutil

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "old.db")
        shutil.copy(os.path.join(ROOT, "tests", "data", "logs", "logged-0.1.0.db"), db)
        con = connect(db)
        assert con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'flower_runs'").fetchone()[0] == 0
        logging_app.main(db, "cut", "FedAvgM", 4, resume=True, batchnorm=False, run_id=78)
        got = con.execute(
            "SELECT run, segment, flower_run_id, first_round, last_round, ended, finished_at IS NOT NULL "
            "FROM flower_runs ORDER BY run, segment"
        ).fetchall()
        assert got == [
            (1, 1, 77, 0, 3, "finished", 1),
            (2, 1, 77, 0, 2, "interrupted", 0),
            (2, 2, 78, 3, 4, "finished", 1),
        ], got
        for name, strategy, rounds in (("done", "FedAdam", 3), ("cut", "FedAvgM", 4)):
            ref_db = os.path.join(tmp, name + ".ref.db")
            ref, _ = logging_app.main(ref_db, name, strategy, rounds, batchnorm=False)
            same_result(read_result(db, name), ref)
            b = connect(ref_db)
            for q in (
                "SELECT round, g.rec FROM global_models g JOIN runs USING (run) WHERE name = ? ORDER BY round",
                "SELECT round, phase, pos, node_id, content FROM replies JOIN runs USING (run) WHERE name = ? "
                "ORDER BY round, phase, pos",
            ):
                assert con.execute(q, (name,)).fetchall() == b.execute(q, (name,)).fetchall(), (name, q)
            # the state as 0.1.0 wrote it: today's less its (empty) record of NumPy scalars
            q = "SELECT round, s.state FROM strategy_state s JOIN runs USING (run) WHERE name = ?"
            (r1, old), (r2, new) = con.execute(q, (name,)).fetchone(), b.execute(q, (name,)).fetchone()
            old, new = rd_from(old), rd_from(new)
            if name == "done":
                assert list(new) == list(old)[:2] + ["_npscalars"] + list(old)[2:], (list(old), list(new))
            assert r1 == r2 and all(old[k] == new[k] for k in old) and not new["_npscalars"], name
        assert con.execute("SELECT count(*) FROM client_updates").fetchone()[0] == 4 * 7
        assert con.execute("SELECT count(*) FROM round_fedavg").fetchone()[0] == 7


def test_clients_get_their_stable_labels():
    """clients.info keeps the node id and, where Flower gives one, a stable
    label: the registered name of the node (NodeInfo.name) and the
    partition-id a reply carries in a ConfigRecord or MetricRecord."""
    from flwr.proto.node_pb2 import NodeInfo

    class NamedGrid(StubGrid):
        def get_nodes(self):
            return [NodeInfo(node_id=n, name=f"site-{n}") if n != 104 else NodeInfo(node_id=n) for n in self.nodes]

    def answer(node, msg):
        rd = logging_app.make_answer()(node, msg)
        if node in (101, 102):
            rd["node"] = ConfigRecord({"partition-id": 7 if node == 101 else "b"})
        return rd

    def in_metrics(node, msg):  # every node's MetricRecords must have the same keys
        rd = logging_app.make_answer()(node, msg)
        rd["metrics"]["partition-id"] = node - 100
        return rd

    with tempfile.TemporaryDirectory() as tmp:
        got = {}
        for name, grid in (
            ("a", NamedGrid(run_id=77, nodes={n: answer for n in logging_app.NODES})),
            ("b", StubGrid(run_id=77, nodes={n: in_metrics for n in logging_app.NODES})),
        ):
            db = os.path.join(tmp, name + ".db")
            with server_identity(grid), quiet_flower():
                LoggingStrategy(FedAvg(), db, "l").start(
                    grid=grid, initial_arrays=logging_app.initial_arrays(), num_rounds=2
                )
            got[name] = {c: json.loads(i) for c, i in connect(db).execute("SELECT client, info FROM clients")}
        assert got["a"] == {
            "101": {"node_id": 101, "name": "site-101", "partition_id": 7},
            "102": {"node_id": 102, "name": "site-102", "partition_id": "b"},
            "103": {"node_id": 103, "name": "site-103"},
            "104": {"node_id": 104},
        }, got
        assert got["b"] == {str(n): {"node_id": n, "partition_id": n - 100} for n in logging_app.NODES}, got
