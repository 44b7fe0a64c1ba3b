#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/bad/flower_rd.manifest and tests/bad/flower_rd/: malformed
sets of Flower objects rooted in a RecordDict or a Message, for rd_inflate.

Each input is made by hand below, with the substring its error must
contain; files use gen_interop.py's object-set format (id, 8-digit length,
content, per object). Run it again after changing it
(python3 tests/bad/gen_flower_rd.py) and commit what changes.
"""

import json
import os
import shutil

import gen_foundation as foundation
from gen_foundation import put
from gen_interop import FLOWER_SPLIT, NPY_F4, array_obj, chunk, obj, object_set, record_obj, sha

GROUP = "flower_rd"


def rd_obj(items, children=None, body=None):
    """items: {name: record content}; children default to the records' ids."""
    ids = []
    for content in items.values():
        if sha(content) not in ids:
            ids.append(sha(content))
    if body is None:
        body = json.dumps({k: sha(v) for k, v in items.items()})
    return obj("RecordDict", ids if children is None else children, body)


def gen():
    def p(name, data, want):
        put(GROUP, GROUP, name + ".objects", data, want)

    c1 = chunk(NPY_F4)
    a1 = array_obj([sha(c1)])
    r1 = record_obj({"w": a1})
    m1 = obj("MetricRecord", [], b"\x0a\x07\x0a\x01n\x12\x02\x10\x0a")  # {"n": sint64 5}
    cfg = obj("ConfigRecord", [], b"\x0a\x08\x0a\x01s\x12\x03\x2a\x01x")  # {"s": "x"}
    rd = rd_obj({"arrays": r1, "metrics": m1, "config": cfg})
    good = [c1, a1, r1, m1, cfg, rd]
    msg = obj("Message", [sha(rd)], b"\x0a\x02\x08\x01")  # metadata {run_id: 1}

    # hashes and heads
    p(
        "content_changed",
        object_set(*good[:-1], rd[:-1] + b"X", ids=[None] * 5 + [sha(rd)]),
        "object %s: content hashes to" % sha(rd),
    )
    p("head_no_nul", object_set(b"RecordDict  2{}"), "has no head (no NUL byte)")
    p("head_truncated", object_set(b"RecordDict  5\x00{}"), "head says the body has 5 bytes, it has 2")
    p("metric_with_children", object_set(c1, obj("MetricRecord", [sha(c1)], b"")), "a MetricRecord has no children")
    p("config_with_children", object_set(c1, obj("ConfigRecord", [sha(c1)], b"")), "a ConfigRecord has no children")
    # roots
    p("no_root", object_set(*good[:-1]), "no RecordDict or Message object among the 5 objects")
    p("two_recorddicts", object_set(*good, rd_obj({})), "more than one RecordDict object")
    p("two_messages", object_set(*good, msg, obj("Message", [], b"")), "more than one Message object")
    p(
        "recorddict_beside_message",
        object_set(rd_obj({}), obj("Message", [], b"")),
        "(RecordDict) is not part of Message",
    )
    p("orphan_record", object_set(*good, obj("ConfigRecord", [], b"")), "(ConfigRecord) is not part of RecordDict")
    # children
    p(
        "missing_record",
        object_set(c1, a1, r1, cfg, rd),
        "missing record %s (child of RecordDict %s)" % (sha(m1), sha(rd)),
    )
    bad = rd_obj({"a": a1})
    p(
        "child_wrong_type",
        object_set(c1, a1, bad),
        "object %s is an Array, its parent RecordDict %s wants an ArrayRecord, MetricRecord or ConfigRecord"
        % (sha(a1), sha(bad)),
    )
    p("message_missing_content", object_set(msg), "missing RecordDict %s (child of Message %s)" % (sha(rd), sha(msg)))
    wrong = obj("Message", [sha(m1)], b"")
    p(
        "message_child_wrong_type",
        object_set(m1, wrong),
        "object %s is a MetricRecord, its parent Message %s wants a RecordDict" % (sha(m1), sha(wrong)),
    )
    rd2 = rd_obj({"m": m1})
    p("message_two_children", object_set(*good, rd2, obj("Message", [sha(rd), sha(rd2)], b"")), "has 2 children")
    # bodies
    p("message_holds_content", object_set(obj("Message", [], b"\x12\x00")), "body holds a content (field 2)")
    p("message_body_truncated", object_set(obj("Message", [], b"\x0a\x05")), "body truncated")
    mt = obj("MetricRecord", [], b"\x0a\x05")
    p("metric_body_truncated", object_set(mt, rd_obj({"m": mt})), "MetricRecord %s body truncated" % sha(mt))
    mw = obj("MetricRecord", [], b"\x0a\x07\x0a\x01n\x12\x02\x08\x01")  # a double written as a varint
    p("metric_body_wrong_type", object_set(mw, rd_obj({"m": mw})), "has wrong wire type 0")
    cu = obj("ConfigRecord", [], b"\x0a\x08\x0a\x01s\x12\x03\x2a\x01\xff")
    p("config_bad_utf8", object_set(cu, rd_obj({"c": cu})), "not valid UTF-8")
    p("body_not_json", object_set(m1, rd_obj({"m": m1}, body="[]")), "body: expected an object at byte 0")
    p(
        "body_value_unlisted",
        object_set(m1, rd_obj({"m": m1}, body=json.dumps({"m": "0" * 64}))),
        "value is not one of the head's child ids",
    )
    p(
        "body_unused_child",
        object_set(m1, cfg, rd_obj({"m": m1, "c": cfg}, body=json.dumps({"m": sha(m1)}))),
        "lists child %s that its body does not use" % sha(cfg),
    )
    p(
        "body_duplicate_name",
        object_set(m1, rd_obj({"m": m1}, body='{"m": "%s", "m": "%s"}' % (sha(m1), sha(m1)))),
        "duplicate key",
    )
    p(
        "body_trailing_text",
        object_set(m1, rd_obj({"m": m1}, body=json.dumps({"m": sha(m1)}) + "x")),
        "unexpected text after the JSON value",
    )
    p(
        "body_name_lone_surrogate",
        object_set(m1, rd_obj({"m": m1}, body='{"\\ud800": "%s"}' % sha(m1))),
        "body: unpaired surrogate escape at byte 2",
    )


HEADERS = {
    GROUP: (
        "Malformed sets of Flower objects rooted in a RecordDict or a Message, for rd_inflate: each file holds "
        "objects as id (64 characters), content length (8 digits), content.",
        "",
        "read rd_inflate " + FLOWER_SPLIT + "SELECT rd_inflate(id, content) FROM o WHERE id IS NOT NULL\n"
        "read rd_inflate "
        + FLOWER_SPLIT
        + "SELECT rd_inflate(id, content) FROM (SELECT * FROM o WHERE id IS NOT NULL ORDER BY pos DESC)\n",
    ),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.rmtree(os.path.join(here, GROUP), ignore_errors=True)
    foundation.GROUPS.clear()
    gen()
    foundation.write_manifests(HEADERS, "gen_flower_rd.py")
    print("%d inputs" % sum(len(v) for v in foundation.GROUPS.values()))


if __name__ == "__main__":
    main()
