# SPDX-License-Identifier: Apache-2.0
"""RecordDict builders write canonical bytes. The same content (Python
values, as Flower holds them) is encoded here twice, from the .proto alone:
canonically (what Flower's serde writes) and in many valid but
non-canonical ways protobuf reads the same (unknown fields of every wire
type, fields out of order, overlong varints, unpacked or split shapes and
lists, explicitly written empty fields, a singular field or a oneof member
written twice with the last one kept, an Array split over two merged
`value` occurrences, legacy raw ArrayRecord items, uint64 for small ints,
lists of another type when empty). Every builder that outputs a RecordDict
(rd, rd_set, rd_delete, rd_agg, rd_from_message, rd_from_context, and
rd_mean / ar_server_step, which compute theirs) gives the canonical bytes
for every encoding, and these equal rd(...) built from the content."""

import base64
import json
import math
import random
import struct

import numpy as np
from arlib import connect, npy_bytes, varint

INT64_MAX = 2**63 - 1
LEN, VARINT, I64, I32, SGROUP, EGROUP = 2, 0, 1, 5, 3, 4
ARRAY, METRIC, CONFIG = 2, 3, 4
KIND = {"array": ARRAY, "metric": METRIC, "config": CONFIG}


# --- content ------------------------------------------------------------------


def _array(key, arr):
    return (key, str(arr.dtype), list(arr.shape), "numpy.ndarray", npy_bytes(arr))


def content():
    """[(name, kind, record)]: an ArrayRecord as (key, dtype, shape, stype,
    data) items, metric and config records as [(key, value)]."""
    raw = np.array([1.5, -2.0, 0.25], dtype="<f4")
    arrays = [
        _array("w", np.arange(6, dtype=np.float32).reshape(2, 3)),
        _array("b", np.array([1, -2], dtype=np.int64)),
        _array("s", np.array(2.5)),
        _array("empty", np.zeros((0, 3), np.float16)),
        _array("big_dims", np.zeros((1, 200, 1), np.uint8)),
        ("raw", "float32", [3], "", raw.tobytes()),  # the legacy ParametersRecord way
        ("", "float64", [1], "", struct.pack("<d", 4.0)),  # empty key
    ]
    metrics = [
        ("loss", 0.25),
        ("nan", float("nan")),
        ("neg_inf", float("-inf")),
        ("neg_zero", -0.0),
        ("tiny", 5e-324),
        ("n", -5),
        ("zero", 0),
        ("int64_min", -(2**63)),
        ("small", 7),
        ("u64_max", 2**64 - 1),
        ("doubles", [0.5, float("nan"), -0.0, 1e300]),
        ("ints", [1, -1, INT64_MAX, -(2**63)]),
        ("uints", [0, 2**64 - 1, 2**63]),
        ("small_uints", [3, 4]),
        ("empty", []),
        ("", 1.0),
    ]
    configs = [
        ("lr", 0.01),
        ("nan", float("nan")),
        ("epochs", 2),
        ("u64", 2**64 - 2),
        ("on", True),
        ("off", False),
        ("name", "sgd ü ☃"),
        ("empty_s", ""),
        ("blob", b"\x00\x01\xff"),
        ("empty_b", b""),
        ("bools", [True, False, True]),
        ("strings", ["a", "", "ü"]),
        ("bytes", [b"", b"\x00", b"xyz"]),
        ("doubles", [1.0, float("inf")]),
        ("ints", [5, -6]),
        ("uints", [2**64 - 1]),
        ("empty", []),
    ]
    return [
        ("arrays", "array", arrays),
        ("metrics", "metric", metrics),
        ("config", "config", configs),
        ("empty_arrays", "array", []),
        ("empty_metrics", "metric", []),
        ("", "config", [("k", "v")]),
    ]


