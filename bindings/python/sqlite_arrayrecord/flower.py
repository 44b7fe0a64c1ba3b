# SPDX-License-Identifier: Apache-2.0
"""LoggingStrategy: a Flower strategy wrapper that logs a whole run into an
experiment-tracking database (sql/schema.sql) and resumes it exactly.

    strategy = LoggingStrategy(FedAdam(), "/abs/path/runs.db", run_name="cifar", context=context)
    result = strategy.start(grid=grid, initial_arrays=arrays, num_rounds=10)

It wraps any flwr.serverapp.strategy.Strategy the way Flower's DP wrappers
do: every Strategy method goes to the wrapped strategy (round numbers
shifted on a resumed run), and the wrapper records what passes through —
instructions, replies (serialized before the wrapped strategy sees them:
a DP wrapper clips them in place), aggregates, metrics, timings — one
transaction per round, committed when the round ends. See
docs/flower-logging.md. This is the package's only module that imports
flwr (sqlite_arrayrecord itself never imports it).
"""

import json
import os
import random
import time
from datetime import datetime, timezone
from logging import INFO

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord, RecordDict
from flwr.common import serde
from flwr.common.logger import log
from flwr.proto.recorddict_pb2 import ArrayRecord as _ProtoArrayRecord
from flwr.proto.recorddict_pb2 import RecordDict as _ProtoRecordDict
from flwr.serverapp.strategy import Result, Strategy

from ._extension import connect
from ._protobuf import varint
from .record import _build_pieces

__all__ = ["LoggingStrategy", "ResumeError", "read_result"]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_SQL_DIRS = (os.path.join(_PKG_DIR, "sql"), os.path.join(_PKG_DIR, "..", "..", "..", "sql"))


class ResumeError(ValueError):
    """A run that cannot be started or resumed as asked: its name taken, a
    resumed run's class, settings or state not what it was, a database of
    the earlier schema."""


def _sql(name):
    for d in _SQL_DIRS:
        p = os.path.join(d, name)
        if os.path.isfile(p):
            with open(p, encoding="utf-8") as f:
                return f.read()
    raise FileNotFoundError(f"LoggingStrategy: {name} not found in {', '.join(map(os.path.abspath, _SQL_DIRS))}")


def _now():
    """UTC now as SQLite's strftime('%Y-%m-%dT%H:%M:%fZ') writes it."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _rd_bytes(rd):
    """Flower's serde bytes of a RecordDict, recorddict_to_proto(rd)
    .SerializeToString(), with each array's data copied once (serde copies
    it into the proto, then into the string): ArrayRecords are encoded
    here, Metric and ConfigRecords by Flower's serde."""
    pieces = []
    for key, record in rd.items():
        if isinstance(record, ArrayRecord):
            body = _len_field(2, _ar_pieces(record))
        else:  # the Item serde writes for it under an empty key: the record's field alone
            body = [serde.recorddict_to_proto(RecordDict({"": record})).items[0].SerializeToString()]
        pieces += _len_field(1, ([] if not key else _len_field(1, [key.encode()])) + body)
    return b"".join(pieces)


def _ar_pieces(record):
    """An ArrayRecord's bytes as pieces, each Array's fields as they are
    (to_record's writer: the data bytes are not copied until joined)."""
    items = [(key, (a.dtype, list(a.shape), a.stype, a.data)) for key, a in record.items()]
    return _build_pieces(items, "LoggingStrategy")


def _len_field(num, pieces):
    return [bytes([num << 3 | 2]) + varint(sum(len(p) for p in pieces))] + pieces


def _ar_bytes(rec):
    """Flower's serde bytes of an ArrayRecord (as _rd_bytes writes them)."""
    return b"".join(_ar_pieces(rec))


def _ar_from_bytes(blob):
    return serde.array_record_from_proto(_ProtoArrayRecord.FromString(bytes(blob)))


