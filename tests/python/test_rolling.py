# SPDX-License-Identifier: Apache-2.0
"""ar_rolling_mean against the plain ar_mean of each frame (a correlated
subquery), bit for bit, on values of many magnitudes, float32 and float64,
integer and real weights, NULL records, every frame size from 1 to past the
row count; and its limit: a frame of more rows than
SQLITE_LIMIT_VARIABLE_NUMBER lets it bind fails naming the row."""

import sqlite3

import numpy as np
from arlib import connect, error_of, npy_bytes


def table(con, rng, n, dtype, weights):
    """Rows 0 .. n-1 of 'w' (4 values of many magnitudes) and 'b', a tenth NULL."""
    con.execute("CREATE TABLE u(round INTEGER PRIMARY KEY, rec BLOB, n)")
    for i in range(n):
        w = (rng.normal(size=4) * 10.0 ** rng.integers(-30, 30, size=4)).astype(dtype)
        b = rng.normal(size=(2, 3)).astype(dtype)
        weight = int(rng.integers(1, 50)) if weights == "int" else float(rng.uniform(0.01, 9.0))
        rec = None if rng.random() < 0.1 else (npy_bytes(w), npy_bytes(b))
        if rec is None:
            con.execute("INSERT INTO u VALUES (?, NULL, ?)", (i, weight))
        else:
            con.execute("INSERT INTO u VALUES (?, ar('w', ?, 'b', ?), ?)", (i, rec[0], rec[1], weight))


def test_every_frame_equals_the_plain_mean_bit_for_bit():
    rng = np.random.default_rng(5)
    for dtype in ("float32", "float64"):
        for weights in ("int", "real", None):
            con = connect()
            n = 23
            table(con, rng, n, dtype, weights)
            query = "SELECT rec, n, round FROM u ORDER BY round" if weights else "SELECT rec FROM u ORDER BY round"
            mean = "ar_mean(t.rec, t.n)" if weights else "ar_mean(t.rec)"
            for frame in (1, 2, 3, 7, n, n + 5):
                rows = con.execute(
                    f"SELECT m.position, m.rows, m.rec IS (SELECT {mean} FROM u t WHERE t.round BETWEEN m.position - ? + 1"
                    " AND m.position), (SELECT count(t.rec) FROM u t WHERE t.round BETWEEN m.position - ? + 1 AND m.position)"
                    " FROM ar_rolling_mean(?, ?) m",
                    (frame, frame, query, frame),
                ).fetchall()
                assert [r[0] for r in rows] == list(range(n)), (dtype, weights, frame)
                assert all(r[2] == 1 for r in rows), (dtype, weights, frame, [r[0] for r in rows if r[2] != 1])
                assert all(r[1] == r[3] for r in rows), (dtype, weights, frame)
            con.close()


def test_a_frame_beyond_the_parameter_limit_fails_naming_the_row():
    con = connect()
    if not hasattr(con, "setlimit"):  # Python 3.11
        con.close()
        from runner import Skip

        raise Skip("sqlite3.Connection.setlimit needs Python 3.11 or later")
    con.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 9)  # 4 rows with weights, 9 without
    con.execute("CREATE TABLE u(round INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
    con.executemany("INSERT INTO u VALUES (?, ar('w', npy_from_json(?)), 1)", [(i, "[%d, 1]" % i) for i in range(12)])
    q = "SELECT rec, n FROM u ORDER BY round"
    assert con.execute("SELECT count(rec) FROM ar_rolling_mean(?, 4)", (q,)).fetchone() == (12,)
    want = "ar_rolling_mean: row 4: a frame of more than 4 rows is more than SQLITE_LIMIT_VARIABLE_NUMBER allows"
    assert error_of(con, "SELECT count(*) FROM ar_rolling_mean(?, 5)", q) == want
    # without weights one parameter a row: 9 rows
    q1 = "SELECT rec FROM u ORDER BY round"
    got = con.execute("SELECT npy_to_json(ar_get(rec, 'w')) FROM ar_rolling_mean(?, 9) WHERE position = 11", (q1,))
    assert got.fetchone() == ("[7.0,1.0]",)
    assert "row 9: a frame of more than 9 rows" in error_of(con, "SELECT count(*) FROM ar_rolling_mean(?, 10)", q1)
    # a frame longer than the rows is no frame beyond the limit
    small = "SELECT rec, n FROM u WHERE round < 3"
    assert con.execute("SELECT count(rec) FROM ar_rolling_mean(?, 1000000)", (small,)).fetchone() == (3,)
    con.close()


def test_a_write_that_returns_rows_is_refused():
    """DELETE ... RETURNING yields rows but writes (SQLite 3.35 and later;
    tests/sql/ar_rolling.sql, run on 3.31 too, refuses writes without it)."""
    con = connect()
    if sqlite3.sqlite_version_info < (3, 35, 0):
        con.close()
        from runner import Skip

        raise Skip(f"RETURNING needs SQLite 3.35 or later; this is {sqlite3.sqlite_version}")
    con.execute("CREATE TABLE r(rec BLOB)")
    con.execute("INSERT INTO r VALUES (ar('w', npy_from_json('[1, 2]')))")
    q = "DELETE FROM r RETURNING rec"
    want = "ar_rolling_mean: query must be one read-only SELECT, got: " + q
    assert error_of(con, "SELECT * FROM ar_rolling_mean(?, 2)", q) == want
    assert con.execute("SELECT count(*) FROM r").fetchone() == (1,)  # nothing was deleted
    con.close()
