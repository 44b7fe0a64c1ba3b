# SPDX-License-Identifier: Apache-2.0
"""Keep model checkpoints in SQLite: save, list, load back into NumPy, diff.

A checkpoint is one row holding the model as a Flower ArrayRecord BLOB.
Listing uses the array_record table (no array data is read); loading uses
ar_get and np.load; the diff uses ar_sub and the ar_stats table.

    /usr/bin/python3 examples/checkpoints.py --db checkpoints.db
"""

import argparse
import os
import sys

import numpy as np

try:
    import sqlite_arrayrecord as sar
except ImportError:  # not installed: the package's source in this checkout, with build/arrayrecord.so from make
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
    import sqlite_arrayrecord as sar

SCHEMA = """
CREATE TABLE IF NOT EXISTS checkpoints (
  name    TEXT PRIMARY KEY,
  step    INTEGER NOT NULL,
  saved   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  rec     BLOB NOT NULL CHECK (ar_valid(rec))
);
"""


def save(con, name, step, model):
    rec = sar.to_record(model)
    con.execute("INSERT OR REPLACE INTO checkpoints(name, step, rec) VALUES (?, ?, ?)", (name, step, rec))
    con.commit()


def load(con, name):
    (rec,) = con.execute("SELECT rec FROM checkpoints WHERE name = ?", (name,)).fetchone()
    return sar.from_record(rec)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default="checkpoints.db")
    args = ap.parse_args(argv)
    con = sar.connect(args.db)
    con.executescript(SCHEMA)

    # A "training run": a small CNN-shaped model updated a little each step,
    # with a float16 copy kept of the last checkpoint to save space.
    rng = np.random.default_rng(0)
    model = {
        "conv1.weight": rng.standard_normal((8, 3, 3, 3)).astype(np.float32),
        "conv1.bias": np.zeros(8, np.float32),
        "head.weight": rng.standard_normal((10, 8)).astype(np.float32),
        "head.bias": np.zeros(10, np.float32),
        "step": np.array(0, np.int64),
    }
    for step in (100, 200, 300):
        for key in ("conv1.weight", "head.weight"):
            model[key] = model[key] + rng.standard_normal(model[key].shape).astype(np.float32) * 0.01
        model["head.bias"] = model["head.bias"] + 0.05
        model["step"] = np.array(step, np.int64)
        save(con, f"step-{step}", step, model)
    con.execute(
        "INSERT OR REPLACE INTO checkpoints(name, step, rec) "
        "SELECT 'step-300-f16', step, ar_cast(rec, 'float16') FROM checkpoints WHERE name = 'step-300'"
    )
    con.commit()

    print("== checkpoints")
    for name, step, n, params, size in con.execute(
        "SELECT name, step, ar_len(rec), ar_numel(rec), length(rec) FROM checkpoints ORDER BY step, name"
    ):
        print(f"{name:14} step {step:4}  {n} arrays  {params:5} parameters  {size:6} bytes")

    print("\n== arrays of step-300 (metadata only, no array data read)")
    for key, dtype, shape, nbytes in con.execute(
        "SELECT a.key, a.dtype, a.shape, a.nbytes FROM checkpoints c, array_record(c.rec) a "
        "WHERE c.name = 'step-300' ORDER BY a.position"
    ):
        print(f"{key:14} {dtype:8} {shape:12} {nbytes:6} bytes")

    print("\n== load step-300 back into NumPy")
    loaded = load(con, "step-300")
    for key, value in loaded.items():
        assert np.array_equal(value, model[key]) and value.dtype == model[key].dtype, key
    print("all arrays equal to the in-memory model:", ", ".join(f"{k}{list(v.shape)}" for k, v in loaded.items()))

    print("\n== diff step-100 -> step-300 (ar_stats of ar_sub)")
    for key, l2, lo, hi in con.execute("""
            SELECT s.key, s.l2, s.min, s.max
            FROM checkpoints a, checkpoints b, ar_stats(ar_sub(b.rec, a.rec)) s
            WHERE a.name = 'step-100' AND b.name = 'step-300'"""):
        print(f"{key:14} |diff| = {l2:8.4f}   change in [{lo:.4f}, {hi:.4f}]")
    (same,) = con.execute("""SELECT ar_allclose(a.rec, ar_cast(b.rec, 'float32'), 1e-3, 1e-3)
                            FROM checkpoints a, checkpoints b
                            WHERE a.name = 'step-300' AND b.name = 'step-300-f16'""").fetchone()
    print(f"\nstep-300 and its float16 copy agree within 1e-3: {'yes' if same else 'no'}")
    con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
