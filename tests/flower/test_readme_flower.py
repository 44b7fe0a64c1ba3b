# SPDX-License-Identifier: Apache-2.0
"""The ```python flower blocks of README.md, docs/*.md and
bindings/python/README.md run against flwr 1.42 and do what the text says.

A block may use names it does not define (a ServerApp's grid, say) if a
comment line of the block names each of them: the test provides them from a
small prelude (PRELUDE below: a StubGrid standing for the Grid Flower passes
to a ServerApp's main, the Context it passes (run_config["db"] a database
path), a model's ArrayRecord, the round's instructions built by Flower's own
FedAvg.configure_train,
the round number and a database). A name neither
defined, nor in the prelude, nor named in a comment fails the test.

Each block is matched by one check of CHECKS (by a call it makes), which
looks at what the block did: the BLOB it wrote is Flower's, the record it
read back equals the original, the rows it logged decode to the replies'
contents. A block without a check fails, so does a check without a block.
"""

import ast
import builtins
import io
import json
import os
import re
import tempfile
import tokenize
import traceback

import numpy as np
from arlib import ROOT
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Error, MetricRecord, RecordDict
from flwr.common.constant import SUPERLINK_NODE_ID, ErrorCode
from flwr.common.serde import recorddict_from_proto
from flwr.proto.recorddict_pb2 import RecordDict as RecordDictProto
from flwr.serverapp.strategy import FedAvg
from stub_grid import StubGrid, quiet_flower, server_identity
from test_readme import FLOWER_DOCS, python_blocks

import sqlite_arrayrecord as sar

U32 = 2.0**-24  # float32 unit roundoff


def flower_blocks():
    return [(doc, line, code) for doc, line, kind, code in python_blocks(FLOWER_DOCS) if kind == "flower"]


def free_names(code):
    """Names the code reads but never binds (builtins aside), in order."""
    tree = ast.parse(code)
    bound, loaded = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                loaded.append(node.id)
            else:
                bound.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return list(dict.fromkeys(n for n in loaded if n not in bound and not hasattr(builtins, n)))


def comments(code):
    return " ".join(
        t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type == tokenize.COMMENT
    )


# ---- the prelude: one round of a ServerApp, with a StubGrid for its grid

SERVER_ROUND = 3
KEYS = ("fc.weight", "fc.bias")


def node_answer(node_id, message):
    """A ClientApp's training step: the arrays it got plus a node-dependent
    update, num-examples and a train loss; node 103 fails with an Error."""
    if node_id == 103:
        return Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason="node 103: out of memory")
    rng = np.random.default_rng(node_id)
    got = message.content["arrays"]
    arrays = {k: Array((a.numpy() + rng.standard_normal(a.shape)).astype(a.numpy().dtype)) for k, a in got.items()}
    metrics = MetricRecord({"num-examples": 10 * (node_id - 100) + 3, "train_loss": 1.0 / (node_id - 99)})
    return RecordDict({"arrays": ArrayRecord(arrays), "metrics": metrics})


def make_prelude(tmp):
    """Every name a snippet may take from its surroundings (see PRELUDE)."""
    grid = StubGrid(run_id=7, nodes={101: node_answer, 102: node_answer, 103: node_answer, 104: node_answer})
    rng = np.random.default_rng(0)
    arrays = ArrayRecord({k: Array(rng.standard_normal(s).astype(np.float32)) for k, s in zip(KEYS, ((3, 4), (3,)))})
    with server_identity(grid):
        messages = FedAvg().configure_train(SERVER_ROUND, arrays, ConfigRecord({"lr": 0.1}), grid)
    context = Context(
        run_id=7,
        node_id=SUPERLINK_NODE_ID,
        node_config={},
        state=RecordDict(),
        run_config={"db": os.path.join(tmp, "flower.db")},
    )
    return {
        "grid": grid,
        "context": context,
        "arrays": arrays,
        "messages": messages,
        "server_round": SERVER_ROUND,
        "db": sar.connect(os.path.join(tmp, "runs.db")),
    }


PRELUDE = ("grid", "context", "arrays", "messages", "server_round", "db")


# ---- the checks, one per snippet


def check_arrayrecord_bytes(ns, prelude):
    """The BLOB is Flower's serde output, byte-identical to sar.to_record of
    the same arrays; reading it back gives a record equal to the original;
    the extension reads it as Flower does (keys, object id, count_bytes)."""
    record, blob, again = ns["record"], ns["blob"], ns["again"]
    assert isinstance(record, ArrayRecord) and isinstance(again, ArrayRecord), (type(record), type(again))
    assert again is not record, "the record read back is the original object, not a decoded copy"
    assert isinstance(blob, bytes) and len(blob) > 0
    assert again == record, (again, record)
    assert again.object_id == record.object_id
    arrays = {k: a.numpy() for k, a in record.items()}
    assert blob == sar.to_record(arrays), "Flower's serde and sar.to_record wrote different bytes"
    con = sar.connect()
    keys, object_id, count = con.execute("SELECT ar_keys(?1), ar_object_id(?1), ar_count_bytes(?1)", (blob,)).fetchone()
    assert json.loads(keys) == list(record.keys()), keys
    assert object_id == record.object_id, (object_id, record.object_id)
    assert count == record.count_bytes(), (count, record.count_bytes())
    back = sar.from_record(blob)
    for k, a in arrays.items():
        assert back[k].dtype == a.dtype and np.array_equal(back[k], a), k


