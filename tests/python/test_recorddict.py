# SPDX-License-Identifier: Apache-2.0
"""RecordDicts against Flower's own vectors (tests/data/recorddict, made by
Flower's serde): every vector reads and rebuilds byte-identically through
rd(), rd_set, rd_agg, rd_metrics, rd_config and record_dict; the values match
the MANIFEST's typed values; rd_value's SQL types; an independent decoder of
the RecordDict structure agrees with record_dict."""

import base64
import hashlib
import json
import math
import os

from arlib import DATA, connect, read_varint

RD = os.path.join(DATA, "recorddict")
MANIFEST = json.load(open(os.path.join(RD, "MANIFEST.json"), encoding="utf-8"))


def _blob(entry):
    return open(os.path.join(RD, entry["file"]), "rb").read()


def _decode_rd(b):
    """(name, kind field, record bytes) per item, from the .proto alone."""
    out, i = [], 0
    while i < len(b):
        tag, i = read_varint(b, i)
        n, i = read_varint(b, i)
        body, i = b[i : i + n], i + n
        assert tag == 0x0A
        j, name, kind, rec = 0, "", None, None
        while j < len(body):
            t, j = read_varint(body, j)
            m, j = read_varint(body, j)
            if t >> 3 == 1:
                name = body[j : j + m].decode()
            else:
                kind, rec = t >> 3, body[j : j + m]
            j += m
        out.append((name, {2: "array", 3: "metric", 4: "config"}[kind], rec))
    return out


def _expected_json_value(typ, val):
    """The MANIFEST's [type, value] as our JSON spelling."""

    def scalar(t, v):
        if t == "double":
            if isinstance(v, str):
                return {"double": v}
            return float(v)
        if t == "bytes":
            return {"bytes": base64.b64encode(bytes.fromhex(v)).decode()}
        return v

    if typ.endswith("_list"):
        t = {
            "double_list": "double",
            "sint_list": "sint64",
            "uint_list": "uint64",
            "bool_list": "bool",
            "string_list": "string",
            "bytes_list": "bytes",
        }[typ]
        return [scalar(t, v) for v in val]
    return scalar(typ, val)


def _same(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def test_vectors_read():
    con = connect()
    for entry in MANIFEST["recorddicts"]:
        blob = _blob(entry)
        assert len(blob) == entry["bytes"] and hashlib.sha256(blob).hexdigest() == entry["sha256"]
        assert con.execute("select rd_len(?), rd_keys(?), rd_valid(?)", (blob, blob, blob)).fetchone() == (
            entry["len"],
            json.dumps(entry["keys"], ensure_ascii=False, separators=(",", ":")),
            1,
        )
        rows = con.execute("select name, position, kind, nitems, record from record_dict(?)", (blob,)).fetchall()
        assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
            (i["name"], i["position"], i["kind"], i["nitems"]) for i in entry["items"]
        ], entry["file"]
        assert [(r[0], r[2], bytes(r[4])) for r in rows] == _decode_rd(blob)
        for r, item in zip(rows, entry["items"]):
            assert len(r[4]) == item["record_len"] and hashlib.sha256(r[4]).hexdigest() == item["record_sha256"]
            if item["kind"] == "array":
                assert bytes(con.execute("select rd_array_record(?, ?)", (blob, item["name"])).fetchone()[0]) == r[4]
                continue
            fn = "rd_metrics" if item["kind"] == "metric" else "rd_config"
            got = json.loads(con.execute("select %s(?, ?)" % fn, (blob, item["name"])).fetchone()[0])
            assert list(got) == [v[0] for v in item["values"]]  # dicts keep the text's order
            for (k, gv), (_, typ, val) in zip(got.items(), item["values"]):
                want = _expected_json_value(typ, val)
                assert _same(gv, want) or gv == want, (entry["file"], k, gv, want)


