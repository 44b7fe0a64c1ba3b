# SPDX-License-Identifier: Apache-2.0
"""A protobuf encoder that writes RecordDicts as protobuf may read them but
no serializer writes them: every singular message field split into
occurrences that protobuf merges back (an item's record, a metric or config
value, a list, an Array), with decoys protobuf's rules discard (another
oneof member first, an earlier key), empty occurrences, unknown fields and
tags padded up to the 5 bytes protobuf reads. Independent of our code: made
from the .proto files and protobuf's merge rules, for the tests that compare
what our readers make of them with Flower's (tests/flower) and the package's
(tests/python).
"""

import struct

VARINT, I64, LEN, I32 = 0, 1, 2, 5
ARRAY, METRIC, CONFIG = 2, 3, 4
KIND = {"array": ARRAY, "metric": METRIC, "config": CONFIG}
INT64_MAX = 2**63 - 1


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    return ((v << 1) ^ (v >> 63)) & (2**64 - 1)


# --- the encoder ----------------------------------------------------------------------


class Enc:
    """Writes a content model as protobuf bytes, splitting every singular
    message field into occurrences protobuf merges back, with decoys that
    protobuf's rules discard."""

    def __init__(self, rng):
        self.rng = rng

    def chance(self, p):
        return self.rng.random() < p

    def tag(self, field, wt):
        b = varint(field << 3 | wt)
        if self.chance(0.2) and len(b) < 5:  # overlong, up to the 5 bytes protobuf reads
            pad = self.rng.randint(1, 5 - len(b))
            b = b[:-1] + bytes([b[-1] | 0x80]) + b"\x80" * (pad - 1) + b"\x00"
        return b

    def ld(self, field, payload):
        return self.tag(field, LEN) + varint(len(payload)) + payload

    def unknown(self):
        f = self.rng.choice([9, 15, 99, 536870911])
        if self.chance(0.5):
            return self.tag(f, VARINT) + varint(self.rng.choice([0, 300]))
        return self.ld(f, b"zz")

    def chunks(self, seq):
        """seq split into 1.. consecutive runs (an empty seq: one empty run)."""
        if not seq:
            return [[]]
        cuts = sorted(self.rng.sample(range(1, len(seq)), self.rng.randint(0, min(3, len(seq) - 1))))
        bounds = [0] + cuts + [len(seq)]
        return [seq[a:b] for a, b in zip(bounds, bounds[1:])]

    def sprinkle(self, parts, extra):
        """parts in order, `extra` (callable) occurrences inserted anywhere."""
        out = list(parts)
        for _ in range(self.rng.randint(0, 2)):
            out.insert(self.rng.randint(0, len(out)), extra())
        return out

    # ArrayRecord

    def array_item(self, key, arr):
        dtype, shape, stype, data = arr.dtype, list(arr.shape), arr.stype, arr.data
        fields = [self.ld(1, dtype.encode()), self.ld(3, stype.encode()), self.ld(4, data)]
        shapes = [self.ld(2, b"".join(varint(d) for d in part)) for part in self.chunks(shape)]
        if not shape:
            shapes = []
        if self.chance(0.3):  # the Array split over two `value` occurrences
            cut = self.rng.randint(0, len(shapes))
            v1 = [f for f in fields if self.chance(0.5)]
            v2 = [f for f in fields if f not in v1]
            values = [self.ld(2, b"".join(v1 + shapes[:cut])), self.ld(2, b"".join(v2 + shapes[cut:]))]
        else:
            values = [self.ld(2, b"".join(fields + shapes))]
        body = self.sprinkle([self.ld(1, key.encode())] + values, self.unknown)
        return self.ld(1, b"".join(body))

    # MetricRecord / ConfigRecord values

    def list_member(self, v):
        """(member field, element bytes for each element) of a non-empty list."""
        first = v[0]
        if isinstance(first, bool):
            return 24, [(VARINT, varint(int(x))) for x in v]
        if isinstance(first, int):
            if any(x > INT64_MAX for x in v) or (all(x >= 0 for x in v) and self.chance(0.5)):
                return 23, [(VARINT, varint(x)) for x in v]
            return 22, [(VARINT, varint(zigzag(x))) for x in v]
        if isinstance(first, float):
            return 21, [(I64, struct.pack("<d", x)) for x in v]
        field = 25 if isinstance(first, str) else 26
        return field, [(LEN, x.encode() if isinstance(x, str) else x) for x in v]

    def list_body(self, elems):
        """One list message holding elems (packed runs or single values)."""
        out = []
        for run in self.chunks(elems):
            if not run:
                continue
            if run[0][0] != LEN and self.chance(0.5):
                out.append(self.ld(1, b"".join(e for _, e in run)))
            else:
                for wt, e in run:
                    out.append(self.ld(1, e) if wt == LEN else self.tag(1, wt) + e)
        return b"".join(out)

    def scalar_member(self, v):
        if isinstance(v, bool):
            return self.tag(4, VARINT) + varint(int(v))
        if isinstance(v, int):
            if v > INT64_MAX or (v >= 0 and self.chance(0.5)):
                return self.tag(3, VARINT) + varint(v)
            return self.tag(2, VARINT) + varint(zigzag(v))
        if isinstance(v, float):
            return self.tag(1, I64) + struct.pack("<d", v)
        return self.ld(5 if isinstance(v, str) else 6, v.encode() if isinstance(v, str) else v)

    def decoy(self, config, field):
        """A member that the later member `field` replaces (a scalar one
        is overwritten; a list is replaced by any other member)."""
        choices = [
            (1, self.tag(1, I64) + struct.pack("<d", 99.5)),
            (2, self.tag(2, VARINT) + varint(zigzag(-7))),
            (22, self.ld(22, self.ld(1, varint(zigzag(-7)) * 2))),
            (21, self.ld(21, b"")),
        ] + ([(25, self.ld(25, self.ld(1, b"junk")))] if config else [])
        return self.rng.choice([b for f, b in choices if f != field])

    def value_members(self, v, config):
        """The members that make value v: a list of oneof member bytes
        protobuf merges into v, preceded perhaps by decoys it replaces."""
        field = None
        if isinstance(v, list) and v:
            field, elems = self.list_member(v)
            lists = [self.ld(field, self.list_body(part)) for part in self.chunks(elems)]
            lists = self.sprinkle(lists, lambda: self.ld(field, b""))  # empty occurrences add nothing
        elif isinstance(v, list):
            kinds = [21, 22, 23] + ([24, 25, 26] if config else [])
            field = self.rng.choice(kinds)
            lists = [self.ld(field, b"") for _ in range(self.rng.randint(1, 2))]
        else:
            lists = [self.scalar_member(v)]
        pre = []
        if self.chance(0.4):
            pre.append(self.decoy(config, field))
            if self.chance(0.3) and isinstance(v, list) and v:
                pre.append(self.scalar_member(5.0))  # a list of the real type, then a scalar: replaced twice
                pre.insert(0, lists[0])
        return pre + lists

    def value_messages(self, v, config):
        """Value messages (Item.value occurrences) whose merge is v."""
        members = self.value_members(v, config)
        msgs, cur = [], []
        for m in members:
            cur.append(m)
            if self.chance(0.5):
                msgs.append(cur)
                cur = []
        if cur or not msgs:
            msgs.append(cur)
        out = [b"".join(self.sprinkle(m, self.unknown) if self.chance(0.3) else m) for m in msgs]
        return self.sprinkle(out, lambda: b"")  # empty value messages change nothing

    def valrec_item(self, key, v, config):
        values = [self.ld(2, m) for m in self.value_messages(v, config)]
        keys = [self.ld(1, key.encode())]
        if self.chance(0.2):
            keys.insert(0, self.ld(1, b"not-the-key"))  # the last key wins
        body = keys + values if self.chance(0.5) else values[:1] + keys + values[1:]
        return self.ld(1, b"".join(body))

    # RecordDict

    def record_items(self, kind, content):
        if kind == "array":
            return [self.array_item(k, a) for k, a in content.items()]
        return [self.valrec_item(k, v, kind == "config") for k, v in content.items()]

    def recorddict_item(self, name, kind, content):
        items = self.record_items(kind, content)
        occurrences = [self.ld(KIND[kind], b"".join(part)) for part in self.chunks(items)]
        occurrences = self.sprinkle(occurrences, lambda: self.ld(KIND[kind], b""))
        if self.chance(0.3):  # another member first: replaced
            other = self.rng.choice([k for k in KIND.values() if k != KIND[kind]])
            occurrences.insert(0, self.ld(other, b""))
        body = [self.ld(1, name.encode())] + occurrences
        if self.chance(0.5):
            body = self.sprinkle(body, self.unknown)
        return self.ld(1, b"".join(body))

    def recorddict(self, items):
        return b"".join(self.recorddict_item(*it) for it in items)


