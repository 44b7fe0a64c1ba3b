# SPDX-License-Identifier: Apache-2.0
"""A real Flower 1.42 federation on this machine: examples/flower_app on 2
SuperNodes (tests/flower/federation.py starts and stops it).

FedAvg for 2 rounds: the ServerApp wraps FedAvg in LoggingStrategy, which
logs the run into a SQLite file (sql/schema.sql), and stores Flower's Result
next to it. The test checks that each logged global model is rd_mean over
that round's logged replies taken in their arrival order (ORDER BY pos), bit
for bit, and the last one Result.arrays; that the logged metrics are
Result's; that every view of sql/views.sql and every recipe of
sql/queries.sql answers on the logged run. It replays the clients here, from
each round's global model, and checks that the logged replies are theirs,
that the next model is the FedAvg of their updates (ar_mean(rec,
num_examples)); that Flower's own float32 FedAvg arithmetic gives the
federation's bytes exactly (the run is deterministic); that the updates the
SuperLink held in its object store mid-run, read with sql/superlink.sql, are
the replayed ones; and that the ServerApp and the ClientApps used this
checkout's package. Round 1 is held in flight (the app's hold-file,
SuperNode 1 frozen): sql/superlink.sql's views show exactly its instructions
and the one reply in, with the contents the ServerApp sent and SuperNode 0
computed; after the run, what the SuperLink keeps (runs, nodes, the series
Context). The SuperLink database's schema is printed and saved to
build/flower/superlink-schema.sql.

The stateful strategies (FedAvgM, FedAdam, FedYogi, FedAdagrad, DP around
FedYogi) on the app's BatchNorm model, the ServerApp killed once in each and
resumed: every logged run bit for bit as the app uninterrupted. A SuperNode
killed in round 2; stop() leaves no process behind.
"""

import json
import os
import re
import signal
import sqlite3
import sys
import time

import numpy as np
from arlib import recipes
from federation import FLWR_BIN, ROOT, Federation

APP = os.path.join(ROOT, "examples", "flower_app")
ROUNDS, NODES = 2, 2
CONFIG = {"num-server-rounds": ROUNDS, "local-epochs": 2, "lr": 0.5, "seed": 2024}
SQL_SUPERLINK = os.path.join(ROOT, "sql", "superlink.sql")
SCHEMA_OUT = os.path.join(ROOT, "build", "flower", "superlink-schema.sql")
with open(SQL_SUPERLINK) as _f:
    VIEWS = _f.read()


def _app():
    if APP not in sys.path:
        sys.path.insert(0, APP)
    from flower_app import task

    return task


def _record(arrays):
    """Flower's serde bytes of an ArrayRecord of these arrays (as the
    ClientApp builds it)."""
    from flwr.app import Array, ArrayRecord
    from flwr.common.serde import array_record_to_proto

    return array_record_to_proto(ArrayRecord({k: Array(v) for k, v in arrays.items()})).SerializeToString()


def _ulps(a, b):
    """Distance in float32 units in the last place, elementwise."""

    def ordered(x):
        i = np.ascontiguousarray(x, np.float32).view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)

    return np.abs(ordered(a) - ordered(b))


def _same_arrays(got, want, what):
    assert list(got) == list(want), f"{what}: keys {list(got)} != {list(want)}"
    for k in want:
        g, w = got[k], want[k]
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what}: {k} is {g.dtype}{g.shape}, want {w.dtype}{w.shape}"
        assert g.tobytes() == w.tobytes(), f"{what}: {k} differs in {int((g != w).sum())} elements"


class Watch:
    """Called while the run goes on: when the SuperLink's available objects
    change, copies its database into memory and keeps every complete message
    that sql/superlink.sql's ar_message_contents shows (message id -> (table,
    type, content))."""

    def __init__(self, fed, sar):
        self.fed = fed
        self.messages = {}
        self.polls = self.copies = 0
        self.src = None
        self.last = None
        self.mem = sqlite3.connect(":memory:")
        sar.load(self.mem)
        self.mem.executescript(VIEWS)  # TEMP views and the attached stand-ins: a backup replaces main only

    def __call__(self):
        self.polls += 1
        try:
            if self.src is None:
                if not os.path.exists(self.fed.state_db):
                    return
                self.src = sqlite3.connect(f"file:{self.fed.state_db}?mode=ro", uri=True, timeout=1)
            now = self.src.execute("SELECT group_concat(object_id) FROM objects WHERE is_available").fetchone()[0]
            if now is None or now == self.last:
                return
            self.last = now
            self.copies += 1
            self.src.backup(self.mem)
            rows = self.mem.execute(
                "SELECT c.message_id, coalesce(i.message_type, r.message_type), CASE WHEN i.message_id IS NOT NULL THEN 'message_ins' ELSE 'message_res' END, c.content"
                " FROM ar_message_contents c LEFT JOIN message_ins i USING (message_id) LEFT JOIN message_res r USING (message_id)"
                # objects can be stored before their message row: a later copy will have both
                " WHERE i.message_id IS NOT NULL OR r.message_id IS NOT NULL"
            ).fetchall()
        except sqlite3.Error:
            return  # the SuperLink was mid-write: the next poll will do
        for message_id, mtype, table, content in rows:
            self.messages.setdefault(message_id, (table, mtype, content))

    def close(self):
        if self.src is not None:
            self.src.close()
        self.mem.close()


