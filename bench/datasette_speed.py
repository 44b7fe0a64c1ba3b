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

  runs table   /-/arrayrecord/speed/runs over 200 logged runs of 20 rounds
               (final global models of 1 MB; --quick: 50 runs), against
               sqlite_arrayrecord.runs(db), the rows it shows, read by Python.
               Target <= 2 s.
  runs compared /-/arrayrecord/speed/runs/compare?runs=1,...,8: 8 runs of 100
               rounds (final models of 1 MB), a chart per metric and the 28
               pairs of final models per layer, against reading the 8 final
               models once and 28 ar_compare passes over those bytes (Python's
               sqlite3). Target <= 2 s.

The sides run in turns (A B A B ...) after a warm-up each, and the median of
the runs is reported. The databases live in the bench's temporary directory
and are deleted at the end of each part.

  /usr/bin/python3 bench/run.py --only datasette [--quick]
"""

import io
import json
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


def logged_runs(path, nruns, nrounds, model_bytes):
    """A database of sql/schema.sql holding nruns runs of nrounds rounds as
    LoggingStrategy writes them (settings, run config, three metrics a
    family, bytes, timings, a Flower run each), each run's final global
    model a record of about model_bytes (ten float32 layers), round 0's a
    small one."""
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    import sqlite_arrayrecord as sar

    rng = np.random.default_rng(3)
    layer = model_bytes // 40  # float32 elements of each of the ten layers
    con = sar.connect(path, detect_types=0)
    con.execute("PRAGMA page_size = 65536")
    with open(os.path.join(ROOT, "sql", "schema.sql")) as fh:
        con.executescript(fh.read())
    small = record_bytes([(f"layer{i}.weight", np.zeros(4, np.float32)) for i in range(10)])
    t0 = time.time()
    stamp = lambda s: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t0 + s)) + ".000Z"  # noqa: E731
    with con:
        for run in range(1, nruns + 1):
            settings = {"fraction_train": [0.5, 1.0][run % 2], "eta": 0.01 * (run % 7), "min_train_nodes": 2}
            con.execute(
                "INSERT INTO runs(run, name, started_at, config, strategy, settings, num_rounds, finished_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run,
                    f"run-{run}",
                    stamp(0),
                    json.dumps({"lr": 0.1 * (run % 3 + 1)}),
                    "flwr.serverapp.strategy.FedAdam",
                    json.dumps(settings),
                    nrounds,
                    stamp(nrounds),
                ),
            )
            con.execute(
                "INSERT INTO flower_runs(run, segment, flower_run_id, first_round, last_round, started_at, finished_at, ended) "
                "VALUES (?, 1, ?, 0, ?, ?, ?, 'finished')",
                (run, 1000 + run, nrounds, stamp(0), stamp(nrounds)),
            )
            for rnd in range(nrounds + 1):
                m = lambda *names: json.dumps({n: float(rng.random()) for n in names})  # noqa: E731
                con.execute(
                    "INSERT INTO rounds(run, round, started_at, finished_at, metrics, train_metrics, evaluate_metrics, "
                    "bytes_sent, bytes_received, timings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run,
                        rnd,
                        stamp(rnd),
                        stamp(rnd + 1),
                        m("loss", "accuracy", "norm"),
                        m("train_loss", "steps", "lr"),
                        m("eval_loss", "eval_acc", "f1"),
                        10_000_000,
                        9_000_000,
                        m("round", "train_replies", "log"),
                    ),
                )
            con.execute("INSERT INTO global_models(run, round, rec) VALUES (?, 0, ?)", (run, small))
            final = record_bytes(
                [(f"layer{i}.weight", rng.standard_normal(layer, dtype=np.float32)) for i in range(10)]
            )
            con.execute("INSERT INTO global_models(run, round, rec) VALUES (?, ?, ?)", (run, nrounds, final))
    con.close()


def runs_pages(tmp, quick, report, note):
    """The runs table of 200 runs and the comparison of 8 runs of 100 rounds."""
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    import sqlite_arrayrecord as sar

    nruns = 50 if quick else 200
    path = os.path.join(tmp, "speed.db")
    try:
        t = time.perf_counter()
        logged_runs(path, nruns, 20, 1_000_000)
        print(
            f"== Datasette runs table, {nruns} runs of 20 rounds (final models of 1 MB; written in"
            f" {time.perf_counter() - t:.1f} s): page / sqlite_arrayrecord.runs(db)",
            flush=True,
        )
        note("""GET /-/arrayrecord/speed/runs (every run, every final metric) against the rows it shows read
                in Python by sqlite_arrayrecord.runs(path). In turns, median of 5.""")
        with Server(path) as ds:
            table = page(ds, "/-/arrayrecord/speed/runs", 'type="checkbox" name="runs"', times=nruns)
            rows = lambda: sar.runs(path)  # noqa: E731
            t_page, t_rows = in_turns_median([table, rows], 5)
        report(
            f"runs table, {nruns} runs: {t_page * 1e3:7.1f} ms (runs(db): {t_rows * 1e3:6.1f} ms)",
            f"{t_page:.2f} s",
            "<= 2 s",
            t_page <= 2,
            "Datasette runs table of 200 runs",
        )
    finally:
        os.remove(path)
    try:
        t = time.perf_counter()
        logged_runs(path, 8, 100, 1_000_000)
        print(
            f"== Datasette runs compared, 8 runs of 100 rounds (final models of 1 MB; written in"
            f" {time.perf_counter() - t:.1f} s): page / 8 model reads + 28 ar_compare",
            flush=True,
        )
        note("""GET /-/arrayrecord/speed/runs/compare?runs=1,...,8: a chart per metric (9), the settings that
                differ, the final models pair by pair per layer. The floor: the 8 final models read once and
                ar_compare of the 28 pairs over those bytes, through Python's sqlite3. In turns, median of 5.""")
        con = sar.connect(path, detect_types=0)

        def floor():
            models = [
                con.execute("SELECT rec FROM global_models WHERE run = ? ORDER BY round DESC LIMIT 1", (r,)).fetchone()[
                    0
                ]
                for r in range(1, 9)
            ]
            for i in range(8):
                for j in range(i + 1, 8):
                    con.execute("SELECT * FROM ar_compare(?, ?)", (models[j], models[i])).fetchall()

        with Server(path) as ds:
            compare = page(ds, "/-/arrayrecord/speed/runs/compare?runs=1,2,3,4,5,6,7,8", 'class="ar-series"', times=72)
            t_page, t_floor = in_turns_median([compare, floor], 5)
        con.close()
        report(
            f"runs compared, 8 x 100 rounds: {t_page * 1e3:7.1f} ms (models + ar_compare: {t_floor * 1e3:6.1f} ms)",
            f"{t_page:.2f} s",
            "<= 2 s",
            t_page <= 2,
            "Datasette comparison of 8 runs of 100 rounds",
        )
    finally:
        os.remove(path)


def bench(tmp, quick, report, note):
    """Every part, or a SKIP line naming make datasette-env."""
    if not os.path.exists(DATASETTE):
        print("== Datasette plugin")
        note(f"SKIP: {MISSING}")
        return
    runs_pages(tmp, quick, report, note)
    table_page(tmp, quick, report, note)
    record_page(tmp, quick, report, note)
