# SPDX-License-Identifier: Apache-2.0
"""Records built by ar, ar_from_list, ar_set, ar_delete, ar_rename,
ar_merge, ar_select, ar_agg and ar_agg_list: byte-identical to an
independent encoder of Flower's protobuf (arlib.record_bytes) and to
Flower's own vectors, parsed back to the same keys and arrays by an
independent decoder; ar_count_bytes; large records through array_record and
ar_get."""

import fnmatch
import json

import numpy as np
from arlib import (
    all_dtypes,
    connect,
    count_bytes,
    data,
    decode_record,
    error_of,
    load_npy,
    npy_bytes,
    one,
    random_array,
    record_bytes,
)

KEYS = [
    "fc1.weight",
    "fc1.bias",
    "conv.0.w",
    "",
    "é",
    "层.权重",
    "emoji-😀",
    "a b",
    "0",
    "17",
    "x" * 300,
    "tab\tkey",
    "quote'key",
    'dq"key',
    "[br]",
    "*star",
]


def _random_items(rng, n, keys=KEYS):
    dtypes = all_dtypes()
    shapes = [(), (3,), (2, 2), (0,), (1, 2, 1), (4, 0, 2)]
    picked = rng.choice(len(keys), size=n, replace=False)
    return [
        (keys[i], random_array(rng, dtypes[rng.integers(len(dtypes))], shapes[rng.integers(len(shapes))]))
        for i in picked
    ]


def _ar_sql(items):
    """ar(?, ?, ...) and its parameters."""
    args = [x for k, a in items for x in (k, npy_bytes(a))]
    return "select ar(%s)" % ", ".join("?" * len(args)), args


def _check_decodes_to(blob, items):
    """The independent decoder reads back exactly these keys and arrays."""
    got = decode_record(blob)
    assert [g[0] for g in got] == [k for k, _ in items]
    for (key, dtype, shape, stype, payload), (_, arr) in zip(got, items):
        assert (dtype, shape, stype) == (str(arr.dtype), list(arr.shape), "numpy.ndarray"), key
        back = load_npy(payload)
        assert back.dtype == arr.dtype and back.shape == arr.shape and back.tobytes() == arr.tobytes()


def test_ar_identical_to_independent_encoder():
    con = connect()
    rng = np.random.default_rng(20)
    for n in (0, 1, 2, 5, 10, len(KEYS)):
        for _ in range(5):
            items = _random_items(rng, n)
            sql, args = _ar_sql(items)
            blob = one(con, sql, *args)
            assert blob == record_bytes(items), [k for k, _ in items]
            _check_decodes_to(blob, items)
            assert json.loads(one(con, "select ar_keys(?)", blob)) == [k for k, _ in items]
            assert one(con, "select ar_count_bytes(?)", blob) == count_bytes(items)
            assert one(con, "select ar_valid(?)", blob) == 1


def test_ar_from_list_and_ar_agg_list_like_arrayrecord_of_a_list():
    con = connect()
    rng = np.random.default_rng(21)
    arrays = [a for _, a in _random_items(rng, 12)]
    items = [(str(i), a) for i, a in enumerate(arrays)]
    blob = one(con, "select ar_from_list(%s)" % ", ".join("?" * len(arrays)), *[npy_bytes(a) for a in arrays])
    assert blob == record_bytes(items)
    con.execute("create table l(pos integer, v blob)")
    con.executemany("insert into l values (?, ?)", [(i, npy_bytes(a)) for i, a in enumerate(arrays)])
    assert one(con, "select ar_agg_list(v) from (select v from l order by pos)") == blob
    # row order, whatever it is, makes the keys
    rev = one(con, "select ar_agg_list(v) from (select v from l order by pos desc)")
    assert rev == record_bytes([(str(i), a) for i, a in enumerate(reversed(arrays))])
    # Flower's own ArrayRecord(list)
    lst = data("records/list_3.pb")
    parts = [one(con, "select ar_get(?, ?)", lst, i) for i in range(3)]
    assert one(con, "select ar_from_list(?, ?, ?)", *parts) == lst


def test_ar_agg_in_row_order():
    con = connect()
    rng = np.random.default_rng(22)
    items = _random_items(rng, len(KEYS))
    con.execute("create table t(ord integer, k text, v blob)")
    order = rng.permutation(len(items))
    con.executemany(
        "insert into t values (?, ?, ?)", [(int(order[i]), k, npy_bytes(a)) for i, (k, a) in enumerate(items)]
    )
    for direction in ("asc", "desc"):
        got = one(con, f"select ar_agg(k, v) from (select k, v from t order by ord {direction})")
        ranked = sorted(range(len(items)), key=lambda i: order[i], reverse=direction == "desc")
        assert got == record_bytes([items[i] for i in ranked])
    # grouped: one record per group, each in row order
    rows = con.execute("select length(k) % 3 g, ar_agg(k, v) from (select * from t order by ord) group by g").fetchall()
    for g, blob in rows:
        want = [items[i] for i in sorted(range(len(items)), key=lambda i: order[i]) if len(items[i][0]) % 3 == g]
        assert blob == record_bytes(want)


