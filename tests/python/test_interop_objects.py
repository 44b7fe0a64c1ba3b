# SPDX-License-Identifier: Apache-2.0
"""Flower objects: ar_object_id, ar_objects, ar_inflate, npy_object_id.

Checked against the objects Flower itself wrote for the vector records
(tests/data/objects, MANIFEST.json) and against `model_deflate`, a second
implementation written here from ../shared/flower-objects.md (Python's
json.dumps and hashlib), which generated records of any size are compared
with — including ones over 5 MiB that split into several, partly identical,
chunks.
"""

import hashlib
import json
import random
import sqlite3

import numpy as np
from arlib import connect, data, manifest, npy_bytes, record_bytes

CHUNK = 5242880  # Flower's FLWR_PRIVATE_MAX_ARRAY_CHUNK_SIZE default


# --- the format, from flower-objects.md -----------------------------------


def model_content(type_name, children, body):
    head = "%s %s %d" % (type_name, ",".join(children), len(body))
    return head.encode("utf-8") + b"\x00" + body


def model_deflate(items):
    """items: [(key, dtype, shape, stype, data)] -> ordered {id: (type, children, content)}.

    Post-order like Flower's get_all_nested_objects: children first, each
    object once (dict insertion order; a repeated id keeps its place)."""
    objects = {}
    refs = {}
    for key, dtype, shape, stype, payload in items:
        chunk_ids = []
        for start in range(0, len(payload), CHUNK):
            content = model_content("ArrayChunk", [], payload[start : start + CHUNK])
            cid = hashlib.sha256(content).hexdigest()
            chunk_ids.append(cid)
            objects.setdefault(cid, ("ArrayChunk", [], content))
        unique = list(dict.fromkeys(chunk_ids))
        body = json.dumps(
            {
                "dtype": dtype,
                "shape": list(shape),
                "stype": stype,
                "arraychunk_ids": [unique.index(c) for c in chunk_ids],
            }
        ).encode()
        content = model_content("Array", unique, body)
        aid = hashlib.sha256(content).hexdigest()
        objects.setdefault(aid, ("Array", unique, content))
        refs[key] = aid
    arrays = list(dict.fromkeys(refs.values()))
    content = model_content("ArrayRecord", arrays, json.dumps(refs).encode())
    objects[hashlib.sha256(content).hexdigest()] = ("ArrayRecord", arrays, content)
    return objects


def items_of(spec):
    """record_bytes-style items -> model items."""
    out = []
    for key, value in spec:
        if isinstance(value, np.ndarray):
            value = (str(value.dtype), list(value.shape), "numpy.ndarray", npy_bytes(value))
        out.append((key,) + tuple(value))
    return out


def db_objects(con, rec):
    return con.execute("SELECT object_id, type, children, content FROM ar_objects(?)", (rec,)).fetchall()


def assert_matches_model(con, spec):
    rec = record_bytes(spec)
    want = model_deflate(items_of(spec))
    got = db_objects(con, rec)
    assert [r[0] for r in got] == list(want), "object ids or their order differ"
    for (oid, type_name, children, content), (wtype, wchildren, wcontent) in zip(got, want.values()):
        assert type_name == wtype and json.loads(children) == wchildren, oid
        assert content == wcontent, oid
    root = list(want)[-1]
    assert con.execute("SELECT ar_object_id(?)", (rec,)).fetchone()[0] == root
    return rec, got


def inflate(con, rows):
    con.execute("CREATE TEMP TABLE IF NOT EXISTS o(object_id TEXT, content BLOB)")
    con.execute("DELETE FROM o")
    con.executemany("INSERT INTO o VALUES (?, ?)", rows)
    return con.execute("SELECT ar_inflate(object_id, content) FROM o").fetchone()[0]


# --- against Flower's own objects ------------------------------------------


def test_vector_objects_are_flowers_byte_for_byte():
    con = connect()
    entries = manifest()["objects"]
    assert len(entries) == 5
    for entry in entries:
        rec = data(entry["record"])
        got = db_objects(con, rec)
        assert [r[0] for r in got] == [o["id"] for o in entry["objects"]], entry["record"]
        for (oid, type_name, children, content), obj in zip(got, entry["objects"]):
            assert type_name == obj["type"] and json.loads(children) == obj["children"]
            assert content == data(obj["file"])
            assert hashlib.sha256(content).hexdigest() == oid
        assert con.execute("SELECT ar_object_id(?)", (rec,)).fetchone()[0] == entry["root_id"]


