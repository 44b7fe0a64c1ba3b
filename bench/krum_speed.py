# SPDX-License-Identifier: Apache-2.0
"""Krum, MultiKrum and Bulyan: ar_krum / ar_bulyan against Flower's own code
and against SQLite merely reading the same rows, side by side in one process.

  build/flwr/bin/python bench/krum_speed.py [--old OLD.so] [--rows 20] [--mb 25]
                                            [--repeat 3] [--only krum,multikrum,bulyan]

`make flower-env` makes build/flwr (flwr 1.42, NumPy 2 and its OpenBLAS); the
peer is Flower's own functions, the ones its strategies call in aggregate_train:
select_multikrum + aggregate_arrayrecords (flwr/serverapp/strategy/multikrum.py,
strategy_utils.py) for Krum (k = 1) and MultiKrum (k = 3), and Bulyan's
selection, np.median and aggregate_n_closest_weights (bulyan.py), over RecordDicts
already in memory (what aggregate_train is handed: no parsing is timed on
Flower's side). Flower's compute_distances is also timed in two parts: the copy
(to_numpy_ndarrays, np.concatenate, np.stack) and the arithmetic (norms and the
float32 Gram matrix through BLAS).

Ours: `SELECT length(ar_krum(rec, n, f, k)) FROM robust` on a database in /tmp
(page_size 65536, mmap), the records being Flower's ArrayRecord bytes of
`--rows` clients of a `--mb` MB float32 model (two keys). The floor is SQLite
reading the same rows: `SELECT sum(length(substr(rec, 1, 1))) FROM robust`.
With --old, a second build of the extension (say, one built from main) is
loaded into its own connection and timed in the same turns, so the machine's
load hits old and new alike. Every side runs once to warm up, then all sides
run in turns (A B C ... A B C ...) `--repeat` times, and each side's best time
is kept. The load average is printed before and after.

Checks (printed, never asserted): ar_krum_scores ranks the rows as Flower's
select_multikrum picks them (the selections agree), and ar_krum's and
ar_bulyan's results are close to Flower's (np.allclose, rtol 1e-6), the old
build's bit for bit equal to the new one's.
"""

import argparse
import json
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


def connect(path, ext):
    con = sqlite3.connect(path)
    con.execute("PRAGMA mmap_size = 4000000000")
    con.enable_load_extension(True)
    con.load_extension(ext)  # entry point from the file name: sqlite3_arrayrecord_init
    con.enable_load_extension(False)
    return con


def make_data(path, rows, numel, seed=1):
    """rows clients around one model (distinct Krum scores), two attackers;
    returns Flower's RecordDicts of the same arrays."""
    from flwr.app import Array, ArrayRecord, MetricRecord, RecordDict

    rng = np.random.default_rng(seed)
    base = rng.standard_normal(numel, dtype=np.float32)
    con = sqlite3.connect(path)
    con.execute("PRAGMA page_size = 65536")
    con.execute("CREATE TABLE robust(id INTEGER PRIMARY KEY, rec BLOB, n INTEGER)")
    contents = []
    half = numel // 2
    for c in range(rows):
        x = base + np.float32(0.01 * (1 + c)) * rng.standard_normal(numel, dtype=np.float32)
        if c in (3, 11):
            x = x + np.float32(5)
        items = [("fc.weight", x[:half].reshape(-1, 250)), ("fc.bias", x[half:])]
        con.execute("INSERT INTO robust(rec, n) VALUES (?, ?)", (record_bytes(items), 10 + c))
        contents.append(
            RecordDict(
                {
                    "arrays": ArrayRecord({k: Array(v) for k, v in items}),
                    "metrics": MetricRecord({"num-examples": 10 + c}),
                }
            )
        )
    con.commit()
    con.close()
    return contents


# --- Flower's side ------------------------------------------------------------------


def flower_krum(contents, f, k):
    from flwr.serverapp.strategy.multikrum import select_multikrum
    from flwr.serverapp.strategy.strategy_utils import aggregate_arrayrecords

    picked = select_multikrum(contents, num_malicious_nodes=f, num_nodes_to_select=k)
    return aggregate_arrayrecords(picked, "num-examples"), picked


def flower_bulyan(contents, f):
    """Bulyan.aggregate_train's arrays (bulyan.py), its own functions."""
    from flwr.app import Array, ArrayRecord
    from flwr.serverapp.strategy.bulyan import aggregate_n_closest_weights
    from flwr.serverapp.strategy.multikrum import select_multikrum

    theta = len(contents) - 2 * f
    beta = theta - 2 * f
    selected = select_multikrum(contents, f, theta)
    keys = list(selected[0]["arrays"].keys())
    nd = [c["arrays"].to_numpy_ndarrays(keep_input=True) for c in selected]
    median = [np.median(arr, axis=0) for arr in zip(*nd, strict=True)]
    agg = aggregate_n_closest_weights(median, nd, beta)
    return ArrayRecord(dict(zip(keys, (Array(np.asarray(a)) for a in agg), strict=True)))


def flower_distance_parts(contents):
    """compute_distances in two timed parts: the copy, the arithmetic."""
    recs = [c["arrays"] for c in contents]
    t0 = time.perf_counter()
    flat_w = np.stack([np.concatenate(r.to_numpy_ndarrays(), axis=None).ravel() for r in recs], axis=0)
    t1 = time.perf_counter()
    norms = np.square(flat_w).sum(axis=1)
    _ = norms[:, None] + norms[None, :] - 2 * flat_w @ flat_w.T
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1


def ar_numpy(ar):
    return {k: v.numpy() for k, v in ar.items()}


