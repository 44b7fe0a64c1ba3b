# SPDX-License-Identifier: Apache-2.0
"""A seeded generator of real Flower objects (flwr 1.42, NumPy 2) for the
flower group: ArrayRecords of every NumPy dtype Flower stores (bool, the
ints, float16/32/64, complex64/128) in shapes with `()` and 0-length axes,
C- and Fortran-ordered, little- and big-endian, NaN payloads and -0.0;
unicode keys; MetricRecords and ConfigRecords with every value type Flower
types (double incl. NaN/±inf/-0.0/subnormals, sint64 to its bounds, uint64
above 2^63-1, bool, str, bytes, lists of each, empty lists); RecordDicts,
Messages (Metadata with task ids, error replies) and Contexts.

Also the helpers the tests share: Flower's bytes for each object, our JSON
spelling of metric/config values, and bitwise comparisons of arrays and
values. Every value is built with Flower's own classes; nothing here knows
our encoder.
"""

import base64
import io
import json
import math
import random
import struct

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, Context, Error, Metadata, MetricRecord, RecordDict
from flwr.app.message.message import make_message
from flwr.common import serde

TYPES = ["b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]
SHAPES = [(), (0,), (1,), (5,), (2, 3), (3, 0, 2), (0, 0), (2, 3, 4), (1, 1, 1, 1), (4, 1, 3)]
KEY_PARTS = ["w", "conv1.weight", "bias", "ü", "日本語", "ﬁ", "🌼", "a b", "é\u0301", "\x7f", '"q"', "\\", "0", ""]
INT64_MIN, INT64_MAX, UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def npy_save(arr):
    """The bytes numpy.save writes (what Flower's Array(ndarray) stores)."""
    out = io.BytesIO()
    np.save(out, arr, allow_pickle=False)
    return out.getvalue()


def same_array(a, b):
    """Bitwise equal: dtype (byte order included), shape and every byte, NaN payloads too."""
    return (
        a.dtype == b.dtype
        and a.dtype.str == b.dtype.str
        and a.shape == b.shape
        and np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    )


def bits(x):
    return struct.pack("<d", x)


def same_value(a, b):
    """Flower record values equal in kind and bits: int is not float, bool is not int,
    floats compare by their 8 bytes (NaN payload, -0.0), lists element by element."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return bits(a) == bits(b)
    return a == b


def same_values(a, b):
    return list(a.keys()) == list(b.keys()) and all(same_value(a[k], b[k]) for k in a)


def same_arrayrecord(a, b):
    """Two Flower ArrayRecords hold the same Arrays: keys in order, dtype,
    shape, stype and data bytes, and (for numpy arrays) the same ndarray."""
    if list(a.keys()) != list(b.keys()):
        return False
    for k in a:
        x, y = a[k], b[k]
        if (x.dtype, tuple(x.shape), x.stype, bytes(x.data)) != (y.dtype, tuple(y.shape), y.stype, bytes(y.data)):
            return False
        if x.stype == "numpy.ndarray" and not same_array(x.numpy(), y.numpy()):
            return False
    return True


def same_recorddict(a, b):
    if list(a.keys()) != list(b.keys()):
        return False
    for k in a:
        x, y = a[k], b[k]
        if type(x) is not type(y):
            return False
        if isinstance(x, ArrayRecord):
            if not same_arrayrecord(x, y):
                return False
        elif not same_values(x, y):
            return False
    return True


# --- our JSON spelling of metric/config values (docs/reference.md, RecordDicts) ---


def value_json(v):
    """A Flower record value as the JSON value rd_metrics/rd_config write and rd reads."""
    if isinstance(v, list):
        return [value_json(x) for x in v]
    if isinstance(v, bytes):
        return {"bytes": base64.b64encode(v).decode("ascii")}
    if isinstance(v, float) and not math.isfinite(v):
        return {"double": "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")}
    return v


def values_json(rec):
    """A MetricRecord/ConfigRecord as JSON object text (doubles keep their kind: 3.0, not 3)."""
    return json.dumps({k: value_json(v) for k, v in rec.items()}, ensure_ascii=False, allow_nan=False)


def from_value_json(j):
    """rd_metrics/rd_config JSON (json.loads'ed) back to Python values."""
    if isinstance(j, list):
        return [from_value_json(x) for x in j]
    if isinstance(j, dict):
        if set(j) == {"bytes"}:
            return base64.b64decode(j["bytes"], validate=True)
        assert set(j) == {"double"}, j
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[j["double"]]
    return j


def same_nan_agnostic(a, b):
    """As same_value, but any NaN equals any NaN (JSON keeps no NaN payload)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same_nan_agnostic(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return same_value(a, b)


# --- Flower's bytes ---


def ar_bytes(rec):
    return serde.array_record_to_proto(rec).SerializeToString()


def rd_bytes(rd):
    return serde.recorddict_to_proto(rd).SerializeToString()


def msg_bytes(msg):
    return serde.message_to_proto(msg).SerializeToString()


def ctx_bytes(ctx):
    return serde.context_to_proto(ctx).SerializeToString()


def ar_parse(blob):
    p = serde.ProtoArrayRecord()
    p.ParseFromString(blob)
    return serde.array_record_from_proto(p)


def rd_parse(blob):
    p = serde.ProtoRecordDict()
    p.ParseFromString(blob)
    return serde.recorddict_from_proto(p)


def msg_parse(blob):
    p = serde.ProtoMessage()
    p.ParseFromString(blob)
    return serde.message_from_proto(p)


def ctx_parse(blob):
    p = serde.ProtoContext()
    p.ParseFromString(blob)
    return serde.context_from_proto(p)


def nested(obj):
    """Flower's deflated objects of obj: [(object_id, type, children ids, content)]
    in get_all_nested_objects order (children before parents)."""
    from flwr.supercore.inflatable.inflatable_object import (
        get_all_nested_objects,
        get_object_head_values_from_object_content,
    )

    out = []
    for oid, o in get_all_nested_objects(obj).items():
        content = o.deflate()
        typ, children, _ = get_object_head_values_from_object_content(content)
        assert typ == type(o).__name__
        out.append((oid, typ, children, content))
    return out


def inflate(object_id, rows):
    """Flower's inflate_object_from_contents over (object_id, content) rows."""
    from flwr.supercore.inflatable.inflatable_utils import inflate_object_from_contents

    return inflate_object_from_contents(object_id, {i: bytes(c) for i, c in rows}, keep_object_contents=True)


class Gen:
    """Seeded Flower objects; the same seed gives the same objects."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.r = random.Random(seed)

    # --- arrays ---

    def dtype(self):
        t = self.r.choice(TYPES)
        order = "|" if t in ("b1", "i1", "u1") else self.r.choice("<<>")
        return np.dtype(order + t)

    def shape(self):
        return self.r.choice(SHAPES)

    def array(self, dtype=None, shape=None):
        """Random values over the dtype's range; floats with NaNs of several
        payloads and signs, ±inf, ±0.0, subnormals; sometimes Fortran-ordered."""
        dtype = np.dtype(dtype) if dtype is not None else self.dtype()
        shape = shape if shape is not None else self.shape()
        n = int(np.prod(shape)) if shape else 1
        native = dtype.newbyteorder("=")
        if dtype.kind == "b":
            flat = self.rng.integers(0, 2, n).astype(native)
        elif dtype.kind in "iu":
            info = np.iinfo(native)
            flat = self.rng.integers(info.min, info.max, n, dtype=native, endpoint=True)
            if n >= 2:
                flat[0], flat[-1] = info.min, info.max
        else:
            part = np.dtype("f%d" % (native.itemsize // (2 if dtype.kind == "c" else 1)))
            m = n * (2 if dtype.kind == "c" else 1)
            raw = self.rng.integers(0, 256, m * part.itemsize, dtype=np.uint8).view(part)  # any bit pattern
            normal = (self.rng.standard_normal(m) * 10.0 ** self.rng.integers(-3, 4, m)).astype(part)
            pick = self.rng.random(m) < 0.7
            flat = np.where(pick, normal, raw).astype(part)
            specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], part)
            ib = np.dtype("u%d" % part.itemsize)
            payload = np.array([~np.array(0, ib) >> np.array(1, ib)], ib).view(part)  # 0x7fff..: NaN, all payload bits
            for _ in range(min(m, 3)):
                flat[self.r.randrange(m)] = self.r.choice(list(specials) + list(payload))
            flat = flat.view(native) if dtype.kind == "c" else flat
        arr = flat.astype(dtype).reshape(shape)
        if arr.ndim >= 2 and self.r.random() < 0.4:
            arr = np.asfortranarray(arr)
        return arr

    def key(self, taken=()):
        while True:
            k = "".join(self.r.choice(KEY_PARTS) for _ in range(self.r.randint(1, 3)))
            if k not in taken:
                return k

    def arrays(self, n=None):
        n = self.r.randint(0, 6) if n is None else n
        out = {}
        for _ in range(n):
            out[self.key(out)] = self.array()
        return out

    def array_record(self, n=None):
        """(Flower ArrayRecord, {key: ndarray} it was built from)."""
        arrays = self.arrays(n)
        return ArrayRecord({k: Array(v) for k, v in arrays.items()}), arrays

    # --- metric and config values ---

    def double(self):
        c = self.r.random()
        if c < 0.25:
            return self.r.choice([math.nan, math.inf, -math.inf, 0.0, -0.0, 5e-324, -2.2250738585072014e-308, 1e308])
        if c < 0.4:
            return float(self.r.randint(-1000, 1000))  # integral doubles stay doubles
        return self.r.uniform(-1, 1) * 10.0 ** self.r.randint(-30, 30)

    def sint(self):
        return self.r.choice(
            [INT64_MIN, INT64_MAX, 0, -1, 1, self.r.randint(INT64_MIN, INT64_MAX), self.r.randint(-1000, 1000)]
        )

    def uint(self):
        return self.r.choice([INT64_MAX + 1, UINT64_MAX, self.r.randint(INT64_MAX + 1, UINT64_MAX)])

    def text(self):
        return "".join(self.r.choice(KEY_PARTS + ["\n", "\t", "\x00", "\u2028"]) for _ in range(self.r.randint(0, 4)))

    def blob(self):
        return bytes(self.r.randrange(256) for _ in range(self.r.randint(0, 9)))

    def metric_value(self):
        c = self.r.randrange(7)
        n = self.r.randint(0, 5)
        if c == 0:
            return self.double()
        if c == 1:
            return self.sint()
        if c == 2:
            return self.uint()
        if c == 3:
            return [self.double() for _ in range(n)]
        if c == 4:
            return [self.sint() for _ in range(n)]
        if c == 5:  # a uint_list: any value above 2^63-1 makes the whole list uint64
            return [self.uint() for _ in range(n)] + [self.r.randint(0, INT64_MAX)]
        return []

    def config_value(self):
        c = self.r.randrange(5)
        if c < 2:
            return self.metric_value()
        n = self.r.randint(0, 4)
        one = self.r.choice([lambda: self.r.random() < 0.5, self.text, self.blob])
        return one() if c == 2 else [one() for _ in range(n)]

    def metric_record(self, n=None):
        n = self.r.randint(0, 7) if n is None else n
        d = {}
        for _ in range(n):
            d[self.key(d)] = self.metric_value()
        return MetricRecord(d)

    def config_record(self, n=None):
        n = self.r.randint(0, 7) if n is None else n
        d = {}
        for _ in range(n):
            d[self.key(d)] = self.config_value()
        return ConfigRecord(d)

    def record_dict(self, n=None, max_arrays=4):
        n = self.r.randint(0, 5) if n is None else n
        rd = RecordDict()
        for _ in range(n):
            name = self.key(rd)
            kind = self.r.randrange(3)
            if kind == 0:
                rd[name] = self.array_record(self.r.randint(0, max_arrays))[0]
            elif kind == 1:
                rd[name] = self.metric_record()
            else:
                rd[name] = self.config_record()
        return rd

    # --- messages and contexts ---

    def metadata(self):
        u64 = lambda: self.r.choice([0, 1, self.r.randrange(2**64), UINT64_MAX])  # noqa: E731
        hexid = lambda: self.r.choice(["", "%064x" % self.r.getrandbits(256)])  # noqa: E731
        return Metadata(
            run_id=u64(),
            message_id=hexid(),
            src_node_id=u64(),
            dst_node_id=u64(),
            reply_to_message_id=hexid(),
            group_id=self.r.choice(["", "3", "round-ü"]),
            created_at=self.r.choice([0.0, 1764000005.25, self.r.uniform(0, 2e9)]),
            ttl=self.r.choice([0.0, 43200.0, self.r.uniform(0, 1e5)]),
            message_type=self.r.choice(["train", "evaluate", "query", "train.step2", "query.ü"]),
            src_task_id=self.r.choice([None, 0, u64()]),
            dst_task_id=self.r.choice([None, 0, u64()]),
        )

    def message(self):
        """A Message with content, or (one in four) an error reply."""
        md = self.metadata()
        if self.r.random() < 0.25:
            return make_message(
                md, error=Error(code=self.r.randint(-5, 10**6), reason=self.r.choice([None, "", "oom ☹"]))
            )
        return make_message(md, content=self.record_dict(max_arrays=2))

    def user_config(self):
        d = {}
        for _ in range(self.r.randint(0, 5)):
            v = self.r.choice([self.r.random() < 0.5, self.double(), self.sint(), self.text(), self.r.randint(0, 100)])
            d[self.key(d)] = v
        return d

    def context(self):
        u64 = lambda: self.r.choice([0, 1, self.r.randrange(2**64), UINT64_MAX])  # noqa: E731
        return Context(
            run_id=u64(),
            node_id=u64(),
            node_config=self.user_config(),
            state=self.record_dict(max_arrays=2),
            run_config=self.user_config(),
            series_id=self.r.choice([0, u64()]),
        )
