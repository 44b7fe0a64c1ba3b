# SPDX-License-Identifier: Apache-2.0
"""Median and trimmed mean over a fleet bigger than memory: 64 clients x a
32 MB float32 model (2 GB of updates; 8 arrays of 4 MB each) in a file
database, under PRAGMA hard_heap_limit = 512 MB.

The per-array route (npy_agg_median / npy_agg_trimmed_mean over the
array_record rows of one key, key by key in a correlated subquery) holds one
array of each client at a time (64 x 4 MB). (A GROUP BY key over the same
join would sort every array through a temporary B-tree first: with 4 MB
values SQLite's sorter then holds far more than that.) The whole-record route (ar_median(rec)) would hold every
record (2 GB) and must fail under the limit, and does. Each key's result is
checked against NumPy's median / trimmed mean of the same arrays.

    /usr/bin/python3 bench/at_scale.py [CLIENTS MODEL_MB ARRAYS HEAP_MB]
    make bench-scale
"""

import ctypes
import ctypes.util
import math
import os
import sqlite3
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
from arlib import load_npy, record_bytes  # noqa: E402

EXT = os.path.join(ROOT, "build", "arrayrecord")

# The heap high-water mark of the SQLite library Python's sqlite3 uses.
_lib = ctypes.CDLL(ctypes.util.find_library("sqlite3"))
_lib.sqlite3_memory_highwater.restype = ctypes.c_int64
_lib.sqlite3_memory_highwater.argtypes = [ctypes.c_int]


def main():
    clients, model_mb, narrays, heap_mb = (int(a) for a in (sys.argv[1:] or (64, 32, 8, 512)))
    numel = model_mb * 1024 * 1024 // 4 // narrays
    keys = [f"layer{i}.weight" for i in range(narrays)]
    with tempfile.TemporaryDirectory(prefix="arrayrecord-scale-", dir="/tmp") as d:
        path = os.path.join(d, "fleet.db")
        con = sqlite3.connect(path)
        con.enable_load_extension(True)
        con.load_extension(EXT)
        con.execute("PRAGMA page_size = 65536")
        con.execute("CREATE TABLE updates(client INTEGER PRIMARY KEY, rec BLOB)")
        t = time.time()
        rng = np.random.default_rng(1)
        for c in range(clients):
            con.execute(
                "INSERT INTO updates VALUES (?, ?)",
                (c, record_bytes([(k, rng.standard_normal(numel, dtype=np.float32)) for k in keys])),
            )
        con.commit()
        size = os.path.getsize(path)
        print(
            f"{clients} clients x {model_mb} MB float32 ({narrays} arrays of {numel * 4 / 2**20:.2f} MiB): "
            f"{size / 2**30:.2f} GiB database, written in {time.time() - t:.1f} s"
        )
        con.execute(f"PRAGMA hard_heap_limit = {heap_mb * 1024 * 1024}")
        con.execute(f"PRAGMA cache_size = -{heap_mb * 1024 // 8}")  # pages: an eighth of the limit
        results, fails = {}, 0
        for name, expr in (
            ("median", "npy_agg_median(a.data)"),
            ("trimmed mean 0.1", "npy_agg_trimmed_mean(a.data, 0.1)"),
        ):
            t = time.time()
            _lib.sqlite3_memory_highwater(1)
            rec = con.execute(
                f"SELECT ar_agg(k.key, (SELECT {expr} FROM updates, array_record(updates.rec) a WHERE a.key = k.key)) "
                "FROM (SELECT j.value AS key FROM json_each((SELECT ar_keys(rec) FROM updates LIMIT 1)) j "
                "ORDER BY j.key) k"
            ).fetchone()[0]
            print(
                f"per-array {name:<17} under a {heap_mb} MiB heap limit: {time.time() - t:6.1f} s, "
                f"heap high-water {_lib.sqlite3_memory_highwater(0) / 2**20:.0f} MiB, result {len(rec) / 2**20:.0f} MiB"
            )
            results[name] = rec
        for name, sql in (
            ("ar_median(rec)", "SELECT length(ar_median(rec)) FROM updates"),
            ("ar_trimmed_mean(rec, 0.1)", "SELECT length(ar_trimmed_mean(rec, 0.1)) FROM updates"),
        ):
            t = time.time()
            try:
                con.execute(sql).fetchone()
                print(f"whole-record {name}: finished under the limit")
            except (sqlite3.Error, MemoryError) as e:  # SQLITE_NOMEM comes as MemoryError
                print(
                    f"whole-record {name} under the same limit: fails after {time.time() - t:.1f} s: {type(e).__name__} {e}"
                )
                fails += 1
        con.execute("PRAGMA hard_heap_limit = 0")
        t = time.time()
        cut = int(math.floor(0.1 * clients))
        worst = 0.0
        for k in keys:
            stack = np.stack(
                [load_npy(r) for (r,) in con.execute("SELECT ar_get(rec, ?) FROM updates ORDER BY client", (k,))]
            )
            med = load_npy(con.execute("SELECT ar_get(?, ?)", (results["median"], k)).fetchone()[0])
            want_med = np.median(stack, axis=0)
            assert med.dtype == want_med.dtype and np.array_equal(med, want_med), k
            srt = np.sort(stack.astype(np.float64), axis=0)
            want_tm = srt[cut : clients - cut].mean(axis=0)
            tm = load_npy(con.execute("SELECT ar_get(?, ?)", (results["trimmed mean 0.1"], k)).fetchone()[0])
            worst = max(
                worst,
                float(
                    np.max(
                        np.abs(tm.astype(np.float64) - want_tm)
                        / np.spacing(np.abs(want_tm).astype(tm.dtype)).astype(np.float64)
                    )
                ),
            )
            del stack, srt
        print(
            f"checked against NumPy in {time.time() - t:.1f} s: medians bit-identical to np.median; "
            f"trimmed means within {worst:.2f} ulp of NumPy's sort-and-mean"
        )
        con.close()
        print(
            "OK: the per-array route finished under the limit and the whole-record route did not"
            if fails == 2
            else "NOTE: the whole-record route fit under this limit (a fleet this small needs no per-array route)"
        )


if __name__ == "__main__":
    main()