def test_record_object_ids_match_manifest():
    con = connect()
    for r in manifest()["records"]:
        got = con.execute("SELECT ar_object_id(?)", (data(r["file"]),)).fetchone()[0]
        assert got == r["object_id"], r["file"]


def test_model_reproduces_the_vectors():
    # The model below the big tests is itself checked against Flower's bytes.
    con = connect()
    for entry in manifest()["objects"]:
        rec = data(entry["record"])
        items = [
            (k, d, json.loads(s), st, bytes(b))
            for k, d, s, st, b in con.execute("SELECT key, dtype, shape, stype, data FROM array_record(?)", (rec,))
        ]
        model = model_deflate(items)
        assert list(model) == [o["id"] for o in entry["objects"]]
        for obj in entry["objects"]:
            assert model[obj["id"]][2] == data(obj["file"])


def test_inflate_round_trips_vectors_in_any_order():
    con = connect()
    rng = random.Random(5)
    for entry in manifest()["objects"]:
        rows = [(o["id"], data(o["file"])) for o in entry["objects"]]
        for _ in range(3):
            rng.shuffle(rows)
            assert inflate(con, rows) == data(entry["record"])


# --- generated records against the model -----------------------------------


def test_chunked_record_over_5_mib():
    # 16.5 MiB of float32 zeros: chunk 0 holds the .npy header, chunks 1 and
    # 2 are identical (one object, arraychunk_ids [0, 1, 1, 2]); the same
    # array again under another key shares the Array object.
    con = connect()
    zeros = np.zeros(4325376, dtype=np.float32)
    rng = np.random.default_rng(1)
    small = rng.standard_normal(7)
    spec = [
        ("huge", zeros),
        ("small", small),
        ("huge again", zeros),
        ('\U0001f600 \u00e9"\\\n', small[:3]),
        ("raw", ("float64", [7], "", small.tobytes())),
    ]
    rec, got = assert_matches_model(con, spec)
    types = [t for _, t, _, _ in got]
    assert types.count("ArrayChunk") == 3 + 1 + 1 + 1 and types.count("Array") == 4
    huge = [r for r in got if r[1] == "Array"][0]
    body = json.loads(huge[3].split(b"\x00", 1)[1])
    assert body["arraychunk_ids"] == [0, 1, 1, 2] and len(json.loads(huge[2])) == 3
    assert max(len(r[3]) for r in got) == CHUNK + len(b"ArrayChunk  5242880\x00")
    rows = [(r[0], r[3]) for r in got]
    random.Random(2).shuffle(rows)
    assert inflate(con, rows) == rec
    # the record as Flower's serde writes it
    assert rec == record_bytes(spec)


def test_random_records_match_the_model():
    con = connect()
    rng = np.random.default_rng(7)
    keys = [
        "w",
        "",
        "fc1.weight",
        "caf\u00e9",
        "\u5c42",
        "tab\there",
        'q"uote',
        "back\\slash",
        "\x01ctl",
        "\x7fdel",
        "\U0001f680 rocket",
        "a" * 300,
    ]
    dtypes = ["float32", "float64", "float16", "int8", "int64", "uint16", "bool", "complex64", ">i4", "<u8"]
    for trial in range(12):
        spec = []
        for k in rng.choice(len(keys), size=rng.integers(0, 6), replace=False):
            dt = dtypes[rng.integers(len(dtypes))]
            shape = tuple(int(x) for x in rng.integers(0, 4, size=rng.integers(0, 4)))
            arr = np.asarray(rng.standard_normal(shape) * 10).astype(dt)
            if rng.random() < 0.2:
                arr = np.asfortranarray(arr.reshape(shape))
            if rng.random() < 0.2:
                spec.append((keys[k], (str(arr.dtype), list(arr.shape), "", arr.tobytes())))
            else:
                spec.append((keys[k], arr))
        rec, got = assert_matches_model(con, spec)
        rows = [(r[0], r[3]) for r in got]
        random.Random(trial).shuffle(rows)
        assert inflate(con, rows) == rec


def test_npy_object_id_is_the_arrays_id():
    con = connect()
    for arr in [np.arange(6, dtype=np.float32).reshape(2, 3), np.array(3.5), np.zeros((0, 4), np.int16)]:
        want = model_deflate(items_of([("k", arr)]))
        array_id = [i for i, v in want.items() if v[0] == "Array"][0]
        assert con.execute("SELECT npy_object_id(?)", (npy_bytes(arr),)).fetchone()[0] == array_id