def _rd_from_bytes(blob):
    return serde.recorddict_from_proto(_ProtoRecordDict.FromString(bytes(blob)))


def _int64(n):
    """Flower's unsigned 64-bit ids (node and run ids) as the signed 64-bit
    integer of the same bits, as the SuperLink's own database stores them
    (SQLite's INTEGER holds no value of 2**63 and above). None stays None."""
    return n - (1 << 64) if n is not None and n >= 1 << 63 else n


def _array_item_size(key, record_size):
    """Bytes a RecordDict item (key, ArrayRecord of record_size bytes) takes
    in Flower's RecordDict message: Item {1: key, 2: record}, as field 1."""
    k = len(key.encode())
    body = 1 + len(varint(k)) + k + 1 + len(varint(record_size)) + record_size
    return 1 + len(varint(body)) + body


# ---- the wrapped strategy's attributes: settings and state


def _json_exact(v):
    """True when json.loads(json.dumps(v)) gives v back with its types
    (exact types: a NumPy float64 scalar is a float subclass that NumPy 2
    promotes differently, so it is kept as an array)."""
    if v is None or type(v) in (bool, int, float, str):
        return True
    if type(v) is list:
        return all(_json_exact(x) for x in v)
    if type(v) is dict:
        return all(type(k) is str and _json_exact(x) for k, x in v.items())
    return False


def _kind(v):
    """How an attribute's value is stored: a kind name, or None when it
    cannot be (the strategy's state would then be lost on resume)."""
    if isinstance(v, Strategy):
        return "strategy"
    if isinstance(v, ArrayRecord):
        return "arrayrecord"
    if isinstance(v, MetricRecord):
        return "metricrecord"
    if isinstance(v, ConfigRecord):
        return "configrecord"
    if isinstance(v, np.ndarray):
        return "ndarray"
    if isinstance(v, np.generic):
        return "npscalar"
    if type(v) is dict and v and all(type(k) is str and isinstance(x, np.ndarray) for k, x in v.items()):
        return "dict"
    if type(v) is list and v and all(isinstance(x, np.ndarray) for x in v):
        return "list"
    if isinstance(v, bytes):
        return "bytes"
    if _json_exact(v):
        return "json"
    if type(v) is tuple and _json_exact(list(v)):
        return "tuple"
    if callable(v):
        return "callable"
    return None


def _attrs(strategy):
    return sorted(vars(strategy).items())


def _settings(strategy):
    """The strategy's class and public attributes as JSON-able values
    (arrays and records are state, left out; callables by name)."""
    out = {}
    for name, v in _attrs(strategy):
        if name.startswith("_"):
            continue
        kind = _kind(v)
        if kind == "strategy":
            out[name] = {"class": _class_name(v), "settings": _settings(v)}
        elif kind in ("json", "tuple"):
            out[name] = v
        elif kind == "callable":
            out[name] = getattr(v, "__module__", "?") + "." + getattr(v, "__qualname__", type(v).__qualname__)
        elif kind is None:
            out[name] = f"<{type(v).__module__}.{type(v).__qualname__}>"
    return out


def _class_name(obj):
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _snapshot(strategy, prefix, items, kinds, scalars, unknown):
    """Walks the strategy's attributes into the state RecordDict's parts."""
    for name, v in _attrs(strategy):
        path = prefix + name
        kind = _kind(v)
        if kind == "strategy":
            kinds[path] = "strategy"
            _snapshot(v, path + ".", items, kinds, scalars, unknown)
        elif kind == "callable":
            continue  # a setting (compared at resume), not state
        elif kind is None:
            unknown.append(f"{path} ({type(v).__module__}.{type(v).__qualname__})")
        else:
            kinds[path] = kind
            if kind in ("json", "tuple"):
                scalars[path] = json.dumps(v)
            elif kind == "bytes":
                scalars[path] = v
            elif kind in ("ndarray", "npscalar"):
                items["attr:" + path] = ArrayRecord({"": Array(np.asarray(v))})
            elif kind == "dict":
                items["attr:" + path] = ArrayRecord({k: Array(np.asarray(x)) for k, x in v.items()})
            elif kind == "list":
                items["attr:" + path] = ArrayRecord({str(i): Array(np.asarray(x)) for i, x in enumerate(v)})
            else:  # arrayrecord, metricrecord, configrecord
                items["attr:" + path] = v


