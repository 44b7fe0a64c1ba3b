# SPDX-License-Identifier: Apache-2.0
"""Interrupting a long FedAvg: sqlite3_interrupt (con.interrupt() from a timer
thread) and a progress handler returning nonzero stop SELECT ar_mean(rec, n)
over ~1 GB (40 rows of 25 MB float32 records) promptly, and the connection
then runs another query correctly.

SQLite checks for interruption between virtual-machine instructions, and
ar_mean folds one row per call, so the bound is one row's work. That is
checked by counting rows, not by the clock (a loaded machine stretches any
time bound): the query passes each row's weight through seen(), and after
the stop request at most the row being folded then may still be read. The
latencies are printed.
"""

import os
import shutil
import sqlite3
import tempfile
import threading
import time

from arlib import connect

ROWS = 40
ROW_BYTES = 25 * 1000 * 1000  # float32 elements, 25 MB per record
AFTER = 0.2  # seconds into the query when it is stopped

_db = {}


def _database():
    """The table, built once in a temporary file (not in memory: 1 GB)."""
    if "con" not in _db:
        d = tempfile.mkdtemp(prefix="ar_interrupt_")
        path = os.path.join(d, "big.db")
        con = connect(path)
        con.execute("PRAGMA page_size = 65536")
        con.execute("PRAGMA journal_mode = OFF")
        con.execute("PRAGMA synchronous = OFF")
        con.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
        con.execute(
            "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r WHERE i < ?) "
            "INSERT INTO t SELECT i, ar('w', npy(zeroblob(?), 'float32', ?), "
            "'b', npy_from_json(json_array(i), 'float64')), i FROM r",
            (ROWS, ROW_BYTES, ROW_BYTES // 4),
        )
        con.commit()
        # One full run: the time of a row's work, and the query's own answer.
        t0 = time.monotonic()
        (full,) = con.execute("SELECT npy_to_json(ar_get(ar_mean(rec, n), 'b')) FROM t").fetchone()
        total = time.monotonic() - t0
        _db.update(con=con, dir=d, row=total / ROWS, total=total, full=full)
        print(
            f"ar_mean over {ROWS} x {ROW_BYTES // 1000000} MB float32 rows: {total:.3f} s, "
            f"{1000 * total / ROWS:.1f} ms per row"
        )
    return _db["con"]


def _check_usable(con):
    """The connection answers the next queries correctly."""
    (b,) = con.execute("SELECT npy_to_json(ar_get(ar_mean(rec, n), 'b')) FROM t WHERE id <= 2").fetchone()
    assert b == "[1.6666666666666667]", b  # (1*1 + 2*2) / 3
    (w,) = con.execute("SELECT npy_item(ar_get(ar_mean(rec, n), 'w'), 12345) FROM t WHERE id <= 3").fetchone()
    assert w == 0.0, w
    # the table's own FedAvg over every row: 'b' weighted by n = i is sum(i^2) / sum(i)
    assert _db["full"] == "[27.0]", _db["full"]  # (2n + 1) / 3 with n = 40


def _stop(con, arm, disarm, how):
    """Runs the full FedAvg, stopped by arm() after AFTER seconds; returns
    the latency from the stop request to the exception."""
    con_ = _database() if con is None else con
    after = min(AFTER, _db["total"] / 4)  # well before the query could end
    fired = {}
    rows = [0]

    def seen(n):
        rows[0] += 1
        return n

    con_.create_function("seen", 1, seen)

    def at():
        fired["t"] = time.monotonic()
        fired["row"] = rows[0]
        arm(fired)

    timer = threading.Timer(after, at)
    t0 = time.monotonic()
    timer.start()
    try:
        con_.execute("SELECT ar_mean(rec, seen(n)) FROM t").fetchone()
    except sqlite3.OperationalError as e:
        t_raise = time.monotonic()
        assert "interrupt" in str(e), e
    else:
        raise AssertionError(f"{how}: the query finished after {time.monotonic() - t0:.3f} s without being stopped")
    finally:
        timer.cancel()
        timer.join()
        disarm()
    latency = t_raise - fired["t"]
    late = rows[0] - fired["row"]
    print(
        f"{how}: stopped {after:.2f} s in, at row {fired['row']} of {ROWS}, {1000 * latency:.1f} ms after "
        f"the request ({1000 * _db['row']:.1f} ms per row); rows read after it: {late}"
    )
    assert fired["row"] < ROWS, f"{how}: the request came after the last row"
    assert late <= 1, f"{how}: {late} rows were read after the stop request (at most the one being folded)"
    _check_usable(con_)


def test_interrupt():
    con = _database()
    _stop(con, lambda fired: con.interrupt(), lambda: None, "sqlite3_interrupt")


def test_progress_handler():
    con = _database()
    stop = {}

    def handler():
        return 1 if "t" in stop else 0

    con.set_progress_handler(handler, 1)  # every instruction: a row is a few of them
    try:
        _stop(con, lambda fired: stop.update(t=fired["t"]), stop.clear, "progress handler")
    finally:
        con.set_progress_handler(None, 0)
    # and without the handler the full query runs to the end again
    (b,) = con.execute("SELECT npy_to_json(ar_get(ar_mean(rec, n), 'b')) FROM t").fetchone()
    assert b == _db["full"], b


def test_zz_cleanup():
    """Not a check: removes the 1 GB file (the runner runs tests by name)."""
    if "con" in _db:
        _db.pop("con").close()
        shutil.rmtree(_db.pop("dir"), ignore_errors=True)
