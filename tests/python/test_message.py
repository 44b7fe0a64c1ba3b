# SPDX-License-Identifier: Apache-2.0
"""Flower Messages and Contexts against Flower's own vectors
(tests/data/recorddict/messages, contexts): rd_from_message gives the
content RecordDict byte for byte, flower_message_metadata the MANIFEST's
metadata and error exactly (uint64s included), rd_from_context the state and
flower_context_config the typed config values. The protobufs are re-encoded
here, from the .proto alone, with fields and map entries in other orders,
split into merged occurrences and with duplicate keys: the results do not
change (or follow protobuf's rules)."""

import base64
import hashlib
import json
import os
import random

from arlib import DATA, connect, read_varint, varint

RD = os.path.join(DATA, "recorddict")
MANIFEST = json.load(open(os.path.join(RD, "MANIFEST.json"), encoding="utf-8"))


def _read(rel):
    return open(os.path.join(RD, rel), "rb").read()


def _fields(b):
    """[(field, wire type, raw field bytes incl. tag, payload)] at top level."""
    out, i = [], 0
    while i < len(b):
        start = i
        tag, i = read_varint(b, i)
        f, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = read_varint(b, i)
            payload = v
        elif wt == 1:
            payload, i = b[i : i + 8], i + 8
        elif wt == 2:
            n, i = read_varint(b, i)
            payload, i = b[i : i + n], i + n
        else:
            raise AssertionError("unexpected wire type %d" % wt)
        out.append((f, wt, b[start:i], payload))
    return out


def _ld(field, body):
    return varint(field << 3 | 2) + varint(len(body)) + body


def _metadata(con, msg):
    return json.loads(con.execute("select flower_message_metadata(?)", (msg,)).fetchone()[0])


def _one(con, sql, *args):
    return con.execute(sql, args).fetchone()[0]


def _same_typed(got, want):
    return type(got) is type(want) and got == want


def test_message_vectors():
    con = connect()
    assert MANIFEST["messages"]
    for entry in MANIFEST["messages"]:
        msg = _read(entry["file"])
        content = _one(con, "select rd_from_message(?)", msg)
        if entry["content_file"] is None:
            assert content is None, entry["name"]
        else:
            assert bytes(content) == _read(entry["content_file"]), entry["name"]
            assert hashlib.sha256(bytes(content)).hexdigest() == entry["content_sha256"]
        got = _metadata(con, msg)
        want = entry["metadata"]
        assert list(got) == list(want) + ["src_task_id", "dst_task_id", "error"], got
        assert got["src_task_id"] is None and got["dst_task_id"] is None  # the vectors predate Flower 1.42's task ids
        for k, v in want.items():
            assert _same_typed(got[k], v), (entry["name"], k, got[k], v)
        assert got["error"] == entry["error"], entry["name"]
        if entry["error"] is not None:
            assert _same_typed(got["error"]["code"], entry["error"]["code"])


def _expected_scalar(typ, val):
    if typ == "double":
        return {"double": val} if isinstance(val, str) else float(val)
    if typ == "bytes":
        return {"bytes": base64.b64encode(bytes.fromhex(val)).decode()}
    return val


def _check_context(con, ctx, entry):
    assert bytes(_one(con, "select rd_from_context(?)", ctx)) == _read(entry["state_file"]), entry["name"]
    text = _one(con, "select flower_context_config(?)", ctx)
    got = json.loads(text)
    assert list(got) == ["run_id", "node_id", "series_id", "node_config", "run_config"]
    assert got["series_id"] == 0  # the vectors predate Flower 1.42's series_id
    assert _same_typed(got["run_id"], entry["run_id"]) and _same_typed(got["node_id"], entry["node_id"])
    for m in ("node_config", "run_config"):
        want = entry[m]
        assert list(got[m]) == sorted(want, key=lambda k: k.encode()), (entry["name"], m)  # sorted by key
        for k, (typ, val) in want.items():
            assert _same_typed(got[m][k], _expected_scalar(typ, val)), (entry["name"], m, k, got[m][k])
    return text