def _state_bytes(strategy):
    items, kinds, scalars, unknown = {}, {}, {}, []
    _snapshot(strategy, "", items, kinds, scalars, unknown)
    version, py_state, gauss = random.getstate()
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    rd = RecordDict(
        {
            "_kinds": ConfigRecord(kinds),
            "_scalars": ConfigRecord(scalars),
            "_unknown": ConfigRecord({"attributes": unknown, "class": _class_name(strategy)}),
            "_rng": ConfigRecord(
                {
                    "python_version": version,
                    "python_gauss": json.dumps(gauss),
                    "numpy_name": np_name,
                    "numpy_pos": int(np_pos),
                    "numpy_has_gauss": int(np_has_gauss),
                    "numpy_gauss": float(np_gauss),
                }
            ),
            "_rng_arrays": ArrayRecord(
                {"python": Array(np.array(py_state, dtype=np.uint64)), "numpy": Array(np.asarray(np_keys))}
            ),
            **items,
        }
    )
    return _rd_bytes(rd)


def _restore_state(strategy, blob):
    """Sets the attributes stored in the state RecordDict back on the
    strategy (and Python's and NumPy's global generators); ResumeError when
    the state holds attributes that could not be stored."""
    rd = _rd_from_bytes(blob)
    unknown = list(rd["_unknown"]["attributes"])
    if unknown:
        raise ResumeError(
            f"LoggingStrategy: cannot resume: the state of {rd['_unknown']['class']} includes "
            f"{', '.join(unknown)}, which the log cannot store (it keeps arrays, ArrayRecords, Metric/ConfigRecords, "
            "dicts and lists of ndarrays, bytes and JSON values); resuming would not continue the same run"
        )
    kinds, scalars = rd["_kinds"], rd["_scalars"]
    for path, kind in kinds.items():
        if kind == "strategy":
            continue
        *parents, name = path.split(".")
        owner = strategy
        for p in parents:
            owner = getattr(owner, p)
        if kind == "json":
            value = json.loads(scalars[path])
        elif kind == "tuple":
            value = tuple(json.loads(scalars[path]))
        elif kind == "bytes":
            value = scalars[path]
        else:
            rec = rd["attr:" + path]
            if kind == "ndarray":
                value = rec[""].numpy()
            elif kind == "npscalar":
                value = rec[""].numpy()[()]
            elif kind == "dict":
                value = {k: a.numpy() for k, a in rec.items()}
            elif kind == "list":
                value = [a.numpy() for a in rec.values()]
            else:
                value = rec
        setattr(owner, name, value)
    rng, arrays = rd["_rng"], rd["_rng_arrays"]
    random.setstate(
        (rng["python_version"], tuple(int(x) for x in arrays["python"].numpy()), json.loads(rng["python_gauss"]))
    )
    np.random.set_state(
        (
            rng["numpy_name"],
            arrays["numpy"].numpy(),
            rng["numpy_pos"],
            rng["numpy_has_gauss"],
            rng["numpy_gauss"],
        )
    )


# ---- the wrapper


