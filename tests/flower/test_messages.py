# SPDX-License-Identifier: Apache-2.0
"""Flower 1.42's Messages and Contexts (serde.message_to_proto /
context_to_proto of seeded objects, flowergen) read by the flower_*
functions: rd_from_message gives the content's bytes exactly as
recorddict_to_proto writes them (NULL for an error reply, x'' for an empty
content), flower_message_metadata every Metadata field Flower 1.42 has
(src_task_id and dst_task_id included: null when unset) and the Error;
rd_from_context the state's bytes, flower_context_config the ids
(series_id included) and both configs, sorted by key, values of Flower's
kinds."""

import json
import math

import flowergen as fg
from flwr.app import Error, Metadata, RecordDict
from flwr.app.message.message import make_message
from test_bytes import check_rd_readers, one

SEED = 424242
N = 120


def same_json(a, b):
    """Equal JSON values, int and float (and bool) kept apart, keys in order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same_json(x, y) for x, y in zip(a, b))
    if isinstance(a, float):
        return fg.bits(a) == fg.bits(b)
    return a == b


def spell_double(x):
    return fg.value_json(float(x))


def expected_metadata(msg):
    md = msg.metadata
    err = None
    if msg.has_error():
        err = {"code": msg.error.code, "reason": msg.error.reason or ""}
    return {
        "run_id": md.run_id,
        "message_id": md.message_id,
        "src_node_id": md.src_node_id,
        "dst_node_id": md.dst_node_id,
        "reply_to_message_id": md.reply_to_message_id,
        "group_id": md.group_id,
        "ttl": spell_double(md.ttl),
        "message_type": md.message_type,
        "created_at": spell_double(md.created_at),
        "src_task_id": md.src_task_id,
        "dst_task_id": md.dst_task_id,
        "error": err,
    }


def check_message(msg):
    blob = fg.msg_bytes(msg)
    got = one("SELECT flower_message_metadata(?)", blob)
    want = expected_metadata(msg)
    assert same_json(json.loads(got), want), (got, want)  # doubles keep their kind and bits
    content = one("SELECT rd_from_message(?)", blob)
    if msg.has_content():
        assert content == fg.rd_bytes(msg.content)
        check_rd_readers(msg.content, content)
    else:
        assert content is None
    # and Flower reads these bytes back to the same Message
    assert fg.msg_bytes(fg.msg_parse(blob)) == blob


def test_messages():
    g = fg.Gen(SEED)
    kinds = set()
    for _ in range(N):
        msg = g.message()
        kinds.add((msg.has_error(), msg.metadata.src_task_id is None, msg.metadata.dst_task_id is None))
        check_message(msg)
    assert len(kinds) >= 6, kinds


def metadata(**kw):
    base = dict(
        run_id=2**64 - 1,
        message_id="",
        src_node_id=1,
        dst_node_id=2,
        reply_to_message_id="",
        group_id="g",
        created_at=1764000005.25,
        ttl=43200.0,
        message_type="train",
    )
    base.update(kw)
    return Metadata(**base)


def test_message_edges():
    # an empty content, task ids at their bounds, NaN and inf times, an error reply with no reason
    for md in (
        metadata(),
        metadata(src_task_id=0, dst_task_id=2**64 - 1),
        metadata(ttl=math.nan, created_at=-math.inf, src_task_id=7),
        metadata(ttl=-0.0, created_at=5e-324, dst_task_id=0, message_type="query.ü"),
    ):
        check_message(make_message(md, content=RecordDict()))
        assert one("SELECT rd_from_message(?)", fg.msg_bytes(make_message(md, content=RecordDict()))) == b""
        check_message(make_message(md, error=Error(code=0)))
        check_message(make_message(md, error=Error(code=-(2**63), reason="ü\x00")))


def expected_config(ctx):
    def spell(d):
        items = sorted(d.items(), key=lambda kv: kv[0].encode("utf-8"))
        return {k: fg.value_json(v) for k, v in items}

    return {
        "run_id": ctx.run_id,
        "node_id": ctx.node_id,
        "series_id": ctx.series_id,
        "node_config": spell(ctx.node_config),
        "run_config": spell(ctx.run_config),
    }


def check_context(ctx):
    blob = fg.ctx_bytes(ctx)
    got = json.loads(one("SELECT flower_context_config(?)", blob))
    want = expected_config(ctx)
    assert same_json(got, want), (got, want)
    state = one("SELECT rd_from_context(?)", blob)
    assert state == fg.rd_bytes(ctx.state)
    check_rd_readers(ctx.state, state)
    back = fg.ctx_parse(blob)
    assert (back.run_id, back.node_id, back.series_id) == (ctx.run_id, ctx.node_id, ctx.series_id)


def test_contexts():
    g = fg.Gen(SEED + 1)
    for _ in range(N):
        check_context(g.context())


def test_context_edges():
    from flwr.app import Context

    check_context(Context(run_id=0, node_id=0, node_config={}, state=RecordDict(), run_config={}))
    check_context(
        Context(
            run_id=2**64 - 1,
            node_id=1,
            node_config={"b": 1, "a": True, "ä": "x", "Z": -0.0, "nan": math.nan, "big": 2**63 - 1},
            state=RecordDict(),
            run_config={"lr": 0.1, "": "", "neg": -(2**63)},
            series_id=2**64 - 1,
        )
    )


def proto_metadata(p):
    """flower_message_metadata's JSON of a parsed (possibly merged) ProtoMessage."""
    md = p.metadata
    return {
        "run_id": md.run_id,
        "message_id": md.message_id,
        "src_node_id": md.src_node_id,
        "dst_node_id": md.dst_node_id,
        "reply_to_message_id": md.reply_to_message_id,
        "group_id": md.group_id,
        "ttl": spell_double(md.ttl),
        "message_type": md.message_type,
        "created_at": spell_double(md.created_at),
        "src_task_id": md.src_task_id if md.HasField("src_task_id") else None,
        "dst_task_id": md.dst_task_id if md.HasField("dst_task_id") else None,
        "error": {"code": p.error.code, "reason": p.error.reason} if p.HasField("error") else None,
    }


