# SPDX-License-Identifier: Apache-2.0
"""RecordDicts are read as protobuf reads them, checked against the real
protobuf (upb) and serde of flwr 1.42: a singular message field written
more than once is the merge of its occurrences (an item's record written
twice: the records' items together; a metric or config value written twice:
scalars last-wins, a list member of the same type appends, another member
replaces, an empty value message changes nothing), and tags are at most 5
bytes with field numbers up to 2^29 - 1.

The encoder (tests/python/pbsplit.py) writes such non-canonical bytes by hand from a content
model; Flower parses them (RecordDict.FromString, recorddict_from_proto) and
writes them canonically again (recorddict_to_proto); our SQL must read the
same content (rd_keys, rd_len, record_dict, rd_metrics, rd_config,
rd_array_record) and re-encode the same bytes (rd_delete, rd_set). The
Message and Context readers are checked the same way on their metadata,
content, error, state and config entries.
"""

import json
import random
import struct

import numpy as np
from arlib import connect
from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord, RecordDict
from flwr.common.serde import recorddict_from_proto, recorddict_to_proto
from flwr.proto import recorddict_pb2
from google.protobuf.message import DecodeError
from pbsplit import ARRAY, CONFIG, I64, LEN, METRIC, VARINT, Enc, dbl, ld, metric_rd, random_content, varint, zigzag

# --- Flower's side ----------------------------------------------------------------


def flower_read(b):
    return recorddict_from_proto(recorddict_pb2.RecordDict.FromString(b))


def flower_bytes(rd):
    return recorddict_to_proto(rd).SerializeToString()


def flower_canon(b):
    return flower_bytes(flower_read(b))


def flower_item(rd, name):
    """The canonical bytes of a RecordDict holding only item `name` of rd."""
    return flower_bytes(RecordDict({name: rd[name]}))


def random_array(rng):
    shape = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 3)))
    dtype = rng.choice(["float32", "float64", "int64", "uint8"])
    return Array(np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape))


def flower_record(kind, content):
    if kind == "array":
        return ArrayRecord(dict(content))
    if kind == "metric":
        return MetricRecord(dict(content))
    return ConfigRecord(dict(content))


# --- checks -------------------------------------------------------------------------------


def check_reads_as_flower(con, b, what):
    """Our SQL reads b as Flower does; returns Flower's RecordDict."""
    rd = flower_read(b)
    want = flower_bytes(rd)
    one = lambda sql, *a: con.execute(sql, a).fetchone()[0]  # noqa: E731
    assert one("SELECT rd_delete(?, 'absent')", b) == want, what
    added = one("SELECT rd('zz', 'metric', '{\"z\": 1}')")
    assert one("SELECT rd_set(?, 'zz', 'metric', '{\"z\": 1}')", b) == want + added, what
    assert json.loads(one("SELECT rd_keys(?)", b)) == list(rd.keys()), what
    assert one("SELECT rd_len(?)", b) == len(rd), what
    rows = con.execute("SELECT name, kind, nitems, record FROM record_dict(?)", (b,)).fetchall()
    assert [(r[0], r[1]) for r in rows] == [(n, k) for n, k in kinds(rd)], what
    for name, kind, nitems, record in rows:
        assert nitems == len(rd[name]), (what, name)
        item = flower_item(rd, name)
        if kind == "array":
            assert one("SELECT rd(?, 'array', rd_array_record(?, ?))", name, b, name) == item, (what, name)
            assert one("SELECT rd(?, 'array', ?)", name, record) == item, (what, name)
        else:
            fn = "rd_metrics" if kind == "metric" else "rd_config"
            got = one(f"SELECT rd(?, ?, {fn}(?, ?))", name, kind, b, name)
            assert got == item, (what, name, one(f"SELECT {fn}(?, ?)", b, name))
    return rd


def kinds(rd):
    for name, rec in rd.items():
        yield name, "array" if isinstance(rec, ArrayRecord) else "metric" if isinstance(rec, MetricRecord) else "config"


def test_random_splits_read_as_flower_reads_them():
    rng = random.Random(20261126)
    con = connect()
    for case in range(400):
        content = random_content(rng, random_array)
        b = Enc(rng).recorddict(content)
        rd = check_reads_as_flower(con, b, f"case {case}: {b.hex()}")
        # and the content is the one the encoder meant
        want = RecordDict({n: flower_record(k, c) for n, k, c in content})
        assert flower_bytes(rd) == flower_bytes(want), f"case {case}: the encoder wrote other content"


