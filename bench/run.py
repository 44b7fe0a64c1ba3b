# SPDX-License-Identifier: Apache-2.0
"""`make bench`: the speed targets of the array-math work, measured side by
side in one run and printed as ratios (never asserted anywhere).

  FedAvg      SELECT ar_mean(rec, n) FROM updates, 10 client records of a
              ~100 MB float32 model, against Flower's own code on the same
              rows (bench/flower_peer.py in build/flwr: serde and
              aggregate_arrayrecords); as SQLite sees it (length()), through
              the C API and as a Python client gets it (bytes); and the bytes
              read per second as a share of this machine's single-core
              memcpy bandwidth.
  array math  every elementwise function and reduction against NumPy doing
              the same operation on the same bytes.
  metadata    array_record / ar_len / ar_keys over 1,000 records of ~1 MB,
              against a no-op C function over the same BLOB column.
  building    ar_agg building a ~100 MB record and ar_set into one, as a
              share of memcpy bandwidth.
  robust      ar_krum (k = 1 and 3) and ar_bulyan over 20 client records of a
              25 MB float32 model, against Flower's Krum, MultiKrum and Bulyan
              code on the same rows; ar_krum against SQLite reading the rows,
              with its parts (ar_krum_scores on 1 and 2 threads), also in a
              process whose malloc keeps freed memory (no fresh pages).
  curves      (--only curves) each aggregate's time at 10, 20, 50 and 100
              clients of a 9 MB model, and FedAvg's at 1 MB to 500 MB, next to
              Flower's code: build/bench/curves.json and bench/curves.png.
  window      rolling FedAvg over 100 rounds: the window form, a correlated
              subquery per round and ar_rolling_mean (the table-valued
              function), against a plain ar_mean of the same rows.
  package     the Python package (bindings/python): to_record of a ~100 MB
              model as a share of memcpy bandwidth, and from_record(copy=False)
              of that record against reading its headers only.
  server step ar_server_step('fedadam', ...) on a ~100 MB float32 model (with
              m_t and v_t), against Flower's FedAdam NumPy lines (fedopt.py,
              fedadam.py) on views of the same bytes.
  object ids  ar_object_id of a ~100 MB record against hashlib.sha256 over
              the same bytes, and the project's SHA-256 alone, portable and
              SHA-NI (bench/sha256.c); rd_object_id of a RecordDict holding
              that record against hashlib.sha256 over its bytes.
  datasette   (bench/datasette_speed.py) the runs table of 200 runs and the
              comparison of 8 runs of 100 rounds (2 s targets), the Datasette
              plugin's table page over 1,000 rows of ~1 MB records against Datasette without it,
              and its record page of a 999 MB record against length() and one
              ar_stats pass (needs build/datasette: make datasette-env).
  packing     (bench/packing.py) packed records: packing and unpacking a
              25 MB float32 record in C alone (bench/pack.c), into mapped
              and fresh memory, next to memcpy; stored / raw of two real
              federated runs on digits (a NumPy MLP, a CNN with BatchNorm),
              per byte plane, with the residuals' entropy floor, the lossy
              option and keyframe layouts.

How it measures (see bench/README.md): SQL runs through SQLite's C API
(ctypes); BLOB arguments are bound without a copy and BLOB results are
fetched with sqlite3_column_blob, as a C program would. Every comparison
runs its two sides in turns (A B A B ...) and keeps each side's best time,
so a change in the machine's load hits both alike. Both sides of FedAvg use
the same database (page_size 65536) and connection settings (mmap), one open
connection each, warmed by a first run. Data lives in a temporary directory
under /tmp that is removed at the end.

Flower's side runs in its own process (build/flwr/bin/python
bench/flower_peer.py, or bench/flower_way.py's copy of Flower's code under
this Python when build/flwr is missing), fed requests in turns with the SQL
side and timing itself. After the run, the comparisons with Flower run again
in a second process with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (both sides),
and the ratios are printed side by side.

  /usr/bin/python3 bench/run.py [--quick] [--only NAME] [--no-hugetlb]
"""

import argparse
import ctypes
import ctypes.util
import hashlib
import io
import json
import math
import os
import re
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import datasette_speed  # noqa: E402  (bench/datasette_speed.py)
import packing  # noqa: E402  (bench/packing.py)
from arlib import _field as pb_ld  # noqa: E402
from arlib import load_npy, npy_bytes, record_bytes, varint  # noqa: E402
from turns import in_turns, turn_times  # noqa: E402  (bench/turns.py)

BUILD = os.path.join(ROOT, "build")
EXT = os.path.join(BUILD, "arrayrecord")
NOOP = os.path.join(BUILD, "bench_noop")
MEMCPY = os.path.join(BUILD, "bench_memcpy")
SHA256 = os.path.join(BUILD, "bench_sha256")
PEER = os.path.join(ROOT, "bench", "flower_peer.py")
FLWR_PYTHON = os.path.join(BUILD, "flwr", "bin", "python")
HUGETLB = "glibc.malloc.hugetlb=1"
PRAGMAS = ("PRAGMA mmap_size = 4000000000",)
MEMCPY_MB = 100  # beyond every cache, in quick runs too

# Every ratio with its target, for the table at the end: (label, value, target, ok).
SUMMARY = []
# Named figures of this run, for --summary-json (the huge-page pass hands its own back).
FIGURES = {}

# --- SQLite's C API ----------------------------------------------------------

lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
vp, cp, ip = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
for name, res, args in [
    ("sqlite3_open", ip, [cp, ctypes.POINTER(vp)]),
    ("sqlite3_close", ip, [vp]),
    ("sqlite3_enable_load_extension", ip, [vp, ip]),
    ("sqlite3_load_extension", ip, [vp, cp, cp, ctypes.POINTER(cp)]),
    ("sqlite3_errmsg", cp, [vp]),
    ("sqlite3_prepare_v2", ip, [vp, cp, ip, ctypes.POINTER(vp), vp]),
    ("sqlite3_bind_blob64", ip, [vp, ip, vp, ctypes.c_uint64, vp]),
    ("sqlite3_step", ip, [vp]),
    ("sqlite3_finalize", ip, [vp]),
    ("sqlite3_column_type", ip, [vp, ip]),
    ("sqlite3_column_bytes", ip, [vp, ip]),
    ("sqlite3_column_blob", vp, [vp, ip]),
    ("sqlite3_column_double", ctypes.c_double, [vp, ip]),
]:
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = res, args
SQLITE_ROW, SQLITE_DONE, SQLITE_BLOB = 100, 101, 4


class Db:
    """A connection through the C API with our extension (and noop) loaded."""

    def __init__(self, path):
        self.db = vp()
        if lib.sqlite3_open(path.encode(), ctypes.byref(self.db)):
            raise RuntimeError("cannot open " + path)
        lib.sqlite3_enable_load_extension(self.db, 1)
        for ext, entry in ((EXT, b"sqlite3_arrayrecord_init"), (NOOP, b"sqlite3_noop_init")):
            err = cp()
            if lib.sqlite3_load_extension(self.db, ext.encode(), entry, ctypes.byref(err)):
                raise RuntimeError(f"cannot load {ext}: {err.value}")
        for p in PRAGMAS:
            self.run(p)

    def run(self, sql, *blobs):
        """Run a statement to completion; BLOB arguments (bytes, or a uint8
        NumPy array) are bound without a copy (SQLITE_STATIC), a BLOB result
        is fetched with
        sqlite3_column_blob (its pointer: the bytes are the caller's to read,
        no copy). Returns the first column of the last row: a BLOB's length,
        or a number."""
        st = vp()
        if lib.sqlite3_prepare_v2(self.db, sql.encode(), -1, ctypes.byref(st), None):
            raise RuntimeError(lib.sqlite3_errmsg(self.db).decode())
        keep = [b if isinstance(b, np.ndarray) else ctypes.c_char_p(b) for b in blobs]
        for i, b in enumerate(blobs):
            ptr = b.ctypes.data if isinstance(b, np.ndarray) else ctypes.cast(keep[i], vp)
            lib.sqlite3_bind_blob64(st, i + 1, ptr, len(b), None)
        out = None
        while True:
            rc = lib.sqlite3_step(st)
            if rc == SQLITE_ROW:
                if lib.sqlite3_column_type(st, 0) == SQLITE_BLOB:
                    lib.sqlite3_column_blob(st, 0)
                    out = lib.sqlite3_column_bytes(st, 0)
                else:
                    out = lib.sqlite3_column_double(st, 0)
            elif rc == SQLITE_DONE:
                break
            else:
                msg = lib.sqlite3_errmsg(self.db).decode()
                lib.sqlite3_finalize(st)
                raise RuntimeError(msg)
        lib.sqlite3_finalize(st)
        return out

    def close(self):
        lib.sqlite3_close(self.db)


def python_connection(path):
    con = sqlite3.connect(path)
    for p in PRAGMAS:
        con.execute(p)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    return con


def in_turns_budget(fns, budget, most=4):
    """in_turns for the curves: a first turn, then more (up to `most` in
    all) while a turn takes less than `budget` seconds: the cheap points get a
    best of several, the big ones (seconds each) one run each."""
    best = [float("inf")] * len(fns)
    for _turn in range(most):
        start = time.perf_counter()
        for i, f in enumerate(fns):
            t = time.perf_counter()
            r = f()
            t = time.perf_counter() - t
            best[i] = min(best[i], r["time"] if isinstance(r, dict) and "time" in r else t)
        if time.perf_counter() - start > budget:
            break
    return best