def blob_numpy(con, blob):
    keys = json.loads(con.execute("SELECT ar_keys(?)", (blob,)).fetchone()[0])
    return {k: load_npy(con.execute("SELECT ar_get(?, ?)", (blob, k)).fetchone()[0]) for k in keys}


def close(a, b):
    """True, or how many elements differ (np.isclose, rtol 1e-6)."""
    if list(a) != list(b):
        return False
    n = sum(int(np.count_nonzero(~np.isclose(a[k], b[k], rtol=1e-6, atol=1e-7))) for k in a)
    return True if n == 0 else f"all but {n} elements"


# --- timing -------------------------------------------------------------------------


def in_turns(sides, repeat):
    """{name: best seconds}: one warm-up run each, then turns."""
    for _, fn in sides:
        fn()
    best = {name: float("inf") for name, _ in sides}
    for _ in range(repeat):
        for name, fn in sides:
            t = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--old", help="a second build of the extension, named arrayrecord.so in another folder (say, main's)"
    )
    ap.add_argument("--rows", type=int, default=20)
    ap.add_argument("--mb", type=float, default=25)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="krum,multikrum,bulyan")
    ap.add_argument("--no-flower", action="store_true", help="time the extension(s) and the floor only")
    args = ap.parse_args()
    only = args.only.split(",")
    f = 2
    numel = int(args.mb * 1e6) // 4
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        path = os.path.join(tmp, "robust.db")
        contents = make_data(path, args.rows, numel)
        new = connect(path, EXT)
        old = connect(path, os.path.abspath(args.old)) if args.old else None
        floor = sqlite3.connect(path)
        floor.execute("PRAGMA mmap_size = 4000000000")
        print(f"{args.rows} clients x {numel * 4 / 1e6:.1f} MB float32, f = {f}; best of {args.repeat}, in turns")

        def q(con, sql):
            return lambda: con.execute(sql).fetchone()

        jobs = []
        if "krum" in only:
            jobs.append(
                (
                    "Krum (k = 1)",
                    f"SELECT length(ar_krum(rec, n, {f}, 1)) FROM robust",
                    lambda: flower_krum(contents, f, 1),
                )
            )
        if "multikrum" in only:
            jobs.append(
                (
                    "MultiKrum (k = 3)",
                    f"SELECT length(ar_krum(rec, n, {f}, 3)) FROM robust",
                    lambda: flower_krum(contents, f, 3),
                )
            )
        if "bulyan" in only:
            jobs.append(
                ("Bulyan", f"SELECT length(ar_bulyan(rec, {f})) FROM robust", lambda: flower_bulyan(contents, f))
            )
        t_floor = None
        for label, sql, fl in jobs:
            sides = [("floor", q(floor, "SELECT sum(length(substr(rec, 1, 1))) FROM robust")), ("new", q(new, sql))]
            if old:
                sides.append(("old", q(old, sql)))
            if not args.no_flower:
                sides.append(("flower", fl))
            best = in_turns(sides, args.repeat)
            t_floor = best["floor"] if t_floor is None else min(t_floor, best["floor"])
            line = f"{label:<18} new {best['new']:6.3f} s"
            if old:
                line += f"   old {best['old']:6.3f} s (old/new {best['old'] / best['new']:5.2f}x)"
            if not args.no_flower:
                line += f"   Flower {best['flower']:6.3f} s (Flower/new {best['flower'] / best['new']:5.2f}x"
                if old:
                    line += f", Flower/old {best['flower'] / best['old']:5.2f}x"
                line += ")"
            line += f"   floor {best['floor']:6.3f} s (new/floor {best['new'] / best['floor']:5.2f}x"
            if old:
                line += f", old/floor {best['old'] / best['floor']:5.2f}x"
            print(line + ")", flush=True)
        # the checks
        scores = json.loads(new.execute(f"SELECT ar_krum_scores(rec, {f}) FROM robust").fetchone()[0])
        order = [i for i, _ in sorted(enumerate(scores), key=lambda p: p[1])]
        if not args.no_flower:
            from flwr.serverapp.strategy.multikrum import select_multikrum

            ids = {id(c): i for i, c in enumerate(contents)}
            for k in (1, 3, args.rows - 2 * f):
                picked = [ids[id(c)] for c in select_multikrum(contents, f, k)]
                print(f"selection k = {k:<3} Flower {picked}  ours {order[:k]}  agree: {picked == order[:k]}")
            copy_t, arith_t = min(flower_distance_parts(contents) for _ in range(2))
            print(
                f"Flower's compute_distances: copy (to_numpy_ndarrays, concatenate, stack) {copy_t:.3f} s, "
                f"arithmetic (norms, float32 Gram matrix) {arith_t:.3f} s"
            )
            for label, sql, fl in jobs:
                ours = new.execute(sql.replace("length(", "(", 1)).fetchone()[0]
                theirs = fl()
                theirs = ar_numpy(theirs[0] if isinstance(theirs, tuple) else theirs)
                agree = close(blob_numpy(new, ours), theirs)
                why = ""
                if label == "Bulyan" and isinstance(agree, str):
                    why = " (ties for the beta-th closest value, broken by np.argpartition in its own order)"
                print(f"{label}: result close to Flower's: {agree}{why}")
        if old:
            for label, sql, _ in jobs:
                s = sql.replace("length(", "(", 1)
                same = new.execute(s).fetchone()[0] == old.execute(s).fetchone()[0]
                print(f"{label}: old and new results the same bytes: {same}")
            so = old.execute(f"SELECT ar_krum_scores(rec, {f}) FROM robust").fetchone()[0]
            sn = new.execute(f"SELECT ar_krum_scores(rec, {f}) FROM robust").fetchone()[0]
            print(f"Krum scores old and new the same: {so == sn}")
        for c in (new, old, floor):
            if c:
                c.close()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