def check_logged_replies(ns, prelude):
    """One row per reply with content (the error reply left out), in the
    order received: the round, the replying node, and a content BLOB that
    decodes, with Flower's serde and with sar.from_recorddict, to that
    reply's content. Then README's FedAvg query over the rows agrees with
    Flower's FedAvg.aggregate_train on the same replies."""
    grid, db, server_round = prelude["grid"], prelude["db"], prelude["server_round"]
    replies = grid.delivered
    assert len(replies) == len(prelude["messages"]) == 4, "the snippet sent this round's instructions once"
    ok = [r for r in replies if r.has_content()]
    assert len(ok) == 3 and all(r.has_error() for r in replies if not r.has_content())
    rows = db.execute("SELECT round, node_id, content FROM replies ORDER BY rowid").fetchall()
    got = [(r, n) for r, n, _ in rows]
    assert got == [(server_round, m.metadata.src_node_id) for m in ok], f"(round, node_id) rows {got}"
    sent = {m.metadata.message_id for m in prelude["messages"]}
    for (_, node, blob), reply in zip(rows, ok):
        meta = reply.metadata
        assert meta.dst_node_id == SUPERLINK_NODE_ID and meta.reply_to_message_id in sent, meta
        assert recorddict_from_proto(RecordDictProto.FromString(blob)) == reply.content, node
        ours = sar.from_recorddict(blob)
        assert list(ours) == list(reply.content) == ["arrays", "metrics"], (node, list(ours))
        for k, a in reply.content["arrays"].items():
            assert np.array_equal(ours["arrays"][k], a.numpy()) and ours["arrays"][k].dtype == a.numpy().dtype, k
        assert dict(ours["metrics"]) == dict(reply.content["metrics"]), node

    fedavg_query = readme_fedavg_query()
    (ours,) = db.execute(fedavg_query).fetchone()
    theirs, _ = FedAvg().aggregate_train(server_round, replies)
    compare_fedavg(sar.from_record(ours), theirs, ok, "README's FedAvg query")


def readme_fedavg_query():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"`(SELECT ar_mean\(rd_array_record\(content\)[^`]*FROM replies)`", text)
    assert m, (
        "README.md no longer gives FedAvg over the logged replies as `SELECT ar_mean(rd_array_record(content), ...`"
    )
    return m.group(1)


def compare_fedavg(ours, theirs, replies, what):
    """ours ({key: ndarray}) against Flower's aggregate (an ArrayRecord) of
    the same replies: same keys, dtypes and shapes, and values within
    Flower's own rounding. Flower accumulates value * (w / total) in the
    arrays' dtype, each weight, term and sum rounded to float32, while ar_mean
    rounds once (ours within half a float32 ulp of the float64 mean, as
    docs/reference.md says): for k replies the two differ by at most (k + 2)
    float32 unit roundoffs of sum(|w_i x_i|). Returns the largest difference
    in float32 ulps."""
    weights = np.array([float(r.content["metrics"]["num-examples"]) for r in replies])
    weights /= weights.sum()
    assert list(ours) == list(theirs), (list(ours), list(theirs))
    worst = 0
    for k, a in theirs.items():
        f, o = a.numpy(), ours[k]
        assert f.dtype == o.dtype == np.float32 and f.shape == o.shape, (k, f.dtype, o.dtype, f.shape, o.shape)
        xs = [r.content["arrays"][k].numpy().astype(np.float64) for r in replies]
        exact = sum(w * x for w, x in zip(weights, xs))
        mags = sum(w * np.abs(x) for w, x in zip(weights, xs))
        slack = len(xs) * 2.0**-52 * mags  # the float64 reference's own rounding
        off = np.abs(o.astype(np.float64) - exact)
        assert np.all(off <= 0.5 * np.spacing(np.abs(o)).astype(np.float64) + slack), (
            f"{what}, key {k}: {off.max()} from the float64 mean, more than half a float32 ulp"
        )
        diff = np.abs(f.astype(np.float64) - o.astype(np.float64))
        bound = (len(xs) + 2) * U32 * mags
        assert np.all(diff <= bound), f"{what}, key {k}: differs from Flower's FedAvg by {diff.max()} > {bound.max()}"
        ulps = np.abs(f.view(np.int32).astype(np.int64) - o.view(np.int32).astype(np.int64))
        worst = max(worst, int(ulps.max()))
    return worst


