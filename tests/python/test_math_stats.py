# SPDX-License-Identifier: Apache-2.0
"""ar_stats(rec) cross-checked with NumPy for every dtype family, byte
order, memory order, NaN/Inf and empty arrays."""

import json

import numpy as np
from arlib import connect, record_bytes
from mathlib import DTYPES, as_complex, error_of, f64, quiet, sample


def expected_row(key, a):
    """The row NumPy's numbers give (NaN -> None, as SQLite returns it)."""
    nan_none = lambda v: None if v is None or v != v else float(v)
    ref = f64(a)
    empty = a.size == 0
    if a.dtype.kind == "c" or empty:
        mn = mx = None
    elif a.dtype.kind in "biu":
        mn, mx = int(a.min()), int(a.max())
    else:
        mn, mx = nan_none(a.min()), nan_none(a.max())
    if empty:
        mean = std = None
    elif a.dtype.kind == "c":
        # the mean of each part (NumPy's complex division by n would turn a
        # NaN real part into NaN + NaNj)
        mean = complex(ref.real.mean(), ref.imag.mean())
        std = nan_none(np.std(ref))
    else:
        mean, std = nan_none(ref.mean()), nan_none(np.std(ref))
    l2 = nan_none(np.linalg.norm(ref.ravel()))
    nonfinite = int((~np.isfinite(ref)).sum()) if a.dtype.kind in "fc" else 0
    return (
        key,
        str(a.dtype.newbyteorder("=")) if a.dtype.byteorder == "=" else str(a.dtype),
        json.dumps(list(a.shape)).replace(" ", ""),
        a.size,
        mn,
        mx,
        mean,
        std,
        l2,
        nonfinite,
    )


def same(got, want):
    if isinstance(want, complex):
        g = as_complex(got)
        if np.isnan(want.real) or np.isnan(want.imag):
            return np.isnan(g.real) == np.isnan(want.real) and np.isnan(g.imag) == np.isnan(want.imag)
        return g == want or abs(g - want) <= 1e-12 * abs(want)
    if isinstance(want, float) and isinstance(got, float):
        return got == want or abs(got - want) <= 1e-12 * abs(want)
    return got == want and type(got) is type(want)


def test_stats_every_dtype_and_layout():
    con = connect()
    checked = 0
    with quiet():
        for order in ("C", "F"):
            for byteorder in ("<", ">"):
                items = [
                    (f"{dt}{shape}", sample(dt, shape, 3, order, byteorder, special=(dt in ("f4", "c8"))))
                    for dt in DTYPES
                    for shape in ((3, 4), (), (0, 2))
                ]
                rows = con.execute("SELECT * FROM ar_stats(?)", (record_bytes(items),)).fetchall()
                assert len(rows) == len(items)
                for row, (key, a) in zip(rows, items):
                    want = expected_row(key, a)
                    assert row[:4] == want[:4], (row, want)
                    for g, w, col in zip(row[4:], want[4:], ("min", "max", "mean", "std", "l2", "nonfinite")):
                        assert same(g, w), (key, order, byteorder, col, g, w)
                    checked += 1
    assert checked == 2 * 2 * len(DTYPES) * 3


def test_stats_metadata_only_and_joins():
    con = connect()
    recs = [record_bytes([("w", np.full((2, 2), float(i))), ("b", np.arange(3) * i)]) for i in range(3)]
    con.execute("CREATE TABLE u(client, rec)")
    con.executemany("INSERT INTO u VALUES (?, ?)", [(f"c{i}", r) for i, r in enumerate(recs)])
    rows = con.execute(
        "SELECT u.client, s.key, s.l2 FROM u, ar_stats(u.rec) s WHERE s.key = 'w' ORDER BY s.l2 DESC"
    ).fetchall()
    assert rows == [("c2", "w", 4.0), ("c1", "w", 2.0), ("c0", "w", 0.0)]
    # an item whose payload is broken still lists its metadata from the header
    bad = record_bytes([("ok", np.ones(2)), ("x", ("float32", [2], "numpy.ndarray", b"junk"))])
    assert con.execute("SELECT key FROM ar_stats(?)", (bad,)).fetchall() == [("ok",), ("x",)]
    assert (
        error_of(con, "SELECT key, l2 FROM ar_stats(?)", bad)
        == "ar_stats: not a .npy file (bad magic) (item 1, key 'x')"
    )
    assert con.execute("SELECT count(*) FROM ar_stats(NULL)").fetchone() == (0,)
    assert error_of(con, "SELECT * FROM ar_stats(x'0a')") == "ar_stats: record blob truncated at byte 1 (item 0)"
    assert error_of(con, "SELECT * FROM ar_stats(1)") == "ar_stats: argument 1 must be a record BLOB, got an integer"
    assert error_of(con, "SELECT * FROM ar_stats") == "ar_stats: missing argument (a record BLOB)"