def js(v):
    """Our JSON spelling of a value (docs/reference.md, the JSON mapping)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return '{"double": "NaN"}'
        if math.isinf(v):
            return '{"double": "%s"}' % ("Infinity" if v > 0 else "-Infinity")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bytes):
        return '{"bytes": "%s"}' % base64.b64encode(v).decode()
    return "[" + ", ".join(js(x) for x in v) + "]"


def record_json(rec):
    return "{" + ", ".join(json.dumps(k) + ": " + js(v) for k, v in rec) + "}"


# --- the encoder ------------------------------------------------------------------


class Enc:
    """canonical: Flower's serde bytes; else random valid variations."""

    def __init__(self, rng=None):
        self.rng = rng
        self.canonical = rng is None

    def chance(self, p):
        return not self.canonical and self.rng.random() < p

    def varint(self, v, most=10):
        b = varint(v)
        if self.chance(0.3) and len(b) < most:  # overlong: continuation bits over zero groups
            pad = self.rng.randint(1, most - len(b))
            b = b[:-1] + bytes([b[-1] | 0x80]) + b"\x80" * (pad - 1) + b"\x00"
        return b

    def tag(self, field, wt):
        return self.varint(field << 3 | wt, 5)  # protobuf reads tags of at most 5 bytes

    def ld(self, field, payload):
        return self.tag(field, LEN) + self.varint(len(payload)) + payload

    def unknown(self, depth=0):
        f = self.rng.choice([7, 9, 15, 16, 20, 99, 2047, 536870911])  # unused by every message here
        wt = self.rng.choice([VARINT, I64, LEN, I32, SGROUP] if depth < 2 else [VARINT, LEN])
        if wt == VARINT:
            return self.tag(f, wt) + self.varint(self.rng.choice([0, 1, 300, 2**64 - 1]))
        if wt == I64:
            return self.tag(f, wt) + bytes(self.rng.randrange(256) for _ in range(8))
        if wt == I32:
            return self.tag(f, wt) + b"\xff\x00\x7f\x80"
        if wt == LEN:
            return self.ld(f, bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(4))))
        return self.tag(f, SGROUP) + self.unknown(depth + 1) + self.tag(f, EGROUP)

    def message(self, fields, repeated=(), decoys=()):
        """fields: singular fields' bytes; repeated: fields kept in this
        order; decoys: (decoy, real) pairs, the decoy placed before its real
        field (protobuf keeps the last). Canonical: fields in the order
        given (callers give number order)."""
        if self.canonical:
            return b"".join(list(fields) + list(repeated))
        out = [[f] for f in fields]  # boxes: found by identity below
        self.rng.shuffle(out)
        pos = 0
        for r in repeated:  # in order, anywhere after the previous one
            pos = self.rng.randint(pos, len(out))
            out.insert(pos, [r])
            pos += 1
        for decoy, real in decoys:
            at = next(i for i, box in enumerate(out) if box[0] is real)
            out.insert(self.rng.randint(0, at), [decoy])
        for _ in range(self.rng.randint(0, 2)):
            out.insert(self.rng.randint(0, len(out)), [self.unknown()])
        return b"".join(box[0] for box in out)

    def string(self, field, s, decoy_ok=True):
        """A singular string/bytes field: (field bytes or None, decoys)."""
        b = s.encode() if isinstance(s, str) else s
        if b or self.chance(0.4):  # an empty field written explicitly
            f = self.ld(field, b)
        else:
            return [], []
        if decoy_ok and self.chance(0.3):
            return [f], [(self.ld(field, b"junk"), f)]
        return [f], []

    # ArrayRecord

    def shape_fields(self, shape):
        if self.canonical:
            return [self.ld(2, b"".join(varint(d) for d in shape))] if shape else []
        if not shape:
            return [self.ld(2, b"")] if self.chance(0.3) else []
        out, i = [], 0
        while i < len(shape):  # packed runs and single unpacked values
            n = self.rng.randint(1, len(shape) - i)
            if self.chance(0.5):
                out += [self.tag(2, VARINT) + self.varint(d) for d in shape[i : i + n]]
            else:
                out.append(self.ld(2, b"".join(self.varint(d) for d in shape[i : i + n])))
            i += n
        return out

    def array_fields(self, dtype, shape, stype, data):
        """(singular fields, shape fields (in order), decoys) of an Array."""
        fields, decoys = [], []
        for field, s in ((1, dtype), (3, stype), (4, data)):
            f, d = self.string(field, s)
            fields += f
            decoys += d
        return fields, self.shape_fields(shape), decoys

    def array_item(self, key, dtype, shape, stype, data):
        kf, kd = self.string(1, key)
        fields, shapes, decoys = self.array_fields(dtype, shape, stype, data)
        if self.canonical:
            array = b"".join(fields[:1] + shapes + fields[1:])
            return self.ld(1, b"".join(kf) + self.ld(2, array))
        if self.chance(0.3):  # two `value` occurrences, merged by protobuf
            parts, part_decoys = ([], []), ([], [])
            for f in fields:
                parts[self.rng.randrange(2)].append(f)
            cut = self.rng.randint(0, len(shapes))
            for d, real in decoys:
                part_decoys[0 if any(real is f for f in parts[0]) else 1].append((d, real))
            v1 = self.message(parts[0], shapes[:cut], part_decoys[0])
            v2 = self.message(parts[1], shapes[cut:], part_decoys[1])
            values = [self.ld(2, v1), self.ld(2, v2)]
        else:
            values = [self.ld(2, self.message(fields, shapes, decoys))]
        return self.ld(1, self.message(kf, values, kd))

    def array_record(self, items):
        return self.message([], [self.array_item(*it) for it in items])

    # MetricRecord / ConfigRecord

    def member(self, v, config):
        """(oneof field, payload bytes) of a value."""
        if isinstance(v, bool):
            return 4, self.varint(int(v) * (self.rng.choice([1, 2, 255]) if self.chance(0.5) else 1))
        if isinstance(v, int):
            if v > INT64_MAX or (0 <= v and self.chance(0.5)):
                return 3, self.varint(v)
            return 2, self.varint(((v << 1) ^ (v >> 63)) & (2**64 - 1))
        if isinstance(v, float):
            return 1, struct.pack("<d", v)
        if isinstance(v, str):
            return 5, self.varint(len(v.encode())) + v.encode()
        if isinstance(v, bytes):
            return 6, self.varint(len(v)) + v
        return self.list_member(v, config)

    def list_member(self, v, config):
        if not v:
            kinds = [21, 22, 23] + ([24, 25, 26] if config else [])
            field = (24 if config else 21) if self.canonical else self.rng.choice(kinds)
            return field, self.varint(0)
        first = v[0]
        if isinstance(first, bool):
            field, elems, wt = 24, [self.varint(int(x)) for x in v], VARINT
        elif isinstance(first, int):
            if any(x > INT64_MAX for x in v) or (all(x >= 0 for x in v) and self.chance(0.5)):
                field, elems, wt = 23, [self.varint(x) for x in v], VARINT
            else:
                field, elems, wt = 22, [self.varint(((x << 1) ^ (x >> 63)) & (2**64 - 1)) for x in v], VARINT
        elif isinstance(first, float):
            field, elems, wt = 21, [struct.pack("<d", x) for x in v], I64
        else:
            field = 25 if isinstance(first, str) else 26
            vals = [self.ld(1, x.encode() if isinstance(x, str) else x) for x in v]
            return field, self._len_prefixed(self.message([], vals))
        if self.canonical:
            body = self.ld(1, b"".join(elems))
        else:
            parts, i = [], 0
            while i < len(elems):
                n = self.rng.randint(1, len(elems) - i)
                if self.chance(0.5):
                    parts += [self.tag(1, wt) + e for e in elems[i : i + n]]
                else:
                    parts.append(self.ld(1, b"".join(elems[i : i + n])))
                i += n
            body = self.message([], parts)
        return field, self._len_prefixed(body)

    def _len_prefixed(self, body):
        return self.varint(len(body)) + body

    def value(self, v, config):
        field, payload = self.member(v, config)
        wt = LEN if field >= 5 else I64 if field == 1 else VARINT
        real = self.tag(field, wt) + payload
        decoys = []
        if self.chance(0.3):  # another oneof member first: the last one set wins
            other = 2 if field != 2 else 1
            decoy = self.tag(other, VARINT) + self.varint(9) if other == 2 else self.tag(1, I64) + b"\0" * 8
            decoys.append((decoy, real))
        return self.message([real], (), decoys)

    def valrec(self, items, config):
        out = []
        for key, v in items:
            kf, kd = self.string(1, key)
            out.append(self.ld(1, self.message(kf, [self.ld(2, self.value(v, config))], kd)))
        return self.message([], out)

    # RecordDict

    def record(self, kind, rec):
        return self.array_record(rec) if kind == "array" else self.valrec(rec, kind == "config")

    def recorddict(self, items):
        out = []
        for name, kind, rec in items:
            kf, kd = self.string(1, name)
            real = self.ld(KIND[kind], self.record(kind, rec))
            decoys = []
            if self.chance(0.3):  # another member first: the last one set wins
                decoys.append((self.ld(CONFIG if kind != "config" else METRIC, b""), real))
            out.append(self.ld(1, self.message(kf + [real], (), kd + decoys)))
        return self.message([], out)


