"""`make bench`: the speed targets of the array-math work, measured side by
side in one run and printed as ratios (never asserted anywhere).

  FedAvg      SELECT ar_mean(rec, n) FROM updates, 10 client records of a
              ~100 MB float32 model, against the same job done the way
              Flower does it in Python; and the bytes read per second as a
              share of this machine's single-core memcpy bandwidth.
  array math  every elementwise function and reduction against NumPy doing
              the same operation on the same bytes.
  metadata    array_record / ar_len / ar_keys over 1,000 records of ~1 MB,
              against a no-op C function over the same BLOB column.
  building    ar_agg building a ~100 MB record and ar_set into one, as a
              share of memcpy bandwidth.

SQL runs through SQLite's C API (ctypes), so BLOB arguments are bound
without a copy, as a C program would; the NumPy side works on arrays
already in memory. Each timing is the best of a few runs. Data lives in a
temporary directory under /tmp that is removed at the end.

  /usr/bin/python3 bench/run.py [--quick]    (--quick: ~10x smaller data)
"""
import argparse
import ctypes
import ctypes.util
import io
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from arlib import npy_bytes, record_bytes  # noqa: E402

BUILD = os.path.join(ROOT, "build")
EXT = os.path.join(BUILD, "arrayrecord")
NOOP = os.path.join(BUILD, "bench_noop")
MEMCPY = os.path.join(BUILD, "bench_memcpy")
PRAGMAS = ("PRAGMA mmap_size = 4000000000",)

# --- SQLite's C API ----------------------------------------------------------

lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
vp, cp, ip = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
for name, res, args in [
    ("sqlite3_open", ip, [cp, ctypes.POINTER(vp)]), ("sqlite3_close", ip, [vp]),
    ("sqlite3_enable_load_extension", ip, [vp, ip]),
    ("sqlite3_load_extension", ip, [vp, cp, cp, ctypes.POINTER(cp)]),
    ("sqlite3_exec", ip, [vp, cp, vp, vp, vp]), ("sqlite3_errmsg", cp, [vp]),
    ("sqlite3_prepare_v2", ip, [vp, cp, ip, ctypes.POINTER(vp), vp]),
    ("sqlite3_bind_blob64", ip, [vp, ip, vp, ctypes.c_uint64, vp]),
    ("sqlite3_step", ip, [vp]), ("sqlite3_finalize", ip, [vp]),
    ("sqlite3_column_type", ip, [vp, ip]), ("sqlite3_column_bytes", ip, [vp, ip]),
    ("sqlite3_column_double", ctypes.c_double, [vp, ip]),
]:
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = res, args
SQLITE_ROW, SQLITE_DONE = 100, 101


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
        """Run a statement to completion; BLOB arguments are bound without a
        copy (SQLITE_STATIC). Returns the first column of the last row: a
        BLOB's length, or a number."""
        st = vp()
        if lib.sqlite3_prepare_v2(self.db, sql.encode(), -1, ctypes.byref(st), None):
            raise RuntimeError(lib.sqlite3_errmsg(self.db).decode())
        keep = [ctypes.c_char_p(b) for b in blobs]
        for i, b in enumerate(blobs):
            lib.sqlite3_bind_blob64(st, i + 1, ctypes.cast(keep[i], vp), len(b), None)
        out = None
        while True:
            rc = lib.sqlite3_step(st)
            if rc == SQLITE_ROW:
                t = lib.sqlite3_column_type(st, 0)
                out = lib.sqlite3_column_bytes(st, 0) if t == 4 else lib.sqlite3_column_double(st, 0)
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


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def verdict(ok):
    return "meets" if ok else "MISSES"


def report(label, value, target, ok):
    print(f"  {label:<58} {value:>10}   target {target:<8} {verdict(ok)}")


# --- Flower's way, in Python ---------------------------------------------------

def varint(b, pos):
    v = shift = 0
    while True:
        c = b[pos]
        pos += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, pos
        shift += 7


