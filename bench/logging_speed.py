# SPDX-License-Identifier: Apache-2.0
"""How much LoggingStrategy costs: rounds of REPLIES replies of MB megabytes
each (default 10 x 100 MB), run by Flower's own FedAvg.start over a stub
Grid, wrapped in sqlite_arrayrecord.flower.LoggingStrategy.

    build/flwr/bin/python bench/logging_speed.py [--quick] [--rounds N] [--replies N] [--mb MB] [--dir DIR]

The logger runs twice: into the raw store (LoggingStrategy(packed=False),
against which the floors below are measured) and into the packed store (its
default), whose time per round is printed beside the raw one's.

"logger" is the time LoggingStrategy spends in its own code per round (the
'log' entry of rounds.timings plus its COMMIT with the fsync): encoding every
reply, instruction, global model and strategy state, the INSERTs and the
commit; its throughput is the bytes it stored that round over that time.
The encoding of RecordDicts to Flower's serde bytes is counted in it (the
logger encodes ArrayRecords itself, byte-identical to Flower's serde, with
one copy of the data); it is also timed alone, with Flower's own serde
(recorddict_to_proto(content).SerializeToString()) for comparison.

"SQLite floor" writes the very BLOBs the logger stored that round (read
back from its database), one INSERT each into a table of a new database with
the same page size, journal mode (WAL) and synchronous = FULL, and commits
at the end of the round; "file" writes the same bytes to a plain file and
fsyncs it once per round. Best of the rounds after the first for each.
Not part of bench/run.py.
"""

import argparse
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time

import numpy as np
from flwr.app import Array, ArrayRecord, MetricRecord, RecordDict
from flwr.common import serde
from flwr.serverapp.strategy import FedAvg

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "flower"))
from stub_grid import StubGrid, quiet_flower, server_identity  # noqa: E402

from sqlite_arrayrecord.flower import LoggingStrategy  # noqa: E402
from sqlite_arrayrecord.flower._wire import rd_bytes as _rd_bytes  # noqa: E402