def test_context_vectors():
    con = connect()
    assert MANIFEST["contexts"]
    for entry in MANIFEST["contexts"]:
        ctx = _read(entry["file"])
        assert hashlib.sha256(_read(entry["state_file"])).hexdigest() == entry["state_sha256"]
        _check_context(con, ctx, entry)


def test_context_shuffled_entries():
    """Map entries (and the other fields) in any order give the same config
    text and state: Flower's SuperLink writes map entries in no set order."""
    con = connect()
    rng = random.Random(7)
    for entry in MANIFEST["contexts"]:
        ctx = _read(entry["file"])
        want = _check_context(con, ctx, entry)
        fields = _fields(ctx)
        assert b"".join(f[2] for f in fields) == ctx
        for _ in range(20):
            perm = fields[:]
            rng.shuffle(perm)
            shuffled = b"".join(f[2] for f in perm)
            assert _check_context(con, shuffled, entry) == want
        # only the entries reversed, everything else in place
        entries = [f for f in fields if f[0] in (3, 5)]
        it = iter(reversed(entries))
        rev = b"".join(next(it)[2] if f[0] in (3, 5) else f[2] for f in fields)
        assert _check_context(con, rev, entry) == want


def test_context_duplicate_keys_keep_last():
    con = connect()
    ctx = _read("contexts/serverapp.pb")
    entry = next(e for e in MANIFEST["contexts"] if e["name"] == "serverapp")
    # an earlier 'lr' entry (a string) before the real one: the real one wins
    early = _ld(5, _ld(1, b"lr") + _ld(2, _ld(14, b"first")))
    _check_context(con, early + ctx, entry)
    # a later one wins over the real one
    late = _ld(5, _ld(1, b"lr") + _ld(2, _ld(14, b"last")))
    got = json.loads(_one(con, "select flower_context_config(?)", ctx + late))
    assert got["run_config"]["lr"] == "last" and len(got["run_config"]) == len(entry["run_config"])


def test_message_field_orders_and_merges():
    """Top-level fields in any order, metadata split into two merged
    occurrences and content split into two concatenated ones read the same."""
    con = connect()
    rng = random.Random(11)
    for entry in MANIFEST["messages"]:
        msg = _read(entry["file"])
        want_meta = _metadata(con, msg)
        want_content = _one(con, "select rd_from_message(?)", msg)
        fields = _fields(msg)
        for _ in range(5):
            perm = fields[:]
            rng.shuffle(perm)
            other = b"".join(f[2] for f in perm)
            assert _metadata(con, other) == want_meta
            assert _one(con, "select rd_from_message(?)", other) == want_content
        # metadata split field by field into separate occurrences
        split = b""
        for f, _, raw, payload in fields:
            if f == 1:
                split += b"".join(_ld(1, sub[2]) for sub in _fields(payload))
            elif f == 2 and payload:
                items = _fields(payload)  # content split between its items
                half = len(items) // 2 or 1
                split += _ld(2, b"".join(i[2] for i in items[:half])) + _ld(2, b"".join(i[2] for i in items[half:]))
            else:
                split += raw
        assert _metadata(con, split) == want_meta, entry["name"]
        assert _one(con, "select rd_from_message(?)", split) == want_content, entry["name"]


def test_wrong_type_hints():
    con = connect()
    rd = _read("full.pb")
    for fn in ("rd_from_message", "flower_message_metadata"):
        try:
            con.execute("select %s(?)" % fn, (rd,)).fetchone()
            raise AssertionError("no error")
        except Exception as e:  # sqlite3.OperationalError
            assert str(e).startswith(fn + ": ") and "reads as a RecordDict" in str(e), str(e)
    try:
        con.execute("select flower_context_config(?)", (_read("messages/reply.pb"),)).fetchone()
        raise AssertionError("no error")
    except Exception as e:
        assert "reads as a Message, not a Context" in str(e), str(e)