def parse_record(blob):
    """ArrayRecord -> [(key, npy bytes)], copying each data field out as
    protobuf's ParseFromString does (one copy per array)."""
    mv, pos, items = memoryview(blob), 0, []
    while pos < len(blob):
        _, pos = varint(blob, pos)
        n, pos = varint(blob, pos)
        end, key, data = pos + n, "", b""
        while pos < end:
            tag, pos = varint(blob, pos)
            m, pos = varint(blob, pos)
            if tag >> 3 == 1:
                key = bytes(mv[pos:pos + m]).decode()
            else:  # the Array message
                aend, q = pos + m, pos
                while q < aend:
                    atag, q = varint(blob, q)
                    k, q = varint(blob, q)
                    if atag >> 3 == 4:
                        data = bytes(mv[q:q + k])
                    q += k
            pos += m
        items.append((key, data))
    return items


def flower_fedavg(db_path):
    """Fetch the BLOBs row by row, parse, np.load each array, accumulate
    value * w (Flower's aggregate_arrayrecords), np.save the result."""
    con = sqlite3.connect(db_path)
    for p in PRAGMAS:
        con.execute(p)
    total = con.execute("SELECT sum(n) FROM updates").fetchone()[0]
    acc = {}
    for blob, n in con.execute("SELECT rec, n FROM updates"):
        w = n / total
        for key, data in parse_record(blob):
            value = np.load(io.BytesIO(data), allow_pickle=False)
            if key not in acc:
                acc[key] = value * w
            else:
                acc[key] += value * w
    con.close()
    return record_bytes(list(acc.items()))


# --- the benchmarks -------------------------------------------------------------

def bench_fedavg(tmp, quick, bw_warm, bw_fresh):
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
    print(f"== FedAvg: 10 client records of a {nbytes / 10 / 1e6:.1f} MB float32 model "
          f"({nbytes / 1e6:.0f} MB read; SQLite page_size 65536, mmap)")
    db = Db(path)
    t_sql = best(lambda: db.run("SELECT ar_mean(rec, n) FROM updates"), 3)
    t_noop = best(lambda: db.run("SELECT sum(noop(rec)) FROM updates"), 3)
    db.close()
    pycon = sqlite3.connect(path)
    for p in PRAGMAS:
        pycon.execute(p)
    pycon.enable_load_extension(True)
    pycon.load_extension(EXT)
    t_py_sql = best(lambda: pycon.execute("SELECT ar_mean(rec, n) FROM updates").fetchone()[0], 2)
    ours = pycon.execute("SELECT ar_mean(rec, n) FROM updates").fetchone()[0]
    pycon.close()
    t_flower = best(lambda: flower_fedavg(path), 2)
    theirs = flower_fedavg(path)
    check = sqlite3.connect(":memory:")
    check.enable_load_extension(True)
    check.load_extension(EXT)
    agree = check.execute("SELECT ar_allclose(?, ?, 1e-5, 1e-6)", (ours, theirs)).fetchone()[0]
    check.close()
    gbps = nbytes / t_sql / 1e9
    print(f"  SELECT ar_mean(rec, n) FROM updates (C API)                 {t_sql:8.3f} s  {gbps:6.2f} GB/s")
    print(f"  the same through Python's sqlite3 (result copied into bytes) {t_py_sql:7.3f} s")
    print(f"  Flower's way in Python (rows, parse, np.load, value*w, np.save) {t_flower:5.3f} s  "
          f"(results agree: {'yes' if agree else 'NO'})")
    print(f"  SQLite reading the BLOBs alone (SELECT sum(noop(rec)))       {t_noop:8.3f} s  {nbytes / t_noop / 1e9:6.2f} GB/s")
    print("  (the SQL time includes SQLite's own work: reading the BLOBs, above, and deep-copying the\n"
          f"   aggregate's {nbytes / 10 / 1e6:.0f} MB result into the output row, which its VM does for every aggregate)")
    report("speed-up over Flower's way", f"{t_flower / t_sql:.1f}x", ">= 10x", t_flower / t_sql >= 10)
    report("bytes read per second / memcpy (warm destination)", f"{gbps / bw_warm:.0%}", ">= 40%", gbps / bw_warm >= 0.4)
    print(f"  {'(bytes read per second / memcpy into a fresh destination)':<58} {gbps / bw_fresh:>10.0%}")
    return t_flower / t_sql, gbps / bw_warm


ELEMENTWISE = {"npy_add", "npy_sub", "npy_mul", "npy_scale", "npy_cast", "npy_reshape"}