class LoggingStrategy(Strategy):
    """Wraps `strategy` (any flwr.serverapp.strategy.Strategy) and logs its
    run into the SQLite database at `db` (a path, created with
    sql/schema.sql and sql/views.sql when new) under `run_name`.

    context: the ServerApp's Context, to record Flower's run id and run
    config (a Strategy never sees it). resume: continue the run `run_name`
    from its last complete round (a new run when there is none).
    replies_every: log the replies' contents (arrays and metrics) every
    k-th round only; 0 never (instructions, error replies, aggregates,
    metrics and global models are always logged). notes: text for
    runs.notes.
    """

    def __init__(self, strategy, db, run_name, *, context=None, resume=False, replies_every=1, notes=None):
        if not isinstance(strategy, Strategy):
            raise TypeError(f"LoggingStrategy: strategy must be a flwr Strategy, got {type(strategy).__name__}")
        if not isinstance(run_name, str) or not run_name:
            raise ValueError("LoggingStrategy: run_name must be a non-empty string")
        if not isinstance(replies_every, int) or isinstance(replies_every, bool) or replies_every < 0:
            raise ValueError(f"LoggingStrategy: replies_every must be an integer >= 0, got {replies_every!r}")
        self.strategy = strategy
        self.db_path = os.fspath(db)
        self.run_name = run_name
        self.resume = bool(resume)
        self.replies_every = replies_every
        self._context = context
        self._notes = notes
        self._settings = json.dumps(_settings(strategy), sort_keys=True)
        self._con = None
        self._run = None
        self._offset = 0
        self._round = None  # the round being logged: a dict
        self._arrays = None  # the global model start() holds
        self._arrays_size = (None, 0)  # (a model, its serde size), to count bytes sent
        self._commit_seconds = {}

    def __repr__(self):
        return f"LoggingStrategy({self.strategy!r}, {self.db_path!r}, run_name={self.run_name!r})"

    def summary(self):
        log(INFO, "\t├──> LoggingStrategy: run %r in %s", self.run_name, self.db_path)
        self.strategy.summary()

    # -- the database

    def _open(self):
        con = connect(self.db_path, isolation_level=None, detect_types=0)
        try:
            return self._prepare(con)
        except BaseException:
            con.close()
            raise

    def _prepare(self, con):
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = FULL")
        con.execute("PRAGMA foreign_keys = ON")
        kind = con.execute("SELECT type FROM sqlite_master WHERE name = 'client_updates'").fetchone()
        if kind is not None and kind[0] != "view":
            raise ResumeError(
                f"LoggingStrategy: {self.db_path} has an older schema (client_updates is a table); "
                "log into a new database"
            )
        con.executescript(_sql("schema.sql"))
        con.executescript(_sql("views.sql"))
        return con

    def _begin_round(self, rnd):
        if not self._con.in_transaction:
            self._con.execute("BEGIN IMMEDIATE")
        self._con.execute("INSERT INTO rounds(run, round, started_at) VALUES (?, ?, ?)", (self._run, rnd, _now()))
        self._round = {
            "round": rnd,
            "t0": time.perf_counter(),
            "timings": {},
            "log": 0.0,
            "result": {},
            "aggregated": 0,
            "replies": 0,
            "errors": 0,
            "sent": 0,
            "received": 0,
            "kept": rnd > 0 and self.replies_every > 0 and rnd % self.replies_every == 0,
        }

    def _finish_round(self):
        r = self._round
        t = time.perf_counter()
        rnd = r["round"]
        blob = _ar_bytes(self._arrays)
        self._arrays_size = (self._arrays, len(blob))
        self._con.execute("INSERT INTO global_models VALUES (?, ?, ?)", (self._run, rnd, blob))
        del blob
        self._con.execute("DELETE FROM strategy_state WHERE run = ?", (self._run,))
        self._con.execute("INSERT INTO strategy_state VALUES (?, ?, ?)", (self._run, rnd, _state_bytes(self.strategy)))
        result = _rd_bytes(RecordDict(r["result"]))
        r["timings"]["log"] = r["log"] + time.perf_counter() - t
        r["timings"]["round"] = time.perf_counter() - r["t0"]
        self._con.execute(
            "UPDATE rounds SET finished_at = :now, result = :res, metrics = coalesce(rd_metrics(:res, 'server'), '{}'), "
            "train_metrics = rd_metrics(:res, 'train'), evaluate_metrics = rd_metrics(:res, 'evaluate'), "
            "aggregated = :agg, replies = :n, errors = :err, bytes_sent = :sent, bytes_received = :recv, "
            "timings = :timings WHERE run = :run AND round = :round",
            {
                "now": _now(),
                "res": result,
                "agg": r["aggregated"],
                "n": r["replies"],
                "err": r["errors"],
                "sent": r["sent"],
                "recv": r["received"] if r["kept"] or not r["replies"] else None,
                "timings": json.dumps(r["timings"]),
                "run": self._run,
                "round": rnd,
            },
        )
        t = time.perf_counter()
        self._con.execute("COMMIT")
        self._commit_seconds[rnd] = time.perf_counter() - t  # after the row is written: for bench/
        self._round = None

    def _timed(self, name, t0):
        self._round["timings"][name] = self._round["timings"].get(name, 0.0) + time.perf_counter() - t0

    # -- logging instructions and replies

    def _log_instructions(self, phase, messages, arrays):
        r = self._round
        t = time.perf_counter()
        cache = {}
        arrays_size = None
        for pos, msg in enumerate(messages):
            content = msg.content
            key = id(content)
            if key not in cache:
                global_key = next((k for k, v in content.items() if v is arrays), None)
                if global_key is None:  # a copy of the model (QFedAvg sends arrays.copy())
                    global_key = next(
                        (k for k, v in content.items() if isinstance(v, ArrayRecord) and v == arrays), None
                    )
                if global_key is None:
                    blob = _rd_bytes(content)
                    size = len(blob)
                else:
                    blob = _rd_bytes(RecordDict({k: v for k, v in content.items() if k != global_key}))
                    if arrays_size is None:
                        known, n = self._arrays_size
                        arrays_size = n if known is arrays else len(_ar_bytes(arrays))
                    size = len(blob) + _array_item_size(global_key, arrays_size)
                cache[key] = (blob, global_key, size)
            blob, global_key, size = cache[key]
            r["sent"] += size
            self._con.execute(
                "INSERT INTO instructions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self._run,
                    r["round"],
                    phase,
                    pos,
                    _int64(msg.metadata.dst_node_id),
                    msg.metadata.message_id or None,
                    blob,
                    global_key,
                ),
            )
        r["log"] += time.perf_counter() - t

    def _log_replies(self, phase, replies):
        r = self._round
        t = time.perf_counter()
        for pos, msg in enumerate(replies):
            meta = msg.metadata
            node = meta.src_node_id
            r["replies"] += 1
            if msg.has_error():
                r["errors"] += 1
                content, code, reason = None, int(msg.error.code), msg.error.reason
            elif r["kept"]:
                content, code, reason = _rd_bytes(msg.content), None, None
                r["received"] += len(content)
            else:
                continue
            self._con.execute(
                "INSERT OR IGNORE INTO clients(client, info) VALUES (?, json_object('node_id', ?))",
                (str(node), _int64(node)),
            )
            self._con.execute(
                "INSERT INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self._run,
                    r["round"],
                    phase,
                    pos,
                    str(node),
                    _int64(node),
                    meta.message_id or None,
                    meta.reply_to_message_id or None,
                    content,
                    code,
                    reason,
                ),
            )
        r["log"] += time.perf_counter() - t

    # -- the Strategy interface, delegated with the round shifted on resume

    def configure_train(self, server_round, arrays, config, grid):
        rnd = server_round + self._offset
        self._begin_round(rnd)
        t = time.perf_counter()
        messages = list(self.strategy.configure_train(rnd, arrays, config, grid))
        self._timed("configure_train", t)
        self._pending = (messages, arrays, time.perf_counter())
        return messages

    def aggregate_train(self, server_round, replies):
        replies = self._take_replies("train", replies)
        t = time.perf_counter()
        agg_arrays, agg_metrics = self.strategy.aggregate_train(server_round + self._offset, replies)
        self._timed("aggregate_train", t)
        if agg_arrays is not None:
            self._arrays = agg_arrays
            self._round["aggregated"] = 1
        if agg_metrics is not None:
            self._round["result"]["train"] = agg_metrics
        return agg_arrays, agg_metrics

    def _take_replies(self, phase, replies):
        """The replies to the instructions configure_<phase> sent, as a list:
        the wait for them timed, instructions and replies logged."""
        messages, arrays, sent_at = self._pending
        self._timed(phase + "_replies", sent_at)
        replies = list(replies)
        self._log_instructions(phase, messages, arrays)
        self._log_replies(phase, replies)
        return replies

    def configure_evaluate(self, server_round, arrays, config, grid):
        t = time.perf_counter()
        messages = list(self.strategy.configure_evaluate(server_round + self._offset, arrays, config, grid))
        self._timed("configure_evaluate", t)
        self._pending = (messages, arrays, time.perf_counter())
        return messages

    def aggregate_evaluate(self, server_round, replies):
        replies = self._take_replies("evaluate", replies)
        t = time.perf_counter()
        metrics = self.strategy.aggregate_evaluate(server_round + self._offset, replies)
        self._timed("aggregate_evaluate", t)
        if metrics is not None:
            self._round["result"]["evaluate"] = metrics
        if not self._has_evaluate_fn:
            self._finish_round()
        return metrics

    # -- start

    def start(
        self,
        grid,
        initial_arrays,
        num_rounds=3,
        timeout=3600,
        train_config=None,
        evaluate_config=None,
        evaluate_fn=None,
    ):
        """Strategy.start, logged (same arguments, same Result). On a
        resumed run, num_rounds is the run's total, initial_arrays is
        ignored (the last complete round's global model is used) and the
        Result covers the whole run, earlier rounds read from the database."""
        self._con = self._open()
        try:
            return self._start(grid, initial_arrays, num_rounds, timeout, train_config, evaluate_config, evaluate_fn)
        except BaseException:
            if self._con.in_transaction:
                self._con.execute("ROLLBACK")
            raise
        finally:
            self._con.close()
            self._con = None

    def _start(self, grid, initial_arrays, num_rounds, timeout, train_config, evaluate_config, evaluate_fn):
        con = self._con
        row = con.execute("SELECT run, strategy, settings FROM runs WHERE name = ?", (self.run_name,)).fetchone()
        done = None
        if row is not None:
            if not self.resume:
                raise ResumeError(
                    f"LoggingStrategy: run {self.run_name!r} exists in {self.db_path}: "
                    "pass resume=True to continue it, or another run_name"
                )
            self._run, strategy_class, settings = row
            if strategy_class != _class_name(self.strategy):
                raise ResumeError(
                    f"LoggingStrategy: cannot resume run {self.run_name!r}: it ran {strategy_class}, "
                    f"not {_class_name(self.strategy)}"
                )
            if settings != self._settings:
                raise ResumeError(
                    f"LoggingStrategy: cannot resume run {self.run_name!r}: the strategy's settings differ "
                    f"from the run's (logged {settings}, now {self._settings})"
                )
            last = con.execute(
                "SELECT max(s.round), s.state FROM strategy_state s WHERE s.run = ?", (self._run,)
            ).fetchone()
            if last[0] is not None:
                done = last[0]
        if done is not None:
            if num_rounds < done:
                raise ResumeError(
                    f"LoggingStrategy: cannot resume run {self.run_name!r} to {num_rounds} rounds: "
                    f"{done} are done already"
                )
            # Earlier rounds beyond the last complete one (none in a WAL
            # database, whose round transactions are atomic) are left alone.
            _restore_state(self.strategy, last[1])
            (blob,) = con.execute(
                "SELECT rec FROM global_models WHERE run = ? AND round = ?", (self._run, done)
            ).fetchone()
            arrays = _ar_from_bytes(blob)
            self._arrays = arrays
            self._offset = done
            con.execute("UPDATE runs SET num_rounds = ?, finished_at = NULL WHERE run = ?", (num_rounds, self._run))
            log(
                INFO,
                "LoggingStrategy: resuming run %r after round %s of %s (Flower counts the rounds left from 1)",
                self.run_name,
                done,
                num_rounds,
            )
            self._has_evaluate_fn = evaluate_fn is not None
            wrapped_fn = None
            if evaluate_fn is not None:

                def wrapped_fn(server_round, arrays_):
                    if server_round == 0:
                        return None  # round `done`'s evaluation is in the log
                    return self._evaluate(evaluate_fn, server_round + done, arrays_)

            if num_rounds > done:
                Strategy.start(
                    self, grid, arrays, num_rounds - done, timeout, train_config, evaluate_config, wrapped_fn
                )
            con.execute("UPDATE runs SET finished_at = ? WHERE run = ?", (_now(), self._run))
            return self._result_from_db()

        # a new run
        self._offset = 0
        con.execute("BEGIN IMMEDIATE")
        if self._run is None:
            ctx = self._context
            run_config = dict(ctx.run_config) if ctx is not None else {}
            self._run = con.execute(
                "INSERT INTO runs(name, config, notes, flower_run_id, strategy, settings, num_rounds, options) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.run_name,
                    json.dumps(run_config),
                    self._notes,
                    _int64(ctx.run_id) if ctx is not None else None,
                    _class_name(self.strategy),
                    self._settings,
                    num_rounds,
                    json.dumps({"replies_every": self.replies_every}),
                ),
            ).lastrowid
        self._arrays = initial_arrays
        self._begin_round(0)
        self._has_evaluate_fn = evaluate_fn is not None
        wrapped_fn = None
        if evaluate_fn is not None:

            def wrapped_fn(server_round, arrays_):
                return self._evaluate(evaluate_fn, server_round, arrays_)

        else:
            self._finish_round()
        result = Strategy.start(
            self, grid, initial_arrays, num_rounds, timeout, train_config, evaluate_config, wrapped_fn
        )
        con.execute("UPDATE runs SET finished_at = ? WHERE run = ?", (_now(), self._run))
        return result

    def _evaluate(self, evaluate_fn, rnd, arrays):
        t = time.perf_counter()
        res = evaluate_fn(rnd, arrays)
        self._timed("evaluate_fn", t)
        if res is not None:
            self._round["result"]["server"] = res
        self._finish_round()
        return res

    def _result_from_db(self):
        return _result(self._con, self._run)