class Hold:
    """Holds round 1's train messages in flight (examples/flower_app's
    hold-file): when the ServerApp is about to push them, freezes SuperNode 1
    (SIGSTOP) so its instruction stays in the SuperLink; once the ServerApp
    pushed them and waits to pull, and SuperNode 0's reply is complete in the
    object store, copies state.db (SQLite's backup API), then lets both go
    on. Called while the run goes on, as Watch is."""

    def __init__(self, fed, sar):
        self.fed, self.sar = fed, sar
        self.path = os.path.join(fed.workdir, "hold")
        self.snapshot = sar.connect()  # the copy of state.db, in memory
        self.copied = False
        self.frozen = None
        self.done = False
        self.seconds = None

    def _at(self):
        try:
            with open(self.path + ".at") as f:
                return f.read()
        except OSError:
            return ""

    def __call__(self):
        if self.done:
            return
        at = self._at()
        if at == "push" and self.frozen is None:
            self.t0 = time.monotonic()
            self.frozen = self.fed.procs["supernode1"].pid
            os.kill(self.frozen, signal.SIGSTOP)
            open(self.path + ".push", "w").close()
        elif at == "pull":
            # sql/superlink.sql on the live file, opened read-only
            con = sqlite3.connect(f"file:{self.fed.state_db}?mode=ro", uri=True, timeout=1)
            try:
                self.sar.load(con)
                con.executescript(VIEWS)
                replies = con.execute(
                    "SELECT count(*) FROM ar_messages WHERE direction = 'reply' AND content IS NOT NULL"
                )
                if not replies.fetchone()[0]:
                    return
            except sqlite3.Error:
                return  # the SuperLink was mid-write: the next poll will do
            finally:
                con.close()
            src = sqlite3.connect(f"file:{self.fed.state_db}?mode=ro", uri=True, timeout=5)
            try:
                src.backup(self.snapshot)
            finally:
                src.close()
            self.copied = True
            self.release()

    def release(self):
        if self.frozen is not None and not self.done:
            os.kill(self.frozen, signal.SIGCONT)
            self.seconds = time.monotonic() - self.t0
        self.done = True
        for stage in ("push", "pull"):
            open(f"{self.path}.{stage}", "w").close()


def _flower_id(i):
    """A stored (signed) id as sql/superlink.sql shows Flower's id."""
    return str(i + (1 << 64)) if i < 0 else i


def _views(sar, path):
    con = sar.connect(path)
    con.executescript(VIEWS)
    return con


def _check_held_round(sar, held, task, rounds, replayed):
    """The SuperLink held round 1 in flight: SuperNode 0 pulled its train
    instruction and replied, the ServerApp had not pulled the reply yet, and
    SuperNode 1 (frozen) had not pulled its instruction. ar_messages shows
    exactly that, with the content the ServerApp sent and the one SuperNode 0
    computed, byte for byte as Flower serializes them."""
    from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord, RecordDict
    from flwr.common.serde import recorddict_to_proto

    con = held.snapshot
    con.executescript(VIEWS)
    cur = con.execute(
        "SELECT direction, message_id, run_id, run_id_int64, group_id, round, message_type, src_node_id, dst_node_id,"
        " reply_to_message_id, created_at, delivered_at, error_code, error_reason, content"
        " FROM ar_messages ORDER BY direction, delivered_at IS NULL"
    )
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r)) for r in cur.fetchall()]
    raw = dict(con.execute("SELECT 'ins', count(*) FROM message_ins UNION ALL SELECT 'res', count(*) FROM message_res"))
    assert raw == {"ins": 2, "res": 1} and len(rows) == 3, (raw, rows)
    ins0, ins1, res0 = rows  # the instructions delivered first
    run_ids = {m["run_id_int64"] for m in (ins0, ins1, res0)}
    assert len(run_ids) == 1 and all(m["run_id"] == _flower_id(m["run_id_int64"]) for m in (ins0, ins1, res0))
    for m in (ins0, ins1, res0):
        assert (m["group_id"], m["round"], m["message_type"], m["error_code"], m["error_reason"]) == (
            "",  # Flower 1.42's strategies set no group_id
            None,
            "train",
            None,
            None,
        ), m
    superlink = 1  # Flower's SUPERLINK_NODE_ID
    nodes = {n for (n,) in con.execute("SELECT node_id FROM ar_nodes")}
    assert ins0["direction"] == ins1["direction"] == "instruction" and res0["direction"] == "reply"
    assert (
        ins0["src_node_id"] == ins1["src_node_id"] == superlink and {ins0["dst_node_id"], ins1["dst_node_id"]} == nodes
    )
    # SuperNode 0 pulled its instruction (its Message object is gone; the
    # content it shares with SuperNode 1's stays) and replied to it
    assert ins0["delivered_at"] is not None and ins0["content"] is None, ins0
    assert (res0["src_node_id"], res0["dst_node_id"], res0["reply_to_message_id"]) == (
        ins0["dst_node_id"],
        superlink,
        ins0["message_id"],
    ), (res0, ins0)
    assert res0["delivered_at"] is None and res0["created_at"] >= ins0["created_at"]
    # SuperNode 1 did not pull its instruction: all of it is there
    assert ins1["delivered_at"] is None and ins1["reply_to_message_id"] is None
    sent = RecordDict(
        {
            "arrays": ArrayRecord({k: Array(v) for k, v in task.init_model(CONFIG["seed"]).items()}),
            "config": ConfigRecord({"lr": CONFIG["lr"], "server-round": 1}),
        }
    )
    assert ins1["content"] == recorddict_to_proto(sent).SerializeToString()
    assert con.execute("SELECT rd_array_record(?, 'arrays')", (ins1["content"],)).fetchone()[0] == rounds[0]
    # SuperNode 0's reply is what partition 0 computes from the initial model
    pid, _, n, arrays, loss = replayed[0]
    assert pid == 0
    computed = RecordDict(
        {
            "arrays": ArrayRecord({k: Array(v) for k, v in arrays.items()}),
            "metrics": MetricRecord({"train-loss": loss, "num-examples": n}),
            "node": ConfigRecord({"partition-id": pid}),
        }
    )
    assert res0["content"] == recorddict_to_proto(computed).SerializeToString()
    # ar_message_contents holds the same two, under the same run
    assert sorted(con.execute("SELECT message_id, run_id, content FROM ar_message_contents")) == sorted(
        [(m["message_id"], m["run_id"], m["content"]) for m in (ins1, res0)]
    )
    # the run was running, and its two SuperNodes online
    assert con.execute("SELECT run_id, status FROM ar_runs").fetchall() == [(ins1["run_id"], "running")]
    assert {s for (s,) in con.execute("SELECT status FROM ar_nodes")} == {"online"}

    # An error reply: the SuperLink keeps the Error in message_res.error.
    # One stored as Flower stores it reads back as its code and reason
    # (a reason past 127 bytes takes a 2-byte length, past 16383 a 3-byte one).
    from flwr.app import Error
    from flwr.common.serde import error_to_proto

    for code, reason in [(3, "ClientApp raised"), (2, "Traceback (most recent call last) ☹ " * 20), (-1, "é" * 9000)]:
        con.execute(
            "INSERT INTO message_res SELECT 'e' || message_id, group_id, run_id, dst_node_id, src_node_id, message_id,"
            " created_at, '', ttl, message_type, x'', ? FROM message_ins WHERE delivered_at = ''",
            (error_to_proto(Error(code=code, reason=reason)).SerializeToString(),),
        )
        got = con.execute(
            "SELECT src_node_id, error_code, error_reason, content FROM ar_messages WHERE message_id = ?",
            ("e" + ins1["message_id"],),
        ).fetchall()
        assert got == [(ins1["dst_node_id"], code, reason, None)], got
        con.execute("DELETE FROM message_res WHERE message_id LIKE 'e%'")
    con.close()