def test_duplicate_keys_are_errors():
    con = connect()
    a = npy_bytes(np.arange(3))
    assert (
        error_of(
            con, "select ar_agg(k, v) from (select 'w' k, ? v union all select 'b', ? union all select 'w', ?)", a, a, a
        )
        == "ar_agg: duplicate key 'w' (rows 0 and 2)"
    )
    assert error_of(con, "select ar('é', ?, 'x', ?, 'é', ?)", a, a, a) == "ar: duplicate key 'é' (arguments 1 and 5)"
    # more than 16 keys: the hash path
    keys = [f"k{i}" for i in range(40)] + ["k7"]
    con.execute("create table d(k text)")
    con.executemany("insert into d values (?)", [(k,) for k in keys])
    assert (
        error_of(con, "select ar_agg(k, ?) from (select k from d order by rowid)", a)
        == "ar_agg: duplicate key 'k7' (rows 7 and 40)"
    )
    # a record with a duplicate key is rejected by every reader
    dup = record_bytes([("x", np.arange(2)), ("y", np.arange(2)), ("x", np.arange(3))])
    assert one(con, "select ar_error(?)", dup) == "record has duplicate key 'x' (items 0 and 2)"
    many = record_bytes([(f"key{i}", np.zeros(1)) for i in range(30)] + [("key3", np.zeros(1))])
    assert one(con, "select ar_error(?)", many) == "record has duplicate key 'key3' (items 3 and 30)"


def test_ar_set_delete_rename_like_a_dict():
    con = connect()
    rng = np.random.default_rng(23)
    for _ in range(20):
        items = _random_items(rng, 8)
        sql, args = _ar_sql(items)
        rec = one(con, sql, *args)
        d = dict(items)
        keys = list(d)
        # ar_set: replace in place, or append
        new = random_array(rng, np.dtype("<f4"), (2,))
        for key in (keys[3], "brand-new"):
            got = one(con, "select ar_set(?, ?, ?)", rec, key, npy_bytes(new))
            d2 = dict(d)
            d2[key] = new
            assert got == record_bytes(list(d2.items()))
        # ar_delete: several keys, absent ones ignored
        drop = [keys[0], keys[5], "absent"]
        got = one(con, "select ar_delete(?, ?, ?, ?)", rec, *drop)
        assert got == record_bytes([(k, a) for k, a in items if k not in drop])
        # ar_rename in place
        got = one(con, "select ar_rename(?, ?, 'renamed!')", rec, keys[2])
        assert got == record_bytes([("renamed!" if k == keys[2] else k, a) for k, a in items])
        assert error_of(con, "select ar_rename(?, ?, ?)", rec, keys[1], keys[4]).startswith("ar_rename: key '")


def test_ar_merge_is_dict_update():
    con = connect()
    rng = np.random.default_rng(24)
    for _ in range(20):
        recs, merged = [], {}
        for _ in range(rng.integers(1, 5)):
            items = _random_items(rng, int(rng.integers(0, 7)))
            sql, args = _ar_sql(items)
            recs.append(one(con, sql, *args))
            merged.update(items)
        got = one(con, "select ar_merge(%s)" % ", ".join("?" * len(recs)), *recs)
        assert got == record_bytes(list(merged.items()))


def test_ar_select_glob():
    """GLOB: * ? [...] [a-z] [^...], case-sensitive, over whole keys."""
    con = connect()
    items = [(k, np.zeros(1, dtype="u1")) for k in KEYS]
    rec = record_bytes(items)
    patterns = {
        "fc1.*": None,
        "*.w*": None,
        "?": None,
        "*": None,
        "": None,
        "[0-9]*": None,
        "[!x]*": None,
        "FC*": None,
        "*key": None,
        "[[]br]": None,
        "*[*]*": None,
        "层*": None,
        "?.权重": None,
        "[^f]*": "[!f]*",
        "x*": None,
        "*😀": None,
    }
    for pat, py in patterns.items():
        got = json.loads(one(con, "select ar_keys(ar_select(?, ?))", rec, pat))
        # fnmatchcase spells negation [!...] where GLOB spells [^...]; GLOB's
        # [!...] is a class holding '!'
        want = (
            [k for k in KEYS if fnmatch.fnmatchcase(k, py or pat)]
            if pat != "[!x]*"
            else [k for k in KEYS if k[:1] in ("!", "x")]
        )
        assert got == want, (pat, got, want)
        assert one(con, "select ar_select(?, ?)", rec, pat) == record_bytes([(k, a) for k, a in items if k in want])