def test_exact_merge_cases():
    con = connect()
    one = lambda sql, *a: con.execute(sql, a).fetchone()[0]  # noqa: E731
    cases = [
        # two DoubleList values for one key: the lists concatenated
        (metric_rd(ld(21, dbl(1.0)), ld(21, dbl(2.0))), [1.0, 2.0]),
        (metric_rd(ld(21, dbl(1.0)) + ld(21, dbl(2.0))), [1.0, 2.0]),
        # a double, then an empty value message: the double stays
        (metric_rd(dbl(1.0), b""), 1.0),
        # a double, then an empty list: another member replaces it
        (metric_rd(dbl(1.0), ld(21, b"")), []),
        # list, double, list: the last list starts anew
        (metric_rd(ld(21, dbl(1.0)), dbl(5.0), ld(21, dbl(2.0))), [2.0]),
        # a double list, then a sint list: replaced
        (metric_rd(ld(21, dbl(1.0)) + ld(22, varint(8) + varint(zigzag(4)))), [4]),
    ]
    for b, value in cases:
        rd = check_reads_as_flower(con, b, b.hex())
        assert rd["m"]["a"] == value, (b.hex(), rd["m"]["a"])
        assert json.loads(one("SELECT rd_metrics(?, 'm')", b)) == {"a": value}, b.hex()
    # an array_record written twice in one item: both records' items
    w, v = Array(np.array([1.0], dtype="float32")), Array(np.array([2, 3], dtype="int64"))
    ar = lambda k, a: ld(
        1,
        ld(1, k.encode())
        + ld(2, ld(1, a.dtype.encode()) + ld(2, varint(a.shape[0])) + ld(3, a.stype.encode()) + ld(4, a.data)),
    )  # noqa: E731, E501
    b = ld(1, ld(1, b"a") + ld(ARRAY, ar("w", w)) + ld(ARRAY, ar("v", v)))
    rd = check_reads_as_flower(con, b, b.hex())
    assert list(rd["a"].keys()) == ["w", "v"]
    assert json.loads(one("SELECT ar_keys(rd_array_record(?, 'a'))", b)) == ["w", "v"]
    # an array record, then an empty metric record: replaced
    b = ld(1, ld(1, b"a") + ld(ARRAY, ar("w", w)) + ld(METRIC, b""))
    rd = check_reads_as_flower(con, b, b.hex())
    assert isinstance(rd["a"], MetricRecord) and len(rd["a"]) == 0
    # metric records written twice: their items together
    b = ld(
        1,
        ld(1, b"m")
        + ld(METRIC, ld(1, ld(1, b"a") + ld(2, dbl(1.0))))
        + ld(METRIC, ld(1, ld(1, b"b") + ld(2, dbl(2.0)))),
    )
    check_reads_as_flower(con, b, b.hex())
    assert json.loads(one("SELECT rd_metrics(?, 'm')", b)) == {"a": 1.0, "b": 2.0}
    # config: a string then an empty value; string lists merged
    cfg = lambda *vals: ld(1, ld(1, b"c") + ld(CONFIG, ld(1, ld(1, b"a") + b"".join(ld(2, x) for x in vals))))  # noqa: E731
    for b, value in [(cfg(ld(5, b"hi"), b""), "hi"), (cfg(ld(25, ld(1, b"x")), ld(25, ld(1, b"y"))), ["x", "y"])]:
        rd = check_reads_as_flower(con, b, b.hex())
        assert rd["c"]["a"] == value
        assert json.loads(one("SELECT rd_config(?, 'c')", b)) == {"a": value}