def check_logging_strategy(ns, prelude):
    """The block logged a whole run into context.run_config["db"]: one run
    with Flower's run id, the wrapped strategy's class and the run config;
    rounds 0..num_rounds complete; node 103's error replies logged with
    their reason, the others' contents decoding to what the nodes sent; the
    Result the block got equals the logged one (final global model, train
    and server-side metrics)."""
    db, result = prelude["context"].run_config["db"], ns["result"]
    con = sar.connect(db, detect_types=0)
    try:
        ((run, flower_run, strategy, config, num_rounds),) = con.execute(
            "SELECT run, flower_run_id, strategy, config, num_rounds FROM runs"
        ).fetchall()
        assert flower_run == 7 and strategy.startswith("flwr.serverapp.strategy.") and json.loads(config) == {"db": db}
        rounds = [r for (r,) in con.execute("SELECT round FROM rounds WHERE finished_at IS NOT NULL ORDER BY round")]
        assert rounds == list(range(num_rounds + 1)) and num_rounds >= 1, rounds
        errors = con.execute(
            "SELECT DISTINCT node_id, error_reason FROM replies WHERE error_code IS NOT NULL"
        ).fetchall()
        assert errors == [(103, "node 103: out of memory")], errors
        delivered = {(m.metadata.message_id): m for m in prelude["grid"].delivered}
        n = 0
        for mid, content in con.execute("SELECT message_id, content FROM replies WHERE content IS NOT NULL"):
            assert recorddict_from_proto(RecordDictProto.FromString(content)) == delivered[mid].content, mid
            n += 1
        assert n == sum(m.has_content() for m in delivered.values()) > 0, n
        (last,) = con.execute("SELECT rec FROM global_models WHERE round = ?", (num_rounds,)).fetchone()
        logged = sar.from_record(last)
        assert list(logged) == list(result.arrays)
        for k, a in result.arrays.items():
            assert logged[k].dtype == a.numpy().dtype and logged[k].tobytes() == a.numpy().tobytes(), k
        for rnd, train, server in con.execute("SELECT round, train_metrics, metrics FROM rounds WHERE round > 0"):
            assert json.loads(train) == dict(result.train_metrics_clientapp[rnd]), rnd
            if result.evaluate_metrics_serverapp:
                assert json.loads(server) == dict(result.evaluate_metrics_serverapp[rnd]), rnd
    finally:
        con.close()


CHECKS = {
    "array_record_to_proto": check_arrayrecord_bytes,
    "send_and_receive": check_logged_replies,
    "LoggingStrategy": check_logging_strategy,
}


def calls(code):
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None))
    return names


def test_flower_blocks_declare_what_they_assume():
    blocks = flower_blocks()
    assert any(doc == "README.md" for doc, _, _ in blocks), "no ```python flower block in README.md"
    problems, used = [], set()
    for doc, line, code in blocks:
        where = f"{doc} line {line}"
        for name in free_names(code):
            if name not in PRELUDE:
                problems.append(f"{where}: uses {name!r}, which neither the block nor the test's prelude defines")
            elif not re.search(rf"\b{name}\b", comments(code)):
                problems.append(f"{where}: takes {name!r} from its surroundings without a comment saying so")
        matched = [c for c in CHECKS if c in calls(code)]
        used.update(matched)
        if len(matched) != 1:
            problems.append(f"{where}: matched by checks {matched}: add one to tests/flower/test_readme_flower.py")
    problems += [f"check {c!r} matches no ```python flower block" for c in CHECKS if c not in used]
    assert not problems, "\n".join(problems)


def test_flower_blocks_run():
    # tests/run names the library relative to the root; the blocks run elsewhere
    os.environ["AR_EXTENSION"] = os.path.join(ROOT, os.environ.get("AR_EXTENSION", "build/arrayrecord"))
    failures = []
    for doc, line, code in flower_blocks():
        with tempfile.TemporaryDirectory() as tmp, quiet_flower():
            cwd = os.getcwd()
            os.chdir(tmp)
            prelude = make_prelude(tmp)
            ns = {"__name__": "readme"}
            ns.update({n: prelude[n] for n in free_names(code) if n in PRELUDE})
            try:
                with server_identity(prelude["grid"]):
                    exec(compile("\n" * line + code, doc, "exec"), ns)
                for marker, check in CHECKS.items():
                    if marker in calls(code):
                        check(ns, prelude)
            except Exception:
                failures.append(f"{doc} line {line}:\n{traceback.format_exc()}")
            finally:
                prelude["db"].close()
                os.chdir(cwd)
    assert not failures, "\n".join(failures)
