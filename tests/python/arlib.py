"""Helpers for the Python tests: a connection with the extension loaded,
.npy bytes from NumPy and back, and an independent encoder of Flower's
ArrayRecord protobuf (written from the .proto, not from our C code), so
tests can check our bytes against a second implementation as well as
against the vectors made by Flower itself.
"""
import io
import json
import os
import sqlite3

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
EXT = os.environ.get("AR_EXTENSION", os.path.join(ROOT, "build", "arrayrecord"))
if not os.path.isabs(EXT):
    EXT = os.path.join(ROOT, EXT)


def connect(path=":memory:"):
    """A sqlite3 connection with the extension loaded."""
    con = sqlite3.connect(path)
    con.enable_load_extension(True)
    con.load_extension(EXT)
    con.enable_load_extension(False)
    return con


def manifest():
    with open(os.path.join(DATA, "MANIFEST.json")) as f:
        return json.load(f)


def data(rel):
    with open(os.path.join(DATA, rel), "rb") as f:
        return f.read()


def npy_bytes(arr):
    """What Flower's Array(ndarray) stores: np.save without pickle."""
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def load_npy(blob):
    return np.load(io.BytesIO(blob), allow_pickle=False)


# --- Flower ArrayRecord protobuf, from flwr/proto/recorddict.proto ---------

def _varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num, payload):
    return _varint(num << 3 | 2) + _varint(len(payload)) + payload


def array_message(dtype, shape, stype, data):
    """Array { string dtype = 1; repeated int32 shape = 2; string stype = 3; bytes data = 4; }"""
    out = b""
    if dtype:
        out += _field(1, dtype.encode())
    if shape:
        out += _field(2, b"".join(_varint(d) for d in shape))
    if stype:
        out += _field(3, stype.encode())
    if data:
        out += _field(4, data)
    return out


def record_bytes(items):
    """items: list of (key, ndarray) or (key, (dtype, shape, stype, data))."""
    out = b""
    for key, value in items:
        if isinstance(value, np.ndarray):
            value = (str(value.dtype), list(value.shape), "numpy.ndarray", npy_bytes(value))
        item = (_field(1, key.encode()) if key else b"") + _field(2, array_message(*value))
        out += _field(1, item)
    return out


def count_bytes(items):
    """Flower's ArrayRecord.count_bytes() for record_bytes-style items."""
    total = 0
    for key, value in items:
        data = npy_bytes(value) if isinstance(value, np.ndarray) else value[3]
        total += len(data) + len(key)
    return total