def _superlink_after_run(fed, sar, run_id):
    """What a finished run leaves in the SuperLink (read with
    sql/superlink.sql): no message and no object; the run (finished:
    completed), its task, the SuperNodes, the FAB and the run series with its
    Context, whose state is empty (the ServerApp clears it before pushing the
    Context). Returns the count of rows of each table left."""
    con = _views(sar, fed.snapshot(os.path.join(fed.workdir, "after.db")))
    tables = [t for (t,) in con.execute("SELECT name FROM main.sqlite_master WHERE type = 'table' ORDER BY name")]
    left = {t: n for t in tables if (n := con.execute(f'SELECT count(*) FROM main."{t}"').fetchone()[0])}
    for t in ("objects", "object_children", "run_objects", "message_ins", "message_res"):
        assert t not in left, left
    for t in ("run", "task", "node", "fab", "series_runs", "series_context"):
        assert t in left, left
    assert "context" not in tables  # Flower 1.42's schema
    assert con.execute("SELECT count(*) FROM ar_messages").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM ar_message_contents").fetchone()[0] == 0
    runs = con.execute("SELECT run_id, status, fab_id, series_id, finished_at IS NOT NULL FROM ar_runs").fetchall()
    assert len(runs) == 1 and runs[0][:2] == (run_id if run_id < 1 << 63 else str(run_id), "finished:completed"), runs
    state = con.execute("SELECT run_id, series_id, state FROM ar_run_state").fetchall()
    assert state == [(runs[0][0], runs[0][3], b"")], state
    assert con.execute("SELECT count(*), min(status) FROM ar_nodes").fetchone() == (NODES, "online")
    # node ids as the SuperLink logs them (unsigned)
    with open(fed.logs["superlink"], errors="replace") as f:
        logged = {int(m) for m in re.findall(r"Activated node_id=(\d+)", f.read())}
    shown = {(n, n64) for n, n64 in con.execute("SELECT node_id, node_id_int64 FROM ar_nodes")}
    assert {int(n) for n, _ in shown} == logged and all(n == _flower_id(n64) for n, n64 in shown), (shown, logged)
    con.close()
    return left


def _keep(db):
    """A copy of the logged database that outlives the federation's folder."""
    import tempfile

    src = sqlite3.connect(db)
    fd, path = tempfile.mkstemp(prefix="federation-log.", suffix=".db")
    os.close(fd)
    out = sqlite3.connect(path)
    try:
        src.backup(out)
    finally:
        out.close()
        src.close()
    return path


