# SPDX-License-Identifier: Apache-2.0
"""The Datasette plugin's speed (`bench/run.py --only datasette`), against
Datasette without it and against the SQL it stands on, every Datasette a real
`datasette serve` from build/datasette (`make datasette-env`) with
`--setting sql_time_limit_ms 60000`, fetched over HTTP on 127.0.0.1:

  table page   /speed/records?_size=1000 over 1,000 rows of ~1 MB ArrayRecords
               (--quick: 100 rows), each cell a summary from ar_describe, against
               the same page from a second Datasette with the plugin unregistered
               (cells "<Binary: N bytes>"). Both load the extension (the plugin
               through its prepare_connection hook, the other with
               --load-extension), so both open the same kind of connection.
               Target <= 1.5x.
  record page  /-/arrayrecord/big/records/1/rec, the record page of one
               999,000,000-byte ArrayRecord (--quick: 100 MB): ar_inspect's
               statistics, histograms and heat maps of every array, against
               `SELECT length(rec)` and one `SELECT * FROM ar_stats(rec)` pass
               over the same row (Python's sqlite3 with the extension, same
               file). Target <= 3x.

The sides run in turns (A B A B ...) after a warm-up each, and the median of
the runs is reported. The databases live in the bench's temporary directory
and are deleted at the end of each part.

  /usr/bin/python3 bench/run.py --only datasette [--quick]
"""

import io
import os
import sqlite3
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "datasette"))
from arlib import _field, record_bytes, varint  # noqa: E402
from serve import DATASETTE, MISSING, Server  # noqa: E402
from turns import in_turns_median  # noqa: E402  (bench/turns.py)

EXT = os.path.join(ROOT, "build", "arrayrecord")
BIG = 999_000_000  # bytes of the record page's ArrayRecord (--quick: 100 MB)


def page(server, path, must, must_not=None, times=1):
    """A fetch of the page that checks it is the page meant (status 200, the
    plugin's mark present `times` times or more, another absent), so a ratio
    never times an error page."""

    def fetch():
        status, body = server.get(path)
        if status != 200 or body.count(must.encode()) < times or (must_not and must_not.encode() in body):
            raise RuntimeError(f"{server.url(path)}: status {status}, {len(body)} bytes: {body[:300]!r}")

    return fetch


def table_page(tmp, quick, report, note):
    nrec = 100 if quick else 1000
    rng = np.random.default_rng(7)
    rec = record_bytes([(f"block{i}.weight", rng.standard_normal((250, 100), dtype=np.float32)) for i in range(10)])
    path = os.path.join(tmp, "speed.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE records(id INTEGER PRIMARY KEY, round INTEGER, rec BLOB)")
    con.executemany("INSERT INTO records(round, rec) VALUES (?, ?)", ((i, rec) for i in range(nrec)))
    con.commit()
    con.close()
    print(
        f"== Datasette table page, ?_size=1000 over {nrec} rows of {len(rec) / 1e6:.2f} MB ArrayRecords:"
        " with the plugin / without it",
        flush=True,
    )
    note("""Two datasette serve processes over the same file, fetched in turns over HTTP; median of 5.
            Without the plugin (unregistered) the extension is still loaded, with --load-extension.""")
    url = "/speed/records?_size=1000"
    try:
        with Server(path) as on, Server(path, "--load-extension", EXT + ".so", plugin=False) as off:
            # every cell a summary linking to its record page, or Datasette's "<Binary: N bytes>"
            with_plugin = page(on, url, 'class="ar-cell"', times=nrec)
            without = page(off, url, "&lt;Binary", "/-/arrayrecord/", times=nrec)
            t_on, t_off = in_turns_median([with_plugin, without], 5)
    finally:
        os.remove(path)
    ratio = t_on / t_off
    report(
        f"table page, {nrec} rows: {t_on * 1e3:7.1f} ms / {t_off * 1e3:7.1f} ms without the plugin",
        f"{ratio:.2f}x",
        "<= 1.5x",
        ratio <= 1.5,
        "Datasette table page with the plugin / without it",
    )


def _npy_header(shape):
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": shape})
    return buf.getvalue()