def bench_array_math(quick):
    n = 2_500_000 if quick else 25_000_000
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n, dtype=np.float32)
    b = a * np.float32(1 + 1e-6)  # close to a everywhere: allclose must read it all
    f = np.asfortranarray(a.reshape(n // 1000, 1000))
    A, B, F = npy_bytes(a), npy_bytes(b), npy_bytes(f)
    print(f"== Array math on {n * 4 / 1e6:.0f} MB float32 arrays: NumPy time / SQL time (>= 1 means as fast as NumPy)")
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
    ratios = {}
    for call, numpy_fn, blobs in cases:
        expr = call.split("  [")[0].replace("(a, b)", "(?1, ?2)").replace("(a,", "(?1,").replace("(a)", "(?1)").replace("(f,", "(?1,")
        # length() of a .npy result: with constant (bound) arguments SQLite
        # evaluates a deterministic function once and then deep-copies its
        # result into the output row, a copy NumPy's `a + b` does not make.
        sql = "SELECT " + (f"length({expr})" if call.split("(")[0] in ELEMENTWISE else expr)
        t_sql = best(lambda: db.run(sql, *blobs), 5)
        t_np = best(numpy_fn, 5)
        ratios[call] = t_np / t_sql
        report(f"{call:<38} SQL {t_sql * 1e3:7.1f} ms  NumPy {t_np * 1e3:7.1f} ms", f"{t_np / t_sql:.2f}x", ">= 1x",
               t_np / t_sql >= 1)
    db.close()
    return ratios


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
    print(f"== Metadata over {nrec} records of {len(rec) / 1e6:.2f} MB ({arrays} arrays each): time / no-op C function")
    db = Db(path)
    db.run("SELECT sum(noop(rec)) FROM t")  # warm the page cache
    t_noop = best(lambda: db.run("SELECT sum(noop(rec)) FROM t"), 5)
    print(f"  {'SELECT sum(noop(rec)) FROM t':<58} {t_noop * 1e3:8.1f} ms")
    out = {}
    for label, sql in [
        ("SELECT key, dtype, shape FROM t, array_record(t.rec)",
         "SELECT sum(length(a.key) + length(a.dtype) + length(a.shape)) FROM t, array_record(t.rec) a"),
        ("ar_len(rec)", "SELECT sum(ar_len(rec)) FROM t"),
        ("ar_keys(rec)", "SELECT sum(length(ar_keys(rec))) FROM t"),
    ]:
        t = best(lambda: db.run(sql), 5)
        out[label] = t / t_noop
        report(f"{label:<52} {t * 1e3:6.1f} ms", f"{t / t_noop:.2f}x", "<= 1.2x", t / t_noop <= 1.2)
    db.close()
    return out


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
    big = record_bytes([(f"k{i}", np.frombuffer(x[128:], dtype=np.float32)) for i, x in enumerate(arrays)])
    new = arrays[0]
    print(f"== Building records: {total / 1e6:.0f} MB of arrays")
    db = Db(path)
    t_agg = best(lambda: db.run("SELECT length(ar_agg(key, npy)) FROM arrays"), 3)
    t_set = best(lambda: db.run("SELECT length(ar_set(?1, 'k5', ?2))", big, new), 3)
    db.close()
    res = {}
    for label, t, n in (("ar_agg(key, npy) building the record from a table", t_agg, total),
                        ("ar_set(rec, key, npy) into the record (bound BLOB)", t_set, len(big))):
        gbps = n / t / 1e9
        res[label] = gbps / bw_warm
        report(f"{label:<50} {t * 1e3:6.1f} ms", f"{gbps / bw_warm:.0%}", ">= 50%", gbps / bw_warm >= 0.5)
        print(f"  {'  (' + f'{gbps:.2f} GB/s; against memcpy into a fresh destination' + ')':<58} {gbps / bw_fresh:>10.0%}")
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="about 10x smaller data")
    args = ap.parse_args()
    size_mb = 10 if args.quick else 100
    warm, fresh = (float(x) for x in subprocess.check_output([MEMCPY, str(size_mb)]).split())
    print(f"== memcpy of {size_mb} MB on one core: {warm:.2f} GB/s into a mapped buffer, "
          f"{fresh:.2f} GB/s into a fresh one (page faults included)")
    tmp = tempfile.mkdtemp(prefix="arrayrecord-bench-", dir="/tmp")
    try:
        bench_fedavg(tmp, args.quick, warm, fresh)
        bench_array_math(args.quick)
        bench_metadata(tmp, args.quick)
        bench_building(tmp, args.quick, warm, fresh)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