def _check_logged_run(sar, db, name, run, flower_result, replayed):
    """What LoggingStrategy logged of the federation's run: each round's
    global model is rd_mean over the round's train replies in arrival order
    (Flower's FedAvg arithmetic, bit for bit), the last one Result.arrays;
    the replies are the replayed clients' updates; the logged metrics are
    Result's; read_result gives Result back; every view and recipe answers."""
    from sqlite_arrayrecord.flower import read_result

    result_arrays, result_train, result_eval = flower_result
    con = sar.connect(db)
    try:
        for r in range(1, ROUNDS + 1):
            got = con.execute(
                "SELECT rd_array_record(rd_mean(content)) FROM (SELECT content FROM replies"
                " WHERE run = ? AND round = ? AND phase = 'train' AND content IS NOT NULL ORDER BY pos)",
                (run, r),
            ).fetchone()[0]
            (logged,) = con.execute("SELECT rec FROM global_models WHERE run = ? AND round = ?", (run, r)).fetchone()
            assert got == logged, f"round {r}: rd_mean over the logged replies (ORDER BY pos) is not the logged model"
            # the replies are the clients' updates, each once
            recs = [
                rec
                for (rec,) in con.execute(
                    "SELECT rec FROM client_updates WHERE run = ? AND round = ? ORDER BY pos", (run, r)
                )
            ]
            assert len(recs) == NODES and all(rec in replayed for rec in recs), r
            row = con.execute(
                "SELECT replies, errors, aggregated, finished_at IS NOT NULL FROM rounds WHERE run = ? AND round = ?",
                (run, r),
            ).fetchone()
            assert row == (2 * NODES, 0, 1, 1), (r, row)  # train and evaluate replies
        assert con.execute("SELECT max(round) FROM global_models WHERE run = ?", (run,)).fetchone()[0] == ROUNDS
        (last,) = con.execute("SELECT rec FROM global_models WHERE run = ? AND round = ?", (run, ROUNDS)).fetchone()
        assert last == result_arrays, "Result.arrays is not the last logged global model"
        # the logged metrics are Result's, value for value
        logged_train = {
            str(r): json.loads(m)
            for r, m in con.execute(
                "SELECT round, train_metrics FROM rounds WHERE run = ? AND round > 0 ORDER BY round", (run,)
            )
        }
        logged_eval = {
            str(r): json.loads(m)
            for r, m in con.execute(
                "SELECT round, evaluate_metrics FROM rounds WHERE run = ? AND round > 0 ORDER BY round", (run,)
            )
        }
        assert logged_train == json.loads(result_train), (logged_train, result_train)
        assert logged_eval == json.loads(result_eval), (logged_eval, result_eval)
        # every view answers on the run
        answers = {}
        for view in (
            "client_updates",
            "update_arrays",
            "round_fedavg",
            "client_update_stats",
            "layer_update_norms",
            "model_sizes",
        ):
            answers[view] = con.execute(f"SELECT count(*) FROM {view} WHERE run = ?", (run,)).fetchone()[0]
        assert answers == {
            "client_updates": ROUNDS * NODES,
            "update_arrays": ROUNDS * NODES * 4,
            "round_fedavg": ROUNDS,
            "client_update_stats": ROUNDS * NODES,
            "layer_update_norms": ROUNDS * NODES * 4,
            "model_sizes": ROUNDS + 1,
        }, answers
        stats = con.execute(
            "SELECT count(*) FROM client_update_stats WHERE run = ? AND update_norm > 0"
            " AND cosine_to_global_update BETWEEN -1 AND 1 AND cosine_to_global_model BETWEEN -1 AND 1",
            (run,),
        ).fetchone()[0]
        assert stats == ROUNDS * NODES, stats
        # every recipe answers on the run
        written = []
        con.create_function("writefile", 2, lambda path, blob: written.append((path, blob)) or len(blob))
        q = recipes()
        p = {"run": run}
        rows = {}
        rows["layer_norm_jumps"] = con.execute(q["layer_norm_jumps"], p).fetchall()  # may be empty: ratios > 1.5
        rows["clients_against_consensus"] = con.execute(q["clients_against_consensus"], p).fetchall()
        rows["largest_updates"] = con.execute(q["largest_updates"], dict(p, round=ROUNDS)).fetchall()
        assert len(rows["largest_updates"]) == 5, rows
        rows["export_layer"] = con.execute(q["export_layer"], dict(p, round=ROUNDS, key="fc1.weight")).fetchall()
        assert len(written) == 1 and (
            sar.from_npy(written[0][1]).tobytes() == sar.from_record(last)["fc1.weight"].tobytes()
        ), written
        rows["diff_checkpoints"] = con.execute(q["diff_checkpoints"], dict(p, round_a=0, round_b=ROUNDS)).fetchall()
        assert len(rows["diff_checkpoints"]) == 4 and all(r[1] > 0 for r in rows["diff_checkpoints"]), rows
        rows["fedavg_check"] = con.execute(q["fedavg_check"], p).fetchall()
        assert rows["fedavg_check"] == [
            (r, NODES, rows["fedavg_check"][r - 1][2], 1, None) for r in range(1, ROUNDS + 1)
        ], rows
        rows["shrink_to_float16"] = con.execute(q["shrink_to_float16"], p).fetchall()
        before, after = rows["shrink_to_float16"][0]
        assert (
            before
            == sum(
                len(rounds_rec) for (rounds_rec,) in con.execute("SELECT rec FROM global_models WHERE run = ?", (run,))
            )
            and 0 < after < before
        ), rows
        state_a = state_b = None
        for r in range(ROUNDS + 1):
            step = dict(
                p,
                round=r,
                strategy_a="fedavg",
                strategy_b="fedadam",
                options_a="{}",
                options_b="{}",
                state_a=state_a,
                state_b=state_b,
            )
            (_, state_a, state_b, distance) = con.execute(q["replay_strategies"], step).fetchone()
            if r == 0:
                assert distance == 0
        assert distance is not None and distance > 0, distance  # FedAdam's steps are not FedAvg's
        assert set(rows) | {"replay_strategies"} == set(q), sorted(q)
    finally:
        con.close()
    # read_result gives back what start() returned
    back = read_result(db, name)
    assert _record({k: back.arrays[k].numpy() for k in back.arrays}) == result_arrays
    assert {str(r): dict(m) for r, m in back.train_metrics_clientapp.items()} == json.loads(result_train)
    print(
        f"LoggingStrategy's log: rd_mean over the replies (ORDER BY pos) = each logged model, bit for bit; "
        f"round {ROUNDS} = Result.arrays; views {answers}; every recipe answered"
    )


def _replay(task, start, server_round):
    """The clients' train replies from the global model `start`, as the
    ClientApp makes them: a list of (partition, record bytes, num-examples,
    arrays, loss)."""
    out = []
    seed = CONFIG["seed"]
    for pid in range(NODES):
        x, y = task.load_partition(seed, pid, NODES, "train")
        arrays, loss = task.train(
            start, x, y, epochs=CONFIG["local-epochs"], lr=CONFIG["lr"], shuffle_seed=(seed, pid, server_round)
        )
        out.append((pid, _record(arrays), len(y), arrays, loss))
    return out