def test_tags_as_protobuf_reads_them():
    """Tags of 1 to 5 bytes whose value is below 2^32 and whose field
    number is 1 to 2^29 - 1; anything else is an error for both."""
    con = connect()
    item = metric_rd(dbl(1.0))  # 0a ...
    body = item[2:]

    def padded(field, wt, n):
        b = varint(field << 3 | wt)
        return b if n == len(b) else b[:-1] + bytes([b[-1] | 0x80]) + b"\x80" * (n - len(b) - 1) + b"\x00"

    places = {
        "top": lambda t: t + item[1:],
        "unknown top": lambda t: t + b"\x00" + item,
    }
    for n in range(1, 12):
        for place, make in places.items():
            tag = padded(1, LEN, n) if place == "top" else padded(7, VARINT, n)
            b = make(tag)
            try:
                flower_read(b)
                ok = True
            except DecodeError:
                ok = False
            assert ok == (n <= 5), (n, place)
            if ok:
                check_reads_as_flower(con, b, b.hex())
            else:
                try:
                    con.execute("SELECT rd_len(?)", (b,)).fetchone()
                    raise AssertionError(f"rd_len read a {n}-byte tag ({place})")
                except Exception as e:  # sqlite3.OperationalError
                    want = "rd_len: record dict has a tag longer than 5 bytes at byte "
                    assert str(e).startswith(want), str(e)
    # deeper: in a metric value, a list, an Array
    assert body  # the nested places, with 6-byte tags, protobuf rejects
    deep = [
        metric_rd(padded(1, I64, 6) + struct.pack("<d", 1.0)),
        metric_rd(ld(21, padded(1, I64, 6) + struct.pack("<d", 1.0))),
        metric_rd(padded(1, I64, 5) + struct.pack("<d", 1.0)),
    ]
    for i, b in enumerate(deep):
        try:
            flower_read(b)
            ok = True
        except DecodeError:
            ok = False
        assert ok == (i == 2), i
        try:
            got = con.execute("SELECT rd_metrics(?, 'm')", (b,)).fetchone()[0]
            assert ok and json.loads(got) == {"a": 1.0}, (i, got)
        except Exception as e:
            assert not ok and "tag longer than 5 bytes" in str(e), (i, str(e))
    # field numbers: 2^29 - 1 is the last; a 5th byte of 0x10 or more (2^32) an error
    for field, ok in [(2**29 - 1, True), (2**29, False)]:
        b = varint(field << 3) + b"\x00" + item
        try:
            flower_read(b)
            fl = True
        except DecodeError:
            fl = False
        assert fl == ok
        try:
            con.execute("SELECT rd_len(?)", (b,)).fetchone()
            assert ok
        except Exception as e:
            assert not ok and "invalid field number" in str(e), str(e)


def test_message_and_context_fields_merge_as_in_flower():
    """Message and Context readers merge their singular message fields as
    protobuf does: metadata, content, error and state written in pieces,
    a config map entry's value in two messages."""
    from flwr.common.serde import context_from_proto, message_from_proto
    from flwr.proto.message_pb2 import Context, Message

    con = connect()
    one = lambda sql, *a: con.execute(sql, a).fetchone()[0]  # noqa: E731

    def vi(f, v):
        return varint(f << 3) + varint(v)

    md1, md2 = vi(1, 7) + ld(2, b"id-a") + vi(3, 5), vi(1, 9) + ld(8, b"train") + ld(6, b"g")
    content1 = ld(1, ld(1, b"m") + ld(METRIC, ld(1, ld(1, b"a") + ld(2, ld(21, dbl(1.0))))))
    content2 = ld(1, ld(1, b"n") + ld(CONFIG, b""))
    for msg in [
        ld(1, md1) + ld(2, content1) + ld(1, md2) + ld(1, b"") + ld(2, content2),
        ld(1, md1) + ld(3, vi(1, zigzag(3))) + ld(3, ld(2, b"boom")) + ld(1, md2),
    ]:
        m = message_from_proto(Message.FromString(msg))
        got = json.loads(one("SELECT flower_message_metadata(?)", msg))
        md = m.metadata
        for k in ("run_id", "message_id", "src_node_id", "dst_node_id", "group_id", "message_type"):
            assert got[k] == getattr(md, k), (k, got[k], getattr(md, k))
        if m.has_error():
            assert got["error"] == {"code": m.error.code, "reason": m.error.reason}, got
            assert one("SELECT rd_from_message(?)", msg) is None
        else:
            assert got["error"] is None
            assert one("SELECT rd_from_message(?)", msg) == flower_bytes(m.content)
    entry = ld(1, b"k") + ld(2, dbl(1.5)) + ld(2, b"")  # a double, then an empty Scalar: kept
    ctx = (
        vi(1, 3)
        + ld(4, ld(1, ld(1, b"s") + ld(METRIC, b"")))
        + ld(3, entry)
        + ld(4, ld(1, ld(1, b"t") + ld(CONFIG, b"")))
        + ld(3, ld(1, b"j") + ld(2, vi(6, 4)))
        + ld(5, ld(1, b"x") + ld(2, vi(13, 1)) + ld(2, vi(8, zigzag(-2))))  # a bool, then a sint64: replaced
    )
    c = context_from_proto(Context.FromString(ctx))
    got = json.loads(one("SELECT flower_context_config(?)", ctx))
    assert got["node_config"] == dict(c.node_config) == {"k": 1.5, "j": 4}, got
    assert got["run_config"] == dict(c.run_config) == {"x": -2}, got
    assert one("SELECT rd_from_context(?)", ctx) == flower_bytes(c.state)