# --- the builders -------------------------------------------------------------------


def rd_args(con, items):
    """rd()'s arguments for the items: ArrayRecords canonical, JSON otherwise."""
    args = []
    for name, kind, rec in items:
        if kind == "array":
            value = Enc().array_record(rec)
        else:
            value = record_json(rec)
        args += [name, kind, value]
    return args


def rd(con, items):
    args = rd_args(con, items)
    return bytes(con.execute("select rd(%s)" % ", ".join("?" * len(args)), args).fetchone()[0])


def one(con, sql, *args):
    v = con.execute(sql, args).fetchone()[0]
    return v if v is None else bytes(v)


def test_canonical_encoder_is_rd():
    """The test's canonical encoder and rd(...) agree byte for byte."""
    con = connect()
    items = content()
    assert rd(con, items) == Enc().recorddict(items)
    for name, kind, rec in items:
        assert rd(con, [(name, kind, rec)]) == Enc().recorddict([(name, kind, rec)]), name


def _check(con, items, messy, canon, rng):
    fail = "seed input " + messy.hex()
    assert one(con, "select rd_delete(?, 'absent')", messy) == canon, fail
    assert one(con, "select rd_set(?, 'new', 'metric', '{\"k\": 1}')", messy) == rd(
        con, items + [("new", "metric", [("k", 1)])]
    ), fail
    for j, (name, kind, rec) in enumerate(items):
        others = items[:j] + items[j + 1 :]
        assert one(con, "select rd_delete(?, ?)", messy, name) == rd(con, others), fail
        # the item set to its own content: canonical value, or (arrays) the messy record
        value = rd_args(con, [(name, kind, rec)])[2]
        assert one(con, "select rd_set(?, ?, ?, ?)", messy, name, kind, value) == canon, fail
        if kind == "array":
            rec_messy = Enc(rng).array_record(rec)
            assert one(con, "select rd_set(?, ?, 'array', ?)", messy, name, rec_messy) == canon, fail
            assert one(con, "select rd(?, 'array', ?)", name, rec_messy) == rd(con, [(name, kind, rec)]), fail
        replaced = items[:j] + [(name, "config", [("q", "r")])] + items[j + 1 :]
        assert one(con, "select rd_set(?, ?, 'config', '{\"q\": \"r\"}')", messy, name) == rd(con, replaced), fail
    # rd_agg over record_dict's rows: arrays' records as they are in the input
    agg = one(
        con,
        """select rd_agg(d.name, d.kind, case d.kind when 'array' then d.record
                         when 'metric' then rd_metrics(?1, d.name) else rd_config(?1, d.name) end)
           from record_dict(?1) d""",
        messy,
    )
    assert agg == canon, fail
    # a Message's content and a Context's state, also split into merged occurrences
    e = Enc(rng)
    meta = e.ld(1, e.tag(1, VARINT) + e.varint(7))
    msg = meta + e.ld(2, messy)
    assert one(con, "select rd_from_message(?)", msg) == canon, fail
    assert one(con, "select rd_from_context(?)", e.ld(4, messy) + e.tag(1, VARINT) + e.varint(3)) == canon, fail
    half = Enc(rng).recorddict(items[:2]), Enc(rng).recorddict(items[2:])
    assert one(con, "select rd_from_message(?)", e.ld(2, half[0]) + meta + e.ld(2, half[1])) == canon, fail
    assert one(con, "select rd_from_context(?)", e.ld(4, half[0]) + e.ld(4, half[1])) == canon, fail