class FlowerPeer:
    """Flower's side: bench/flower_peer.py, a long-lived worker in build/flwr
    (flwr 1.42 and NumPy 2: Flower's own strategy code), or under this
    Python with bench/flower_way.py's copy of it when build/flwr is missing.
    The worker reads the same database file and times itself."""

    def __init__(self):
        python = FLWR_PYTHON if os.path.exists(FLWR_PYTHON) else sys.executable
        self.proc = subprocess.Popen(
            [python, PEER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        hello = json.loads(self.proc.stdout.readline())
        self.impl, self.is_flwr = hello["impl"], hello["flwr"]
        self.label = "Flower" if self.is_flwr else "flower_way.py"

    def run(self, op, db, table, **kw):
        self.proc.stdin.write(json.dumps(dict(op=op, db=db, table=table, **kw)) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        if "error" in reply:
            raise RuntimeError(f"flower_peer.py {op} on {table}: {reply['error']}")
        return reply

    def result(self, op, db, table, tmp, **kw):
        """The op's result bytes (written by the worker to a file)."""
        out = os.path.join(tmp, "peer-result.bin")
        self.run(op, db, table, out=out, **kw)
        with open(out, "rb") as fh:
            data = fh.read()
        os.remove(out)
        return data

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def parts_line(parts):
    """Flower's time split: fetch, parse, aggregate (its copies and its
    arithmetic, from a second pass), serialize."""
    if not parts:
        return "(no split: flower_way.py)"
    text = (
        f"fetch {parts['fetch']:.3f} s, parse {parts['parse']:.3f} s, aggregate {parts['aggregate']:.3f} s,"
        f" serialize {parts['serialize']:.3f} s"
    )
    if "copy" in parts:
        text += f"; in the aggregate: copies {parts['copy']:.3f} s, arithmetic {parts['arith']:.3f} s"
    return text


def verdict(ok):
    return "meets" if ok else "MISSES"


def report(label, value, target, ok, summary=None):
    print(f"  {label:<64} {value:>8}   target {target:<8} {verdict(ok)}")
    SUMMARY.append((summary or label, value, target, ok))


def note(text):
    for line in text.strip().split("\n"):
        print("  | " + line.strip())


# --- the benchmarks -------------------------------------------------------------


def bench_fedavg(tmp, quick, bw_warm, bw_fresh, peer):
    rows, cols = (1024, 256) if quick else (4096, 1024)
    layers = 6
    rng = np.random.default_rng(0)
    base = [rng.standard_normal((rows, cols), dtype=np.float32) for _ in range(layers)]
    bias = [rng.standard_normal(rows, dtype=np.float32) for _ in range(layers)]
    path = os.path.join(tmp, "fedavg.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE updates(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
    nbytes = 0
    for c in range(10):
        items = []
        for i in range(layers):
            items.append((f"layer{i}.weight", base[i] + np.float32(c * 0.01)))
            items.append((f"layer{i}.bias", bias[i] * np.float32(c + 1)))
        rec = record_bytes(items)
        nbytes += len(rec)
        con.execute("INSERT INTO updates(rec, n) VALUES (?, ?)", (rec, 100 + 37 * c))
    con.commit()
    con.close()
    del base, bias
    os.sync()  # the file's writeback is not part of any timing
    mb = nbytes / 10 / 1e6
    print(f"== FedAvg: 10 client records of a {mb:.1f} MB float32 model ({nbytes / 1e6:.0f} MB read)")
    note(f"""Both sides read the same table (page_size 65536) with the same PRAGMA mmap_size,
             each through one open connection, warmed by a first run; best of 3, in turns.
             {peer.label}: {peer.impl}: rows fetched and parsed with serde,
             aggregate_arrayrecords, the result serialized with serde (timed inside its process).""")
    db = Db(path)
    pycon = python_connection(path)
    t_len, t_sql, t_py_sql, t_flower, t_noop = in_turns(
        [
            lambda: db.run("SELECT length(ar_mean(rec, n)) FROM updates"),
            lambda: db.run("SELECT ar_mean(rec, n) FROM updates"),
            lambda: pycon.execute("SELECT ar_mean(rec, n) FROM updates").fetchone()[0],
            lambda: peer.run("fedavg", path, "updates"),
            lambda: db.run("SELECT sum(noop(rec)) FROM updates"),
        ],
        3,
    )
    parts = peer.run("fedavg", path, "updates", parts=True)["parts"]
    ours = pycon.execute("SELECT ar_mean(rec, n) FROM updates").fetchone()[0]
    theirs = peer.result("fedavg", path, "updates", tmp)
    agree = pycon.execute("SELECT ar_allclose(?, ?, 1e-5, 1e-6)", (ours, theirs)).fetchone()[0]
    db.close()
    pycon.close()
    gbps = nbytes / t_sql / 1e9
    lines = [
        ("as SQLite sees it: SELECT length(ar_mean(rec, n)) FROM updates", t_len, ""),
        ("C API: SELECT ar_mean(rec, n) (+ SQLite's copy into the output row)", t_sql, f"  {gbps:5.2f} GB/s"),
        ("as a Python client gets it: sqlite3, the BLOB fetched into bytes", t_py_sql, ""),
        (
            f"{peer.label}: fetch, parse, aggregate_arrayrecords, serialize",
            t_flower,
            f"  (agree: {'yes' if agree else 'NO'})",
        ),
        (
            "SQLite alone reading the BLOBs: SELECT sum(noop(rec)) FROM updates",
            t_noop,
            f"  {nbytes / t_noop / 1e9:5.2f} GB/s",
        ),
    ]
    for label, t, extra in lines:
        print(f"  {label:<76}{t:6.3f} s{extra}")
    print(f"  {peer.label + ' split:':<18}{parts_line(parts)}")
    note(f"""ar_mean's time includes SQLite's own work: reading the BLOBs (SQLite copies each BLOB out
             of its pages) and, when the BLOB is fetched, deep-copying the {mb:.0f} MB result into the
             output row (into fresh memory that alone takes about {mb * 1e6 / bw_fresh / 1e9:.3f} s here).""")
    for label, t in (("length(ar_mean)", t_len), ("C API column_blob", t_sql), ("Python sqlite3 bytes", t_py_sql)):
        r = t_flower / t
        report(f"FedAvg: speed-up over {peer.label} ({label})", f"{r:.1f}x", ">= 10x", r >= 10)
    report(
        "FedAvg: bytes read per second / memcpy (warm destination)",
        f"{gbps / bw_warm:.0%}",
        ">= 40%",
        gbps / bw_warm >= 0.4,
    )
    FIGURES["fedavg"] = dict(
        mb=mb, length=t_len, column_blob=t_sql, python=t_py_sql, flower=t_flower, noop=t_noop, flower_parts=parts
    )


def bench_fedavg_floor(tmp, quick):
    """ar_mean against SQLite alone handing over the same BLOBs, in memory
    and in a file with 64 KiB pages, with one thread and with two."""
    rows, cols = (256, 1024) if quick else (1024, 1024)
    layers, clients, repeat = 6, 10, 7
    rng = np.random.default_rng(5)
    recs = []
    for _c in range(clients):
        items = []
        for i in range(layers):
            items.append((f"layer{i}.weight", rng.standard_normal((rows, cols), dtype=np.float32)))
            items.append((f"layer{i}.bias", rng.standard_normal(cols, dtype=np.float32)))
        recs.append(record_bytes(items))
    mb = len(recs[0]) / 1e6
    print(
        f"== FedAvg against SQLite's floor: {clients} records of {mb:.1f} MB float32 "
        f"({layers} arrays of {rows * cols} elements each)"
    )
    note(f"""floor: SELECT sum(length(substr(rec, 1, 1))) FROM updates (SQLite loads each BLOB, nothing more).
             ar_mean with ar_threads(1) and ar_threads(2), in turns with the floor; best and median of {repeat}.""")
    path = os.path.join(tmp, "floor.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE updates(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
    con.executemany("INSERT INTO updates(rec, n) VALUES (?, ?)", ((r, 100 + 37 * i) for i, r in enumerate(recs)))
    con.commit()
    con.close()
    os.sync()
    mem = Db(":memory:")
    mem.run("CREATE TABLE updates(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
    for i, r in enumerate(recs):
        mem.run(f"INSERT INTO updates(rec, n) VALUES (?1, {100 + 37 * i})", r)
    del recs
    before = int(mem.run("SELECT ar_threads()"))
    for label, db in (("in memory", mem), ("file, 64 KiB pages", Db(path))):

        def mean(n, db=db):
            db.run(f"SELECT ar_threads({n})")
            db.run("SELECT ar_mean(rec, n) FROM updates")

        fns = [
            lambda db=db: db.run("SELECT sum(length(substr(rec, 1, 1))) FROM updates"),
            lambda: mean(1),
            lambda: mean(2),
        ]
        times = turn_times(fns, repeat)
        best = [min(t) for t in times]
        med = [sorted(t)[len(t) // 2] for t in times]
        print(
            f"  {label}: floor {best[0] * 1e3:6.1f} ms (median {med[0] * 1e3:6.1f});"
            f" ar_mean 1 thread {best[1] * 1e3:6.1f} ms (median {med[1] * 1e3:6.1f}),"
            f" 2 threads {best[2] * 1e3:6.1f} ms (median {med[2] * 1e3:6.1f})"
        )
        for n in (1, 2):
            r, rm = best[n] / best[0], med[n] / med[0]
            report(
                f"FedAvg / floor, {label}, {n} thread{'s' if n > 1 else ''} (median {rm:.2f}x)",
                f"{r:.2f}x",
                "<= 2x",
                r <= 2,
                f"FedAvg time / SQLite floor, {label}, {n} thread{'s' if n > 1 else ''}",
            )
        db.run(f"SELECT ar_threads({before})")
        db.close()


def bench_robust(tmp, quick, peer):
    """Krum and Bulyan: 20 clients x 25 MB float32 (2.5 MB quick)."""
    rows = 20
    numel = (25_000_000 if not quick else 2_500_000) // 4
    rng = np.random.default_rng(1)
    base = rng.standard_normal(numel, dtype=np.float32)
    path = os.path.join(tmp, "robust.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE robust(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
    for c in range(rows):
        x = base + np.float32(0.01 * (1 + c)) * rng.standard_normal(numel, dtype=np.float32)  # distinct scores
        if c in (3, 11):
            x = x + np.float32(5)  # two attackers
        half = numel // 2
        con.execute(
            "INSERT INTO robust(rec, n) VALUES (?, ?)",
            (record_bytes([("fc.weight", x[:half].reshape(-1, 250)), ("fc.bias", x[half:])]), 10 + c),
        )
    con.commit()
    con.close()
    del base
    os.sync()
    print(f"== Krum and Bulyan: {rows} client records of a {numel * 4 / 1e6:.1f} MB float32 model, f = 2")
    note(f"""{peer.label}: {peer.impl}: rows fetched and parsed with serde, select_multikrum
             (compute_distances: np.stack and a float32 Gram matrix through BLAS), then
             aggregate_arrayrecords / Bulyan's median and aggregate_n_closest_weights, serialized;
             best of 2, in turns.""")
    db = Db(path)
    t_krum1, t_fkrum1, t_krum, t_fkrum, t_bul, t_fbul = in_turns(
        [
            lambda: db.run("SELECT ar_krum(rec, n, 2, 1) FROM robust"),
            lambda: peer.run("krum", path, "robust", f=2, k=1),
            lambda: db.run("SELECT ar_krum(rec, n, 2, 3) FROM robust"),
            lambda: peer.run("krum", path, "robust", f=2, k=3),
            lambda: db.run("SELECT ar_bulyan(rec, 2) FROM robust"),
            lambda: peer.run("bulyan", path, "robust", f=2),
        ],
        2,
    )
    p_krum = peer.run("krum", path, "robust", f=2, k=3, parts=True)["parts"]
    p_bul = peer.run("bulyan", path, "robust", f=2, parts=True)["parts"]
    pycon = python_connection(path)
    agree_k = all(
        pycon.execute(
            f"SELECT ar_allclose(ar_krum(rec, n, 2, {k}), ?, 1e-6, 1e-7) FROM robust",
            (peer.result("krum", path, "robust", tmp, f=2, k=k),),
        ).fetchone()[0]
        for k in (1, 3)
    )
    theirs = peer.result("bulyan", path, "robust", tmp, f=2)
    agree_b = pycon.execute("SELECT ar_allclose(ar_bulyan(rec, 2), ?, 1e-6, 1e-7) FROM robust", (theirs,)).fetchone()[0]
    if not agree_b:  # ties at the beta boundary: np.argpartition breaks them in its own order
        n_diff = count_differing(pycon, pycon.execute("SELECT ar_bulyan(rec, 2) FROM robust").fetchone()[0], theirs)
        agree_b = f"all but {n_diff} of {numel} elements: ar_bulyan and np.argpartition break ties for the beta-th closest value differently"
    pycon.close()
    print(f"  {'SELECT ar_krum(rec, n, 2, 1) FROM robust':<76}{t_krum1:6.3f} s")
    print(
        f"  {peer.label + ': Krum (select_multikrum, k = 1, + aggregate_arrayrecords)':<76}{t_fkrum1:6.3f} s"
        f"  (agree: {'yes' if agree_k else 'NO'})"
    )
    print(f"  {'SELECT ar_krum(rec, n, 2, 3) FROM robust':<76}{t_krum:6.3f} s")
    print(
        f"  {peer.label + ': MultiKrum (select_multikrum + aggregate_arrayrecords)':<76}{t_fkrum:6.3f} s"
        f"  (agree: {'yes' if agree_k else 'NO'})"
    )
    print(f"    {parts_line(p_krum)}")
    print(f"  {'SELECT ar_bulyan(rec, 2) FROM robust':<76}{t_bul:6.3f} s")
    print(
        f"  {peer.label + ': Bulyan.aggregate_train (arrays)':<76}{t_fbul:6.3f} s"
        f"  (agree: {'yes' if agree_b is True or agree_b == 1 else agree_b})"
    )
    print(f"    {parts_line(p_bul)}")
    report(f"Krum: speed-up over {peer.label}", f"{t_fkrum1 / t_krum1:.1f}x", ">= 8x", t_fkrum1 / t_krum1 >= 8)
    report(f"MultiKrum: speed-up over {peer.label}", f"{t_fkrum / t_krum:.1f}x", ">= 8x", t_fkrum / t_krum >= 8)
    report(f"Bulyan: speed-up over {peer.label}", f"{t_fbul / t_bul:.1f}x", ">= 8x", t_fbul / t_bul >= 8)
    krum_floor(db, path, numel * 4 * rows)
    db.close()


KRUM_SQL = "SELECT ar_krum(rec, n, 2, 1) FROM robust"
KRUM_FLOOR_SQL = "SELECT sum(length(substr(rec, 1, 1))) FROM robust"
# glibc's malloc keeping what the process frees (no mmap per large block, no
# trimming): the next query's buffers are memory already mapped.
KEEP_FREED = "glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=68719476736"


def krum_times(db, repeat=3):
    """ar_krum against SQLite reading the same rows, and its parts: the
    scores alone (keeping the rows and the pairwise distances), on one thread
    and on the pool's threads. Best of `repeat`, in turns."""
    threads = int(db.run("SELECT ar_threads()"))

    def one_thread(sql):
        def run():
            db.run("SELECT ar_threads(1)")
            try:
                db.run(sql)
            finally:
                db.run(f"SELECT ar_threads({threads})")

        return run

    scores = "SELECT ar_krum_scores(rec, 2) FROM robust"
    t = in_turns(
        [
            lambda: db.run(KRUM_FLOOR_SQL),
            lambda: db.run(KRUM_SQL),
            lambda: db.run(scores),
            one_thread(scores),
        ],
        repeat,
    )
    return dict(threads=threads, floor=t[0], krum=t[1], scores=t[2], scores_1=t[3])


def krum_floor(db, path, nbytes):
    """ar_krum / SQLite's floor, where its time goes, and the same in a
    process whose malloc keeps freed memory (KEEP_FREED)."""
    t = krum_times(db)
    kept = None
    if not os.environ.get("GLIBC_TUNABLES"):  # not again in the huge-page pass
        cmd = [sys.executable, os.path.abspath(__file__), "--krum-times", path]
        kept = json.loads(subprocess.check_output(cmd, env=dict(os.environ, GLIBC_TUNABLES=KEEP_FREED)))
    FIGURES["krum_floor"] = dict(default=t, kept=kept)
    print(f"== ar_krum against SQLite reading the same rows ({KRUM_FLOOR_SQL}), best of 3 in turns")
    note(f"""ar_krum keeps every row ({nbytes / 1e6:.0f} MB: an aggregate sees each BLOB only while its
             step runs), then sums every pair's squared differences in double over blocks of all rows,
             then combines the selected rows. ar_krum_scores is the first two. The second column is a
             process started with GLIBC_TUNABLES={KEEP_FREED}:
             its malloc keeps the memory the previous query freed, so no page is fresh.""")
    rows = [
        ("SQLite reading the rows (the floor)", "floor"),
        (f"ar_krum(rec, n, 2, 1), {t['threads']} threads", "krum"),
        (f"ar_krum_scores(rec, 2), {t['threads']} threads", "scores"),
        ("ar_krum_scores(rec, 2), 1 thread", "scores_1"),
    ]
    print(f"  {'':<60}{'this run':>9}{'kept' if kept else '':>9}")
    for label, key in rows:
        print(f"  {label:<60}{t[key]:8.3f}s" + (f"{kept[key]:8.3f}s" if kept else ""))
    if kept:
        print(f"  {'fresh memory (this run - kept, ar_krum)':<60}{t['krum'] - kept['krum']:8.3f}s")
    ratio = t["krum"] / t["floor"]
    report("ar_krum time / SQLite reading the rows", f"{ratio:.1f}x", "<= 3x", ratio <= 3)
    if kept:
        print(f"  {'the same, malloc keeping freed memory':<64} {kept['krum'] / kept['floor']:>8.1f}x")


def count_differing(pycon, ours, theirs, rtol=1e-6, atol=1e-7):
    """Elements of two records that are not close (np.isclose), over every key."""
    return sum(
        int(
            np.count_nonzero(
                ~np.isclose(
                    load_npy(pycon.execute("SELECT ar_get(?, ?)", (ours, k)).fetchone()[0]),
                    load_npy(pycon.execute("SELECT ar_get(?, ?)", (theirs, k)).fetchone()[0]),
                    rtol=rtol,
                    atol=atol,
                )
            )
        )
        for (k,) in pycon.execute("SELECT value FROM json_each(ar_keys(?))", (ours,))
    )


def bench_server_step(quick):
    """FedAdam's server step: ~100 MB float32 model (10 MB quick)."""
    numel = (100_000_000 if not quick else 10_000_000) // 4
    rng = np.random.default_rng(5)
    half = numel // 2

    def rec(x):
        return record_bytes([("fc.weight", x[:half].reshape(-1, 500)), ("fc.bias", x[half:])])

    x = rng.standard_normal(numel, dtype=np.float32)
    agg = x + np.float32(0.01) * rng.standard_normal(numel, dtype=np.float32)
    m = np.float32(0.001) * rng.standard_normal(numel, dtype=np.float32)
    v = np.abs(np.float32(0.001) * rng.standard_normal(numel, dtype=np.float32))
    pycon = python_connection(":memory:")
    state = pycon.execute(
        "SELECT rd('arrays', 'array', ?, 'm_t', 'array', ?, 'v_t', 'array', ?)", (rec(x), rec(m), rec(v))
    ).fetchone()[0]
    agg_rec = rec(agg)
    # NumPy works on views of the record's payloads, as Flower's Array.numpy() gives them
    sx, sm, sv, sa = ({"fc.weight": a[:half].reshape(-1, 500), "fc.bias": a[half:]} for a in (x, m, v, agg))
    eta, beta_1, beta_2, tau, server_round = 1e-1, 0.9, 0.99, 1e-3, 2

    def pow_(x, y):
        return np.float64(math.pow(x, y))

    # The bits are compared under this NumPy's casting rules for eta_norm * m_t (value-based
    # before NumPy 2); the time is ar_server_step's default, NumPy 2's rules (flwr 1.42's).
    opts = "'{\"numpy\": %d}'" % (1 if int(np.__version__.split(".")[0]) < 2 else 2)

    def flower():  # fedopt.py _compute_deltat_and_mt, then fedadam.py aggregate_train
        delta_t = {k: a - sx[k] for k, a in sa.items()}
        m_t = {k: beta_1 * mm + (1 - beta_1) * delta_t[k] for k, mm in sm.items()}
        v_t = {k: beta_2 * vv + (1 - beta_2) * (delta_t[k] ** 2) for k, vv in sv.items()}
        # np.power of two Python floats is C's pow on most CPUs, SVML's (can be 1 ulp off) on AVX-512
        # ones; ar_server_step takes C's pow everywhere (tests/python/test_strategy.py), so the bit
        # comparison below does too (same cost).
        eta_norm = eta * np.sqrt(1 - pow_(beta_2, server_round + 1.0)) / (1 - pow_(beta_1, server_round + 1.0))
        return {k: xx + eta_norm * m_t[k] / (np.sqrt(v_t[k]) + tau) for k, xx in sx.items()}

    print(f"== FedAdam server step on a {numel * 4 / 1e6:.0f} MB float32 model (m_t, v_t in the state)")
    note("""SQL: ar_server_step('fedadam', state, aggregate, 2) on BLOBs bound without a copy; its
            result (the new model, m_t and v_t as one RecordDict) read through length().
            Flower's way: fedopt.py's and fedadam.py's NumPy lines on views of the same payloads
            (no parsing or serialization counted). Best of 3, in turns.""")
    db = Db(":memory:")
    t_sql, t_np = in_turns(
        [
            lambda: db.run("SELECT length(ar_server_step('fedadam', ?1, ?2, 2))", state, agg_rec),
            flower,
        ],
        3,
    )
    got = pycon.execute(
        f"SELECT ar_get(rd_array_record(ar_server_step('fedadam', ?, ?, 2, {opts}), 'arrays'), 'fc.bias')",
        (state, agg_rec),
    ).fetchone()[0]
    same = np.array_equal(np.load(io.BytesIO(got)), flower()["fc.bias"])
    db.close()
    pycon.close()
    label = "SELECT ar_server_step('fedadam', state, agg, 2)"
    print(f"  {label:<76}{t_sql:6.3f} s")
    print(f"  {'Flower way: FedAdam NumPy lines':<76}{t_np:6.3f} s  (bit-identical: {'yes' if same else 'NO'})")
    report("FedAdam step: speed-up over Flower's NumPy lines", f"{t_np / t_sql:.1f}x", ">= 2x", t_np / t_sql >= 2)


def bench_window(tmp, quick):
    """Rolling FedAvg over 100 rounds of a 10 MB model (1 MB quick), frame of
    5: the window form, a correlated subquery per round and the table-valued
    function ar_rolling_mean, against a plain ar_mean over the same rows and
    SQLite's own floors."""
    rounds, numel = 100, (10_000_000 if not quick else 1_000_000) // 4
    rng = np.random.default_rng(9)
    print(
        f"== Rolling FedAvg: {rounds} rounds of a {numel * 4 / 1e6:.0f} MB float32 model, "
        "a frame of the round and the 4 before it"
    )
    note("""plain: SELECT ar_mean(rec, n) FROM rounds (one result over all the rows).
            window: ar_mean(rec, n) OVER (ORDER BY round ROWS BETWEEN 4 PRECEDING AND CURRENT ROW).
            subquery: SELECT (SELECT ar_mean(t.rec, t.n) FROM rounds t WHERE t.round BETWEEN r.round - 4
              AND r.round) FROM rounds r (each frame read from the table through its key).
            ar_rolling_mean: SELECT rec FROM ar_rolling_mean('SELECT rec, n FROM rounds ORDER BY round', 5)
              (each row read once, the frame's rows kept in reused buffers, each frame stepped through ar_mean).
            Floors: noop_window(rec) over the same frame (SQLite's window machinery with an aggregate
            that keeps nothing), sum(noop(rec)) per frame (SQLite reading each frame's rows).
            Each result read through length(); best of 3, in turns.""")
    plain_sql = "SELECT length(ar_mean(rec, n)) FROM rounds"
    frame = "OVER (ORDER BY round ROWS BETWEEN 4 PRECEDING AND CURRENT ROW)"
    win_sql = f"SELECT sum(length(m)) FROM (SELECT ar_mean(rec, n) {frame} m FROM rounds)"
    floor_sql = f"SELECT sum(m) FROM (SELECT noop_window(rec) {frame} m FROM rounds)"
    sub = "(SELECT {f}(t.rec{w}) FROM rounds t WHERE t.round BETWEEN r.round - 4 AND r.round)"
    sub_sql = f"SELECT sum(length({sub.format(f='ar_mean', w=', t.n')})) FROM rounds r"
    sub_floor_sql = "SELECT sum((SELECT sum(noop(t.rec)) FROM rounds t WHERE t.round BETWEEN r.round - 4 AND r.round)) FROM rounds r"
    tvf = "ar_rolling_mean('SELECT rec, n, round FROM rounds ORDER BY round', 5)"
    tvf_sql = f"SELECT sum(length(rec)) FROM {tvf}"
    same_sql = (
        f"SELECT count(*) FROM (SELECT round, ar_mean(rec, n) {frame} m FROM rounds) w "
        f"JOIN (SELECT r.round, {sub.format(f='ar_mean', w=', t.n')} m FROM rounds r) s USING (round) WHERE w.m = s.m"
    )
    same_tvf_sql = (
        f"SELECT count(*) FROM {tvf} v "
        f"JOIN (SELECT r.round, {sub.format(f='ar_mean', w=', t.n')} m FROM rounds r) s ON s.round = v.label WHERE v.rec = s.m"
    )
    path = os.path.join(tmp, "rounds.db")
    mem, disk = Db(":memory:"), Db(path)
    disk.run("PRAGMA page_size = 65536")
    for db in (mem, disk):
        db.run("CREATE TABLE rounds(round INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
        db.run("BEGIN")
    for r in range(rounds):
        rec = record_bytes([("w", rng.standard_normal(numel, dtype=np.float32))])
        for db in (mem, disk):
            db.run(f"INSERT INTO rounds VALUES ({r}, ?1, {10 + r})", rec)
    for db in (mem, disk):
        db.run("COMMIT")
    os.sync()
    same = int(mem.run(same_sql))
    print(f"  the subquery's {rounds} results equal the window's bit for bit: {same} of {rounds}")
    same = int(mem.run(same_tvf_sql))
    print(f"  ar_rolling_mean's {rounds} results equal the subquery's bit for bit: {same} of {rounds}")
    out = {}
    for store in ("FILE", "MEMORY"):
        mem.run(f"PRAGMA temp_store = {store}")
        t_plain, t_win, t_sub, t_tvf, t_floor, t_sub_floor = in_turns(
            [
                lambda: mem.run(plain_sql),
                lambda: mem.run(win_sql),
                lambda: mem.run(sub_sql),
                lambda: mem.run(tvf_sql),
                lambda: mem.run(floor_sql),
                lambda: mem.run(sub_floor_sql),
            ],
            3,
        )
        out[store] = dict(
            plain=t_plain, window=t_win, subquery=t_sub, rolling=t_tvf, window_floor=t_floor, sub_floor=t_sub_floor
        )
        print(
            f"  in memory, temp_store = {store}: plain ar_mean {t_plain:.3f} s, window {t_win:.3f} s,"
            f" subquery {t_sub:.3f} s, ar_rolling_mean {t_tvf:.3f} s;"
            f" floors: noop_window {t_floor:.3f} s, noop per frame {t_sub_floor:.3f} s"
        )
        r = t_win / t_plain
        report(f"rolling FedAvg, window form / plain ar_mean, temp_store {store.lower()}", f"{r:.1f}x", "<= 5x", r <= 5)
    r = out["MEMORY"]["subquery"] / out["MEMORY"]["plain"]
    report("rolling FedAvg, subquery per round / plain ar_mean, in memory", f"{r:.1f}x", "<= 5x", r <= 5)
    r = out["MEMORY"]["rolling"] / out["MEMORY"]["plain"]
    report("rolling FedAvg, ar_rolling_mean / plain ar_mean, in memory", f"{r:.1f}x", "<= 5x", r <= 5)
    t_plain, t_sub, t_tvf, t_sub_floor = in_turns(
        [
            lambda: disk.run(plain_sql),
            lambda: disk.run(sub_sql),
            lambda: disk.run(tvf_sql),
            lambda: disk.run(sub_floor_sql),
        ],
        3,
    )
    out["DISK"] = dict(plain=t_plain, subquery=t_sub, rolling=t_tvf, sub_floor=t_sub_floor)
    print(
        f"  file, 64 KiB pages: plain ar_mean {t_plain:.3f} s, subquery {t_sub:.3f} s,"
        f" ar_rolling_mean {t_tvf:.3f} s; floor: noop per frame {t_sub_floor:.3f} s"
    )
    r = t_sub / t_plain
    report("rolling FedAvg, subquery per round / plain ar_mean, file", f"{r:.1f}x", "<= 5x", r <= 5)
    r = t_tvf / t_plain
    report("rolling FedAvg, ar_rolling_mean / plain ar_mean, file", f"{r:.1f}x", "<= 5x", r <= 5)
    note(f"""The subquery reads each row 5 times (once per frame it is in) and makes {rounds} results: 5x the
             plain aggregate's reading and arithmetic is its floor. The window form reads each row once
             from the table but writes it to an ephemeral table and reads it back twice (in, out).
             ar_rolling_mean reads each row once and copies it once into a reused buffer; its floor is
             ar_mean's arithmetic over 5 rows per frame and a result per frame.""")
    mem.close()
    disk.close()
    FIGURES["rolling"] = out


# --- the order statistics and ar_compare at scale (FedMedian, FedTrimmedAvg) ---------------------

OLD = None  # --old: another build of the extension, timed beside this one


def cold_time(path, sql, ext=None):
    """sql's time as the first statement of a fresh process (a new
    connection: nothing cached, nothing kept in the extension's pool)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--cold", path, sql]
    env = dict(os.environ, AR_BENCH_EXT=ext) if ext else dict(os.environ)
    return float(subprocess.check_output(cmd, env=env).split()[-1])


def old_db(path):
    """A connection loading the --old build, or None."""
    global EXT
    if not OLD:
        return None
    ours, EXT = EXT, OLD
    try:
        return Db(path)
    finally:
        EXT = ours


def client_table(path, table, clients, numel, seed, attack=True):
    """clients records of a float32 model of numel elements in two arrays
    (a global model plus noise, an attacker in ten), as the curves' table."""
    half = numel // 2
    rng = np.random.default_rng(seed)
    base = rng.standard_normal(numel, dtype=np.float32)
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute(f"CREATE TABLE {table}(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
    for c in range(1, clients + 1):
        x = base + np.float32(0.01 * (1 + c % 17)) * rng.standard_normal(numel, dtype=np.float32)
        if attack and c % 10 == 3:
            x += np.float32(5)
        rec = record_bytes([("fc.weight", x[:half].reshape(-1, 250)), ("fc.bias", x[half:])])
        con.execute(f"INSERT INTO {table}(rec, n) VALUES (?, ?)", (rec, 10 + c))
    con.commit()
    con.close()
    os.sync()


def bench_orderstat(tmp, quick, peer):
    """ar_median and ar_trimmed_mean over 100 client records of a 9.4 MB
    float32 model (0.94 MB quick), against Flower's arithmetic on the same
    BLOBs and SQLite reading the rows."""
    clients, numel = 100, (940_000 if quick else 9_400_000) // 4
    path = os.path.join(tmp, "orderstat.db")
    client_table(path, "clients", clients, numel, 21)
    mb = numel * 4 / 1e6
    print(f"== FedMedian and FedTrimmedAvg: {clients} client records of a {mb:.2f} MB float32 model")
    note(f"""{peer.label}: {peer.impl}: rows fetched and parsed with serde, np.median(np.stack(layers), axis=0)
             and trim_mean(np.stack(layers), 0.2) per key (FedMedian's and FedTrimmedAvg's lines), serialized.
             "arithmetic" is that aggregate step alone (.numpy() of each layer, np.stack, the median or
             the partition and mean), timed inside its process. SQLite reading the rows: SELECT
             sum(length(substr(rec, 1, 1))) FROM clients. Best of 3, in turns; cold: the statement as the
             first one of a fresh process (nothing in the extension's pool of freed blocks).""")
    db = Db(path)
    old = old_db(path)
    floor_sql = "SELECT sum(length(substr(rec, 1, 1))) FROM clients"
    med_sql = "SELECT length(ar_median(rec)) FROM clients"
    trim_sql = "SELECT length(ar_trimmed_mean(rec, 0.2)) FROM clients"
    arith = {"median": [], "trimmed": []}  # the aggregate step of each of Flower's runs in the turns

    def flower(op, **kw):
        reply = peer.run(op, path, "clients", parts=True, **kw)
        arith[op].append(reply["parts"].get("aggregate", reply["time"]))
        return reply

    fns = [
        lambda: db.run(floor_sql),
        lambda: db.run(med_sql),
        lambda: db.run(trim_sql),
        lambda: flower("median"),
        lambda: flower("trimmed", beta=0.2),
    ]
    if old:
        fns += [lambda: old.run(med_sql), lambda: old.run(trim_sql)]
    times = turn_times(fns, 3)
    best = [min(t) for t in times]
    t_floor, t_med, t_trim = best[:3]
    arith_med, arith_trim = min(arith["median"]), min(arith["trimmed"])
    pycon = python_connection(path)
    same = count_differing(
        pycon,
        pycon.execute("SELECT ar_median(rec) FROM clients").fetchone()[0],
        peer.result("median", path, "clients", tmp),
        0,
        0,
    )
    pycon.close()
    colds = [cold_time(path, q) for q in (floor_sql, med_sql, trim_sql)]
    db.close()
    if old:
        old.close()
    rows = [
        ("SQLite reading the rows", t_floor, colds[0]),
        ("ar_median(rec)", t_med, colds[1]),
        ("ar_trimmed_mean(rec, 0.2)", t_trim, colds[2]),
    ]
    print(f"  {'':<52}{'best of 3':>10}{'cold':>9}")
    for label, t, c in rows:
        print(f"  {label:<52}{t:9.3f}s{c:8.3f}s")
    if old:
        print(f"  {'--old build: ar_median(rec)':<52}{best[5]:9.3f}s")
        print(f"  {'--old build: ar_trimmed_mean(rec, 0.2)':<52}{best[6]:9.3f}s")
    print(f"  {peer.label + ': FedMedian, whole (fetch, parse, aggregate, serialize)':<62}{best[3]:9.3f}s")
    print(f"  {peer.label + ': FedMedian, the arithmetic':<62}{arith_med:9.3f}s")
    print(f"  {peer.label + ': FedTrimmedAvg, whole':<62}{best[4]:9.3f}s")
    print(f"  {peer.label + ': FedTrimmedAvg, the arithmetic':<62}{arith_trim:9.3f}s")
    print(
        f"  ar_median equals {peer.label}'s median bit for bit: {'yes' if same == 0 else f'NO ({same} elements differ)'}"
    )
    for name, t, arith in (("ar_median", t_med, arith_med), ("ar_trimmed_mean", t_trim, arith_trim)):
        r = arith / t
        report(f"{name}: speed-up over {peer.label}'s arithmetic, {clients} clients", f"{r:.1f}x", ">= 5x", r >= 5)
        r = t / t_floor
        report(f"{name} time / SQLite reading the rows", f"{r:.1f}x", "<= 5x", r <= 5)
    FIGURES["orderstat"] = dict(
        floor=t_floor,
        median=t_med,
        trimmed=t_trim,
        cold=colds,
        flower_median=best[3],
        flower_trimmed=best[4],
        arith_median=arith_med,
        arith_trimmed=arith_trim,
        old=best[5:] if old else None,
    )


def resnet18_items(rng, scale=0.05):
    """resnet18's state_dict keys and shapes with random values (122 keys,
    num_batches_tracked int64), as bench/views_at_scale.py builds them."""
    import views_at_scale

    out = []
    for k, s in views_at_scale.resnet18_shapes().items():
        if k.endswith("num_batches_tracked"):
            out.append((k, np.array(rng.integers(0, 100), dtype=np.int64)))
        else:
            out.append((k, (rng.standard_normal(s) * scale).astype(np.float32)))
    return out


def bench_compare(tmp, quick):
    """ar_compare per pair, one pass for every column: 20 client records of
    a 25 MB float32 model (4 arrays) against a global one, and resnet18-sized
    records (122 keys) against theirs, each against SQLite reading the two
    BLOBs of each pair."""
    print("== ar_compare per pair (every column read, so every number is computed) against reading the two BLOBs")
    note("""SQL: SELECT sum(every number column) FROM updates u, global g, ar_compare(u.rec, g.rec) c;
            the floor: SELECT sum(length(substr(u.rec, 1, 1)) + length(substr(g.rec, 1, 1))) over the same join
            (SQLite reads both BLOBs of every pair). Best of 3, in turns; cold: a fresh process.""")
    numel = (2_500_000 if quick else 25_000_000) // 4 // 4
    rng = np.random.default_rng(8)
    cases = []
    path = os.path.join(tmp, "compare4.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE global(rec BLOB)")
    con.execute("CREATE TABLE updates(id INTEGER PRIMARY KEY, rec BLOB)")
    g = [rng.standard_normal(numel, dtype=np.float32) for _ in range(4)]
    con.execute(
        "INSERT INTO global VALUES (?)",
        (record_bytes([(f"l{i}.weight", x.reshape(-1, 625)) for i, x in enumerate(g)]),),
    )
    for _ in range(20):
        items = [
            (f"l{i}.weight", (x + np.float32(0.01) * rng.standard_normal(numel, dtype=np.float32)).reshape(-1, 625))
            for i, x in enumerate(g)
        ]
        con.execute("INSERT INTO updates(rec) VALUES (?)", (record_bytes(items),))
    con.commit()
    con.close()
    del g
    cases.append((f"20 records of {numel * 16 / 1e6:.0f} MB, 4 arrays", path))
    path = os.path.join(tmp, "compare_resnet.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE global(rec BLOB)")
    con.execute("CREATE TABLE updates(id INTEGER PRIMARY KEY, rec BLOB)")
    start = resnet18_items(rng)
    con.execute("INSERT INTO global VALUES (?)", (record_bytes(start),))
    for _ in range(2 if quick else 8):
        items = [
            (k, np.asarray(v + np.asarray(rng.standard_normal(v.shape) * 0.01, dtype=v.dtype), dtype=v.dtype))
            for k, v in start
        ]
        con.execute("INSERT INTO updates(rec) VALUES (?)", (record_bytes(items),))
    con.commit()
    n_res = con.execute("SELECT count(*) FROM updates").fetchone()[0]
    size = con.execute("SELECT length(rec) FROM global").fetchone()[0]
    con.close()
    os.sync()
    cases.append((f"{n_res} resnet18 records of {size / 1e6:.0f} MB, 122 keys", path))
    cols = "c.norm_a + c.norm_b + c.dot + c.cosine + c.norm_diff + c.max_abs_diff + c.mean_diff + c.rel_change + c.changed + c.nonfinite_a + c.nonfinite_b"
    sql = f"SELECT sum({cols}) FROM updates u, global g, ar_compare(u.rec, g.rec) c"
    floor_sql = "SELECT sum(length(substr(u.rec, 1, 1)) + length(substr(g.rec, 1, 1))) FROM updates u, global g"
    out = {}
    for label, path in cases:
        db, old = Db(path), old_db(path)
        fns = [lambda: db.run(floor_sql), lambda: db.run(sql)] + ([lambda: old.run(sql)] if old else [])
        t = in_turns(fns, 3)
        colds = [cold_time(path, floor_sql), cold_time(path, sql)]
        db.close()
        if old:
            old.close()
        print(
            f"  {label}: reading the pairs {t[0]:.3f} s (cold {colds[0]:.3f}), ar_compare {t[1]:.3f} s "
            f"(cold {colds[1]:.3f})" + (f", --old build {t[2]:.3f} s" if old else "")
        )
        r = t[1] / t[0]
        report(f"ar_compare / reading the two BLOBs: {label}", f"{r:.2f}x", "<= 2x", r <= 2)
        out[label] = dict(floor=t[0], compare=t[1], cold=colds, old=t[2] if old else None)
    FIGURES["compare"] = out


CURVE_OPS = [  # (name, SQL aggregate, peer op, peer options, fewest rows)
    ("FedAvg", "ar_mean(rec, n)", "fedavg", {}, 1),
    ("FedMedian", "ar_median(rec)", "median", {}, 1),
    ("FedTrimmedAvg", "ar_trimmed_mean(rec, 0.2)", "trimmed", {"beta": 0.2}, 1),
    ("Krum", "ar_krum(rec, n, 2, 1)", "krum", {"f": 2, "k": 1}, 5),
    ("Bulyan", "ar_bulyan(rec, 2)", "bulyan", {"f": 2}, 11),
]


def slope(xs, ys):
    """The exponent of a power law through the first and last points."""
    return float(np.log(ys[-1] / ys[0]) / np.log(xs[-1] / xs[0]))


def bench_curves(tmp, quick, peer):
    """How each aggregate's time grows with the clients (10 to 100 of a 9 MB
    model) and FedAvg's with the model (1 MB to 500 MB at 10 clients), next
    to Flower's code at the same points. Numbers to build/bench/curves.json,
    the plot to bench/curves.png (build/bench/curves-quick.png with --quick)."""
    mb = 0.9 if quick else 9.0
    counts = [10, 20, 50, 100]
    numel = int(mb * 1e6) // 4
    half = numel // 2
    rng = np.random.default_rng(11)
    base = rng.standard_normal(numel, dtype=np.float32)
    path = os.path.join(tmp, "clients.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE clients(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
    for c in range(1, counts[-1] + 1):
        x = base + np.float32(0.01 * (1 + c % 17)) * rng.standard_normal(numel, dtype=np.float32)
        if c % 10 == 3:
            x += np.float32(5)  # a tenth of the clients attack
        rec = record_bytes([("fc.weight", x[:half].reshape(-1, 250)), ("fc.bias", x[half:])])
        con.execute("INSERT INTO clients(rec, n) VALUES (?, ?)", (rec, 10 + c))
    for n in counts:
        con.execute(f"CREATE VIEW c{n} AS SELECT rec, n FROM clients WHERE id <= {n}")
    con.commit()
    con.close()
    del base
    os.sync()
    budget = 0.5 if quick else 3  # seconds a turn may take and be run again (up to 4 turns)
    print(
        f"== Cost curves: {', '.join(map(str, counts))} clients of a {mb:g} MB float32 model"
        f" (f = 2 for Krum and Bulyan); {peer.label} at the same points"
    )
    note(f"""Ours: SELECT length(aggregate) FROM the first n rows (C API). {peer.label}: {peer.impl},
             fetch, parse, aggregate, serialize (timed inside its process). In turns, the best of up
             to 4 turns while a turn takes under {budget:g} s (the big points: one run each; the database's
             pages are in the page cache already).""")
    result = {"quick": quick, "peer": peer.impl, "load_start": os.getloadavg()[0], "clients": {}, "size": {}}
    db = Db(path)
    pycon = python_connection(path)
    for name, expr, op, opts, fewest in CURVE_OPS:
        pts = []
        for n in counts:
            if n < fewest:
                continue
            sql = f"SELECT length({expr}) FROM c{n}"
            t_ours, t_flower = in_turns_budget(
                [lambda: db.run(sql), lambda: peer.run(op, path, f"c{n}", **opts)], budget
            )
            pts.append({"n": n, "ours": t_ours, "flower": t_flower})
            agree = ""
            if not pts[1:]:  # the first point: do both give the same record?
                theirs = peer.result(op, path, f"c{n}", tmp, **opts)
                ours = pycon.execute(f"SELECT {expr} FROM c{n}").fetchone()[0]
                differ = count_differing(pycon, ours, theirs, 1e-5, 1e-6)
                agree = "  (agree)" if not differ else f"  ({differ} elements differ: ties)"
            print(
                f"  {name:<14} {n:>4} clients: ours {t_ours:7.3f} s   {peer.label} {t_flower:7.3f} s"
                f"   {t_flower / t_ours:5.1f}x{agree}"
            )
        ns = [p["n"] for p in pts]
        so, sf = slope(ns, [p["ours"] for p in pts]), slope(ns, [p["flower"] for p in pts])
        print(f"  {name:<14} time grows as clients^{so:.2f} (ours), clients^{sf:.2f} ({peer.label})")
        result["clients"][name] = pts
    db.close()
    pycon.close()
    os.remove(path)

    sizes = [0.1, 1, 5, 10, 50] if quick else [1, 10, 50, 100, 500]
    print(f"== Cost curve of FedAvg with the model's size: 10 clients of {sizes[0]:g} MB to {sizes[-1]:g} MB")
    pts = []
    for size in sizes:
        numel = int(size * 1e6) // 4
        half = numel // 2
        path = os.path.join(tmp, "sizes.db")
        con = sqlite3.connect(path)
        con.execute("PRAGMA page_size = 65536")
        con.execute("CREATE TABLE updates(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
        x = rng.standard_normal(numel, dtype=np.float32)
        for c in range(10):
            x += np.float32(0.01)
            rec = record_bytes(
                [("fc.weight", x[:half].reshape(-1, 250) if half % 250 == 0 else x[:half]), ("fc.bias", x[half:])]
            )
            con.execute("INSERT INTO updates(rec, n) VALUES (?, ?)", (rec, 10 + c))
            del rec
        con.commit()
        con.close()
        del x
        os.sync()
        db = Db(path)
        t_ours, t_flower, t_read = in_turns_budget(
            [
                lambda: db.run("SELECT length(ar_mean(rec, n)) FROM updates"),
                lambda: peer.run("fedavg", path, "updates"),
                lambda: db.run("SELECT sum(noop(rec)) FROM updates"),
            ],
            budget,
        )
        db.close()
        os.remove(path)
        pts.append({"mb": size, "ours": t_ours, "flower": t_flower, "sqlite_read": t_read})
        print(
            f"  FedAvg {size:>6g} MB x 10: ours {t_ours:7.3f} s {size * 10e6 / t_ours / 1e9:5.2f} GB/s"
            f"   {peer.label} {t_flower:7.3f} s   {t_flower / t_ours:5.1f}x"
            f"   (SQLite reading the BLOBs: {t_read:.3f} s)"
        )
    ms = [p["mb"] for p in pts]
    print(
        f"  FedAvg time grows as size^{slope(ms, [p['ours'] for p in pts]):.2f} (ours),"
        f" size^{slope(ms, [p['flower'] for p in pts]):.2f} ({peer.label})"
    )
    result["size"]["FedAvg"] = pts
    result["load_end"] = os.getloadavg()[0]
    os.makedirs(os.path.join(BUILD, "bench"), exist_ok=True)
    out = os.path.join(BUILD, "bench", "curves-quick.json" if quick else "curves.json")
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1)
    png = os.path.join(BUILD, "bench", "curves-quick.png") if quick else os.path.join(ROOT, "bench", "curves.png")
    plot_curves(result, png)
    print(f"  numbers in {os.path.relpath(out, ROOT)}, plot in {os.path.relpath(png, ROOT)}")
    FIGURES["curves"] = result


def plot_curves(result, png):
    """Two log-log panels: time against clients for each aggregate, FedAvg's
    time against the model's size; ours solid, Flower's dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    colors = dict(zip([c[0] for c in CURVE_OPS], ["C0", "C1", "C2", "C3", "C4"]))
    peer = "Flower" if result["peer"].startswith("Flower") else "flower_way.py"
    for name, pts in result["clients"].items():
        ns = [p["n"] for p in pts]
        left.plot(ns, [p["ours"] for p in pts], "o-", color=colors[name], label=f"{name} (SQL)")
        left.plot(ns, [p["flower"] for p in pts], "s--", color=colors[name], alpha=0.6, label=f"{name} ({peer})")
    for power, label in ((1, "∝ n"), (2, "∝ n²")):  # guides: linear and quadratic growth
        t0 = 0.5 * min(p["ours"] for p in result["clients"]["FedAvg"]) * (8 if power == 2 else 1)
        left.plot([10, 100], [t0, t0 * 10**power], ":", color="gray", linewidth=1)
        left.annotate(label, (100, t0 * 10**power), fontsize=8, color="gray", ha="left")
    mb = "0.9" if result["quick"] else "9"
    left.set(xscale="log", yscale="log", xlabel="clients", ylabel="seconds", title=f"clients of a {mb} MB model")
    left.set_xticks([10, 20, 50, 100], ["10", "20", "50", "100"])
    left.set_xlim(8, 150)
    left.legend(fontsize=7, ncol=2)
    left.grid(True, which="both", alpha=0.3)
    pts = result["size"]["FedAvg"]
    ms = [p["mb"] for p in pts]
    right.plot(ms, [p["ours"] for p in pts], "o-", color="C0", label="ar_mean (SQL)")
    right.plot(ms, [p["flower"] for p in pts], "s--", color="C0", alpha=0.6, label=f"aggregate_arrayrecords ({peer})")
    right.plot(ms, [p["sqlite_read"] for p in pts], ":", color="gray", label="SQLite reading the BLOBs (noop)")
    right.set(xscale="log", yscale="log", xlabel="model MB", ylabel="seconds", title="FedAvg of 10 clients")
    right.legend(fontsize=8)
    right.grid(True, which="both", alpha=0.3)
    fig.suptitle(
        f"make bench cost curves (load average {result['load_start']:.1f} at the start, "
        f"{result['load_end']:.1f} at the end)",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(png, dpi=90)
    plt.close(fig)


def npy_buffer(arr):
    """(the .npy bytes of arr in a uint8 array, arr as a view of them)"""
    data = npy_bytes(arr)
    buf = np.empty(len(data), np.uint8)
    buf[:] = np.frombuffer(data, np.uint8)
    head = len(data) - arr.nbytes
    view = buf[head:].view(arr.dtype).reshape(arr.shape, order="F" if np.isfortran(arr) else "C")
    return buf, view


ELEMENTWISE = {"npy_add", "npy_sub", "npy_mul", "npy_scale", "npy_cast", "npy_reshape"}


def bench_array_math(quick):
    n = 2_500_000 if quick else 25_000_000
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n, dtype=np.float32)
    # Each input lives once, as its .npy bytes in memory NumPy allocated (so
    # with NumPy's huge-page hint); SQL binds those bytes, NumPy works on a
    # view of their payload: the same operation on the very same bytes.
    A, a = npy_buffer(x)
    B, b = npy_buffer(x * np.float32(1 + 1e-6))  # close to a everywhere: allclose must read it all
    F, f = npy_buffer(np.asfortranarray(x.reshape(n // 1000, 1000)))
    del x
    print(f"== Array math on {n * 4 / 1e6:.0f} MB float32 arrays: NumPy time / SQL time (>= 1: as fast as NumPy)")
    note("""SQL: the function on .npy BLOBs bound without a copy; an elementwise result is a new .npy
            that SQLite owns (allocated and written, as NumPy allocates and writes its result), read
            through length(): with bound (constant) arguments SQLite would otherwise deep-copy the
            constant result into the row, a copy that neither NumPy nor a query over table columns makes.
            NumPy: the same operation on views of the same bytes. Best of 7, in turns.""")
    db = Db(":memory:")
    cases = [
        ("npy_add(a, b)", lambda: a + b, (A, B)),
        ("npy_sub(a, b)", lambda: a - b, (A, B)),
        ("npy_mul(a, b)", lambda: a * b, (A, B)),
        ("npy_scale(a, 0.5)", lambda: a * 0.5, (A,)),
        ("npy_cast(a, 'float16')", lambda: a.astype(np.float16), (A,)),
        ("npy_cast(a, 'float64')", lambda: a.astype(np.float64), (A,)),
        ("npy_reshape(f, -1)  [f: Fortran 2-d]", lambda: f.reshape(-1), (F,)),
        ("npy_sum(a)", lambda: a.sum(), (A,)),
        ("npy_mean(a)", lambda: a.mean(), (A,)),
        ("npy_min(a)", lambda: a.min(), (A,)),
        ("npy_max(a)", lambda: a.max(), (A,)),
        ("npy_std(a)", lambda: a.std(), (A,)),
        ("npy_norm(a)", lambda: np.linalg.norm(a), (A,)),
        ("npy_norm(a, 1)", lambda: np.linalg.norm(a, 1), (A,)),
        ("npy_norm(a, 'inf')", lambda: np.linalg.norm(a, np.inf), (A,)),
        ("npy_dot(a, b)", lambda: np.dot(a, b), (A, B)),
        ("npy_cosine(a, b)", lambda: np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)), (A, B)),
        ("npy_allclose(a, b)", lambda: np.allclose(a, b), (A, B)),
        ("npy_count_nonfinite(a)", lambda: np.count_nonzero(~np.isfinite(a)), (A,)),
    ]
    for call, numpy_fn, blobs in cases:
        expr = (
            call.split("  [")[0]
            .replace("(a, b)", "(?1, ?2)")
            .replace("(a,", "(?1,")
            .replace("(a)", "(?1)")
            .replace("(f,", "(?1,")
        )
        sql = "SELECT " + (f"length({expr})" if call.split("(")[0] in ELEMENTWISE else expr)
        t_sql, t_np = in_turns([lambda: db.run(sql, *blobs), numpy_fn], 7)
        report(
            f"{call:<38} SQL {t_sql * 1e3:6.1f} ms  NumPy {t_np * 1e3:6.1f} ms",
            f"{t_np / t_sql:.2f}x",
            ">= 1x",
            t_np / t_sql >= 1,
            f"NumPy time / SQL time: {call.split('  [')[0]}",
        )
    db.close()


def bench_metadata(tmp, quick):
    nrec = 100 if quick else 1000
    arrays, per = 10, 25_000  # ten 100 KB float32 arrays: ~1 MB per record
    rng = np.random.default_rng(2)
    rec = record_bytes([(f"block{i}.weight", rng.standard_normal(per, dtype=np.float32)) for i in range(arrays)])
    path = os.path.join(tmp, "meta.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, rec BLOB)")
    con.executemany("INSERT INTO t(rec) VALUES (?)", ((rec,) for _ in range(nrec)))
    con.commit()
    con.close()
    os.sync()
    print(f"== Metadata over {nrec} records of {len(rec) / 1e6:.2f} MB ({arrays} arrays each): time / no-op C function")
    note("""The no-op is noop(rec), a C function that returns 0 without looking at its BLOB: SQLite
            still reads each BLOB to pass it. Each query runs in turns with it; best of 7.""")
    db = Db(path)
    noop = "SELECT sum(noop(rec)) FROM t"
    for label, sql in [
        (
            "SELECT key, dtype, shape FROM t, array_record(t.rec)",
            "SELECT sum(length(a.key) + length(a.dtype) + length(a.shape)) FROM t, array_record(t.rec) a",
        ),
        ("ar_len(rec)", "SELECT sum(ar_len(rec)) FROM t"),
        ("ar_keys(rec)", "SELECT sum(length(ar_keys(rec))) FROM t"),
    ]:
        t, t_noop = in_turns([lambda: db.run(sql), lambda: db.run(noop)], 7)
        report(
            f"{label:<52} {t * 1e3:5.1f} ms / {t_noop * 1e3:5.1f} ms",
            f"{t / t_noop:.2f}x",
            "<= 1.2x",
            t / t_noop <= 1.2,
            f"metadata time / no-op: {label}",
        )
    db.close()


def bench_recorddict_metadata(tmp, quick):
    """record_dict and rd_value over RecordDicts (a reply's content: a ~1 MB
    ArrayRecord and a MetricRecord), against the no-op over the same column."""
    nrec = 100 if quick else 1000
    arrays, per = 10, 25_000
    rng = np.random.default_rng(4)
    rec = record_bytes([(f"block{i}.weight", rng.standard_normal(per, dtype=np.float32)) for i in range(arrays)])
    metrics = pb_ld(1, pb_ld(1, b"num-examples") + pb_ld(2, b"\x10" + varint(2 * 1280))) + pb_ld(
        1, pb_ld(1, b"loss") + pb_ld(2, b"\x09" + struct.pack("<d", 0.5))
    )
    content = pb_ld(1, pb_ld(1, b"arrays") + pb_ld(2, rec)) + pb_ld(1, pb_ld(1, b"metrics") + pb_ld(3, metrics))
    path = os.path.join(tmp, "rdmeta.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE t(id INTEGER PRIMARY KEY, rd BLOB)")
    con.executemany("INSERT INTO t(rd) VALUES (?)", ((content,) for _ in range(nrec)))
    con.commit()
    con.close()
    os.sync()
    print(
        f"== RecordDict metadata over {nrec} RecordDicts of {len(content) / 1e6:.2f} MB (an ArrayRecord and a "
        "MetricRecord each): time / no-op C function"
    )
    db = Db(path)
    noop = "SELECT sum(noop(rd)) FROM t"
    for label, sql in [
        (
            "SELECT name, kind, nitems FROM t, record_dict(t.rd)",
            "SELECT sum(length(d.name) + length(d.kind) + d.nitems) FROM t, record_dict(t.rd) d",
        ),
        ("rd_value(rd, 'metrics', 'num-examples')", "SELECT sum(rd_value(rd, 'metrics', 'num-examples')) FROM t"),
    ]:
        t, t_noop = in_turns([lambda: db.run(sql), lambda: db.run(noop)], 7)
        report(
            f"{label:<52} {t * 1e3:5.1f} ms / {t_noop * 1e3:5.1f} ms",
            f"{t / t_noop:.2f}x",
            "<= 1.2x",
            t / t_noop <= 1.2,
            f"metadata time / no-op: {label}",
        )
    db.close()


def bench_building(tmp, quick, bw_warm, bw_fresh):
    narrays, per = 100, (25_000 if quick else 250_000)
    rng = np.random.default_rng(3)
    arrays = [npy_bytes(rng.standard_normal(per, dtype=np.float32)) for _ in range(narrays)]
    total = sum(len(x) for x in arrays)
    path = os.path.join(tmp, "build.db")
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE arrays(key TEXT, npy BLOB)")
    con.executemany("INSERT INTO arrays VALUES (?, ?)", ((f"k{i}", x) for i, x in enumerate(arrays)))
    con.commit()
    con.close()
    os.sync()
    big = record_bytes([(f"k{i}", np.frombuffer(x[128:], dtype=np.float32)) for i, x in enumerate(arrays)])
    new = arrays[0]
    print(f"== Building records: {total / 1e6:.0f} MB of arrays")
    note(f"""ar_agg reads {narrays} .npy BLOBs from a table and returns the record; like every aggregate's
             result, SQLite deep-copies it into the output row (into fresh memory that alone takes
             about {total / bw_fresh / 1e6:.0f} ms here). ar_set's arguments are bound. Best of 5, in turns.""")
    db = Db(path)
    t_agg, t_set = in_turns(
        [
            lambda: db.run("SELECT length(ar_agg(key, npy)) FROM arrays"),
            lambda: db.run("SELECT length(ar_set(?1, 'k5', ?2))", big, new),
        ],
        5,
    )
    db.close()
    for name, label, t, n in (
        ("ar_agg", "ar_agg(key, npy) building the record from a table", t_agg, total),
        ("ar_set", "ar_set(rec, key, npy) into the record (bound BLOB)", t_set, len(big)),
    ):
        gbps = n / t / 1e9
        report(
            f"{label:<50} {t * 1e3:6.1f} ms {gbps:5.2f} GB/s",
            f"{gbps / bw_warm:.0%}",
            ">= 50%",
            gbps / bw_warm >= 0.5,
            f"{name}: bytes per second / memcpy (warm destination)",
        )


def bench_package(quick, bw_warm, bw_fresh):
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    os.environ.setdefault("AR_EXTENSION", EXT)
    import sqlite_arrayrecord as sar

    per = 250_000 if quick else 2_500_000  # 10 float32 arrays: ~10 or ~100 MB
    rng = np.random.default_rng(4)
    model = {f"layer{i}.weight": rng.standard_normal(per, dtype=np.float32) for i in range(10)}
    pieces = list(model.values())
    rec = sar.to_record(model)
    print(f"== Python package: a {len(rec) / 1e6:.0f} MB model of {len(model)} float32 arrays")
    note("""to_record writes the record in one bytes.join of framing, .npy headers and the arrays'
            buffers: against bytes.join of the same arrays' buffers (a plain copy into a new bytes)
            and this machine's memcpy. from_record(copy=False) parses in Python and returns views;
            headers only is SELECT key, dtype, shape FROM array_record(?) through Python sqlite3
            (which copies the bound BLOB). Best of 5, in turns.""")
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(EXT)
    t_rec, t_join = in_turns([lambda: sar.to_record(model), lambda: b"".join(pieces)], 5)
    t_view, t_head = in_turns(
        [
            lambda: sar.from_record(rec, copy=False),
            lambda: con.execute("SELECT key, dtype, shape FROM array_record(?)", (rec,)).fetchall(),
        ],
        5,
    )
    con.close()
    gbps = len(rec) / t_rec / 1e9
    print(f"  {'bytes.join of the same array buffers':<64}{t_join * 1e3:8.1f} ms {len(rec) / t_join / 1e9:5.2f} GB/s")
    # The result is a new bytes object: fresh memory, whose page faults every
    # writer pays (memcpy into a fresh destination is the like-for-like figure).
    report(
        f"to_record {t_rec * 1e3:6.1f} ms {gbps:5.2f} GB/s: / memcpy (warm destination)",
        f"{gbps / bw_warm:.0%}",
        ">= 50%",
        gbps / bw_warm >= 0.5,
        "to_record: bytes written per second / memcpy (warm destination)",
    )
    report(
        f"to_record {t_rec * 1e3:6.1f} ms {gbps:5.2f} GB/s: / memcpy (fresh destination)",
        f"{gbps / bw_fresh:.0%}",
        ">= 50%",
        gbps / bw_fresh >= 0.5,
        "to_record: bytes written per second / memcpy (fresh destination)",
    )
    report(
        f"from_record(copy=False) {t_view * 1e3:6.2f} ms / headers only {t_head * 1e3:6.2f} ms",
        f"{t_view / t_head:.2f}x",
        "<= 1.2x",
        t_view / t_head <= 1.2,
        "from_record(copy=False) time / array_record headers only",
    )


def bench_object_id(quick):
    # float32 arrays cut into 5 MiB chunks: 4 of 25 MB, or (quick) one of 10.8 MB (two whole chunks)
    arrays, per = (1, 2_700_000) if quick else (4, 6_250_000)
    rng = np.random.default_rng(4)
    rec = record_bytes([(f"layer{i}.weight", rng.standard_normal(per, dtype=np.float32)) for i in range(arrays)])
    mb = len(rec) / 1e6
    print(f"== Object ids: ar_object_id of a {mb:.0f} MB record ({arrays} float32 arrays) against hashlib.sha256")
    note("""ar_object_id(?1) with the record bound without a copy (it hashes every 5 MB chunk of every
            array, then the small Array and ArrayRecord objects); hashlib.sha256 over the same bytes
            object (Flower's object_id hashes its serialized objects the same way). Best of 7, in turns.
            Whole chunks are hashed two at a time on SHA-NI, which is how ar_object_id can beat one stream.""")
    db = Db(":memory:")
    t_id, t_py = in_turns(
        [lambda: db.run("SELECT length(ar_object_id(?1))", rec), lambda: hashlib.sha256(rec).digest()], 7
    )
    db.close()
    portable, chosen, ni = subprocess.check_output([SHA256, f"{mb:.0f}"]).split()
    print(f"  {'ar_object_id(rec)':<40}{t_id * 1e3:7.1f} ms  {len(rec) / t_id / 1e9:5.2f} GB/s")
    print(f"  {'hashlib.sha256(rec)':<40}{t_py * 1e3:7.1f} ms  {len(rec) / t_py / 1e9:5.2f} GB/s")
    print(f"  {'sha256() alone, portable C':<40}{'':>10}  {float(portable):5.2f} GB/s")
    print(
        f"  {'sha256() alone, ' + ('SHA-NI' if ni == b'1' else 'portable (no SHA-NI here)'):<40}{'':>10}"
        f"  {float(chosen):5.2f} GB/s"
    )
    report("ar_object_id: hashlib.sha256 time / ar_object_id time", f"{t_py / t_id:.2f}x", ">= 1x", t_py / t_id >= 1)
    bench_rd_object_id(rec)


def bench_rd_object_id(rec):
    # A train reply's content: the record as its ArrayRecord, a MetricRecord.
    metrics = pb_ld(1, pb_ld(1, b"num-examples") + pb_ld(2, bytes([0x10, 20])))
    rd = pb_ld(1, pb_ld(1, b"arrays") + pb_ld(2, rec)) + pb_ld(1, pb_ld(1, b"metrics") + pb_ld(3, metrics))
    print(
        f"== Object ids: rd_object_id of a RecordDict holding that record ({len(rd) / 1e6:.0f} MB) against hashlib.sha256"
    )
    note("""rd_object_id(?1): the record's tree as above, then the MetricRecord and RecordDict objects
            (Flower's RecordDict.object_id); hashlib.sha256 over the RecordDict's bytes. Best of 7, in turns.""")
    db = Db(":memory:")
    t_id, t_py = in_turns(
        [lambda: db.run("SELECT length(rd_object_id(?1))", rd), lambda: hashlib.sha256(rd).digest()], 7
    )
    db.close()
    print(f"  {'rd_object_id(rd)':<40}{t_id * 1e3:7.1f} ms  {len(rd) / t_id / 1e9:5.2f} GB/s")
    print(f"  {'hashlib.sha256(rd)':<40}{t_py * 1e3:7.1f} ms  {len(rd) / t_py / 1e9:5.2f} GB/s")
    report("rd_object_id: hashlib.sha256 time / rd_object_id time", f"{t_py / t_id:.2f}x", ">= 1x", t_py / t_id >= 1)


def load():
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def fresh_page_line(warm, fresh):
    """What first writes to fresh memory cost on this machine."""
    per_100mb = (1 / fresh - 1 / warm) * 0.1  # seconds per 100 MB beyond a warm copy
    return (
        f"memcpy of {MEMCPY_MB} MB on one core: {warm:.2f} GB/s into a mapped buffer, {fresh:.2f} GB/s into a"
        f" fresh one: fresh pages cost {per_100mb * 1e3:.0f} ms per 100 MB"
        f" ({per_100mb / (1e8 / 4096) * 1e6:.2f} us per 4 KiB page)"
    )


def hugetlb_pass(args):
    """The comparisons with Flower again, in a second run of this script with
    GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (both sides: the SQL side here,
    Flower's worker started by it). Returns its summary."""
    out = tempfile.mktemp(prefix="arrayrecord-bench-hugetlb-", suffix=".json", dir="/tmp")
    env = dict(os.environ, GLIBC_TUNABLES=HUGETLB)
    cmd = [sys.executable, os.path.abspath(__file__), "--only", "flower", "--summary-json", out]
    if args.quick:
        cmd.append("--quick")
    print(f"== The same comparisons with GLIBC_TUNABLES={HUGETLB} on both sides (a second run)", flush=True)
    subprocess.run(cmd, env=env, check=True)
    with open(out) as fh:
        summary = json.load(fh)
    os.remove(out)
    return summary


def bench_logging(quick):
    """LoggingStrategy's cost: bench/logging_speed.py in build/flwr, at two
    scales: rounds of 10 replies x 100 MB (--quick 4 x 5 MB), and the
    cross-device one, 1,000 replies x 100 KB a round (--quick 200), each
    against SQLite's own floor (the same bytes as one BLOB per reply, same
    page size and journal mode, fsync at each round's end) and a plain file
    write; replies per second printed for the second. Each also logged into
    the packed store (the default), its time per round against the raw
    store's."""
    print("== Logging a Flower run (bench/logging_speed.py, LoggingStrategy)", flush=True)
    if not os.path.exists(FLWR_PYTHON):
        note("skipped: build/flwr is missing (make flower-env); LoggingStrategy needs flwr")
        return
    script = os.path.join(ROOT, "bench", "logging_speed.py")
    for label, extra in (
        ("10 replies x 100 MB" if not quick else "4 replies x 5 MB", ["--quick"] if quick else []),
        (
            f"{200 if quick else 1000} replies x 100 KB",
            ["--replies", str(200 if quick else 1000), "--mb", "0.1", "--rounds", "4"],
        ),
    ):
        out = subprocess.run([FLWR_PYTHON, script] + extra, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            print("  " + line)
        m = re.search(r"logger / SQLite floor: ([0-9.]+)x", out)
        if m:
            ratio = float(m.group(1))
            report(f"LoggingStrategy throughput / SQLite's floor, {label}", f"{ratio:.2f}x", ">= 0.80x", ratio >= 0.8)
        m = re.search(r"packed / raw logger time: ([0-9.]+)x", out)
        if m:
            ratio = float(m.group(1))
            report(f"LoggingStrategy per round, packed / raw store, {label}", f"{ratio:.2f}x", "<= 1.50x", ratio <= 1.5)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="about 10x smaller data")
    ap.add_argument(
        "--only",
        choices=[
            "fedavg",
            "fedavg_floor",
            "server_step",
            "object_ids",
            "window",
            "robust",
            "curves",
            "flower",
            "logging",
            "datasette",
            "packing",
            "orderstat",
            "compare",
        ],
        help="run this comparison alone (flower: FedAvg and Krum/Bulyan against Flower's code)",
    )
    ap.add_argument("--old", help="another build of the extension (its path, as .load takes it), timed beside this one")
    ap.add_argument("--cold", nargs=2, metavar=("DB", "SQL"), help=argparse.SUPPRESS)  # cold_time's fresh process
    ap.add_argument("--no-hugetlb", action="store_true", help=f"skip the second run with GLIBC_TUNABLES={HUGETLB}")
    ap.add_argument("--summary-json", help=argparse.SUPPRESS)  # the huge-page pass reports through it
    ap.add_argument("--krum-times", help=argparse.SUPPRESS)  # krum_floor's second process
    args = ap.parse_args()
    if args.cold:  # one statement, the first of this process
        global EXT, OLD
        EXT = os.environ.get("AR_BENCH_EXT", EXT)
        db = Db(args.cold[0])
        t = time.perf_counter()
        db.run(args.cold[1])
        print(time.perf_counter() - t)
        return
    OLD = args.old
    if args.krum_times:
        db = Db(args.krum_times)
        print(json.dumps(krum_times(db)))
        db.close()
        return
    print(
        f"== {os.cpu_count()} cores, {load()} at the start"
        + (f"; GLIBC_TUNABLES={os.environ['GLIBC_TUNABLES']}" if os.environ.get("GLIBC_TUNABLES") else "")
        + ("; --quick: data ~10x smaller, some of it fits in the CPU caches" if args.quick else ""),
        flush=True,
    )
    warm, fresh = (float(x) for x in subprocess.check_output([MEMCPY, str(MEMCPY_MB)]).split())
    FIGURES["memcpy"] = dict(warm=warm, fresh=fresh)
    print("== " + fresh_page_line(warm, fresh), flush=True)
    tmp = tempfile.mkdtemp(prefix="arrayrecord-bench-", dir="/tmp")
    only = args.only
    peer = FlowerPeer() if only in (None, "fedavg", "robust", "curves", "flower", "orderstat") else None
    if peer:
        print(f"== Flower's side: {peer.impl}", flush=True)
    steps = {
        "fedavg": lambda: bench_fedavg(tmp, args.quick, warm, fresh, peer),
        "fedavg_floor": lambda: bench_fedavg_floor(tmp, args.quick),
        "array_math": lambda: bench_array_math(args.quick),
        "metadata": lambda: bench_metadata(tmp, args.quick),
        "rd_metadata": lambda: bench_recorddict_metadata(tmp, args.quick),
        "building": lambda: bench_building(tmp, args.quick, warm, fresh),
        "package": lambda: bench_package(args.quick, warm, fresh),
        "object_ids": lambda: bench_object_id(args.quick),
        "robust": lambda: bench_robust(tmp, args.quick, peer),
        "server_step": lambda: bench_server_step(args.quick),
        "window": lambda: bench_window(tmp, args.quick),
        "orderstat": lambda: bench_orderstat(tmp, args.quick, peer),
        "compare": lambda: bench_compare(tmp, args.quick),
        "curves": lambda: bench_curves(tmp, args.quick, peer),
        "logging": lambda: bench_logging(args.quick),
        "datasette": lambda: datasette_speed.bench(tmp, args.quick, report, note),
        "packing": lambda: packing.bench(tmp, args.quick, report, note),
    }
    chosen = {None: list(steps), "flower": ["fedavg", "robust"]}.get(only, [only])
    try:
        for name in chosen:
            steps[name]()
    finally:
        if peer:
            peer.close()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.summary_json:
        with open(args.summary_json, "w") as fh:
            json.dump({"summary": SUMMARY, "figures": FIGURES}, fh)
        return
    huge = None
    if not args.no_hugetlb and not os.environ.get("GLIBC_TUNABLES") and {"fedavg", "robust"} & set(chosen):
        huge = hugetlb_pass(args)
        hm = huge["figures"]["memcpy"]
        print(f"== Fresh memory: by default, {fresh_page_line(warm, fresh)}")
        print(f"   with GLIBC_TUNABLES={HUGETLB}: {fresh_page_line(hm['warm'], hm['fresh'])}")
        ours, theirs = FIGURES.get("fedavg"), huge["figures"].get("fedavg")
        if ours and theirs:
            print("== FedAvg, default / with huge pages (seconds):")
            for key, label in (
                ("length", "length(ar_mean(rec, n)): as SQLite sees it"),
                ("column_blob", "ar_mean(rec, n) through the C API (sqlite3_column_blob)"),
                ("python", "ar_mean(rec, n) into a Python bytes (sqlite3 module)"),
                ("flower", f"{peer.label if peer else 'Flower'}: fetch, parse, aggregate_arrayrecords, serialize"),
            ):
                print(f"  {label:<76}{ours[key]:6.3f}  {theirs[key]:6.3f}")
    print(f"== Every ratio and its target ({load()} at the end)")
    other = {label: value for label, value, _target, _ok in huge["summary"]} if huge else {}
    if huge:
        print(f"  {'':<70} {'default':>7}   {'hugetlb':>7}")
    for label, value, target, ok in SUMMARY:
        print(f"  {label:<70} {value:>7}   {other.get(label, ''):>7}   {target:<8} {verdict(ok)}")
    met = sum(ok for *_, ok in SUMMARY)
    print(f"  {met} of {len(SUMMARY)} targets met (default environment)")


if __name__ == "__main__":
    main()
