# SPDX-License-Identifier: Apache-2.0
"""Helpers for the Python tests: a connection with the extension loaded,
.npy bytes from NumPy and back, and an independent encoder of Flower's
ArrayRecord protobuf (written from the .proto, not from our C code), so
tests can check our bytes against a second implementation as well as
against the vectors made by Flower itself.
"""

import io
import json
import os
import re
import sqlite3

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
EXT = os.environ.get("AR_EXTENSION", os.path.join(ROOT, "build", "arrayrecord"))
if not os.path.isabs(EXT):
    EXT = os.path.join(ROOT, EXT)


def connect(path=":memory:", ext=None):
    """A sqlite3 connection with the extension loaded (ext: another build's path)."""
    con = sqlite3.connect(path)
    con.enable_load_extension(True)
    con.load_extension(ext or EXT)
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


def varint(v):
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
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def array_message(dtype, shape, stype, data):
    """Array { string dtype = 1; repeated int32 shape = 2; string stype = 3; bytes data = 4; }"""
    out = b""
    if dtype:
        out += _field(1, dtype.encode())
    if shape:
        out += _field(2, b"".join(varint(d) for d in shape))
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


def read_varint(buf, pos):
    """(value, position after it) of the varint at buf[pos]."""
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def decode_record(blob):
    """An independent reader of Flower's ArrayRecord protobuf: a list of
    (key, dtype, shape, stype, data). Strict about what our writer must
    produce (canonical fields), so tests can use it to check our bytes."""
    varint = read_varint

    def fields(buf):
        pos = 0
        while pos < len(buf):
            tag, pos = varint(buf, pos)
            num, wt = tag >> 3, tag & 7
            if wt == 2:
                n, pos = varint(buf, pos)
                yield num, wt, bytes(buf[pos : pos + n])
                pos += n
            elif wt == 0:
                v, pos = varint(buf, pos)
                yield num, wt, v
            else:
                raise ValueError(f"unexpected wire type {wt}")

    items = []
    for num, wt, item in fields(blob):
        assert (num, wt) == (1, 2)
        key, value = "", b""
        for inum, _iwt, payload in fields(item):
            if inum == 1:
                key = payload.decode("utf-8")
            elif inum == 2:
                value = payload
        dtype, shape, stype, data = "", [], "", b""
        for anum, awt, payload in fields(value):
            if anum == 1:
                dtype = payload.decode("utf-8")
            elif anum == 2 and awt == 2:
                p = 0
                while p < len(payload):
                    d, p = varint(payload, p)
                    shape.append(d)
            elif anum == 2:
                shape.append(payload)
            elif anum == 3:
                stype = payload.decode("utf-8")
            elif anum == 4:
                data = payload
        items.append((key, dtype, shape, stype, data))
    return items


def read_sql(name):
    """The text of sql/NAME."""
    with open(os.path.join(ROOT, "sql", name), encoding="utf-8") as f:
        return f.read()


def recipes():
    """{name: sql} of sql/queries.sql's '-- name:' recipes: each recipe's
    first statement, its comment lines dropped."""
    parts = re.split(r"^-- name: (\w+)\n", read_sql("queries.sql"), flags=re.M)
    out = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        code = "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("--"))
        out[name] = code.split(";")[0].strip() + ";"
    return out


def one(con, sql, *args):
    """The single value a query returns."""
    return con.execute(sql, args).fetchone()[0]


def error_of(con, sql, *args):
    """The message of the error a query raises (AssertionError if none)."""
    try:
        con.execute(sql, args).fetchall()
    except sqlite3.Error as e:
        return str(e)
    raise AssertionError(f"no error from {sql!r}")


def json_values(obj):
    """arr.tolist() as npy_to_json writes it: NaN and infinities as the
    strings "NaN", "Infinity", "-Infinity", complex as [re, im]."""
    if isinstance(obj, list):
        return [json_values(x) for x in obj]
    if isinstance(obj, complex):
        return [json_values(obj.real), json_values(obj.imag)]
    if isinstance(obj, float):
        if obj != obj:
            return "NaN"
        if obj in (float("inf"), float("-inf")):
            return "Infinity" if obj > 0 else "-Infinity"
    return obj


# Every dtype we support, as NumPy type strings in both byte orders.
NUMERIC_TYPES = ["b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16"]


