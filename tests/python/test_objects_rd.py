# SPDX-License-Identifier: Apache-2.0
"""Flower objects of RecordDicts and Messages: rd_object_id, rd_objects,
rd_inflate, flower_object_type, flower_object_children, sql/superlink.sql.

Checked against the object sets Flower itself wrote
(tests/data/recorddict/objects/MANIFEST.json: every object id, type,
children, length and content, in get_all_nested_objects order) and the
22 MB "chunked" RecordDict, generated here with NumPy as the vectors'
make_chunked.py does.
"""

import hashlib
import io
import json
import os
import random
import sqlite3
import tempfile

import numpy as np
from arlib import DATA, ROOT, connect, varint

OBJ = os.path.join(DATA, "recorddict", "objects")


def objdata(name):
    with open(os.path.join(OBJ, name), "rb") as f:
        return f.read()


def sets():
    with open(os.path.join(OBJ, "MANIFEST.json")) as f:
        return json.load(f)


def rows_of(con, rd):
    return [
        (a, b, json.loads(c), bytes(d))
        for a, b, c, d in con.execute("SELECT object_id, type, children, content FROM rd_objects(?)", (rd,))
    ]


def inflate(con, rows):
    con.execute("CREATE TEMP TABLE IF NOT EXISTS o(object_id TEXT, content BLOB)")
    con.execute("DELETE FROM o")
    con.executemany("INSERT INTO o VALUES (?, ?)", rows)
    return con.execute("SELECT rd_inflate(object_id, content) FROM o").fetchone()[0]


def inflate_error(con, rows):
    try:
        inflate(con, rows)
    except sqlite3.Error as e:
        return str(e)
    raise AssertionError("rd_inflate accepted a bad object set")


def expect_rows(entry):
    return [(o["id"], o["type"], o["children"], objdata(o["file"])) for o in entry["objects"]]


# --- Flower's own object sets -----------------------------------------------


def test_every_object_set_is_flowers_byte_for_byte():
    con = connect()
    entries = sets()["object_sets"]
    assert {e["name"] for e in entries} >= {
        "full",
        "shared_records",
        "empty",
        "message_instruction",
        "message_reply",
        "message_error_reply",
        "message_empty_content",
    }
    checked = 0
    for entry in entries:
        want = expect_rows(entry)
        for oid, _, _, content in want:
            assert hashlib.sha256(content).hexdigest() == oid
        if entry["root_type"] == "Message":
            # rd_objects of the content gives every object but the Message
            want = want[:-1]
            if not entry.get("rebuilds"):
                assert want == [] and entry["objects"][-1]["children"] == []
                continue
        rd = objdata(entry["rebuilds"])
        got = rows_of(con, rd)
        assert [r[:3] for r in got] == [r[:3] for r in want], entry["name"]
        assert got == want, entry["name"]
        assert con.execute("SELECT rd_object_id(?)", (rd,)).fetchone()[0] == want[-1][0]
        if entry["root_type"] == "RecordDict":
            assert want[-1][0] == entry["root_id"]
        else:
            assert entry["objects"][-1]["children"] == [want[-1][0]]
        checked += 1
    assert checked == 6


def test_object_lengths_match_manifest():
    for entry in sets()["object_sets"]:
        for o in entry["objects"]:
            content = objdata(o["file"])
            head, body = content.split(b"\x00", 1)
            assert int(head.split(b" ")[2]) == len(body)
            assert o["len"] == len(content), (entry["name"], o["id"])


def test_rd_object_id_of_the_recorddict_vectors():
    con = connect()
    with open(os.path.join(DATA, "recorddict", "MANIFEST.json")) as f:
        rds = json.load(f)["recorddicts"]
    for r in rds:
        rd = open(os.path.join(DATA, "recorddict", os.path.basename(r["file"])), "rb").read()
        assert con.execute("SELECT rd_object_id(?)", (rd,)).fetchone()[0] == r["object_id"], r["file"]
        ids = {row[0] for row in rows_of(con, rd)}
        for item in r["items"]:
            assert item["object_id"] in ids, (r["file"], item["name"])
        # and the objects inflate back to the same bytes
        assert inflate(con, [(a, d) for a, _, _, d in rows_of(con, rd)]) == rd


def test_inflate_every_object_set_in_any_order():
    con = connect()
    rng = random.Random(7)
    for entry in sets()["object_sets"]:
        rows = [(o["id"], objdata(o["file"])) for o in entry["objects"]]
        want = objdata(entry["rebuilds"]) if entry.get("rebuilds") else None
        for k in range(4):
            if k:
                rng.shuffle(rows)
            got = inflate(con, rows + rows[:k])  # repeated rows are ignored
            assert got == want, entry["name"]


