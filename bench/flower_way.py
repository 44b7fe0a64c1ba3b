# SPDX-License-Identifier: Apache-2.0
"""FedAvg the way Flower does it, in Python, for `make bench` to compare with
`SELECT ar_mean(rec, n) FROM updates`.

Flower's `aggregate_arrayrecords` (flwr.serverapp.strategy.strategy_utils)
takes the ArrayRecords it received, and for each record and weight factor
w / sum(w) does

    aggregated[key] = value.numpy() * weight       (first record)
    aggregated[key] += value.numpy() * weight      (the others)

where `Array.numpy()` is `np.load(BytesIO(self.data), allow_pickle=False)`;
it then returns `ArrayRecord({k: Array(np.asarray(v)) ...})`, and
`Array(ndarray)` stores `np.save(BytesIO, ndarray, allow_pickle=False)`.
Records travel as the protobuf message `flwr.proto.recorddict_pb2.ArrayRecord`,
which Flower parses and serializes with the protobuf runtime. Here the
records come from SQLite, fetched row by row.

The protobuf runtime: when `google.protobuf` is importable (Debian package
python3-protobuf, a C++ implementation, as Flower's upb one is native
code) the message classes are built from a descriptor of Flower's schema and
used for parsing and serializing, exactly as Flower's serde does. Without
it, a stand-in does the same job with no more work than protobuf: the parser
copies each `data` field out once (protobuf copies it into the message and
again into a bytes object when read), the encoder writes the record in one
join (protobuf copies each payload into the message, then out). The stand-in
therefore errs in Flower's favour.
"""

import io
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "python"))
from arlib import read_varint as _varint
from arlib import varint as varint_bytes  # noqa: E402

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
except ImportError:  # the stand-in below
    descriptor_pb2 = None


# --- the protobuf runtime, on Flower's schema ------------------------------------


