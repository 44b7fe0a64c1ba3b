# SPDX-License-Identifier: Apache-2.0
"""One round of a logged run, written as it happens and committed whole.

RoundLog writes a round's rows: the rounds row when the round begins (in a
transaction it opens), the instructions and replies as they pass, and at
the end the global model, the strategy's state, their digests, the
metrics, counts and timings, the Flower run's last round, then the commit.
A process killed before the commit leaves nothing of the round. After the
commit a passive checkpoint moves the round into the database file; a WAL
that keeps growing (a reader holding a read transaction open stops SQLite
from resetting it) is reported once.
"""

import json
import time
from logging import WARNING

from flwr.app import ArrayRecord, ConfigRecord, MetricRecord, RecordDict
from flwr.common.logger import log

from ..logcheck import chain, sha256
from ._database import now
from ._wire import ar_bytes, array_item_size, int64, rd_bytes

WAL_ROUNDS = 5  # a WAL holding this many rounds' bytes is reported


class RoundLog:
    """The rows of one run's rounds, on the connection `con` (autocommit
    mode: each round is one transaction of its own)."""

    def __init__(self, con, run, segment, replies_every, chain_from, where):
        self.con = con
        self.run = run
        self.segment = segment
        self.replies_every = replies_every
        self.commit_seconds = {}  # round -> seconds the COMMIT took (bench/)
        self.wal_bytes = {}  # round -> bytes in the WAL after its checkpoint
        self._chain = chain_from  # the last committed round's chain digest
        self._where = where  # "run 'x' in /path/runs.db", for messages
        self.written = []  # bytes of BLOBs each round wrote
        self._wal_warned = False
        self._page = con.execute("PRAGMA page_size").fetchone()[0]
        self._round = None
        self._arrays_size = (None, 0)  # (a model, its serde size), to count bytes sent
        self._labelled = set()  # clients whose labels are written

    @property
    def round(self):
        """The round under way (None between rounds)."""
        return self._round["round"] if self._round is not None else None

    def begin(self, rnd):
        t = time.perf_counter()
        if not self.con.in_transaction:
            self.con.execute("BEGIN IMMEDIATE")  # waits while another writer's transaction holds the lock
        self.con.execute("INSERT INTO rounds(run, round, started_at) VALUES (?, ?, ?)", (self.run, rnd, now()))
        self._round = {
            "round": rnd,
            "t0": t,
            "timings": {"lock_wait": time.perf_counter() - t},
            "log": 0.0,
            "result": {},
            "aggregated": 0,
            "replies": 0,
            "errors": 0,
            "sent": 0,
            "received": 0,
            "written": 0,
            "kept": rnd > 0 and self.replies_every > 0 and rnd % self.replies_every == 0,
        }

    def timed(self, name, t0):
        """Adds the seconds since t0 (time.perf_counter) to timings[name]."""
        timings = self._round["timings"]
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0

    def result(self, key, record):
        """Keeps a MetricRecord of the round's Result ('train', 'evaluate', 'server')."""
        self._round["result"][key] = record

    def aggregated(self):
        self._round["aggregated"] = 1

    def finish(self, arrays, state):
        """Writes the global model `arrays` and the strategy's state bytes,
        the round's metrics, counts and timings, and commits the round."""
        r = self._round
        t = time.perf_counter()
        rnd = r["round"]
        blob = ar_bytes(arrays)
        self._arrays_size = (arrays, len(blob))
        self.con.execute("INSERT INTO global_models VALUES (?, ?, ?)", (self.run, rnd, blob))
        model = sha256(blob)
        r["written"] += len(blob) + len(state)
        del blob
        self.con.execute("DELETE FROM strategy_state WHERE run = ?", (self.run,))
        self.con.execute("INSERT INTO strategy_state VALUES (?, ?, ?)", (self.run, rnd, state))
        digests = (model, sha256(state))
        link = chain(self._chain, self.run, rnd, *digests)
        self.con.execute("INSERT INTO round_digests VALUES (?, ?, ?, ?, ?)", (self.run, rnd, *digests, link))
        result = rd_bytes(RecordDict(r["result"]))
        r["timings"]["log"] = r["log"] + time.perf_counter() - t
        r["timings"]["round"] = time.perf_counter() - r["t0"]
        self.con.execute(
            "UPDATE rounds SET finished_at = :now, result = :res, metrics = coalesce(rd_metrics(:res, 'server'), '{}'), "
            "train_metrics = rd_metrics(:res, 'train'), evaluate_metrics = rd_metrics(:res, 'evaluate'), "
            "aggregated = :agg, replies = :n, errors = :err, bytes_sent = :sent, bytes_received = :recv, "
            "timings = :timings WHERE run = :run AND round = :round",
            {
                "now": now(),
                "res": result,
                "agg": r["aggregated"],
                "n": r["replies"],
                "err": r["errors"],
                "sent": r["sent"],
                "recv": r["received"] if r["kept"] or not r["replies"] else None,
                "timings": json.dumps(r["timings"]),
                "run": self.run,
                "round": rnd,
            },
        )
        self.con.execute(
            "UPDATE flower_runs SET first_round = coalesce(first_round, :round), last_round = :round "
            "WHERE run = :run AND segment = :segment",
            {"round": rnd, "run": self.run, "segment": self.segment},
        )
        t = time.perf_counter()
        self.con.execute("COMMIT")
        self.commit_seconds[rnd] = time.perf_counter() - t  # after the row is written: for bench/
        self._chain = link
        self._round = None
        self.written.append(r["written"])
        self._checkpoint(rnd)

    def _checkpoint(self, rnd):
        """Moves what the WAL holds into the database file as far as readers
        let it (PRAGMA wal_checkpoint(PASSIVE): it never waits for them), and
        reports once when the WAL holds WAL_ROUNDS rounds' bytes: a reader
        holding one read transaction open keeps SQLite from resetting it."""
        _, frames, _ = self.con.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        wal = max(frames, 0) * (self._page + 24)
        self.wal_bytes[rnd] = wal
        per_round = max(sum(self.written) / len(self.written), 1 << 20)
        if not self._wal_warned and wal > WAL_ROUNDS * per_round:
            self._wal_warned = True
            log(
                WARNING,
                "LoggingStrategy: the WAL of %s holds %.0f MB after round %s, %.0f rounds' worth: a reader keeps a "
                "read transaction open (a notebook or sqlite3 shell inside BEGIN, a query still stepping), so "
                "SQLite cannot reset it, and it grows until that reader ends (docs/flower-logging.md, "
                "'Reading a log while it is written')",
                self._where,
                wal / 1e6,
                rnd,
                wal / per_round,
            )

    def rollback(self):
        """Drops the round under way (an exception inside it)."""
        if self.con.in_transaction:
            self.con.execute("ROLLBACK")
        self._round = None

    def instructions(self, phase, messages, arrays):
        """Logs the messages configure_<phase> returned; the global model
        `arrays` is stored once a round (global_models), so a message that
        carries it (or a copy) is stored without it."""
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
                    blob = rd_bytes(content)
                    size = len(blob)
                else:
                    blob = rd_bytes(RecordDict({k: v for k, v in content.items() if k != global_key}))
                    if arrays_size is None:
                        known, n = self._arrays_size
                        arrays_size = n if known is arrays else len(ar_bytes(arrays))
                    size = len(blob) + array_item_size(global_key, arrays_size)
                cache[key] = (blob, global_key, size)
            blob, global_key, size = cache[key]
            r["sent"] += size
            self.con.execute(
                "INSERT INTO instructions VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.run,
                    r["round"],
                    phase,
                    pos,
                    int64(msg.metadata.dst_node_id),
                    msg.metadata.message_id or None,
                    blob,
                    global_key,
                ),
            )
        r["log"] += time.perf_counter() - t

    def replies(self, phase, replies, names):
        """Logs the replies in the order the strategy gets them (their
        contents in the rounds replies_every keeps, errors always) and each
        replying client; names: node id -> the node's registered name."""
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
                content, code, reason = rd_bytes(msg.content), None, None
                r["received"] += len(content)
                r["written"] += len(content)
            else:
                content = code = reason = None
            self._client(node, None if msg.has_error() else msg.content, names)
            if content is None and code is None:
                continue
            self.con.execute(
                "INSERT INTO replies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.run,
                    r["round"],
                    phase,
                    pos,
                    str(node),
                    int64(node),
                    meta.message_id or None,
                    meta.reply_to_message_id or None,
                    content,
                    code,
                    reason,
                ),
            )
        r["log"] += time.perf_counter() - t

    def _client(self, node, content, names):
        """The clients row of a node, with its stable label where Flower
        gives one: the registered name of the SuperNode, or the
        "partition-id" a reply carries in a ConfigRecord or MetricRecord
        (a ClientApp's context.node_config["partition-id"], which survives
        the new node ids of every Flower run in simulation)."""
        info = {"node_id": int64(node)}
        if names.get(node):
            info["name"] = names[node]
        for record in content.values() if content is not None else ():
            if isinstance(record, (ConfigRecord, MetricRecord)) and "partition-id" in record:
                value = record["partition-id"]
                if isinstance(value, (int, str)) and not isinstance(value, bool):
                    info["partition_id"] = value
                break
        labels = tuple(sorted((k, v) for k, v in info.items() if k != "node_id"))
        if (node, labels) in self._labelled:
            return
        self._labelled.add((node, labels))
        self.con.execute(
            "INSERT INTO clients(client, info) VALUES (?1, ?2) "
            "ON CONFLICT(client) DO UPDATE SET info = json_patch(clients.info, ?2)",
            (str(node), json.dumps(info)),
        )