def _result(con, run):
    """The Result of a logged run, as Strategy.start returned it."""
    result = Result()
    rows = con.execute(
        "SELECT r.round, r.result, r.aggregated, g.rec FROM rounds r JOIN global_models g USING (run, round) "
        "WHERE r.run = ? AND r.finished_at IS NOT NULL ORDER BY r.round",
        (run,),
    ).fetchall()
    for rnd, blob, aggregated, rec in rows:
        rd = _rd_from_bytes(blob)
        if aggregated:
            result.arrays = _ar_from_bytes(rec)
        for name, target in (
            ("train", result.train_metrics_clientapp),
            ("evaluate", result.evaluate_metrics_clientapp),
            ("server", result.evaluate_metrics_serverapp),
        ):
            if name in rd:
                target[rnd] = rd[name]
    return result


def read_result(db, run_name):
    """The flwr Result of the run `run_name` logged in the database at `db`
    (its complete rounds): what start() returned, equal value for value.
    ValueError when the database has no such run."""
    con = connect(os.fspath(db), detect_types=0)
    try:
        row = con.execute("SELECT run FROM runs WHERE name = ?", (run_name,)).fetchone()
        if row is None:
            raise ValueError(f"read_result: no run {run_name!r} in {os.fspath(db)}")
        return _result(con, row[0])
    finally:
        con.close()