def all_dtypes():
    """np.dtype objects of every supported type, little- and big-endian."""
    out = []
    for t in NUMERIC_TYPES:
        for order in "<>":
            d = np.dtype(order + t)
            if d not in out:
                out.append(d)
    return out


def random_array(rng, dtype, shape):
    """Random values covering the dtype's range (extremes included)."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    if dtype.kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif dtype.kind in "iu":
        info = np.iinfo(dtype)
        flat = rng.integers(info.min, info.max, n, dtype=dtype.newbyteorder("="), endpoint=True)
        if n >= 2:
            flat[0], flat[1] = info.min, info.max
    elif dtype.kind == "f":
        with np.errstate(over="ignore"):  # float16 overflows to inf: wanted
            flat = (rng.standard_normal(n) * 10.0 ** rng.integers(-6, 6, n)).astype(dtype.newbyteorder("="))
    else:
        part = np.dtype("f%d" % (dtype.itemsize // 2))
        flat = rng.standard_normal(n).astype(part) + 1j * rng.standard_normal(n).astype(part)
    return np.asarray(flat, dtype=dtype).reshape(shape)


def assert_json_is_array(text, arr, what=""):
    """npy_to_json's text is arr: nested lists of arr's shape whose numbers,
    read back at arr's precision, are arr's values bit for bit (NaN/Inf as
    strings, complex as [re, im]); each float is written with the fewest
    digits that read back, as NumPy's repr of the scalar type prints it."""
    decoded = json.loads(text)
    specials = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}

    def leaves(obj, depth):
        if depth == arr.ndim:
            return [obj]
        assert isinstance(obj, list), (what, obj)
        return [x for o in obj for x in leaves(o, depth + 1)]

    def shape_of(obj, depth):
        if depth == arr.ndim:
            return []
        return [len(obj)] + (shape_of(obj[0], depth + 1) if obj else [0] * (arr.ndim - depth - 1))

    if arr.size == 0:  # arr.tolist(): nested lists down to the first 0-length axis
        assert decoded == arr.tolist(), (what, text)
        return
    assert tuple(shape_of(decoded, 0)) == arr.shape, (what, text[:100])
    flat = leaves(decoded, 0)
    kind = arr.dtype.kind
    native = arr.dtype.newbyteorder("=")
    if kind == "c":
        assert all(isinstance(v, list) and len(v) == 2 for v in flat), what
        values = [complex(specials.get(re, re), specials.get(im, im)) for re, im in flat]
    elif kind == "b":
        assert all(isinstance(v, bool) for v in flat), what
        values = flat
    elif kind in "iu":
        assert all(isinstance(v, int) and not isinstance(v, bool) for v in flat), what
        values = flat
    else:
        assert all(isinstance(v, float) or v in specials for v in flat), what
        values = [specials.get(v, v) if isinstance(v, str) else v for v in flat]
    got = np.array(values, dtype=native).reshape(arr.shape)
    want = np.array(arr, dtype=native, order="C")
    assert got.tobytes() == want.tobytes() or (kind in "fc" and _nan_equal(got, want)), (what, text[:200])
    # the digits: NumPy's repr of each float at its own precision
    if kind in "fc" and arr.size:
        part = np.dtype("f%d" % (native.itemsize // (2 if kind == "c" else 1)))
        reprs = []
        for v in np.ravel(want):
            for x in [v.real, v.imag] if kind == "c" else [v]:
                x = part.type(x)
                reprs.append(None if not np.isfinite(x) else repr(x) if part.itemsize != 8 else repr(float(x)))
        tokens = [t for t in re.findall(r'"[^"]*"|[-+0-9.eE]+', text)]
        assert len(tokens) == len(reprs), what
        for tok, r in zip(tokens, reprs):
            if r is not None:
                assert tok == r, (what, tok, r)


def _nan_equal(a, b):
    """Equal as numbers (NaN == NaN whatever its sign and payload, which JSON
    cannot carry; -0.0 != 0.0)."""

    def sign(x):
        return np.where(np.isnan(x), False, np.signbit(x))

    return (
        np.array_equal(a, b, equal_nan=True)
        and np.array_equal(sign(a.real), sign(b.real))
        and np.array_equal(sign(np.imag(a)), sign(np.imag(b)))
    )


def small_cnn(torch):
    """A small conv net with a BatchNorm (parameters and buffers, int64
    num_batches_tracked among them) for the PyTorch tests; torch is passed in
    because it is optional."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 4, 3),
        torch.nn.BatchNorm2d(4),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 6 * 6, 5),
    )
