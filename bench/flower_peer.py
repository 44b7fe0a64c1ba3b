# SPDX-License-Identifier: Apache-2.0
"""Flower's side of `make bench`: Flower's own strategy code, run in
build/flwr (flwr 1.42 with NumPy 2 and its bundled OpenBLAS), on the rows of
the same SQLite table the SQL side reads.

bench/run.py starts this script once per environment as a long-lived worker
(build/flwr/bin/python bench/flower_peer.py) and talks to it in JSON lines,
so that its runs alternate with the SQL side's (in turns) in the driver. The
worker answers each request with its own timing, taken inside this process:

    -> {"op": "fedavg", "db": PATH, "table": "updates", "parts": false, "out": PATH or null}
    <- {"time": SECONDS, "parts": {...}}

Each op fetches the table's `rec, n` rows with Python's sqlite3 module
(`PRAGMA mmap_size` as on the SQL side), parses every row with Flower's
serde (`ProtoArrayRecord.FromString`, `array_record_from_proto`), wraps it
as a reply's RecordDict (`{"arrays": ArrayRecord, "metrics":
MetricRecord({"num-examples": n})}`), aggregates with the functions
Flower's strategies call in `aggregate_train`, and serializes the result
with serde (`array_record_to_proto(...).SerializeToString()`):

    fedavg    strategy_utils.aggregate_arrayrecords (FedAvg)
    median    FedMedian's lines: np.median(np.stack(layers), axis=0) per key
    trimmed   FedTrimmedAvg's lines: fedtrimmedavg.trim_mean(np.stack(layers), beta)
    krum      multikrum.select_multikrum(contents, f, k), then aggregate_arrayrecords
    bulyan    Bulyan's lines: select_multikrum(contents, f, theta), to_numpy_ndarrays,
              np.median, bulyan.aggregate_n_closest_weights

With "parts": true the reply also splits the time: fetch, parse, the
aggregate, serialize; and, in a second pass of the aggregate's own lines over
freshly parsed records, in its order, its copies (Array.numpy(), np.stack,
np.concatenate) apart from its arithmetic (the products and sums, the Gram
matrix, the median, the partition).
"out" writes the result bytes to a file for the driver's agreement check.

Without flwr (build/flwr missing: `make flower-env`), the same ops run
bench/flower_way.py's copy of Flower's code, and the greeting says so.
"""

import json
import os
import sqlite3
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

try:
    import flwr
    from flwr.app import ArrayRecord, MetricRecord, RecordDict
    from flwr.common import serde
    from flwr.proto.recorddict_pb2 import ArrayRecord as ProtoArrayRecord
    from flwr.serverapp.strategy.bulyan import aggregate_n_closest_weights
    from flwr.serverapp.strategy.fedtrimmedavg import trim_mean
    from flwr.serverapp.strategy.multikrum import select_multikrum
    from flwr.serverapp.strategy.strategy_utils import aggregate_arrayrecords

    IMPL = f"Flower's own code: flwr {flwr.__version__}, NumPy {np.__version__} ({sys.executable})"
except ImportError:
    flwr = None
    sys.path.insert(0, HERE)
    import flower_way

    IMPL = (
        f"bench/flower_way.py, a copy of Flower's code (build/flwr missing: make flower-env), "
        f"NumPy {np.__version__} ({sys.executable})"
    )

WEIGHT = "num-examples"
clock = time.perf_counter


def fetch_parse(db, table):
    """Each row of the table as a reply's RecordDict, parsed with Flower's
    serde as it is fetched (Flower holds every reply's content, not every
    reply's bytes): (contents, seconds fetching, seconds parsing)."""
    con = sqlite3.connect(db)
    con.execute("PRAGMA mmap_size = 4000000000")
    contents, t_parse, t0 = [], 0.0, clock()
    for blob, n in con.execute(f"SELECT rec, n FROM {table}"):
        t = clock()
        contents.append(
            RecordDict(
                {
                    "arrays": serde.array_record_from_proto(ProtoArrayRecord.FromString(blob)),
                    "metrics": MetricRecord({WEIGHT: int(n)}),
                }
            )
        )
        t_parse += clock() - t
        del blob
    con.close()
    return contents, clock() - t0 - t_parse, t_parse