def test_fedavg_two_rounds():
    import sqlite_arrayrecord as sar

    task = _app()
    t0 = time.monotonic()
    with Federation(APP, supernodes=NODES) as fed:
        db = os.path.join(fed.workdir, "run.db")
        watch = Watch(fed, sar)
        held = Hold(fed, sar)
        try:
            run = fed.run(
                dict(CONFIG, db=db, **{"hold-file": held.path}),
                timeout=150,
                poll=lambda: (watch(), held()),
                poll_interval=0.2,
            )
        finally:
            watch.close()
            held.release()
        assert run.ok, f"{run!r}\n{run.log}{fed.tails()}"
        assert held.copied, f"round 1 was never held in flight{fed.tails()}"
        after = _superlink_after_run(fed, sar, run.run_id)
        schema = fed.schema()
        node_logs = "".join(open(fed.logs[f"supernode{i}"], errors="replace").read() for i in range(NODES))
        con = sar.connect(db)
        # Run ids are unsigned 64-bit; SQLite files hold the signed integer of the same bits.
        run_id = run.run_id - (1 << 64) if run.run_id >= 1 << 63 else run.run_id
        assert [(run_id, "completed")] == fed.query(
            "SELECT run.run_id, sub_status FROM run JOIN task ON task_id = primary_task_id"
        )
        name = f"FedAvg-{run.run_id}"  # LoggingStrategy's default run name
        (logged_run, notes) = con.execute(
            "SELECT run, notes FROM runs WHERE name = ? AND flower_run_id = ?", (name, run_id)
        ).fetchone()
        rounds = dict(con.execute("SELECT round, rec FROM global_models WHERE run = ? ORDER BY round", (logged_run,)))
        result = con.execute(
            "SELECT arrays, train_metrics, evaluate_metrics FROM flower_result WHERE run = ?", (logged_run,)
        ).fetchall()
        meta = json.loads(notes)
        con.close()
        timings, tag = dict(fed.timings), fed.tag
        db = _keep(db)
    left = fed.leftovers()
    wall = time.monotonic() - t0
    assert not left, f"processes left running: {left}"

    os.makedirs(os.path.dirname(SCHEMA_OUT), exist_ok=True)
    with open(SCHEMA_OUT, "w") as f:
        f.write(schema)
    print(
        f"federation: {wall:.1f} s in all; SuperLink healthy after {timings['superlink']:.1f} s, {NODES} SuperNodes online after {timings['supernodes']:.1f} s more; flwr run {run.seconds:.1f} s; {watch.polls} polls of state.db ({watch.copies} copies) saw {len(watch.messages)} complete messages (marker {tag})"
    )
    print(f"SuperLink database schema (saved to {os.path.relpath(SCHEMA_OUT, ROOT)}):")
    for line in schema.splitlines():
        print("  " + line)

    # The ServerApp ran this checkout's package and extension; the ClientApps
    # would import it from there too.
    package = os.path.join(ROOT, "bindings", "python", "sqlite_arrayrecord")
    assert meta["sqlite_arrayrecord"] == package, meta
    assert meta["flwr"] == "1.42.0" and meta["ar_version"] == open(os.path.join(ROOT, "VERSION")).read().strip(), meta
    assert os.path.realpath(meta["extension"]).startswith(os.path.join(ROOT, "build")), meta
    seen = [line for line in node_logs.splitlines() if "flower_app client:" in line]
    assert len(seen) == NODES * ROUNDS, "\n".join(seen) or node_logs[-3000:]
    assert all(line.endswith(os.path.join(package, "__init__.py")) for line in seen), "\n".join(seen)

    # Round 0 is the initial model; each later round is FedAvg of the clients
    # replayed here from the round before.
    assert sorted(rounds) == list(range(ROUNDS + 1)), sorted(rounds)
    assert rounds[0] == _record(task.init_model(CONFIG["seed"]))
    con = sar.connect()
    con.execute("CREATE TABLE updates(round INTEGER, partition INTEGER, rec BLOB, num_examples INTEGER)")
    replayed, losses, worst = {}, {}, 0  # record bytes -> arrays; (round, partition) -> (loss, n)
    for r in range(1, ROUNDS + 1):
        updates = _replay(task, sar.from_record(rounds[r - 1]), r)
        if r == 1:
            replayed_round1 = updates
        con.executemany("INSERT INTO updates VALUES (?, ?, ?, ?)", [(r, pid, rec, n) for pid, rec, n, _, _ in updates])
        for pid, rec, n, arrays, loss in updates:
            replayed[rec] = arrays
            losses[(r, pid)] = (loss, n)
        ours = sar.from_record(
            con.execute("SELECT ar_mean(rec, num_examples) FROM updates WHERE round = ?", (r,)).fetchone()[0]
        )
        got = sar.from_record(rounds[r])
        # Flower's FedAvg: value * (n / total), summed in the arrays' float32.
        total = sum(n for _, _, n, _, _ in updates)
        flower = {}
        for _, _, n, arrays, _ in updates:
            for k, v in arrays.items():
                flower[k] = flower[k] + v * (n / total) if k in flower else v * (n / total)
        _same_arrays(got, flower, f"round {r}: the federation's global model vs Flower's FedAvg replayed")
        assert list(ours) == list(got)
        for k in got:
            u = _ulps(ours[k], got[k])
            worst = max(worst, int(u.max()))
            # ar_mean rounds once from double sums; Flower rounds each product
            # and the sum in float32: they may differ by a few float32 ulps of
            # the largest term.
            scale = np.maximum.reduce([np.abs(a[k] * np.float32(n / total)) for _, _, n, a, _ in updates])
            assert np.all(np.abs(ours[k].astype(np.float64) - got[k]) <= 2 * np.spacing(scale.astype(np.float32))), (
                r,
                k,
                u.max(),
            )
    print(f"ar_mean vs the federation's FedAvg: at most {worst} float32 ulps apart")
    _check_held_round(sar, held, task, rounds, replayed_round1)
    print(
        f"held round 1 in flight for {held.seconds:.1f} s (SuperNode 1 frozen); after the run the SuperLink keeps {after}"
    )
    assert result and result[0][0] == rounds[ROUNDS]
    _check_logged_run(sar, db, name, logged_run, result[0], replayed)
    train_metrics = json.loads(result[0][1])
    for r in range(1, ROUNDS + 1):
        want = sum(loss * n for (rr, _), (loss, n) in losses.items() if rr == r) / sum(
            n for (rr, _), (_, n) in losses.items() if rr == r
        )
        assert abs(train_metrics[str(r)]["train-loss"] - want) <= 1e-12 * abs(want), (r, train_metrics, want)
    assert set(json.loads(result[0][2])) == {str(r) for r in range(1, ROUNDS + 1)}

    # What the SuperLink held mid-run: Message objects whose content
    # (ar_message_contents of sql/superlink.sql) is what the replay sends.
    # Each stays there for a second or more (until the ServerApp's next
    # poll): polling every 0.2 s sees most of them.
    train_replies = [c for table, t, c in watch.messages.values() if table == "message_res" and t == "train"]
    assert train_replies, f"no complete train reply seen in {watch.polls} polls of state.db: {watch.messages.keys()}"
    same_bytes = 0
    for content in train_replies:
        rec = con.execute("SELECT rd_array_record(?, 'arrays')", (content,)).fetchone()[0]
        got = sar.from_record(rec)
        assert any(
            list(got) == list(arrays) and all(got[k].tobytes() == arrays[k].tobytes() for k in arrays)
            for arrays in replayed.values()
        ), "a train reply in the SuperLink is none of the replayed updates"
        same_bytes += rec in replayed
    con.close()
    os.remove(db)
    kinds = sorted({(table, t) for table, t, _ in watch.messages.values()})
    print(
        f"messages seen in the SuperLink's object store: {kinds}; {len(train_replies)} train replies, each one of the replayed updates ({same_bytes} byte for byte)"
    )