def test_vectors_rebuild():
    con = connect()
    for entry in MANIFEST["recorddicts"]:
        blob = _blob(entry)
        args = []
        for item in entry["items"]:
            if item["kind"] == "array":
                rec = con.execute("select rd_array_record(?, ?)", (blob, item["name"])).fetchone()[0]
            else:
                fn = "rd_metrics" if item["kind"] == "metric" else "rd_config"
                rec = con.execute("select %s(?, ?)" % fn, (blob, item["name"])).fetchone()[0]
            args += [item["name"], item["kind"], rec]
        built = con.execute("select rd(%s)" % ", ".join("?" * len(args)), args).fetchone()[0]
        assert bytes(built) == blob, entry["file"]
        # rd_set item by item onto x''
        cur = b""
        for i in range(0, len(args), 3):
            cur = con.execute("select rd_set(?, ?, ?, ?)", [cur] + args[i : i + 3]).fetchone()[0]
        assert bytes(cur) == blob, entry["file"]
        # rd_agg over record_dict's rows
        agg = con.execute(
            """select rd_agg(d.name, d.kind, case d.kind when 'array' then d.record
                             when 'metric' then rd_metrics(?1, d.name) else rd_config(?1, d.name) end)
                             from record_dict(?1) d""",
            (blob,),
        ).fetchone()[0]
        assert bytes(agg) == blob, entry["file"]
        # replacing an item with itself keeps the bytes
        for item in entry["items"]:
            if item["kind"] != "array":
                fn = "rd_metrics" if item["kind"] == "metric" else "rd_config"
                again = con.execute(
                    "select rd_set(?1, ?2, ?3, %s(?1, ?2))" % fn, (blob, item["name"], item["kind"])
                ).fetchone()[0]
                assert bytes(again) == blob


def test_rd_value_types():
    con = connect()
    blob = _blob(next(e for e in MANIFEST["recorddicts"] if e["file"] == "metric_types.pb"))
    cblob = _blob(next(e for e in MANIFEST["recorddicts"] if e["file"] == "config_types.pb"))
    for entry, b in (("metric_types.pb", blob), ("config_types.pb", cblob)):
        e = next(x for x in MANIFEST["recorddicts"] if x["file"] == entry)
        item = e["items"][0]
        for key, typ, val in item["values"]:
            got = con.execute("select rd_value(?, ?, ?)", (b, item["name"], key)).fetchone()[0]
            if typ == "double":
                if val == "NaN":
                    assert got is None
                elif isinstance(val, str):
                    assert got == float(val.replace("Infinity", "inf"))
                else:
                    assert isinstance(got, float) and _same(got, float(val)), key
            elif typ in ("sint64", "uint64"):
                assert got == (val if val <= 2**63 - 1 else str(val)), key
            elif typ == "bool":
                assert got == int(val)
            elif typ == "string":
                assert got == val
            elif typ == "bytes":
                assert got == bytes.fromhex(val)
            else:
                assert isinstance(got, str) and json.loads(got) is not None
    assert con.execute("select rd_value(?, 'metrics', 'nope'), rd_value(?, 'nope', 'x')", (blob, blob)).fetchone() == (
        None,
        None,
    )


def test_flower_typing():
    """JSON values become what Flower's serde writes for the Python values."""
    con = connect()

    def one(kind, js):
        b = con.execute("select rd('r', ?, ?)", (kind, js)).fetchone()[0]
        fn = "rd_metrics" if kind == "metric" else "rd_config"
        return bytes(b), con.execute("select %s(?)" % fn, (b,)).fetchone()[0]

    # empty list: double_list (field 21) in a metric record, bool_list (24) in a config record
    b, _ = one("metric", '{"e": []}')
    assert b.endswith(bytes([0xAA, 0x01, 0x00]))
    b, _ = one("config", '{"e": []}')
    assert b.endswith(bytes([0xC2, 0x01, 0x00]))
    # uint64 only above 2**63-1
    b, j = one("metric", '{"u": 9223372036854775807}')
    assert bytes([0x10]) in b and j == '{"u":9223372036854775807}'
    b, j = one("metric", '{"u": 9223372036854775808}')
    assert bytes([0x18]) in b and j == '{"u":9223372036854775808}'
    # zero values are written (oneof members have presence)
    b, _ = one("config", '{"z": 0, "f": 0.0, "b": false, "s": ""}')
    assert b.count(bytes([0x12, 0x02])) == 3 and bytes([0x12, 0x09, 0x09]) in b
