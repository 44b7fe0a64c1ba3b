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


def rolling_vs_plain(con, query, frame, weighted=True):
    """[(position, equal)] of ar_rolling_mean against the plain ar_mean of
    each frame (rows numbered by round, as the table below keeps them), or
    both errors when both fail."""
    mean = "ar_mean(t.rec, t.n)" if weighted else "ar_mean(t.rec)"
    out = []
    positions = [r[0] for r in con.execute("SELECT round FROM u ORDER BY round")]
    for p in positions:
        plain = f"SELECT {mean} FROM (SELECT * FROM u WHERE round BETWEEN ? AND ? ORDER BY round) t"
        try:
            want = con.execute(plain, (p - frame + 1, p)).fetchone()[0]
        except sqlite3.Error as e:
            want = ("error", str(e))
        try:
            got = con.execute("SELECT rec FROM ar_rolling_mean(?, ?) WHERE position = ?", (query, frame, p)).fetchone()
            got = got[0]
        except sqlite3.Error as e:
            got = ("error", str(e))
        out.append((p, got, want))
    return out


def test_frames_off_the_direct_path_are_ar_means_too():
    """The frames ar_rolling_mean computes itself (float32/float64, C order,
    same keys in the same order) and the ones it leaves to ar_mean (float16,
    integers, Fortran order, big-endian, another key order, a weight of text)
    give ar_mean's bytes, or its error; mixed in one run, position by
    position."""
    rng = np.random.default_rng(11)
    con = connect()
    con.execute("CREATE TABLE u(round INTEGER PRIMARY KEY, rec BLOB, n)")
    kinds = ["f32", "f64", "f16", "int", "fortran", "big", "order", "nan", "textw", "null"]
    rows = []
    for i in range(40):
        kind = kinds[i % len(kinds)] if i % 3 else "f32"
        w = rng.normal(size=(3, 4)).astype("float32")
        b = rng.normal(size=5).astype("float32")
        if kind == "f64":
            w, b = w.astype("float64"), b.astype("float64")
        elif kind == "f16":
            w = w.astype("float16")
        elif kind == "int":
            b = (b * 100).astype("int32")
        elif kind == "fortran":
            w = np.asfortranarray(w)
        elif kind == "big":
            w = w.astype(">f4")
        elif kind == "nan":
            w[0, 0], b[1] = np.nan, np.inf
        items = [("w", w), ("b", b)] if kind != "order" else [("b", b), ("w", w)]
        weight = "heavy" if kind == "textw" else (int(rng.integers(1, 9)) if i % 2 else float(rng.uniform(0.5, 4)))
        rec = (
            None
            if kind == "null"
            else con.execute(
                "SELECT ar(?, ?, ?, ?)", (items[0][0], npy_bytes(items[0][1]), items[1][0], npy_bytes(items[1][1]))
            ).fetchone()[0]
        )
        rows.append((i, rec, weight))
    con.executemany("INSERT INTO u VALUES (?, ?, ?)", rows)
    for frame in (1, 2, 4):
        for p, got, want in rolling_vs_plain(con, "SELECT rec, n FROM u ORDER BY round", frame):
            if isinstance(want, tuple):  # the same message, rows counted from the input
                assert isinstance(got, tuple) and got[1].startswith("ar_rolling_mean: row"), (frame, p, got, want)
            else:
                assert got == want, (frame, p)
    con.close()


def test_negative_weights_and_a_zero_total_as_ar_mean():
    con = connect()
    con.execute("CREATE TABLE u(round INTEGER PRIMARY KEY, rec BLOB, n)")
    vals = [(0, 2.0), (1, -2.0), (2, -1.0), (3, 3.5)]
    for r, n in vals:
        con.execute("INSERT INTO u VALUES (?, ar('w', npy_from_json(?, 'float32')), ?)", (r, f"[{r}.5, -1]", n))
    q = "SELECT rec, n FROM u ORDER BY round"
    res = rolling_vs_plain(con, q, 2)
    assert res[0][1] == res[0][2] and res[3][1] == res[3][2]  # totals 2 and 2.5
    for p, got, want in res[1:3]:  # totals 0 and -3
        assert isinstance(got, tuple) and isinstance(want, tuple), p
        assert "must sum to a positive number" in got[1] and got[1].endswith(want[1].split("ar_mean: ", 1)[-1]), p
    con.close()


def test_large_frames_equal_on_one_thread_and_on_several():
    """Arrays past the pool's threshold are split among threads: the same bits
    as one thread and as the plain mean."""
    rng = np.random.default_rng(3)
    con = connect()
    con.execute("CREATE TABLE u(round INTEGER PRIMARY KEY, rec BLOB, n)")
    for i in range(6):
        x = (rng.normal(size=300_001) * 10.0 ** rng.integers(-5, 5, size=300_001)).astype("float32")
        con.execute("INSERT INTO u VALUES (?, ar('x', ?), ?)", (i, npy_bytes(x), float(rng.uniform(0.1, 3))))
    q = "SELECT rec, n FROM u ORDER BY round"
    before = con.execute("SELECT ar_threads(2)").fetchone()[0]
    try:
        many = [r[0] for r in con.execute("SELECT rec FROM ar_rolling_mean(?, 3)", (q,))]
        con.execute("SELECT ar_threads(1)")
        one = [r[0] for r in con.execute("SELECT rec FROM ar_rolling_mean(?, 3)", (q,))]
    finally:
        con.execute("SELECT ar_threads(?)", (before,))
    assert many == one
    assert all(got == want for _, got, want in rolling_vs_plain(con, q, 3))
    con.close()