def serialize(record):
    return serde.array_record_to_proto(record).SerializeToString()


def keys_of(contents):
    return list(contents[0]["arrays"].keys())


def layers_of(contents, key):
    # FedMedian / FedTrimmedAvg: ArrayRecord.pop(key).numpy() of every reply
    return [c["arrays"].pop(key).numpy() for c in contents]


def aggregate(op, contents, req):
    """The op on parsed contents, as Flower's strategy does it: an ArrayRecord."""
    from flwr.app import Array

    if op == "fedavg":
        return aggregate_arrayrecords(contents, WEIGHT)
    if op == "median":
        out = ArrayRecord()
        for key in keys_of(contents):
            out[key] = Array(np.asarray(np.median(np.stack(layers_of(contents, key)), axis=0)))
        return out
    if op == "trimmed":
        out = ArrayRecord()
        for key in keys_of(contents):
            out[key] = Array(np.asarray(trim_mean(np.stack(layers_of(contents, key)), req["beta"])))
        return out
    if op == "krum":
        return aggregate_arrayrecords(select_multikrum(contents, req["f"], req.get("k", 1)), WEIGHT)
    if op == "bulyan":
        f = req["f"]
        theta = len(contents) - 2 * f
        beta = theta - 2 * f
        selected = select_multikrum(contents, f, theta)
        keys = keys_of(selected)
        nd = [c["arrays"].to_numpy_ndarrays(keep_input=False) for c in selected]
        median = [np.median(arr, axis=0) for arr in zip(*nd, strict=True)]
        agg = aggregate_n_closest_weights(median, nd, beta)
        return ArrayRecord(dict(zip(keys, (Array(np.asarray(a)) for a in agg), strict=True)))
    raise ValueError(f"unknown op {op}")


def timed_distances(contents, t):
    """select_multikrum's compute_distances (loads, concatenate, stack, then
    the Gram form), its copies timed apart from its arithmetic, the clock
    started at t: (distance matrix, copy seconds, arithmetic seconds)."""
    flat = np.stack([np.concatenate(c["arrays"].to_numpy_ndarrays(), axis=None).ravel() for c in contents], axis=0)
    copy = clock() - t
    t = clock()
    norms = np.square(flat).sum(axis=1)
    dist = norms[:, None] + norms[None, :] - 2 * flat @ flat.T
    return dist, copy, clock() - t


def split(op, contents, req):
    """The aggregate again on freshly parsed contents, its copies timed apart
    from its arithmetic: (copy seconds, arithmetic seconds)."""
    copy = arith = 0.0
    t = clock()
    if op in ("fedavg", "krum"):
        if op == "krum":
            dist, copy, arith = timed_distances(contents, t)
            chosen = select_multikrum_from(dist, req["f"], req.get("k", 1))
            contents = [contents[i] for i in chosen]
            t = clock()
        total = sum(float(c["metrics"][WEIGHT]) for c in contents)
        acc = {}
        for c in contents:  # aggregate_arrayrecords' loop, each line timed
            w = c["metrics"][WEIGHT] / total
            for k, value in c["arrays"].items():
                t = clock()
                v = value.numpy()
                copy += clock() - t
                t = clock()
                if k not in acc:
                    acc[k] = v * w
                else:
                    acc[k] += v * w
                arith += clock() - t
                del v
    elif op in ("median", "trimmed"):
        for key in keys_of(contents):
            t = clock()
            stacked = np.stack(layers_of(contents, key))
            copy += clock() - t
            t = clock()
            np.median(stacked, axis=0) if op == "median" else trim_mean(stacked, req["beta"])
            arith += clock() - t
    elif op == "bulyan":
        f = req["f"]
        theta = len(contents) - 2 * f
        beta = theta - 2 * f
        dist, copy, arith = timed_distances(contents, t)
        chosen = select_multikrum_from(dist, f, theta)
        t = clock()
        nd = [contents[i]["arrays"].to_numpy_ndarrays(keep_input=False) for i in chosen]
        copy += clock() - t
        t = clock()
        median = [np.median(arr, axis=0) for arr in zip(*nd, strict=True)]
        arith += clock() - t
        for layer_id, ref in enumerate(median):  # aggregate_n_closest_weights' lines
            t = clock()
            stack = np.stack([w[layer_id] for w in nd])
            copy += clock() - t
            t = clock()
            idx = np.argpartition(np.abs(stack - ref), beta - 1, axis=0)[:beta]
            np.mean(np.take_along_axis(stack, idx, axis=0), axis=0)
            arith += clock() - t
    return copy, arith


