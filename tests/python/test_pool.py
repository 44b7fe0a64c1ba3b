# SPDX-License-Identifier: Apache-2.0
"""The pool of large freed blocks (ar_pool, src/sql/alloc_pool.c): a query
over 10,000 rows of large results keeps the process's resident memory
within the bound, whatever it would have kept otherwise; the pool is used
(blocks come back and are handed out again) and gives the same bytes as no
pool; the last connection to close empties it; a heap limit turns it off.

Resident memory is measured in a child process of its own (VmHWM, the
peak, from /proc/self/status), so nothing else of the test run counts."""

import json
import os
import subprocess
import sys

import numpy as np
from arlib import connect, record_bytes
from mathlib import one

MIB = 1 << 20
BOUND = 16 * MIB

# Run in a fresh process: 10,000 rows, each one result of 1 MiB to 2 MiB
# (sizes growing, cycling: a freed block does not fit the next ones, so the
# pool fills up to its bound), under a 16 MiB bound (its 32 slots would hold
# more); then the same with the pool off. Prints the resident memory before the query and its peak, and
# what the pool held after it.
CHILD = r"""
import json, os, sqlite3, sys
def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension(sys.argv[1])
bound = int(sys.argv[2])
con.execute("SELECT ar_pool(0)")  # the rows are built without the pool: it starts empty
# one row per size: a float32 array of (1 MiB + s * 16 KiB) bytes
con.execute("CREATE TABLE t(s INTEGER PRIMARY KEY, rec BLOB)")
con.execute(
    "WITH RECURSIVE k(s) AS (SELECT 0 UNION ALL SELECT s + 1 FROM k WHERE s < 63) "
    "INSERT INTO t SELECT s, ar('w', npy(zeroblob((1 << 20) + s * 16384), 'float32', (262144 + s * 4096))) FROM k"
)
sql = ("WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 9999) "
       "SELECT sum(length(ar_scale(t.rec, 2))) FROM k JOIN t ON t.s = k.i % 64")
con.execute("SELECT ar_pool(?)", (bound,))
base = status("VmRSS")
total = con.execute(sql).fetchone()[0]
peak = status("VmHWM")
held = con.execute("SELECT ar_pool_held()").fetchone()[0]
print(json.dumps({"base": base, "peak": peak, "held": held, "total": total}))
"""


def child(bound):
    ext = os.environ.get("AR_EXTENSION")
    out = subprocess.check_output([sys.executable, "-c", CHILD, ext, str(bound)], text=True)
    return json.loads(out)


def test_pool_keeps_resident_memory_within_its_bound():
    on, off = child(BOUND), child(0)
    assert on["total"] == off["total"] > 10_000 * MIB, (on, off)
    # the pool was used, and holds at most its bound
    assert BOUND / 4 < on["held"] <= BOUND, on
    assert off["held"] == 0, off
    # What the query adds to the process: with the pool, at most the bound
    # more than without it (malloc's own keeping of freed memory, the same
    # in both), plus a few blocks of 2 MiB in flight.
    grown_on, grown_off = on["peak"] - on["base"], off["peak"] - off["base"]
    assert grown_on <= grown_off + BOUND + 8 * MIB, (on, off, grown_on / MIB, grown_off / MIB)


def test_pool_results_are_the_same_bytes():
    """Blocks from the pool hold the bytes of earlier results: every byte of a
    new result must still be written (a stale byte would show here)."""
    con = connect()
    rng = np.random.default_rng(4)
    before = one(con, "SELECT ar_pool()")
    try:
        recs = [record_bytes([("w", rng.standard_normal(300_000).astype(np.float32))]) for _ in range(5)]
        con.execute("CREATE TABLE u(id INTEGER PRIMARY KEY, rec BLOB, n)")
        con.executemany("INSERT INTO u(rec, n) VALUES (?, ?)", [(r, i + 1) for i, r in enumerate(recs)])
        queries = [
            "SELECT ar_mean(rec, n) FROM u",
            "SELECT ar_median(rec) FROM u",
            "SELECT ar_trimmed_mean(rec, 0.2) FROM u",
            "SELECT ar_krum(rec, n, 1, 2) FROM u",
            "SELECT ar_stack(rec) FROM u",
            "SELECT group_concat(hex(ar_get(ar_scale(rec, id), 'w')), '') FROM u",
            "SELECT group_concat(hex(rd_array_record(rd('arrays', 'array', rec))), '') FROM u",
        ]
        one(con, "SELECT ar_pool(0)")
        want = [one(con, q) for q in queries]
        one(con, "SELECT ar_pool(?)", 256 * MIB)
        for _ in range(3):  # the second and third time from blocks the first left
            assert [one(con, q) for q in queries] == want
        assert one(con, "SELECT ar_pool_held()") > 0
    finally:
        one(con, "SELECT ar_pool(?)", before)


def test_pool_emptied_by_the_last_close_and_off_under_a_heap_limit():
    code = r"""
import sqlite3, sys
def conn():
    c = sqlite3.connect(":memory:")
    c.enable_load_extension(True)
    c.load_extension(sys.argv[1])
    return c
a, b = conn(), conn()
big = "SELECT length(ar_scale(ar('w', npy(zeroblob(4 << 20), 'float32', 1 << 20)), 2))"
a.execute(big).fetchone()
held = [a.execute("SELECT ar_pool_held()").fetchone()[0]]
a.close()
held.append(b.execute("SELECT ar_pool_held()").fetchone()[0])  # b still open: kept
b.close()
c = conn()
held.append(c.execute("SELECT ar_pool_held()").fetchone()[0])  # every connection closed: freed
c.execute(big).fetchone()
held.append(c.execute("SELECT ar_pool_held()").fetchone()[0])  # kept again
c.execute("PRAGMA hard_heap_limit = 1000000000")
c.execute(big).fetchone()
held.append(c.execute("SELECT ar_pool_held()").fetchone()[0])  # under a heap limit: what was kept freed, nothing kept
print(held)
"""
    out = subprocess.check_output([sys.executable, "-c", code, os.environ.get("AR_EXTENSION")], text=True)
    held = json.loads(out)
    assert held[0] >= 4 * MIB and held[1] == held[0] and held[2] == 0 and held[3] >= 4 * MIB and held[4] == 0, held