def names_unique(rd_proto):
    names = [item.key for item in rd_proto.items]
    return len(names) == len(set(names))


UNKNOWN = bytes([0xA0, 0x06, 0x01]) + bytes([0xAA, 0x06, 0x02, 0x00, 0x01])  # fields 100 (varint), 101 (bytes)


def test_merged_and_unknown_fields_read_as_protobuf():
    """Two serialized Messages (Contexts) concatenated are one message to
    protobuf: singular fields take the last value set, Metadata and Error
    merge field by field, the contents' items concatenate, map entries of the
    same key keep the last. Our readers agree with Flower's own protobuf
    parse of the same bytes, unknown fields (skipped) appended or not."""
    g = fg.Gen(SEED + 2)
    checked = 0
    for i in range(60):
        blob = fg.msg_bytes(g.message()) + fg.msg_bytes(g.message())
        if i % 3 == 0:
            blob += UNKNOWN
        p = fg.serde.ProtoMessage()
        p.ParseFromString(blob)
        if p.HasField("content") and not names_unique(p.content):
            continue  # our readers refuse a RecordDict with a name twice
        checked += 1
        got = json.loads(one("SELECT flower_message_metadata(?)", blob))
        want = proto_metadata(p)
        assert same_json(got, want), (got, want)
        content = one("SELECT rd_from_message(?)", blob)
        assert content == (p.content.SerializeToString() if p.HasField("content") else None)
    assert checked >= 30, checked
    checked = 0
    for i in range(60):
        blob = fg.ctx_bytes(g.context()) + fg.ctx_bytes(g.context())
        if i % 3 == 0:
            blob += UNKNOWN
        p = fg.serde.ProtoContext()
        p.ParseFromString(blob)
        if not names_unique(p.state):
            continue
        checked += 1
        ctx = fg.serde.context_from_proto(p)
        got = json.loads(one("SELECT flower_context_config(?)", blob))
        want = expected_config(ctx)
        assert same_json(got, want), (got, want)
        assert one("SELECT rd_from_context(?)", blob) == p.state.SerializeToString()
    assert checked >= 30, checked