def test_builders_write_canonical_bytes():
    con = connect()
    items = content()
    canon = rd(con, items)
    for seed in range(60):
        rng = random.Random(seed)
        messy = Enc(rng).recorddict(items)
        assert messy != canon
        _check(con, items, messy, canon, rng)


def test_each_item_alone():
    """Every item alone, in many encodings: one kind of record at a time."""
    con = connect()
    for item in content():
        canon = rd(con, [item])
        seen = set()
        for seed in range(40):
            messy = Enc(random.Random(seed)).recorddict([item])
            seen.add(messy)
            assert one(con, "select rd_delete(?, 'absent')", messy) == canon, (item[0], messy.hex())
            assert one(con, "select rd_from_message(?)", b"\x12" + varint(len(messy)) + messy) == canon
        assert len(seen) > 1


def test_equal_content_equal_bytes():
    """Builders' results compare equal with = for equal content."""
    con = connect()
    items = content()
    a = Enc(random.Random(1)).recorddict(items)
    b = Enc(random.Random(2)).recorddict(items)
    assert a != b
    assert con.execute(
        "select rd_delete(?1, 'x') = rd_delete(?2, 'x'), rd_set(?1, 'arrays', 'metric', '{}') = "
        "rd_set(?2, 'arrays', 'metric', '{}'), rd_delete(?1, 'config') = rd_delete(?2, 'config')",
        (a, b),
    ).fetchone() == (1, 1, 1)