# --- inflate errors with trees whose hashes are right ------------------------


def obj(type_name, children, body):
    content = model_content(type_name, children, body)
    return hashlib.sha256(content).hexdigest(), content


def array_obj(chunks, ids, dtype="uint8", shape=None, stype=""):
    body = json.dumps(
        {"dtype": dtype, "shape": shape if shape is not None else [3], "stype": stype, "arraychunk_ids": ids}
    ).encode()
    return obj("Array", chunks, body)


def record_obj(refs, children=None):
    return obj(
        "ArrayRecord",
        children if children is not None else list(dict.fromkeys(refs.values())),
        json.dumps(refs).encode(),
    )


def inflate_error(con, rows):
    try:
        inflate(con, rows)
    except sqlite3.OperationalError as e:
        return str(e)
    raise AssertionError("ar_inflate accepted a bad tree")


def test_inflate_names_the_problem():
    con = connect()
    c1 = obj("ArrayChunk", [], b"abc")
    c2 = obj("ArrayChunk", [], b"z")
    a1 = array_obj([c1[0]], [0])
    good = record_obj({"w": a1[0]})
    assert inflate(con, [good, a1, c1]) == record_bytes([("w", ("uint8", [3], "", b"abc"))])

    bad = array_obj([c1[0]], [0, 1])
    msg = inflate_error(con, [record_obj({"w": bad[0]}), bad, c1])
    assert msg == "ar_inflate: Array %s: chunk index 1 is out of range (1 children)" % bad[0]

    rec = record_obj({"w": a1[0]}, children=[a1[0], c2[0]])
    msg = inflate_error(con, [rec, a1, c1, c2])
    assert msg == "ar_inflate: object %s is an ArrayChunk, its parent %s wants an Array" % (c2[0], rec[0])

    other = array_obj([c2[0]], [0], shape=[1])
    rec = record_obj({"w": a1[0]}, children=[a1[0], other[0]])
    msg = inflate_error(con, [rec, a1, c1, other, c2])
    assert msg == "ar_inflate: ArrayRecord %s lists child %s that its body does not use" % (rec[0], other[0])

    rec = record_obj({"w": other[0]}, children=[a1[0]])
    msg = inflate_error(con, [rec, a1, c1, other, c2])
    assert msg.startswith("ar_inflate: ArrayRecord %s body: value is not one of the head's child ids" % rec[0])

    # Flower before 1.2x wrote chunk ids, not indices, in arraychunk_ids
    old = array_obj([c1[0]], [c1[0]])
    msg = inflate_error(con, [record_obj({"w": old[0]}), old, c1])
    assert msg == "ar_inflate: Array %s body: expected a non-negative integer at byte 65" % old[0]

    chunk_with_child = obj("ArrayChunk", [c1[0]], b"x")
    msg = inflate_error(con, [chunk_with_child])
    assert msg == "ar_inflate: object %s: an ArrayChunk has no children" % chunk_with_child[0]

    dup = record_obj({"w": a1[0]}, children=[a1[0], a1[0]])
    assert inflate_error(con, [dup, a1, c1]) == "ar_inflate: object %s lists child %s twice" % (dup[0], a1[0])

    body = b'{"w": "%s", "w": "%s"}' % (a1[0].encode(), a1[0].encode())
    dupkey = obj("ArrayRecord", [a1[0]], body)
    msg = inflate_error(con, [dupkey, a1, c1])
    assert msg == "ar_inflate: ArrayRecord %s body: duplicate key at byte 74" % dupkey[0]

    neg = array_obj([c1[0]], [0], shape=[2**31])
    msg = inflate_error(con, [record_obj({"w": neg[0]}), neg, c1])
    assert msg.endswith("dimension does not fit Flower's int32 shape at byte 29")


def test_inflate_respects_the_length_limit():
    con = connect()
    rec = record_bytes([("w", np.zeros(300000, np.float64))])
    assert inflate(con, [(r[0], r[3]) for r in db_objects(con, rec)]) == rec
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000000)  # the rows stay in o
    try:
        con.execute("SELECT ar_inflate(object_id, content) FROM o").fetchone()
    except sqlite3.DataError as e:
        assert "too big" in str(e)
    else:
        raise AssertionError("a record over SQLITE_LIMIT_LENGTH was built")