def test_message_roots():
    con = connect()
    by_name = {e["name"]: e for e in sets()["object_sets"]}
    err = by_name["message_error_reply"]
    assert err["root_type"] == "Message" and len(err["objects"]) == 1
    assert inflate(con, [(o["id"], objdata(o["file"])) for o in err["objects"]]) is None
    empty = by_name["message_empty_content"]
    assert inflate(con, [(o["id"], objdata(o["file"])) for o in empty["objects"]]) == b""
    for name in ("message_instruction", "message_reply"):
        e = by_name[name]
        msg = e["objects"][-1]
        content = objdata(msg["file"])
        assert content.startswith(b"Message " + msg["children"][0].encode() + b" ")
        assert con.execute(
            "SELECT flower_object_type(?), flower_object_children(?)", (content, content)
        ).fetchone() == ("Message", json.dumps(msg["children"], separators=(",", ":")))


def test_type_and_children_of_every_object():
    con = connect()
    for entry in sets()["object_sets"]:
        for o in entry["objects"]:
            c = objdata(o["file"])
            t, ch = con.execute("SELECT flower_object_type(?), flower_object_children(?)", (c, c)).fetchone()
            assert t == o["type"] and json.loads(ch) == o["children"]
    assert con.execute("SELECT flower_object_type(NULL), flower_object_children(NULL)").fetchone() == (None, None)


# --- the 22 MB chunked RecordDict ---------------------------------------------