# --- random content ---------------------------------------------------------------------


def random_value(rng, config):
    kinds = ["f", "i", "fl", "il", "e"] + (["b", "s", "y", "bl", "sl", "yl", "u"] if config else ["u"])
    k = rng.choice(kinds)
    n = rng.randint(1, 6)
    if k == "f":
        return rng.choice([0.0, -0.0, 1.5, -2.25, 1e300, 5e-324])
    if k == "i":
        return rng.choice([0, 1, -1, 7, -(2**63), INT64_MAX])
    if k == "u":
        return 2**64 - 1
    if k == "fl":
        return [rng.uniform(-10, 10) for _ in range(n)]
    if k == "il":
        return [rng.randint(-(2**40), 2**40) for _ in range(n)]
    if k == "e":
        return []
    if k == "b":
        return rng.random() < 0.5
    if k == "s":
        return rng.choice(["", "sgd", "ü"])
    if k == "y":
        return rng.choice([b"", b"\x00\x01"])
    if k == "bl":
        return [rng.random() < 0.5 for _ in range(n)]
    if k == "sl":
        return [rng.choice(["a", "", "ü"]) for _ in range(n)]
    return [bytes([rng.randrange(256)]) * rng.randint(0, 2) for _ in range(n)]


def random_content(rng, random_array):
    """[(name, kind, {key: value or array})]: random_array(rng) makes an
    array (anything with dtype, shape, stype and data)."""
    items, names = [], rng.sample(["a", "m", "c", "x", "y", "z"], rng.randint(1, 4))
    for name in names:
        kind = rng.choice(["array", "metric", "config"])
        keys = rng.sample(["k", "lr", "w", "ü", "n", "q"], rng.randint(0, 4))
        if kind == "array":
            content = {k: random_array(rng) for k in keys}
        else:
            content = {k: random_value(rng, kind == "config") for k in keys}
        items.append((name, kind, content))
    return items


# --- hand-made pieces --------------------------------------------------------------------


def ld(field, payload):
    return varint(field << 3 | LEN) + varint(len(payload)) + payload


def dbl(x):
    return varint(1 << 3 | I64) + struct.pack("<d", x)


def metric_rd(*values, name="m", key="a"):
    """A RecordDict item `name` with one metric item `key` whose value
    messages are `values`."""
    return ld(1, ld(1, name.encode()) + ld(METRIC, ld(1, ld(1, key.encode()) + b"".join(ld(2, v) for v in values))))