class _Halt(Exception):
    pass


def test_stop_leaves_nothing():
    """A run that ends halfway leaves no process and no folder behind. One
    SuperNode of the two FedAvg waits for: the ServerApp starts and waits;
    an exception once it runs leaves the `with`, whose stop() must end the
    SuperLink, the SuperNode, their SuperExecs, the ServerApp and flwr run."""
    seen = {}
    fed = Federation(APP, supernodes=1)

    def poll():
        procs = fed.processes()
        if any("flwr-serverapp" in cmd for cmd in procs.values()):
            seen.update(procs)
            raise _Halt()

    try:
        with fed:
            fed.run({"num-server-rounds": 1}, timeout=60, poll=poll, poll_interval=0.1)
    except _Halt:
        pass
    else:
        raise AssertionError("the run ended with one SuperNode of two")
    programs = sorted(_program(cmd) for cmd in seen.values())
    for program in ("flower-superlink", "flower-supernode", "flower-superexec", "flwr-serverapp", "flwr"):
        assert program in programs, programs
    assert not fed.leftovers(), fed.processes()
    assert not any(os.path.exists(f"/proc/{pid}") and _running(pid) for pid in seen), seen
    assert not os.path.exists(fed.workdir)
    print(f"stopped: {', '.join(programs)}")


def _program(cmd):
    """The Flower program a command line runs ("flwr-serverapp"), else the line."""
    for word in cmd.split():
        if os.path.dirname(word) == FLWR_BIN and not os.path.basename(word).startswith("python"):
            return os.path.basename(word)
    return cmd


