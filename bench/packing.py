# SPDX-License-Identifier: Apache-2.0
"""`make bench`'s packed-records part (bench/run.py --only packing).

Speed: packing and unpacking a ~25 MB float32 record in C alone, one core
(build/bench_pack, bench/pack.c): a client's model after a round of real
training (the NumPy MLP of tests/python/realruns.py, widened to 6.4 M
parameters) against the global model it started from; unpacked into memory
already mapped and, beside it, into fresh memory; memcpy of the record as
the floor of any copy.

Through SQL: FedAvg (ar_mean) of one round's replies stored raw and stored
packed, the global model each reply was packed against stored packed too
and unpacked for every row as a view would unpack it (the connection's
cache of unpacked records serves all but the first).

Size: two real federated runs on scikit-learn's digits (realruns.mlp_run:
6 clients, 20 rounds; realruns.cnn_run: a CNN with BatchNorm, 10 non-IID
clients, 20 rounds), every record as Flower's bytes: each client's reply
packed against the global model it started from, each global model against
the one before it (round 1's against the initial model), by ar_pack through
SQL; every BLOB unpacked and compared bit for bit. Printed: stored / raw for
the whole run, per byte plane (the float32 arrays' planes, most significant
first, frame tables included), and the entropy floor: the order-0 entropy
of each plane of each array's residual (the zigzag difference from its
base array, or the array itself without one; 0 for an array equal to its
base), plus the records' bytes outside their payloads, as stored. Then the
lossy option (float16 updates) on the replies, global models kept exact,
with the largest error; and what global models cost packed against a
keyframe (a model kept without a base every K rounds), the layout that
bounds a chain of bases to one step (docs/formats.md).
"""

import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import realruns  # noqa: E402
from arlib import connect, record_bytes  # noqa: E402
from turns import in_turns  # noqa: E402  (bench/turns.py)

BENCH_PACK = os.path.join(ROOT, "build", "bench_pack")
PLANES = 4  # the float32 arrays' planes


def record(state):
    return record_bytes(list(state.items()))


# --- speed --------------------------------------------------------------------------


def bench_speed(tmp, quick, report, note):
    hidden = 800 if quick else 2500
    t = time.time()
    r = list(realruns.mlp_run(rounds=2, clients=2, epochs=1, sizes=(64, hidden, hidden, 10)))[-1]
    base, rec = record(r.base), record(r.replies[0][2])
    mb = len(rec) / 1e6
    print(f"== Packed records, C alone, one core: a {mb:.1f} MB float32 client model against its global model")
    note(f"""A NumPy MLP (64-{hidden}-{hidden}-10) trained on digits for real ({time.time() - t:.0f} s), a client's
            model of round 2 against the global model it started from; bench/pack.c, best of 7: packing
            (ar_pack's work: object id and hash of the base, modes, planes, zstd level 3, the hash of
            what it unpacks to), unpacking into memory already mapped and into fresh memory (a new
            malloc each time), each output compared with the record. memcpy: the same bytes copied.""")
    pb, pr = os.path.join(tmp, "pack_base.pb"), os.path.join(tmp, "pack_rec.pb")
    with open(pb, "wb") as f:
        f.write(base)
    with open(pr, "wb") as f:
        f.write(rec)
    out = dict(line.split() for line in subprocess.check_output([BENCH_PACK, pb, pr]).decode().splitlines())
    v = {k: float(x) for k, x in out.items()}
    rows = (
        ("pack against its base", v["encode_base"]),
        ("pack without a base", v["encode_alone"]),
        ("unpack, into mapped memory", v["decode_warm"]),
        (f"unpack, into mapped memory, {v['threads']:.0f} threads", v["decode_warm_threads"]),
        ("unpack, into fresh memory", v["decode_fresh"]),
        ("unpack a BLOB packed without a base, mapped", v["decode_alone_warm"]),
        ("memcpy of the record, into mapped memory", v["memcpy_warm"]),
    )
    for label, mbs in rows:
        print(f"  {label:<52}{mbs / 1000:6.2f} GB/s")
    print(f"  stored / raw: {v['ratio_base']:.3f} against its base, {v['ratio_alone']:.3f} without")
    bench_round(tmp, base, rec, quick, note, report)
    report(
        f"packed: unpack {mb:.0f} MB float32, one core, into mapped memory",
        f"{v['decode_warm'] / 1000:.2f} GB/s",
        ">= 1 GB/s",
        v["decode_warm"] >= 1000,
    )
    report(
        f"packed: pack {mb:.0f} MB float32 against its base, one core",
        f"{v['encode_base']:.0f} MB/s",
        ">= 200 MB/s",
        v["encode_base"] >= 200,
    )