def test_strategies_over_noncanonical_input():
    """rd_mean and ar_server_step compute their RecordDicts: non-canonical
    inputs give the same bytes as canonical ones."""
    con = connect()
    replies = [
        [
            ("arrays", "array", [_array("w", np.array([1.0, 2.0], np.float32) * k)]),
            ("metrics", "metric", [("num-examples", k), ("loss", 0.5 * k), ("acc", [0.25, 0.5])]),
            ("cfg", "config", [("x", "y")]),
        ]
        for k in (1, 3)
    ]
    canon = [rd(con, r) for r in replies]
    want = one(con, "select rd_mean(r) from (select ? as r union all select ?)", *canon)
    for seed in range(10):
        rng = random.Random(seed)
        messy = [Enc(rng).recorddict(r) for r in replies]
        assert one(con, "select rd_mean(r) from (select ? as r union all select ?)", *messy) == want
    state = rd(con, replies[0][:1])
    agg = Enc().array_record(replies[1][0][2])
    want = one(con, "select ar_server_step('fedadam', ?, ?, 1)", state, agg)
    for seed in range(10):
        rng = random.Random(seed)
        s = Enc(rng).recorddict(replies[0][:1])
        assert one(con, "select ar_server_step('fedadam', ?, ?, 1)", s, Enc(rng).array_record(replies[1][0][2])) == want