def select_multikrum_from(dist, f, k):
    """select_multikrum's choice from a distance matrix (its own lines)."""
    n = len(dist)
    num_closest = max(1, n - f - 2)
    closest = [np.argsort(d)[1 : num_closest + 1].tolist() for d in dist]
    scores = [np.sum(dist[i, closest[i]]) for i in range(n)]
    return list(np.argsort(scores)[:k])


# --- without flwr: bench/flower_way.py -------------------------------------------------


def fallback(op, con_path, req):
    con = sqlite3.connect(con_path)
    con.execute("PRAGMA mmap_size = 4000000000")
    table = req["table"]
    try:
        if op == "fedavg":
            rows = flower_way._table(con, table)
            return flower_way._serialize(flower_way._aggregate_arrayrecords(rows, sum(n for _, n in rows)))
        if op == "krum":
            return flower_way.krum(con, req["f"], req.get("k", 1), table)
        if op == "bulyan":
            return flower_way.bulyan(con, req["f"], table)
        rows = flower_way._table(con, table)
        keys = [k for k, _ in rows[0][0]]
        nd = [flower_way._numpy(items) for items, _ in rows]
        out = {}
        for i, key in enumerate(keys):
            stacked = np.stack([r[i] for r in nd])
            out[key] = np.median(stacked, axis=0) if op == "median" else _trim_mean(stacked, req["beta"])
        return flower_way._serialize(out)
    finally:
        con.close()


def _trim_mean(array, cut):  # fedtrimmedavg.trim_mean
    nobs = array.shape[0]
    low = int(cut * nobs)
    high = nobs - low
    atmp = np.partition(array, (low, high - 1), 0)
    return np.mean(atmp[low:high], axis=0)


# --- the worker --------------------------------------------------------------------------


def serve(req):
    op, db, table = req["op"], req["db"], req["table"]
    parts = {}
    if flwr is None:
        t0 = clock()
        out = fallback(op, db, req)
        total = clock() - t0
    else:
        t0 = clock()
        contents, t_fetch, t_parse = fetch_parse(db, table)
        t2 = clock()
        record = aggregate(op, contents, req)
        t3 = clock()
        out = serialize(record)
        t4 = clock()
        total = t4 - t0
        parts = {"fetch": t_fetch, "parse": t_parse, "aggregate": t3 - t2, "serialize": t4 - t3}
        del contents, record
        if req.get("parts"):
            copy, arith = split(op, fetch_parse(db, table)[0], req)
            parts.update(copy=copy, arith=arith)
    if req.get("out"):
        with open(req["out"], "wb") as fh:
            fh.write(out)
    return {"time": total, "parts": parts}


def main():
    out = sys.stdout
    out.write(json.dumps({"impl": IMPL, "flwr": bool(flwr)}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = serve(json.loads(line))
        except Exception as e:  # the driver prints it and carries on
            reply = {"error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