def bench_round(tmp, base, reply, quick, note, report):
    """FedAvg of one round's train replies read through client_updates, in a
    database of the raw store and one of the packed store (sql/schema.sql:
    the replies packed against the global model of the round before, that
    one on its own), as LoggingStrategy writes them."""
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    from sqlite_arrayrecord.store import PACKED, RAW, schema_script

    clients = 4 if quick else 10
    sizes, result = {}, {}
    cons = {}
    for store in (RAW, PACKED):
        path = os.path.join(tmp, f"round_{store}.db")
        con = connect(path)
        con.executescript("PRAGMA journal_mode = OFF;" + schema_script(store))
        con.execute("INSERT INTO runs(run, name) VALUES (1, 'bench')")
        con.executemany("INSERT INTO clients(client) VALUES (?)", [(f"c{i}",) for i in range(clients)])
        con.execute("INSERT INTO rounds(run, round) VALUES (1, 0), (1, 1), (1, 2)")
        # round 1's global model is the one the round-2 clients started from
        con.execute("INSERT INTO global_models VALUES (1, 0, ?)", (base,))
        con.execute("INSERT INTO global_models VALUES (1, 1, ?)", (reply,))
        for i in range(clients):  # distinct replies: the client's model with a little noise of its own
            con.execute(
                "INSERT INTO client_updates(run, round, client, num_examples, rec) "
                "VALUES (1, 2, ?, ?, ar_add_noise(?, 1e-6, ?))",
                (f"c{i}", 10 + i, reply, i + 1),
            )
        con.commit()
        cons[store] = con
        sizes[store] = con.execute(
            "SELECT sum(length(content)) FROM " + ("replies" if store == RAW else "reply_store")
        ).fetchone()[0]
    q = "SELECT length(ar_mean(rec, num_examples)) FROM client_updates WHERE run = 1 AND round = 2"
    for store, con in cons.items():
        result[store] = con.execute(q).fetchone()
    assert result[RAW] == result[PACKED]
    t_raw, t_packed = in_turns([lambda: cons[RAW].execute(q).fetchone(), lambda: cons[PACKED].execute(q).fetchone()], 3)
    for con in cons.values():
        con.close()
    print(
        f"== Packed store: FedAvg of {clients} replies of {len(reply) / 1e6:.1f} MB read through client_updates, "
        f"raw and packed stores"
    )
    note("""ar_mean(rec, num_examples) over client_updates of one round (rd_array_record of each reply;
            in the packed store, rd_unpack against the round's base, the global model of the round
            before, itself unpacked from its row: the connection's cache of unpacked records serves it
            after the first row). One connection per store, in turns, best of 3; unpacking on the
            pool's threads.""")
    print(f"  {'raw store':<52}{t_raw:7.3f} s   {sizes[RAW] / 1e6:7.1f} MB stored")
    print(f"  {'packed store':<52}{t_packed:7.3f} s   {sizes[PACKED] / 1e6:7.1f} MB stored")
    ratio = t_packed / t_raw
    report("packed store: FedAvg of a round / raw store", f"{ratio:.2f}x", "<= 1.50x", ratio <= 1.5)


# --- sizes ----------------------------------------------------------------------------


def _entropy_bytes(planes):
    """Order-0 entropy of each row of planes (uint8, shape (k, n)), in bytes."""
    out = []
    for p in planes:
        if p.size == 0:
            out.append(0.0)
            continue
        c = np.bincount(p, minlength=256)
        q = c[c > 0] / p.size
        out.append(float(-(q * np.log2(q)).sum() * p.size / 8))
    return out


def residual_planes(x, b):
    """The byte planes (most significant first) of x's residual against b
    (zigzag difference of the bit patterns), or of x itself (b None)."""
    w = x.dtype.itemsize  # the runs' arrays are native-endian and C-ordered
    u = np.ascontiguousarray(x).reshape(-1).view("u%d" % w)
    if b is not None:
        d = (u - np.ascontiguousarray(b).reshape(-1).view(u.dtype)).view("i%d" % w)
        u = ((d << 1) ^ (d >> (8 * w - 1))).view(u.dtype)
    return np.stack([((u >> (8 * (w - 1 - k))) & 0xFF).astype(np.uint8) for k in range(w)])


class Tally:
    """stored / raw and the floor, over a run's records."""

    def __init__(self):
        self.raw = self.stored = self.floor = 0
        self.plane_stored = np.zeros(PLANES)
        self.plane_floor = np.zeros(PLANES)
        self.plane_raw = 0
        self.records = 0

    def add(self, con, rec, base_rec, state, base_state, options=None):
        (p,) = con.execute("SELECT ar_pack(?, ?, ?)", (rec, base_rec, options)).fetchone()
        (back, info) = con.execute("SELECT ar_unpack(?1, ?2), ar_pack_info(?1)", (p, base_rec)).fetchone()
        info = json.loads(info)
        if options is None:
            assert back == rec, "a packed record did not unpack to its bytes"
        self.records += 1
        self.raw += len(rec)
        self.stored += len(p)
        payload = 0
        for a in info["arrays"]:
            x = state[a["key"]]
            b = base_state.get(a["key"]) if base_state is not None else None
            payload += x.nbytes
            if b is not None and (b.dtype != x.dtype or b.shape != x.shape):
                b = None
            if b is not None and x.tobytes() == b.tobytes():
                continue  # same: nothing to store
            ent = _entropy_bytes(residual_planes(x, b))
            self.floor += min(sum(ent), x.nbytes)
            if x.dtype == np.float32:
                self.plane_raw += x.nbytes
                self.plane_floor += ent
                planes = a["planes"] or [0] * PLANES
                self.plane_stored += planes if a["mode"] not in ("raw", "lossy") else [x.nbytes / PLANES] * PLANES
        self.floor += len(rec) - payload  # the records' framing and headers, as they are
        return p, info


