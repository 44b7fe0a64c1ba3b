# SPDX-License-Identifier: Apache-2.0
"""ar_threads and the thread pool of the accumulating aggregates: results
with several threads are bit-identical to one thread's for every dtype, both
byte orders and both memory orders, on arrays split at block boundaries that
fall inside rows; many connections aggregating at once agree too; and
ar_threads' settings, errors and registration flags."""

import contextlib
import os
import threading

import numpy as np
from arlib import all_dtypes, connect, random_array, record_bytes
from mathlib import error_of, one

DEFAULT_MIN = 262144
AGGREGATES = ["ar_sum(rec)", "ar_mean(rec, n)", "ar_min(rec)", "ar_max(rec)"]


@contextlib.contextmanager
def threads(con, n, min_elements=DEFAULT_MIN):
    """Settings are process-wide: put back what was set before."""
    before = one(con, "SELECT ar_threads(?, ?)", n, min_elements)
    try:
        yield
    finally:
        one(con, "SELECT ar_threads(?, ?)", before, DEFAULT_MIN)


def records(shape, rows=3, seed=0, complex_too=True):
    """Rows of one record holding every dtype, in C and Fortran order."""
    rng = np.random.default_rng(seed)
    out = []
    for r in range(rows):
        items = []
        for d in all_dtypes():
            if d.kind == "c" and not complex_too:
                continue
            a = random_array(rng, d, shape)
            # the order changes from row to row: later rows are gathered
            # from the other memory order, block by block
            c, f = np.ascontiguousarray(a), np.asfortranarray(a)
            items.append((f"{d.str}.x", c if r % 2 else f))
            items.append((f"{d.str}.y", f if r % 2 else c))
        out.append(record_bytes(items))
    return out


def results(con, sqls):
    return [one(con, f"SELECT {s} FROM u") for s in sqls]


def test_threads_give_the_bits_of_one_thread():
    con = connect()
    con.execute("CREATE TABLE u(rec BLOB, n, real BLOB)")
    # 317 x 211: parts of 1024-element blocks end inside rows, in both orders
    for i, (rec, real) in enumerate(zip(records((317, 211)), records((317, 211), complex_too=False))):
        con.execute("INSERT INTO u VALUES (?, ?, ?)", (rec, 3 + 5 * i, real))
    sqls = [s.replace("rec", "real") if s.startswith(("ar_min", "ar_max")) else s for s in AGGREGATES]
    with threads(con, 1):
        one_thread = results(con, sqls)
    for n in (2, 3, 7):
        with threads(con, n, 1024):
            assert results(con, sqls) == one_thread, n
    assert all(r is not None and len(r) > 1_000_000 for r in one_thread)


def test_default_threshold_splits_large_arrays():
    con = connect()
    con.execute("CREATE TABLE u(rec BLOB, n)")
    rng = np.random.default_rng(1)
    for i in range(3):
        big = rng.standard_normal((DEFAULT_MIN // 100 + 3, 100), dtype=np.float32)
        con.execute(
            "INSERT INTO u VALUES (?, ?)",
            (record_bytes([("w", big), ("wf", np.asfortranarray(big)), ("b", big[0])]), i + 1),
        )
    with threads(con, 1):
        one_thread = results(con, AGGREGATES)
    with threads(con, 2):
        assert results(con, AGGREGATES) == one_thread
    if os.path.isdir("/proc/self/task"):  # Linux: the pool's worker was started
        assert len(os.listdir("/proc/self/task")) >= 2


def test_connections_aggregating_at_once_agree():
    path_rows = records((129, 67), rows=4, seed=2)
    con = connect()
    con.execute("CREATE TABLE u(rec BLOB, n)")
    for i, rec in enumerate(path_rows):
        con.execute("INSERT INTO u VALUES (?, ?)", (rec, i + 1))
    with threads(con, 1):
        want = one(con, "SELECT ar_mean(rec, n) FROM u")
    got, errors = [], []

    def run():
        c = connect()
        c.execute("CREATE TABLE u(rec BLOB, n)")
        for i, rec in enumerate(path_rows):
            c.execute("INSERT INTO u VALUES (?, ?)", (rec, i + 1))
        try:
            for _ in range(3):
                got.append(one(c, "SELECT ar_mean(rec, n) FROM u"))
        except Exception as e:  # reported below
            errors.append(e)
        c.close()

    with threads(con, 2, 1024):
        ts = [threading.Thread(target=run) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert not errors, errors
    assert len(got) == 12 and all(g == want for g in got)


def test_ar_threads_settings_and_errors():
    con = connect()
    before = one(con, "SELECT ar_threads()")
    assert 1 <= before <= 64
    assert one(con, "SELECT ar_threads(3)") == before
    assert one(con, "SELECT ar_threads()") == 3
    assert one(con, "SELECT ar_threads(NULL)") is None
    assert one(con, "SELECT ar_threads()") == 3
    assert one(con, "SELECT ar_threads(?, ?)", before, DEFAULT_MIN) == 3
    assert error_of(con, "SELECT ar_threads(0)") == "ar_threads: thread count must be 1 to 64, got 0"
    assert error_of(con, "SELECT ar_threads(65)") == "ar_threads: thread count must be 1 to 64, got 65"
    assert "must be a thread count (an integer)" in error_of(con, "SELECT ar_threads('2')")
    assert error_of(con, "SELECT ar_threads(2, 0)") == "ar_threads: min_elements must be at least 1, got 0"
    assert one(con, "SELECT ar_threads()") == before


def test_ar_threads_is_direct_only_and_not_deterministic():
    con = connect()
    flags = {r[0]: r[1] for r in con.execute("SELECT narg, flags FROM pragma_function_list WHERE name = 'ar_threads'")}
    assert sorted(flags) == [0, 1, 2]
    for f in flags.values():
        assert f & 0x80000 and not f & 0x800 and not f & 0x200000, hex(f)  # DIRECTONLY, not DETERMINISTIC/INNOCUOUS
    con.execute("CREATE VIEW v AS SELECT ar_threads() AS x")
    assert "unsafe use of ar_threads" in error_of(con, "SELECT * FROM v")