def _running(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def test_supernode_killed_in_round_2():
    """SuperNode 1 gets SIGKILL as round 2's train messages are pushed.
    FedAvg needs one node (min-*-nodes 1) and a round waits round-timeout
    seconds: round 2 ends with what Flower reported (SuperNode 0's reply,
    and an error reply for the lost node if the SuperLink made one), is
    logged as such, and the run goes on to round 3. Each logged model is
    still rd_mean over its round's replies in arrival order, bit for bit."""
    import sqlite_arrayrecord as sar

    rounds_total, timeout = 3, 20
    t0 = time.monotonic()
    with Federation(APP, supernodes=NODES) as fed:
        db = os.path.join(fed.workdir, "run.db")
        hold = os.path.join(fed.workdir, "hold")
        killed = []

        def poll():
            if not killed and os.path.exists(hold + ".at"):
                victim = fed.procs["supernode1"]
                os.killpg(victim.pid, signal.SIGKILL)
                victim.wait(timeout=10)
                killed.append(time.monotonic())
                for stage in ("push", "pull"):
                    open(f"{hold}.{stage}", "w").close()

        run = fed.run(
            dict(
                CONFIG,
                db=db,
                **{
                    "num-server-rounds": rounds_total,
                    "fraction-evaluate": 0.0,
                    "min-train-nodes": 1,
                    "min-evaluate-nodes": 1,
                    "min-available-nodes": 1,
                    "round-timeout": timeout,
                    "hold-file": hold,
                    "hold-round": 2,
                },
            ),
            timeout=240,
            poll=poll,
            poll_interval=0.1,
        )
        assert killed, f"round 2 never started{fed.tails()}"
        assert run.ok, f"{run!r}\n{run.log}{fed.tails()}"
        with open(fed.logs["supernode0"], errors="replace") as f:
            survivor = int(re.search(r"SuperNode ID: (\d+)", f.read()).group(1))
        con = sar.connect(db)
        try:
            (logged_run,) = con.execute("SELECT run FROM runs WHERE name = ?", (f"FedAvg-{run.run_id}",)).fetchone()
            rows = con.execute(
                "SELECT round, replies, errors, aggregated, finished_at IS NOT NULL, json_extract(timings, '$.train_replies')"
                " FROM rounds WHERE run = ? ORDER BY round",
                (logged_run,),
            ).fetchall()
            replies = con.execute(
                "SELECT round, pos, client, content IS NOT NULL, error_code, error_reason FROM replies"
                " WHERE run = ? AND phase = 'train' ORDER BY round, pos",
                (logged_run,),
            ).fetchall()
            same = [
                con.execute(
                    "SELECT rd_array_record((SELECT rd_mean(content) FROM (SELECT content FROM replies WHERE run = ?1"
                    " AND round = ?2 AND phase = 'train' AND content IS NOT NULL ORDER BY pos)))"
                    " = (SELECT rec FROM global_models WHERE run = ?1 AND round = ?2)",
                    (logged_run, r),
                ).fetchone()[0]
                for r in range(1, rounds_total + 1)
            ]
            (result_arrays,) = con.execute("SELECT arrays FROM flower_result WHERE run = ?", (logged_run,)).fetchone()
            (last,) = con.execute(
                "SELECT rec FROM global_models WHERE run = ? AND round = ?", (logged_run, rounds_total)
            ).fetchone()
        finally:
            con.close()
    wall = time.monotonic() - t0
    assert [r[0] for r in rows] == list(range(rounds_total + 1)) and all(r[3] == 1 and r[4] for r in rows[1:]), rows
    assert rows[1][1:3] == (NODES, 0), rows  # round 1: both nodes
    # round 2: the survivor's reply, plus error replies only for the lost node
    r2 = [r for r in replies if r[0] == 2]
    content2 = [r for r in r2 if r[3]]
    assert len(content2) == 1 and int(content2[0][2]) == survivor, r2
    assert all(r[4] is not None and int(r[2]) != survivor for r in r2 if not r[3]), r2
    assert rows[2][1] == len(r2) and rows[2][2] == len(r2) - 1, (rows, r2)
    if len(r2) == 1:  # no error reply: the round waited for the timeout
        assert rows[2][5] >= timeout - 1, rows
    assert same == [1] * rounds_total, same
    assert last == result_arrays
    print(
        f"SuperNode 1 killed in round 2: rounds (round, replies, errors, aggregated, finished, seconds waiting) {rows};"
        f" round 2's train replies {[(r[1], r[2], r[4], (r[5] or '')[:60]) for r in r2]}; {wall:.1f} s in all"
    )


STATEFUL = ("fedavgm", "fedadam", "fedyogi", "fedadagrad", "dp-fedyogi")


def _state_without_python_random(blob):
    """The strategy state's items, but Python's generator: in a ServerApp on
    a real federation Flower itself draws from it (its heartbeats' and
    retries' jitter), so it differs from run to run whatever the log does."""
    from sqlite_arrayrecord.flower._wire import rd_from_bytes

    rd = rd_from_bytes(blob)
    out = {k: v for k, v in rd.items() if k != "_rng_arrays"}
    out["numpy generator"] = rd["_rng_arrays"]["numpy"].numpy().tobytes()
    return out


def _logged_rows(sar, db, name):
    """What a logged run holds that its resumption must reproduce: every
    round's global model and result, the train replies' arrays, the state
    (but Python's generator)."""
    con = sar.connect(db)
    try:
        (run,) = con.execute("SELECT run FROM runs WHERE name = ?", (name,)).fetchone()
        return {
            "global_models": con.execute(
                "SELECT round, rec FROM global_models WHERE run = ? ORDER BY round", (run,)
            ).fetchall(),
            "results": con.execute("SELECT round, result FROM rounds WHERE run = ? ORDER BY round", (run,)).fetchall(),
            "updates": sorted(
                con.execute("SELECT round, rec FROM client_updates WHERE run = ? ORDER BY round", (run,)).fetchall()
            ),
            "state": [
                (r, _state_without_python_random(b))
                for r, b in con.execute("SELECT round, state FROM strategy_state WHERE run = ?", (run,))
            ],
            "flower_result": con.execute("SELECT arrays FROM flower_result WHERE run = ?", (run,)).fetchall(),
        }
    finally:
        con.close()


def _app_in_process(db, run_config):
    """examples/flower_app's ServerApp main() run here over a StubGrid whose
    two nodes answer with the app's own ClientApp functions (partitions 0
    and 1): the federation's arithmetic without the federation, for a
    reference. run_config: the app's defaults (its pyproject.toml) updated."""
    import tomllib
    from flwr.app import Context, RecordDict
    from stub_grid import StubGrid, quiet_flower, server_identity

    _app()
    from flower_app import client_app, server_app

    with open(os.path.join(APP, "pyproject.toml"), "rb") as f:
        config = dict(tomllib.load(f)["tool"]["flwr"]["app"]["config"], db=db, **run_config)

    def node(pid):
        context = Context(
            run_id=1,
            node_id=1,
            node_config={"partition-id": pid, "num-partitions": NODES},
            state=RecordDict(),
            run_config=config,
        )

        def answer(_node, msg):
            fn = client_app.train if msg.metadata.message_type == "train" else client_app.evaluate
            return fn(msg, context).content

        return answer

    grid = StubGrid(run_id=1, nodes={101 + pid: node(pid) for pid in range(NODES)})
    with server_identity(grid), quiet_flower():
        server_app.main(grid, Context(run_id=1, node_id=1, node_config={}, state=RecordDict(), run_config=config))


def test_stateful_strategies_killed_and_resumed_with_batchnorm():
    """Every stateful strategy of Flower (FedAvgM, FedAdam, FedYogi,
    FedAdagrad, FedYogi inside server-side DP clipping) on the app's model
    with a BatchNorm layer (a 0-d int64 counter, a 0-d float32), one after
    the other in one ServerApp, 2 rounds each: the ServerApp is killed with
    SIGKILL as soon as a strategy has logged round 1, the Flower run stopped
    (`flwr stop`), and `flwr run` started again with resume=true, until the
    run ends. Every logged run ends bit for
    bit as the same app run uninterrupted (here, in process, its ClientApp
    functions answering: 2 replies add up alike in any order): global
    models, results, updates, strategy state, Flower's Result. flower_runs
    holds each Flower run that wrote to a logged run, in order, the killed
    one 'interrupted', without gap or overlap; every client keeps its
    partition as its label. Afterwards sql/superlink.sql's views list every
    Flower run (ar_runs) and the two SuperNodes (ar_nodes) on the
    SuperLink's own database."""
    import sqlite_arrayrecord as sar
    from sqlite_arrayrecord.flower._wire import int64

    rounds = 2
    config = dict(
        CONFIG,
        **{
            "num-server-rounds": rounds,
            "fraction-evaluate": 0.0,
            "strategy": ",".join(STATEFUL),
            "batchnorm": True,
            "run-name": "bn",
            "resume": True,
        },
    )
    t0 = time.monotonic()
    with Federation(APP, supernodes=NODES) as fed:
        db = os.path.join(fed.workdir, "run.db")
        killed, this_run = [], {}

        def poll():
            """SIGKILL to the ServerApp (and its `flwr run`) once a strategy
            not killed yet has logged round 1."""
            if this_run.get("killed") or not os.path.exists(db):
                return
            try:
                ro = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
                try:
                    done = ro.execute(
                        "SELECT name FROM runs JOIN rounds USING (run) WHERE round = 1 AND rounds.finished_at IS NOT NULL"
                    ).fetchall()
                finally:
                    ro.close()
            except sqlite3.Error:
                return
            fresh = [n for (n,) in done if n not in killed]
            apps = [pid for pid, cmd in fed.processes().items() if "flwr-serverapp" in cmd]
            if not fresh or not apps:
                return
            for pid in apps:
                os.kill(pid, signal.SIGKILL)
            killed.extend(fresh)
            this_run["killed"] = True
            current = max((k for k in fed.procs if k.startswith("run")), key=lambda k: int(k[3:]))
            os.killpg(fed.procs[current].pid, signal.SIGKILL)  # flwr run, streaming the killed run's log

        results = []
        while len(results) <= len(STATEFUL):
            this_run.clear()
            res = fed.run(dict(config, db=db), timeout=240, poll=poll, poll_interval=0.1)
            results.append(res)
            if res.ok:
                break
            # the killed run stays 'running' for the SuperLink, and the
            # SuperNodes wait about a minute on it unless it is stopped
            rc, out = fed.flwr("stop", str(res.run_id), fed.connection)
            assert rc == 0, out
        assert results[-1].ok, f"{results[-1]!r}\n{results[-1].log}{fed.tails()}"
        kept = _keep(db)
        con = _views(sar, fed.snapshot(os.path.join(fed.workdir, "after.db")))
        try:
            listed = [int(r) for (r,) in con.execute("SELECT run_id FROM ar_runs")]
            nodes = con.execute("SELECT count(*), min(status) FROM ar_nodes").fetchone()
        finally:
            con.close()
    federation_seconds = time.monotonic() - t0
    try:
        assert sorted(killed) == sorted(f"bn-{s}" for s in STATEFUL), killed
        ids = [r.run_id for r in results]
        assert sorted(listed) == sorted(ids), (listed, ids)
        assert nodes == (NODES, "online"), nodes
        ref_db = kept + ".ref.db"
        _app_in_process(ref_db, config)
        ids64 = [int64(i) for i in ids]
        con = sar.connect(kept)
        try:
            for s in STATEFUL:
                name = f"bn-{s}"
                assert _logged_rows(sar, kept, name) == _logged_rows(sar, ref_db, name), (
                    f"{name}: not the uninterrupted run"
                )
                segments = con.execute(
                    "SELECT f.flower_run_id, f.first_round, f.last_round, f.ended FROM flower_runs f "
                    "JOIN runs USING (run) WHERE name = ? ORDER BY segment",
                    (name,),
                ).fetchall()
                assert [e for *_, e in segments] == ["interrupted"] * (len(segments) - 1) + ["finished"], segments
                assert segments[0][1] == 0 and segments[-1][2] == rounds, (name, segments)
                assert all(a[2] + 1 == b[1] for a, b in zip(segments, segments[1:])), (name, segments)
                seg_ids = [i for i, *_ in segments]  # Flower runs in the order they ran, each once
                assert seg_ids == sorted(seg_ids, key=ids64.index) and len(set(seg_ids)) == len(seg_ids), segments
            labels = con.execute("SELECT count(*), count(DISTINCT json_extract(info, '$.partition_id')) FROM clients")
            assert labels.fetchone() == (NODES, NODES)  # deployment: the node ids stay, and so do the labels
        finally:
            con.close()
    finally:
        for path in (kept, kept + ".ref.db"):
            if os.path.exists(path):
                os.remove(path)
    print(
        f"{len(STATEFUL)} stateful strategies with BatchNorm, each killed after round 1 and resumed: "
        f"{len(results)} flwr runs ({', '.join(f'{r.seconds:.0f}' for r in results)} s), every logged run bit for "
        f"bit as the app uninterrupted; ar_runs lists the {len(ids)} Flower runs, ar_nodes the {NODES} SuperNodes; "
        f"{federation_seconds:.1f} s in all"
    )