def model(mb):
    """A model of `mb` megabytes of float32 in four arrays."""
    n = int(mb * 1e6 / 4)
    sizes = [n // 2, n // 4, n // 8, n - n // 2 - n // 4 - n // 8]
    rng = np.random.default_rng(0)
    return ArrayRecord({f"layer{i}": Array(rng.standard_normal(s, dtype=np.float32)) for i, s in enumerate(sizes)})


def answer(node, msg):
    got = msg.content["arrays"]
    arrays = {k: Array(a.numpy() + np.float32(node * 1e-3)) for k, a in got.items()}
    return RecordDict({"arrays": ArrayRecord(arrays), "metrics": MetricRecord({"num-examples": node})})


def floor_sqlite(blobs_per_round, page_size, path):
    con = sqlite3.connect(path, isolation_level=None)
    con.execute(f"PRAGMA page_size = {page_size}")
    con.execute("PRAGMA journal_mode = WAL")
    con.execute("PRAGMA synchronous = FULL")
    con.execute("CREATE TABLE t(round INTEGER, pos INTEGER, content BLOB)")
    times = []
    for rnd, blobs in blobs_per_round.items():
        t = time.perf_counter()
        con.execute("BEGIN IMMEDIATE")
        for i, b in enumerate(blobs):
            con.execute("INSERT INTO t VALUES (?, ?, ?)", (rnd, i, b))
        con.execute("COMMIT")
        times.append(time.perf_counter() - t)
    con.close()
    return times


def floor_file(blobs_per_round, path):
    times = []
    with open(path, "wb") as f:
        for blobs in blobs_per_round.values():
            t = time.perf_counter()
            for b in blobs:
                f.write(b)
            f.flush()
            os.fsync(f.fileno())
            times.append(time.perf_counter() - t)
    return times


def run_logger(args, nodes, db, packed):
    """LoggingStrategy over FedAvg for args.rounds rounds into db (the packed
    store or the raw one): per round after round 0, the logger's seconds,
    the bytes it stored (raw store: Flower's bytes; packed: the packed rows)
    and, for the raw store, the BLOBs it stored; and the page size."""
    grid = StubGrid(run_id=1, nodes=nodes)
    strategy = FedAvg(fraction_evaluate=0.0, min_train_nodes=args.replies, min_available_nodes=args.replies)
    random.seed(0)
    with server_identity(grid), quiet_flower():
        logging = LoggingStrategy(strategy, db, "bench", packed=packed)
        logging.start(grid=grid, initial_arrays=model(args.mb), num_rounds=args.rounds)
    con = sqlite3.connect(db)
    page_size = con.execute("PRAGMA page_size").fetchone()[0]
    logger, stored, blobs = [], [], {}
    for rnd, timings in con.execute("SELECT round, timings FROM rounds WHERE round > 0 ORDER BY round"):
        logger.append(json.loads(timings)["log"] + logging._commit_seconds[rnd])
        if packed:  # the store's own rows (this connection has no extension: the tables, not the views)
            sql = (
                "SELECT content FROM reply_store WHERE round = ?1 UNION ALL SELECT content FROM instructions "
                "WHERE round = ?1 UNION ALL SELECT rec FROM model_store WHERE round = ?1 UNION ALL "
                "SELECT state FROM strategy_state WHERE round = ?1"
            )
        else:
            sql = (
                "SELECT content FROM replies WHERE round = ?1 UNION ALL SELECT content FROM instructions "
                "WHERE round = ?1 UNION ALL SELECT rec FROM global_models WHERE round = ?1 UNION ALL "
                "SELECT state FROM strategy_state WHERE round = ?1"
            )
        rows = [b for (b,) in con.execute(sql, (rnd,))]
        if not packed:
            blobs[rnd] = rows
        stored.append(sum(len(b) for b in rows))
    con.close()
    return logger, stored, blobs, page_size


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 rounds of 4 replies x 5 MB")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--replies", type=int, default=10)
    ap.add_argument("--mb", type=float, default=100.0)
    ap.add_argument("--dir", default=None, help="where the databases go (default: a temporary directory)")
    args = ap.parse_args(argv)
    if args.quick:
        args.rounds, args.replies, args.mb = 3, 4, 5.0
    tmp = tempfile.mkdtemp(dir=args.dir)
    try:
        nodes = {100 + i: answer for i in range(args.replies)}
        logger, stored, blobs, page_size = run_logger(args, nodes, os.path.join(tmp, "log.db"), packed=False)
        packed_logger, packed_stored, _, _ = run_logger(args, nodes, os.path.join(tmp, "packed.db"), packed=True)
        # the encoding alone, the logger's and Flower's serde, over replies of the same size
        init = model(args.mb)
        enc_t, serde_t = [], []
        for _ in range(args.rounds):
            contents = [answer(n, type("Msg", (), {"content": {"arrays": init}})) for n in nodes]
            t = time.perf_counter()
            for c in contents:
                _rd_bytes(c)
            enc_t.append(time.perf_counter() - t)
            t = time.perf_counter()
            for c in contents:
                serde.recorddict_to_proto(c).SerializeToString()
            serde_t.append(time.perf_counter() - t)
            del contents
        sq = floor_sqlite(blobs, page_size, os.path.join(tmp, "floor.db"))
        fl = floor_file(blobs, os.path.join(tmp, "floor.bin"))
        skip = 1 if args.rounds > 1 else 0  # the first round warms the caches

        def best(ts):
            return min(ts[skip:])

        i = min(range(skip, len(logger)), key=lambda k: logger[k])
        nbytes = stored[i]
        mbs = lambda t: nbytes / t / 1e6  # noqa: E731
        print(
            f"{args.rounds} rounds of {args.replies} replies x {args.mb:g} MB; {nbytes / 1e6:.1f} MB stored "
            f"per round (replies, instructions, global model, state); page size {page_size}, WAL, synchronous FULL"
        )
        print(f"logger (encoding counted):  {best(logger):.3f} s/round  {mbs(best(logger)):8.1f} MB/s")
        print(f"SQLite floor:               {best(sq):.3f} s/round  {mbs(best(sq)):8.1f} MB/s")
        print(f"file write + fsync:         {best(fl):.3f} s/round  {mbs(best(fl)):8.1f} MB/s")
        print(
            f"encoding the replies alone: {best(enc_t):.3f} s/round (the logger's), {best(serde_t):.3f} s/round "
            "(Flower's serde)"
        )
        replies = args.replies
        print(
            f"replies per second: logger {replies / best(logger):,.0f}, SQLite floor {replies / best(sq):,.0f}; "
            f"packed store: logger {replies / best(packed_logger):,.0f}"
        )
        j = min(range(skip, len(packed_logger)), key=lambda k: packed_logger[k])
        print(
            f"packed store: {best(packed_logger):.3f} s/round, {packed_stored[j] / 1e6:.1f} MB stored per round "
            f"({packed_stored[j] / nbytes:.3f} of the raw store's); packed / raw logger time: "
            f"{best(packed_logger) / best(logger):.2f}x"
        )
        print(f"logger / SQLite floor: {best(sq) / best(logger):.2f}x; logger / file: {best(fl) / best(logger):.2f}x")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