def _ratio(a, b):
    return a / b if b else 0.0


def bench_run(name, short, rounds_iter, con, report, note, targets):
    lossless, lossy, globals_chain = Tally(), Tally(), Tally()
    keyframe = {5: Tally(), 10: Tally()}
    max_error = 0.0
    t = time.time()
    models = {}
    for r in rounds_iter:
        base_rec = record(r.base)
        models[r.round - 1] = (r.base, base_rec)
        for _, _, state in r.replies:
            rec = record(state)
            lossless.add(con, rec, base_rec, state, r.base)
            _, info = lossy.add(con, rec, base_rec, state, r.base, '{"lossy": "float16"}')
            max_error = max(max_error, info["max_error"])
        g = record(r.global_model)
        models[r.round] = (r.global_model, g)
        # as the packed store keeps it: on its own (the chained figure below is for comparison)
        for tally in (lossless, lossy):
            tally.add(con, g, None, r.global_model, None)
        globals_chain.add(con, g, base_rec, r.global_model, r.base)
        for k, tally in keyframe.items():
            key_round = (r.round // k) * k  # the last keyframe at or before this round
            if key_round == r.round:
                tally.add(con, g, None, r.global_model, None)
            else:
                ks, krec = models[key_round]
                tally.add(con, g, krec, r.global_model, ks)
    secs = time.time() - t
    n = lossless.records
    print(f"== Packed records: {name}, {n} records, {lossless.raw / 1e6:.1f} MB of Flower's bytes ({secs:.0f} s)")
    print(f"  {'whole run, lossless':<56}{_ratio(lossless.stored, lossless.raw):7.3f}")
    print(f"  {'entropy floor of the residuals (order 0)':<56}{_ratio(lossless.floor, lossless.raw):7.3f}")
    print(f"  {'stored / floor':<56}{_ratio(lossless.stored, lossless.floor):7.3f}")
    for k in range(PLANES):
        print(
            f"  {'float32 plane %d (%s)' % (k, ('sign, exponent', 'exponent, mantissa', 'mantissa', 'low mantissa')[k]):<40}"
            f"stored {_ratio(lossless.plane_stored[k], lossless.plane_raw / PLANES):6.3f}"
            f"   floor {_ratio(lossless.plane_floor[k], lossless.plane_raw / PLANES):6.3f}  of the plane's bytes"
        )
    print(
        f"  {'global models only, each against the one before':<56}{_ratio(globals_chain.stored, globals_chain.raw):7.3f}"
    )
    for k, tally in keyframe.items():
        print(f"  {'global models, against a keyframe every %d rounds' % k:<56}{_ratio(tally.stored, tally.raw):7.3f}")
    lossy_ratio = _ratio(lossy.stored, lossy.raw)
    print(f"  {'lossy float16 replies, exact global models':<56}{lossy_ratio:7.3f}   largest error {max_error:.2e}")
    ratio = _ratio(lossless.stored, lossless.raw)
    report(f"packed, {short}: stored / raw, lossless", f"{ratio:.3f}", f"<= {targets[0]:.2f}", ratio <= targets[0])
    if targets[1]:
        gap = _ratio(lossless.stored, lossless.floor)
        report(f"packed, {short}: stored / entropy floor", f"{gap:.3f}", "<= 1.05", gap <= 1.05)
    report(f"packed, {short}: stored / raw, lossy replies", f"{lossy_ratio:.3f}", "<= 0.45", lossy_ratio <= 0.45)


def bench(tmp, quick, report, note):
    bench_speed(tmp, quick, report, note)
    rounds = 5 if quick else 20
    con = connect()
    note("""Real training on scikit-learn's digits (tests/python/realruns.py, seed 0), packed as the
            packed store of sql/schema.sql packs it: every reply against the global model it started
            from, every global model on its own (and, for comparison, against the one before).""")
    mlp = realruns.mlp_run(rounds=rounds)
    bench_run(f"NumPy MLP, 6 clients, {rounds} rounds", "MLP run", mlp, con, report, note, (0.70, False))
    try:
        import torch  # noqa: F401
    except ImportError:
        print(f"== Packed records: the CNN run needs PyTorch: {realruns.TORCH_INSTALL}")
        return
    bench_run(
        f"CNN with BatchNorm, 10 non-IID clients, {rounds} rounds",
        "CNN run",
        realruns.cnn_run(rounds=rounds),
        con,
        report,
        note,
        (0.72, True),
    )