def _ld(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def _npy(a):
    b = io.BytesIO()
    np.save(b, a, allow_pickle=False)
    return b.getvalue()


def _array_item(key, a):
    msg = (
        _ld(1, str(a.dtype).encode())
        + _ld(2, b"".join(varint(s) for s in a.shape))
        + _ld(3, b"numpy.ndarray")
        + _ld(4, _npy(a))
    )
    return _ld(1, _ld(1, key.encode()) + _ld(2, msg))


def chunked_blob():
    """make_chunked.py's RecordDict (Flower's serde bytes)."""
    arrays = _array_item("big", np.arange(1_441_792, dtype=np.float32)) + _array_item(
        "zeros", np.zeros(4_000_000, np.float32)
    )
    metrics = _ld(1, _ld(1, b"num-examples") + _ld(2, varint(2 << 3 | 0) + varint(10 << 1)))
    return _ld(1, _ld(1, b"arrays") + _ld(2, arrays)) + _ld(1, _ld(1, b"metrics") + _ld(3, metrics))


def test_chunked_recorddict():
    con = connect()
    ch = sets()["chunked"]
    blob = chunked_blob()
    assert len(blob) == ch["bytes"] and hashlib.sha256(blob).hexdigest() == ch["sha256"]
    got = rows_of(con, blob)
    assert [(r[0], r[1], r[2]) for r in got] == [(o["id"], o["type"], o["children"]) for o in ch["objects"]]
    for (oid, _, _, content), o in zip(got, ch["objects"]):
        assert len(content) == o["len"]
        assert hashlib.sha256(content).hexdigest() == oid
        if "file" in o:
            assert content == objdata(o["file"])
    assert con.execute("SELECT rd_object_id(?)", (blob,)).fetchone()[0] == ch["object_id"]
    rows = [(r[0], r[3]) for r in got]
    random.Random(3).shuffle(rows)
    assert inflate(con, rows) == blob


# --- Flower's typing of metric and config values ------------------------------


def _metric(items):
    """MetricRecord/ConfigRecord bytes: items = [(key, value message bytes)]."""
    return b"".join(_ld(1, _ld(1, k.encode()) + _ld(2, v)) for k, v in items)


def test_values_are_hashed_as_flower_writes_them_back():
    con = connect()
    sint5 = varint(2 << 3) + varint(10)  # sint64 5
    uint5 = varint(3 << 3) + varint(5)  # uint64 5: Flower reads an int, writes sint64
    big = varint(3 << 3) + varint(2**63)  # stays uint64
    empty_sint = _ld(22, b"")  # an empty list: double (metrics) / bool (configs)
    canon = _ld(1, _ld(1, b"m") + _ld(3, _metric([("a", sint5), ("b", big), ("l", _ld(21, b""))]))) + _ld(
        1, _ld(1, b"c") + _ld(4, _metric([("l", _ld(24, b""))]))
    )
    odd = _ld(1, _ld(1, b"m") + _ld(3, _metric([("a", uint5), ("b", big), ("l", empty_sint)]))) + _ld(
        1, _ld(1, b"c") + _ld(4, _metric([("l", empty_sint)]))
    )
    ids = [con.execute("SELECT rd_object_id(?)", (b,)).fetchone()[0] for b in (canon, odd)]
    assert ids[0] == ids[1]
    assert inflate(con, [(a, d) for a, _, _, d in rows_of(con, odd)]) == canon
    # a uint list of small values is a sint list to Flower
    ul = _ld(23, _ld(1, varint(1) + varint(2)))
    sl = _ld(22, _ld(1, varint(2) + varint(4)))
    a = con.execute("SELECT rd_object_id(?)", (_ld(1, _ld(1, b"m") + _ld(3, _metric([("x", ul)]))),)).fetchone()[0]
    b = con.execute("SELECT rd_object_id(?)", (_ld(1, _ld(1, b"m") + _ld(3, _metric([("x", sl)]))),)).fetchone()[0]
    assert a == b


# --- bad object sets ------------------------------------------------------------


def obj(type_name, children, body):
    content = ("%s %s %d" % (type_name, ",".join(children), len(body))).encode() + b"\x00" + body
    return hashlib.sha256(content).hexdigest(), content


def test_inflate_names_the_problem():
    con = connect()
    full = {e["name"]: e for e in sets()["object_sets"]}["full"]
    rows = [(o["id"], objdata(o["file"])) for o in full["objects"]]
    root = full["root_id"]
    metric = full["objects"][-3]["id"]
    # a record missing
    e = inflate_error(con, [r for r in rows if r[0] != metric])
    assert "rd_inflate: missing record %s (child of RecordDict %s)" % (metric, root) in e, e
    # an extra object
    extra = obj("MetricRecord", [], b"")
    e = inflate_error(con, rows + [extra])
    assert "object %s (MetricRecord) is not part of RecordDict %s" % (extra[0], root) in e, e
    # two roots
    other = obj("RecordDict", [], b"{}")
    assert "more than one RecordDict object" in inflate_error(con, rows + [other])
    # no root
    e = inflate_error(con, [r for r in rows if r[0] != root])
    assert "no RecordDict or Message object among the 13 objects" in e, e
    # a RecordDict child that is not a record
    arr = full["objects"][1]
    bad = obj("RecordDict", [arr["id"]], json.dumps({"a": arr["id"]}).encode())
    e = inflate_error(con, [bad] + [(o["id"], objdata(o["file"])) for o in full["objects"][:2]])
    assert "object %s is an Array, its parent RecordDict %s wants an ArrayRecord" % (arr["id"], bad[0]) in e, e
    # a metric record with children, a bad metric body, a body naming an unlisted record
    chunk = full["objects"][0]
    e = inflate_error(con, [obj("MetricRecord", [chunk["id"]], b"")])
    assert "a MetricRecord has no children" in e, e
    m = obj("MetricRecord", [], b"\x0a\x05")
    e = inflate_error(con, [m, obj("RecordDict", [m[0]], json.dumps({"m": m[0]}).encode())])
    assert "MetricRecord %s body truncated" % m[0] in e, e
    m = obj("MetricRecord", [], b"")
    e = inflate_error(con, [m, obj("RecordDict", [m[0]], json.dumps({"m": "0" * 64}).encode())])
    assert "value is not one of the head's child ids" in e, e
    e = inflate_error(con, [m, obj("RecordDict", [m[0]], b"{}")])
    assert "lists child %s that its body does not use" % m[0] in e, e
    e = inflate_error(con, [m, obj("RecordDict", [m[0]], json.dumps({"m": m[0], "n": m[0]}).encode()[:-1])])
    assert "RecordDict" in e and "body" in e, e
    # Messages: content inside the body, too many children, a child of the wrong type
    e = inflate_error(con, [obj("Message", [], b"\x12\x00")])
    assert "body holds a content (field 2)" in e, e
    e = inflate_error(con, [obj("Message", [], b"\x0a")])
    assert "Message" in e and "body truncated" in e, e
    e = inflate_error(con, [m, obj("Message", [m[0]], b"")])
    assert "its parent Message" in e and "wants a RecordDict" in e, e
    rd = obj("RecordDict", [], b"{}")
    rd2 = obj("RecordDict", [], b"{ }")
    e = inflate_error(con, [rd, rd2, obj("Message", [rd[0], rd2[0]], b"")])
    assert "has 2 children" in e, e
    e = inflate_error(con, [rd, obj("Message", [], b""), obj("Message", [], b"\x1a\x00")])
    assert "more than one Message object" in e, e
    # a RecordDict beside a Message that does not name it
    e = inflate_error(con, [rd, obj("Message", [], b"")])
    assert "(RecordDict) is not part of Message" in e, e
    # hashes are checked
    e = inflate_error(con, [(rd[0], rd[1] + b" ")])
    assert "content hashes to" in e, e


def test_errors_of_the_other_functions():
    con = connect()
    for sql, arg, want in [
        ("SELECT rd_object_id(?)", b"\x0a\x01", "rd_object_id: record dict truncated"),
        ("SELECT rd_object_id(?)", b"\x0a\x06\x0a\x01a\x12\x01\x0a", "rd_object_id: array record 'a' (at byte 7)"),
        ("SELECT * FROM rd_objects(?)", b"\x0a", "rd_objects: record dict truncated"),
        ("SELECT flower_object_type(?)", b"Array 3", "flower_object_type: object has no head (no NUL byte)"),
        (
            "SELECT flower_object_children(?)",
            b"Tensor  0\x00",
            "flower_object_children: object has unknown type 'Tensor'",
        ),
    ]:
        try:
            con.execute(sql, (arg,)).fetchall()
        except sqlite3.Error as e:
            assert want in str(e), (want, str(e))
        else:
            raise AssertionError(sql)
    assert con.execute("SELECT rd_object_id(NULL)").fetchone()[0] is None
    assert con.execute("SELECT count(*) FROM rd_objects(NULL)").fetchone()[0] == 0


# --- sql/superlink.sql over a fake SuperLink database ---------------------------

SUPERLINK_TABLES = """
CREATE TABLE objects(object_id TEXT PRIMARY KEY, content BLOB, is_available INTEGER, ref_count INTEGER);
CREATE TABLE object_children(parent_id TEXT, child_id TEXT);
CREATE TABLE run_objects(run_id INTEGER, object_id TEXT);
CREATE TABLE context(run_id INTEGER UNIQUE, context BLOB);
"""


def test_superlink_views():
    by_name = {e["name"]: e for e in sets()["object_sets"]}
    run = 13835058055282163719 - 2**64  # SuperLink stores uint64 run ids as sint64
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "state.db")
        db = sqlite3.connect(path)
        db.executescript(SUPERLINK_TABLES)
        want = {}
        for name in ("message_instruction", "message_reply", "message_error_reply", "message_empty_content"):
            e = by_name[name]
            for o in e["objects"]:
                db.execute("INSERT OR IGNORE INTO objects VALUES (?, ?, 1, 1)", (o["id"], objdata(o["file"])))
                for c in o["children"]:
                    db.execute("INSERT INTO object_children VALUES (?, ?)", (o["id"], c))
            db.execute("INSERT INTO run_objects VALUES (?, ?)", (run, e["root_id"]))
            want[e["root_id"]] = objdata(e["rebuilds"]) if e.get("rebuilds") else None
        # a Message still being uploaded: its content is not available yet
        pending_rd = by_name["shared_records"]["objects"][-1]
        pending = obj("Message", [pending_rd["id"]], b"\x1a\x02\x08\x01")
        db.execute("INSERT INTO objects VALUES (?, ?, 1, 1)", pending)
        db.execute("INSERT INTO objects VALUES (?, x'', 0, 1)", (pending_rd["id"],))
        db.execute("INSERT INTO object_children VALUES (?, ?)", (pending[0], pending_rd["id"]))
        db.execute("INSERT INTO run_objects VALUES (?, ?)", (run, pending[0]))
        db.execute("INSERT INTO context VALUES (?, ?)", (run, objdata("serverapp.pb")))
        db.commit()
        db.close()

        con = connect(path)
        schema = con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        with open(os.path.join(ROOT, "sql", "superlink.sql")) as f:
            con.executescript(f.read())
        got = {
            m: (r, r64, c)
            for r, r64, m, c in con.execute("SELECT run_id, run_id_int64, message_id, content FROM ar_message_contents")
        }
        assert set(got) == set(want)
        for m, content in want.items():
            # run_id as Flower prints it (text past 2^63), run_id_int64 as stored
            assert got[m] == ("13835058055282163719", run, content), m
        # nothing was written to the SuperLink's file
        assert con.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == schema
        assert con.execute("SELECT run_id, run_id_int64, series_id, state FROM ar_run_state").fetchall() == [
            ("13835058055282163719", run, None, objdata("serverapp.state.pb"))
        ]
        # the tables of the other schema read as empty; nothing else is there
        for view in ("ar_messages", "ar_run_state WHERE series_id IS NOT NULL"):
            assert con.execute(f"SELECT count(*) FROM {view}").fetchone()[0] == 0, view
        try:
            con.executescript(open(os.path.join(ROOT, "sql", "superlink.sql")).read())
        except sqlite3.OperationalError as e:
            assert "ar_superlink is already in use" in str(e), e
        else:
            raise AssertionError("reading sql/superlink.sql twice on one connection")
        assert con.execute("SELECT count(*) FROM ar_message_contents").fetchone()[0] == len(want)
        con.close()