def _item_head(key, shape):
    """An ArrayRecord item's bytes up to its array's payload (its .npy header
    included): what record_bytes writes before the float32 values."""
    npy = _npy_header(shape)
    data_len = len(npy) + 4 * int(np.prod(shape))
    array = _field(1, b"float32") + _field(2, b"".join(varint(d) for d in shape)) + _field(3, b"numpy.ndarray")
    array += varint(4 << 3 | 2) + varint(data_len)
    item = _field(1, key.encode()) + varint(2 << 3 | 2) + varint(len(array) + data_len)
    head = varint(1 << 3 | 2) + varint(len(item) + len(array) + data_len) + item + array + npy
    return head, 4 * int(np.prod(shape))


def big_layout(total):
    """Items (head bytes, payload bytes) of an ArrayRecord of exactly `total`
    bytes: 2-D float32 weights of 100 MB (10 MB for a 100 MB record) and a
    last 1-D array that takes the rest (its key padded to hit the byte)."""
    side = 5000 if total > 500_000_000 else 1581
    full = (total - 1) // (4 * side * side + 200)
    items = [_item_head(f"layer{i}.weight", (side, side)) for i in range(full)]
    used = sum(len(h) + n for h, n in items)
    for pad in range(8):
        key = "head.weight" + "_" * pad
        n = (total - used - len(_item_head(key, ((total - used) // 4,))[0])) // 4
        for m in range(n - 2, n + 3):
            head, nbytes = _item_head(key, (m,))
            if used + len(head) + nbytes == total:
                return items + [(head, nbytes)]
    raise AssertionError(f"no layout of {total} bytes")


def write_big(path, total):
    """One row (id 1) holding an ArrayRecord of `total` bytes of normal
    float32 values, written through incremental BLOB I/O in 16 MB pieces (the
    record is never whole in this process's memory)."""
    layout = big_layout(total)
    rng = np.random.default_rng(11)
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE records(id INTEGER PRIMARY KEY, rec BLOB)")
    con.execute("INSERT INTO records(id, rec) VALUES (1, zeroblob(?))", (total,))
    with con.blobopen("records", "rec", 1) as blob:
        for head, nbytes in layout:
            blob.write(head)
            left = nbytes // 4
            while left:
                n = min(left, 4_000_000)
                blob.write(rng.standard_normal(n, dtype=np.float32).tobytes())
                left -= n
        assert blob.tell() == total
    con.commit()
    con.close()
    return len(layout)


def record_page(tmp, quick, report, note):
    total = 100_000_000 if quick else BIG
    path = os.path.join(tmp, "big.db")
    try:
        t = time.perf_counter()
        narrays = write_big(path, total)
        print(
            f"== Datasette record page of one {total:,}-byte ArrayRecord ({narrays} float32 arrays;"
            f" written in {time.perf_counter() - t:.1f} s): page / length(rec) + one ar_stats pass",
            flush=True,
        )
        note("""The page: GET /-/arrayrecord/big/records/1/rec (ar_inspect: statistics, histograms, heat maps).
                The floor: SELECT length(rec) and SELECT * FROM ar_stats(rec) over the same row, through
                Python's sqlite3 with the extension, same file. In turns, median of 3.""")
        con = sqlite3.connect(path)
        con.enable_load_extension(True)
        con.load_extension(EXT)
        con.enable_load_extension(False)

        def floor():
            (n,) = con.execute("SELECT length(rec) FROM records WHERE id = 1").fetchone()
            rows = con.execute("SELECT * FROM ar_stats((SELECT rec FROM records WHERE id = 1))").fetchall()
            assert n == total and len(rows) == narrays, (n, len(rows))

        with Server(path) as ds:
            # a histogram per array at least: the page read every array
            shown = page(ds, "/-/arrayrecord/big/records/1/rec", "<svg", times=narrays)
            t_page, t_sql = in_turns_median([shown, floor], 3)
        con.close()
    finally:
        if os.path.exists(path):
            os.remove(path)
    ratio = t_page / t_sql
    report(
        f"record page, {total / 1e6:.0f} MB: {t_page:6.2f} s / {t_sql:6.2f} s length(rec) + ar_stats",
        f"{ratio:.2f}x",
        "<= 3x",
        ratio <= 3,
        "Datasette record page / length(rec) + ar_stats pass",
    )


def bench(tmp, quick, report, note):
    """Both parts, or a SKIP line naming make datasette-env."""
    if not os.path.exists(DATASETTE):
        print("== Datasette plugin")
        note(f"SKIP: {MISSING}")
        return
    table_page(tmp, quick, report, note)
    record_page(tmp, quick, report, note)