def test_count_bytes_counts_key_characters():
    """Flower's count_bytes(): len(data) + len(key), key length in characters."""
    con = connect()
    for keys in (["a"], ["é"], ["层.权重"], ["😀😀"], ["", "x" * 1000], KEYS):
        items = [(k, np.arange(i + 1, dtype="i2")) for i, k in enumerate(keys)]
        rec = record_bytes(items)
        assert (
            one(con, "select ar_count_bytes(?)", rec)
            == count_bytes(items)
            == sum(len(npy_bytes(a)) + len(k) for k, a in items)
        )
    for e in __import__("arlib").manifest()["records"]:
        assert one(con, "select ar_count_bytes(?)", data(e["file"])) == e["count_bytes"]


def test_large_records_through_array_record_and_ar_get():
    """A ~1 MB record and one over 5 MiB (Flower's chunk size), made here."""
    con = connect()
    rng = np.random.default_rng(25)
    for total in (1 << 20, (5 << 20) + 12345):
        big = rng.standard_normal(total // 8).astype("<f8")
        small = np.arange(10, dtype=">i4")
        items = [("big", big), ("small", small), ("half", rng.standard_normal((300, 301)).astype("<f2"))]
        rec = record_bytes(items)
        assert len(rec) > total
        rows = con.execute(
            "select key, dtype, shape, numel, nbytes, length(data) from array_record(?)", (rec,)
        ).fetchall()
        assert rows == [
            (
                k,
                str(a.dtype),
                json.dumps(list(a.shape), separators=(",", ":")),
                a.size,
                len(npy_bytes(a)),
                len(npy_bytes(a)),
            )
            for k, a in items
        ]
        for k, a in items:
            got = one(con, "select ar_get(?, ?)", rec, k)
            assert got == npy_bytes(a)
            np.testing.assert_array_equal(load_npy(got), a)
        # rebuilt through the aggregate: the same bytes
        assert one(con, "select ar_agg(key, data) from array_record(?)", rec) == rec
        assert one(con, "select ar_set(?, 'small', ?)", rec, npy_bytes(small)) == rec
        assert one(con, "select npy_raw(ar_get(?, 'big'))", rec) == big.tobytes()


def test_size_limit_gives_toobig():
    """Results beyond SQLITE_LIMIT_LENGTH raise SQLITE_TOOBIG."""
    con = connect()
    a = npy_bytes(np.zeros(20000, dtype="<f8"))  # 160 KB
    con.setlimit(__import__("sqlite3").SQLITE_LIMIT_LENGTH, 200000)
    assert one(con, "select length(ar('a', ?))", a) > 0
    for sql in (
        "select ar('a', ?1, 'b', ?1)",
        "select ar_from_list(?1, ?1)",
        "select ar_agg(k, ?1) from (select 'a' k union all select 'b')",
        "select ar_merge(ar('a', ?1), ar('b', ?1))",
        "select ar_set(ar('a', ?1), 'b', ?1)",
    ):
        assert error_of(con, sql, a) == "string or blob too big", sql
    b = npy_bytes(np.zeros(60000, dtype="<f2"))  # 120 KB, whose JSON is 240 KB
    assert error_of(con, "select npy_to_json(?)", b) == "string or blob too big"
    assert error_of(con, "select npy_from_json(?, 'f8')", "[" + "0," * 29999 + "0]") == "string or blob too big"


def test_flower_vectors_rebuilt_byte_identical():
    con = connect()
    for f in [
        "records/mlp_dict.pb",
        "records/unicode_keys.pb",
        "records/list_3.pb",
        "records/empty.pb",
        "fedavg/f32_result.pb",
        "fedavg/mixed_int_client0.pb",
    ]:
        rec = data(f)
        keys = json.loads(one(con, "select ar_keys(?)", rec))
        arrays = [load_npy(one(con, "select ar_get(?, ?)", rec, k)) for k in keys]
        assert record_bytes(list(zip(keys, arrays))) == rec, f  # the independent encoder agrees with Flower
        sql, args = _ar_sql(list(zip(keys, arrays)))
        assert one(con, sql, *args) == rec, f
        assert one(con, "select ar_merge(?)", rec) == rec
        assert one(con, "select ar_select(?, '*')", rec) == rec
