# SPDX-License-Identifier: Apache-2.0
"""Reading a log while LoggingStrategy writes it: a 20-round FedAvg run of
about 20 MB a round (a 4 MB model, 4 clients) over a StubGrid, in this
process, with

- readers polling every second: the sqlite3 shell (without the extension)
  and a Datasette server on the same file (its JSON API, one SQL statement
  a request). Each sees complete rounds only (as many global models as
  rounds, none unfinished, no reply of a round in progress); the writer
  never waits 1 s for its lock; after each round's checkpoint the WAL holds
  less than 3 rounds' bytes.
- one reader holding a read transaction open for the whole run: SQLite can
  then neither finish a checkpoint nor reset the WAL, which grows by about a
  round a round; the logger warns once, when it passes 5 rounds' bytes
  (docs/flower-logging.md, "Reading a log while it is written").

The figures are printed (rounds' WAL bytes, lock waits, commit times).
"""

import json
import logging
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXT = os.path.join(ROOT, "build", "arrayrecord")
sys.path.insert(0, os.path.join(ROOT, "tests", "flower"))

ROUNDS = 20
PROBE = (
    "SELECT (SELECT count(*) FROM rounds), (SELECT count(*) FROM rounds WHERE finished_at IS NULL), "
    "(SELECT count(*) FROM global_models), (SELECT coalesce(max(round), -1) FROM replies), "
    "(SELECT coalesce(max(round), -1) FROM rounds)"
)


def _run(db, during=None):
    """The logged run; during(rnd) is called from a client's training in
    each round. Returns (LoggingStrategy, the WARNING lines Flower logged)."""
    import logging_app
    from flwr.app import Array, ArrayRecord
    from flwr.serverapp.strategy import FedAvg
    from stub_grid import StubGrid, quiet_flower, server_identity

    from sqlite_arrayrecord.flower import LoggingStrategy

    rng = np.random.default_rng(4)
    initial = ArrayRecord({"w": Array(rng.normal(0, 1, (1024, 1024)).astype(np.float32))})
    answer = logging_app.make_answer()

    def node(n, msg):
        if during is not None and n == logging_app.NODES[0] and msg.metadata.message_type == "train":
            during(int(msg.content["config"]["server-round"]))
        return answer(n, msg)

    grid = StubGrid(run_id=5, nodes={n: node for n in logging_app.NODES})
    warnings = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warnings.append(record.getMessage())
    logging.getLogger("flwr").addHandler(handler)
    try:
        strategy = LoggingStrategy(FedAvg(fraction_evaluate=0.0), db, "read")
        with server_identity(grid), quiet_flower():
            strategy.start(grid=grid, initial_arrays=initial, num_rounds=ROUNDS)
    finally:
        logging.getLogger("flwr").removeHandler(handler)
    return strategy, [w for w in warnings if "WAL" in w]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _figures(db):
    import sqlite_arrayrecord as sar

    con = sar.connect(db, detect_types=0)
    try:
        timings = [json.loads(t) for (t,) in con.execute("SELECT timings FROM rounds ORDER BY round")]
    finally:
        con.close()
    return timings


def _consistent(seen):
    """(rounds, unfinished, models, last reply round, last round) as a reader
    saw them: complete rounds only."""
    rounds, unfinished, models, last_reply, last_round = seen
    return unfinished == 0 and rounds == models and last_reply <= last_round


def test_readers_polling_during_a_run():
    shell = shutil.which("sqlite3")
    datasette = os.path.join(os.path.dirname(sys.executable), "datasette")
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "log.db")
        # the log exists before the readers start
        import sqlite_arrayrecord.flower._database as database

        database.open_log(db).close()
        port = _free_port()
        server = subprocess.Popen(
            [datasette, "serve", db, "--host", "127.0.0.1", "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        seen = {"shell": [], "datasette": []}
        stop = threading.Event()

        def poll_shell():
            while not stop.is_set():
                out = subprocess.run(
                    # a packed log's replies and global_models unpack through the extension
                    [shell, "-readonly", "-cmd", f".load {EXT}", "-separator", " ", db, PROBE],
                    capture_output=True,
                    text=True,
                    timeout=30,
                )
                if out.returncode == 0 and out.stdout.strip():
                    seen["shell"].append(tuple(int(x) for x in out.stdout.split()))
                stop.wait(1.0)

        def poll_datasette():
            url = f"http://127.0.0.1:{port}/log.json?" + urllib.parse.urlencode({"sql": PROBE, "_shape": "array"})
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            while not stop.is_set():
                try:
                    with opener.open(url, timeout=10) as r:
                        row = json.loads(r.read())[0]
                        seen["datasette"].append(tuple(row.values()))
                except OSError:
                    pass  # not up yet
                stop.wait(1.0)

        threads = [threading.Thread(target=f, daemon=True) for f in (poll_shell, poll_datasette)]
        try:
            for t in threads:
                t.start()
            t0 = time.monotonic()
            strategy, warnings = _run(db, during=lambda rnd: time.sleep(0.2))
            seconds = time.monotonic() - t0
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=30)
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        timings = _figures(db)
        wal = strategy._last_log.wal_bytes
        written = strategy._last_log.written
    assert len(seen["shell"]) >= 5 and len(seen["datasette"]) >= 5, {k: len(v) for k, v in seen.items()}
    for who, rows in seen.items():
        bad = [row for row in rows if not _consistent(row)]
        assert not bad, (who, bad)
    waits = [t.get("lock_wait", 0.0) for t in timings]
    assert max(waits) < 1.0, waits
    per_round = sum(written) / len(written)
    assert max(wal.values()) < 3 * per_round, (wal, per_round)
    assert warnings == [], warnings
    print(
        f"{ROUNDS} rounds of {per_round / 1e6:.1f} MB in {seconds:.1f} s, polled every second by the sqlite3 shell "
        f"({len(seen['shell'])} reads) and Datasette ({len(seen['datasette'])}): complete rounds only; lock waits "
        f"at most {max(waits) * 1000:.1f} ms; WAL after each checkpoint at most {max(wal.values()) / 1e6:.1f} MB "
        f"({max(wal.values()) / per_round:.2f} rounds)"
    )


def test_a_reader_holding_a_transaction_open():
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "log.db")
        import sqlite_arrayrecord.flower._database as database

        database.open_log(db).close()
        reader = sqlite3.connect(db, isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM rounds").fetchone()  # a snapshot held from here on
        strategy, warnings = _run(db)
        held = dict(strategy._last_log.wal_bytes)
        assert reader.execute("SELECT count(*) FROM rounds").fetchone()[0] == 0  # the snapshot of before
        reader.execute("COMMIT")
        reader.close()
        con = sqlite3.connect(db)
        busy, frames, done = con.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        con.close()
        written = strategy._last_log.written
    per_round = sum(written) / len(written)
    assert len(warnings) == 1 and "a reader keeps a read transaction open" in warnings[0], warnings
    assert max(held.values()) > 5 * per_round, (held, per_round)
    assert busy == 0 and frames == 0, (busy, frames)  # the reader gone, the WAL resets
    print(
        f"a reader holding one read transaction for the whole run: the WAL grew to "
        f"{max(held.values()) / 1e6:.0f} MB ({max(held.values()) / per_round:.1f} rounds of {per_round / 1e6:.1f} MB); "
        f"warned once: {warnings[0][:90]}...; reset once the reader ended"
    )