def _protobuf_classes():
    """(ArrayRecord, ArrayRecord.Item, Array) message classes of
    flwr/proto/recorddict.proto, or None without the protobuf runtime."""
    if descriptor_pb2 is None:
        return None
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="bench_recorddict.proto", package="bench", syntax="proto3")
    arr = fdp.message_type.add(name="Array")
    for name, num, typ, label in (
        ("dtype", 1, F.TYPE_STRING, F.LABEL_OPTIONAL),
        ("shape", 2, F.TYPE_INT32, F.LABEL_REPEATED),
        ("stype", 3, F.TYPE_STRING, F.LABEL_OPTIONAL),
        ("data", 4, F.TYPE_BYTES, F.LABEL_OPTIONAL),
    ):
        arr.field.add(name=name, number=num, type=typ, label=label)
    rec = fdp.message_type.add(name="ArrayRecord")
    item = rec.nested_type.add(name="Item")
    item.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    item.field.add(name="value", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=".bench.Array")
    rec.field.add(
        name="items", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED, type_name=".bench.ArrayRecord.Item"
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    factory = message_factory.MessageFactory(pool)
    get = getattr(factory, "GetPrototype", None) or message_factory.GetMessageClass
    return tuple(
        get(pool.FindMessageTypeByName(n)) for n in ("bench.ArrayRecord", "bench.ArrayRecord.Item", "bench.Array")
    )


_PB = _protobuf_classes()


def runtime():
    """Which protobuf runtime parses and serializes."""
    if _PB is None:
        return "a stand-in parser/encoder (install python3-protobuf for the real runtime)"
    from google.protobuf.internal import api_implementation

    return f"protobuf {api_implementation.Type()} runtime"


# --- the stand-in ------------------------------------------------------------------


def _parse_standin(blob):
    """ArrayRecord -> [(key, dtype, shape, stype, data)], copying each data
    field out once."""
    mv, pos, items = memoryview(blob), 0, []
    while pos < len(blob):
        _, pos = _varint(blob, pos)
        n, pos = _varint(blob, pos)
        end, key, fields = pos + n, "", {}
        while pos < end:
            tag, pos = _varint(blob, pos)
            m, pos = _varint(blob, pos)
            if tag >> 3 == 1:
                key = bytes(mv[pos : pos + m]).decode()
            else:  # the Array message
                aend, q = pos + m, pos
                while q < aend:
                    atag, q = _varint(blob, q)
                    k, q = _varint(blob, q)
                    fields[atag >> 3] = bytes(mv[q : q + k])
                    q += k
            pos += m
        items.append((key, fields.get(4, b"")))
    return items


def _encode_standin(arrays):
    """[(key, dtype, shape, stype, data)] -> ArrayRecord bytes, in one join."""
    parts = []
    for key, dtype, shape, stype, data in arrays:
        shp = b"".join(varint_bytes(d) for d in shape)
        head = bytearray()
        for num, payload in ((1, dtype.encode()), (2, shp), (3, stype.encode())):
            if payload:
                head += bytes([num << 3 | 2]) + varint_bytes(len(payload)) + payload
        head += bytes([4 << 3 | 2]) + varint_bytes(len(data))
        array_len = len(head) + len(data)
        kb = key.encode()
        item = bytearray()
        if kb:
            item += bytes([1 << 3 | 2]) + varint_bytes(len(kb)) + kb
        item += bytes([2 << 3 | 2]) + varint_bytes(array_len)
        frame = bytes([1 << 3 | 2]) + varint_bytes(len(item) + array_len)
        parts += (bytes(frame), bytes(item), bytes(head), data)
    return b"".join(parts)


# --- Flower's way --------------------------------------------------------------------


def _records(con):
    """Each row's (key, npy bytes) list, parsed as Flower's serde would."""
    for blob, n in con.execute("SELECT rec, n FROM updates"):
        if _PB is None:
            yield _parse_standin(blob), n
        else:
            rec = _PB[0].FromString(blob)
            yield [(it.key, it.value.data) for it in rec.items], n


def _serialize(aggregated):
    """ArrayRecord({k: Array(np.asarray(v))}) to bytes."""
    arrays = []
    for key, value in aggregated.items():
        v = np.asarray(value)
        buf = io.BytesIO()
        np.save(buf, v, allow_pickle=False)
        arrays.append((key, str(v.dtype), list(v.shape), "numpy.ndarray", buf.getvalue()))
    if _PB is None:
        return _encode_standin(arrays)
    ArrayRecord, Item, Array = _PB
    return ArrayRecord(
        items=[Item(key=k, value=Array(dtype=d, shape=s, stype=t, data=b)) for k, d, s, t, b in arrays]
    ).SerializeToString()


def fedavg(con):
    """FedAvg of the `updates` table on an open sqlite3 connection, the way
    Flower does it; returns the ArrayRecord bytes."""
    total = con.execute("SELECT sum(n) FROM updates").fetchone()[0]
    return _serialize(_aggregate_arrayrecords(_records(con), total))


def _aggregate_arrayrecords(rows, total):
    """aggregate_arrayrecords: each (items, n) row's arrays, np.load-ed and
    weighted by n / total, summed in row order."""
    aggregated = {}
    for items, n in rows:
        weight = n / total
        for key, data in items:
            value = np.load(io.BytesIO(data), allow_pickle=False)
            if key not in aggregated:
                aggregated[key] = value * weight
            else:
                aggregated[key] += value * weight
    return aggregated


# --- Krum / MultiKrum and Bulyan (flwr/serverapp/strategy/multikrum.py, bulyan.py) ---


def _table(con, table):
    rows = []
    for blob, n in con.execute(f"SELECT rec, n FROM {table}"):
        items = (
            _parse_standin(blob) if _PB is None else [(it.key, it.value.data) for it in _PB[0].FromString(blob).items]
        )
        rows.append((items, n))
    return rows


def _numpy(items):
    return [np.load(io.BytesIO(data), allow_pickle=False) for _, data in items]


def _select_multikrum(rows, f, k):
    """select_multikrum with compute_distances, as Flower."""
    flat_w = np.stack([np.concatenate(_numpy(items), axis=None).ravel() for items, _ in rows], axis=0)
    norms = np.square(flat_w).sum(axis=1)
    distance_matrix = norms[:, None] + norms[None, :] - 2 * flat_w @ flat_w.T
    num_closest = max(1, len(rows) - f - 2)
    closest = [np.argsort(d)[1 : num_closest + 1].tolist() for d in distance_matrix]
    scores = [np.sum(distance_matrix[i, closest[i]]) for i in range(len(distance_matrix))]
    return [rows[i] for i in np.argsort(scores)[:k]]


def krum(con, f, k, table="updates"):
    """MultiKrum.aggregate_train's arrays: selection, then aggregate_arrayrecords."""
    selected = _select_multikrum(_table(con, table), f, k)
    total = sum(n for _, n in selected)
    return _serialize(_aggregate_arrayrecords(selected, total))


def bulyan(con, f, table="updates"):
    """Bulyan.aggregate_train's arrays."""
    rows = _table(con, table)
    theta = len(rows) - 2 * f
    beta = theta - 2 * f
    selected = _select_multikrum(rows, f, theta)
    keys = [k for k, _ in selected[0][0]]
    nd = [_numpy(items) for items, _ in selected]
    median = [np.median(arr, axis=0) for arr in zip(*nd)]
    out = []
    for layer_id, ref_layer in enumerate(median):
        layer_stack = np.stack([w[layer_id] for w in nd])
        diffs = np.abs(layer_stack - ref_layer)
        idx = np.argpartition(diffs, beta - 1, axis=0)[:beta]
        out.append(np.mean(np.take_along_axis(layer_stack, idx, axis=0), axis=0))
    return _serialize(dict(zip(keys, out)))
