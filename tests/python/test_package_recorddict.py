# SPDX-License-Identifier: Apache-2.0
"""The Python package's RecordDict helpers (to_recorddict, from_recorddict)
against the vectors Flower wrote (tests/data/recorddict), against what the
extension's rd_* functions read, and against the RecordDicts rd() builds in
SQL, byte for byte; then their errors.
"""

import base64
import glob
import json
import os
import random
import sys

import numpy as np
from arlib import DATA, EXT, ROOT
from arlib import connect as ar_connect

sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
os.environ["AR_EXTENSION"] = EXT
import sqlite_arrayrecord as sar  # noqa: E402

RD_DIR = os.path.join(DATA, "recorddict")


def vectors():
    with open(os.path.join(RD_DIR, "MANIFEST.json"), encoding="utf-8") as f:
        man = json.load(f)
    out = []
    for entry in man["recorddicts"]:
        with open(os.path.join(RD_DIR, entry["file"]), "rb") as f:
            out.append((entry, f.read()))
    assert len(out) == len(glob.glob(os.path.join(RD_DIR, "*.pb"))), "a .pb vector missing from the MANIFEST"
    return out


def strict(v):
    """A value with its Python type made visible: 1 != 1.0 != True, -0.0 != 0.0, NaN == NaN."""
    if isinstance(v, list):
        return ["list"] + [strict(x) for x in v]
    return (type(v).__name__, repr(v))


def from_sql_json(v):
    """The extension's JSON mapping (rd_metrics, rd_config) -> Python values."""
    if isinstance(v, list):
        return [from_sql_json(x) for x in v]
    if isinstance(v, dict):
        if "double" in v:
            return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[v["double"]])
        return base64.b64decode(v["bytes"])
    return v


def to_sql_json(values):
    """Python values -> the extension's JSON mapping, for rd() and rd_set()."""

    def one(v):
        if isinstance(v, list):
            return "[" + ",".join(one(x) for x in v) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            if v != v:
                return '{"double":"NaN"}'
            if v in (float("inf"), float("-inf")):
                return '{"double":"%s"}' % ("Infinity" if v > 0 else "-Infinity")
            return repr(v)
        if isinstance(v, bytes):
            return '{"bytes":"%s"}' % base64.b64encode(v).decode()
        return json.dumps(v)

    return "{" + ",".join(f"{json.dumps(k)}:{one(v)}" for k, v in values.items()) + "}"


def manifest_value(typ, v):
    """A MANIFEST [key, type, value] value as the Python value from_recorddict gives."""
    if isinstance(v, list):
        return [manifest_value(typ[:-5], x) for x in v]
    if typ == "double":
        return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(v, v))
    if typ == "bytes":
        return bytes.fromhex(v)
    return v


def test_vectors_round_trip_byte_identical():
    con = ar_connect()
    for entry, blob in vectors():
        for copy in (True, False):
            rd = sar.from_recorddict(blob, copy=copy)
            assert list(rd) == entry["keys"], entry["file"]
            assert sar.to_recorddict(rd) == blob, (entry["file"], copy)
        for item in entry["items"]:
            got = rd[item["name"]]
            kind = item["kind"]
            assert type(got) is {"array": dict, "metric": sar.MetricRecord, "config": sar.ConfigRecord}[kind]
            assert len(got) == item["nitems"], (entry["file"], item["name"])
            if kind == "array":
                sql = con.execute("SELECT rd_array_record(?, ?)", (blob, item["name"])).fetchone()[0]
                assert sar.to_record(got) == sql, (entry["file"], item["name"])
                ref = sar.from_record(sql)
                assert list(got) == list(ref) and all(np.array_equal(got[k], ref[k]) for k in ref)
                continue
            fn = "rd_metrics" if kind == "metric" else "rd_config"
            text = con.execute(f"SELECT {fn}(?, ?)", (blob, item["name"])).fetchone()[0]
            sql_values = {k: from_sql_json(v) for k, v in json.loads(text).items()}
            assert list(got) == list(sql_values), (entry["file"], item["name"])
            for key, v in got.items():
                assert strict(v) == strict(sql_values[key]), (entry["file"], item["name"], key, v, sql_values[key])
            want = {k: manifest_value(t, v) for k, t, v in item["values"]}
            assert [strict(v) for v in got.values()] == [strict(v) for v in want.values()], entry["file"]
            assert list(got) == list(want)


def test_views_without_copy():
    blob = open(os.path.join(RD_DIR, "full.pb"), "rb").read()
    start = np.frombuffer(blob, np.uint8).ctypes.data
    for copy in (True, False):
        arrays = sar.from_recorddict(blob, copy=copy)["arrays"]
        for key, arr in arrays.items():
            assert arr.flags.writeable == copy, key
            if arr.size:
                assert (start <= arr.ctypes.data < start + len(blob)) == (not copy), key
    assert sar.from_recorddict(None) is None
    assert sar.from_recorddict(b"") == {} and sar.to_recorddict({}) == b""


def model():
    rng = np.random.default_rng(3)
    return {
        "conv.weight": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "conv.bias": np.zeros(4, np.float32),
        "fortran": np.asfortranarray(rng.standard_normal((3, 2))),
        "steps": np.array(12, np.int64),
        "": np.arange(3, dtype=">u2"),
    }


def test_model_metrics_config_equal_sql_rd():
    con = ar_connect()
    arrays = model()
    metrics = sar.MetricRecord(
        {
            "num-examples": 1280,
            "loss": 0.4375,
            "acc": [0.75, 0.5],
            "batches": [40, 20],
            "big": 2**63,
            "big_list": [1, 2**64 - 1],
            "min": -(2**63),
            "neg_zero": -0.0,
            "nan": float("nan"),
            "inf": float("-inf"),
            "empty": [],
            "zero": 0,
            "fzero": 0.0,
        }
    )
    config = sar.ConfigRecord(
        {
            "lr": 0.01,
            "optimizer": "sgd",
            "use-cuda": False,
            "blob": b"\x00\x01",
            "empty_str": "",
            "empty_bytes": b"",
            "tags": ["a", "", "ü"],
            "flags": [True, False],
            "bl": [b"", b"\xff"],
            "none": [],
            "n": -5,
            "u": [2**63 + 1, 0],
            "ключ": "日本",
        }
    )
    rd = sar.to_recorddict({"arrays": arrays, "metrics": metrics, "config": config})
    args = [
        "arrays",
        "array",
        sar.to_record(arrays),
        "metrics",
        "metric",
        to_sql_json(metrics),
        "config",
        "config",
        to_sql_json(config),
    ]
    sql = con.execute("SELECT rd(?, ?, ?, ?, ?, ?, ?, ?, ?)", args).fetchone()[0]
    assert rd == sql
    assert con.execute("SELECT rd_valid(?)", (rd,)).fetchone()[0] == 1
    back = sar.from_recorddict(rd)
    assert [strict(v) for v in back["metrics"].values()] == [strict(v) for v in metrics.values()]
    assert [strict(v) for v in back["config"].values()] == [strict(v) for v in config.values()]
    assert all(np.array_equal(back["arrays"][k], v) for k, v in arrays.items())
    # A list of arrays is an ArrayRecord with keys "0", "1", ...; ArrayRecord bytes are taken as they are;
    # an empty name is Flower's default and is left out of the item as protobuf does.
    lst = [np.ones(2), np.zeros(3, np.int8)]
    rd2 = sar.to_recorddict({"": lst, "rec": sar.to_record(arrays), "m": sar.MetricRecord()})
    sql2 = con.execute(
        "SELECT rd('', 'array', ?, 'rec', 'array', ?, 'm', 'metric', '{}')", (sar.to_record(lst), sar.to_record(arrays))
    ).fetchone()[0]
    assert rd2 == sql2
    # NumPy scalars are the Python scalars they hold.
    np_metrics = sar.MetricRecord({"a": np.float32(0.5), "b": np.int64(3), "c": [np.float64(1.5)]})
    assert sar.to_recorddict({"m": np_metrics}) == sar.to_recorddict(
        {"m": sar.MetricRecord({"a": 0.5, "b": 3, "c": [1.5]})}
    )


def random_value(rng, metric):
    ints = [0, 1, -1, 2**31, -(2**63), 2**63 - 1, rng.randrange(-(2**63), 2**63)]
    uints = [2**63, 2**64 - 1, rng.randrange(2**63, 2**64)]
    floats = [0.0, -0.0, 0.1, 1e300, 5e-324, float("nan"), float("inf"), rng.uniform(-1e6, 1e6)]
    pools = [ints, uints, floats]
    if not metric:
        pools += [[True, False], ["", "sgd", "Grüße 🚀", 'a"\\\n'], [b"", b"\x00\xff", bytes(range(40))]]
    pool = rng.choice(pools)
    if rng.random() < 0.4:
        n = rng.randrange(0, 5)
        out = [rng.choice(pool) for _ in range(n)]
        if pool is uints and out:
            out[0] = 0 if rng.random() < 0.5 else out[0]  # a uint list may hold small values
            out.append(2**63)
        return out
    return rng.choice(pool)


def test_random_records_equal_sql_rd():
    con = ar_connect()
    rng = random.Random(11)
    for _ in range(150):
        records = {}
        for i in range(rng.randrange(0, 4)):
            metric = rng.random() < 0.5
            values = {f"k{j}·{i}": random_value(rng, metric) for j in range(rng.randrange(0, 6))}
            records[f"r{i}"] = sar.MetricRecord(values) if metric else sar.ConfigRecord(values)
        rd = sar.to_recorddict(records)
        sql = b""
        for name, rec in records.items():
            kind = "metric" if isinstance(rec, sar.MetricRecord) else "config"
            sql = con.execute("SELECT rd_set(?, ?, ?, ?)", (sql, name, kind, to_sql_json(rec))).fetchone()[0]
        assert rd == sql, records
        back = sar.from_recorddict(rd)
        assert {k: [strict(x) for x in v.values()] for k, v in back.items()} == {
            k: [strict(x) for x in v.values()] for k, v in records.items()
        }


def expect_error(fn, arg, exc, *words):
    try:
        fn(arg)
    except exc as e:
        msg = str(e)
        assert msg.startswith(fn.__name__ + ": "), msg
        for w in words:
            assert w in msg, (msg, w)
        return
    raise AssertionError(f"{fn.__name__} accepted {arg!r}")


def test_to_recorddict_errors():
    M, C = sar.MetricRecord, sar.ConfigRecord
    t = sar.to_recorddict
    expect_error(
        t, {"m": {"loss": 0.5}}, TypeError, "record 'm' is a plain dict", "'loss' holds a float", "sar.MetricRecord"
    )
    expect_error(t, {"m": M(loss="x")}, TypeError, "metric record 'm', key 'loss'", "number", "not str")
    expect_error(t, {"m": M(ok=True)}, TypeError, "key 'ok'", "not bool")
    expect_error(t, {"m": M(l=[1, 2.0])}, TypeError, "key 'l'", "mixes element types (float, int")
    expect_error(t, {"m": M(l=[True])}, TypeError, "key 'l'", "its list holds a bool")
    expect_error(t, {"c": C(l=[True, 1])}, TypeError, "config record 'c', key 'l'", "mixes element types")
    expect_error(t, {"c": C(l=[[1]])}, TypeError, "key 'l'", "holds a list")
    expect_error(t, {"c": C(x=None)}, TypeError, "key 'x'", "not NoneType")
    expect_error(t, {"m": M(x=2**64)}, ValueError, "key 'x'", "out of range for sint64 and uint64")
    expect_error(t, {"m": M(x=-(2**63) - 1)}, ValueError, "out of range")
    expect_error(t, {"m": M(x=[2**63, -1])}, ValueError, "out of range")
    expect_error(t, {"m": M({1: 2.0})}, TypeError, "metric record 'm' has a key of type int")
    expect_error(t, {1: M()}, TypeError, "record names must be str")
    expect_error(t, {"m": 5}, TypeError, "record 'm' is of type int")
    expect_error(t, {"a": b"\x0a"}, ValueError, "array record 'a'", "truncated", "not an ArrayRecord")
    expect_error(t, [np.ones(2)], TypeError, "expected a mapping of names to records")
    expect_error(t, {"a": {"w": np.array([object()])}}, ValueError, "pickl")


def test_from_recorddict_errors():
    f = sar.from_recorddict
    rec = sar.to_record({"w": np.ones(3)})
    # the extension's words (rd_error), function name aside
    expect_error(f, rec, ValueError, "got a record, not a record dict: wrap it with rd(name, 'array', rec)")
    expect_error(f, sar.to_npy(np.ones(2)), ValueError, "got a .npy file, not a record dict: make a record with ar(")
    expect_error(f, b"hello world", ValueError, "record dict has an unexpected end-group at byte 2")
    expect_error(f, b"\x0a", ValueError, "record dict truncated at byte 1 (item 0)")
    expect_error(f, b"\x0a\x02\x00\x00", ValueError, "record dict has an invalid field number at byte 2 (item 0)")
    expect_error(
        f,
        bytes.fromhex("0a0b0a016d1a060a040a016b12"),
        ValueError,
        "metric record 'm' truncated at byte 13 (item 0, key 'k')",
    )
    expect_error(f, b"\x0a\x03\x0a\x01m", ValueError, "an item without a record at byte 2 (item 0, key 'm')")
    expect_error(f, b"\x0a\x05\x0a\x01m\x1a\x00" * 2, ValueError, "duplicate name 'm' (items 0 and 1)")

    # Hand-made records: a metric value without a value type, a double with
    # the wrong wire type or truncated, a config record with a duplicate key.
    def ld(num, body):
        tag = num << 3 | 2
        return (bytes([tag]) if tag < 128 else bytes([tag & 0x7F | 0x80, tag >> 7])) + bytes([len(body)]) + body

    def rd_of(kind, *values):
        return ld(1, ld(1, b"m") + ld(kind, b"".join(ld(1, ld(1, b"k") + ld(2, v)) for v in values)))

    expect_error(
        f, rd_of(3, b""), ValueError, "metric record 'm' has an item without a value at byte 9 (item 0, key 'k')"
    )
    expect_error(
        f, rd_of(3, b"\x08\x00"), ValueError, "wrong wire type 0 for a double value at byte 14 (item 0, key 'k')"
    )
    expect_error(f, rd_of(3, b"\x09\x00"), ValueError, "metric record 'm' truncated at byte 16")
    expect_error(
        f, rd_of(4, b"\x20\x01", b"\x20\x00"), ValueError, "config record 'm' has duplicate key 'k' (items 0 and 1)"
    )
    expect_error(f, rd_of(4, b"\x2a\x01\xff"), ValueError, "has a string that is not valid UTF-8 at byte 16")
    # What protobuf allows is read: an unpacked sint list, unknown fields, a bool in a
    # metric record skipped as the unknown field it is there.
    assert f(rd_of(4, ld(22, b"\x08\x03\x08\x04") + b"\x78\x01")) == {"m": {"k": [-2, 2]}}
    assert f(rd_of(3, b"\x20\x01\x10\x02")) == {"m": {"k": 1}}
    # a group in an unknown field is skipped, as protobuf skips it; an unterminated one is an error
    assert f(rd_of(3, b"\x10\x02\x7b\x08\x01\x7c")) == {"m": {"k": 1}}
    expect_error(f, rd_of(3, b"\x10\x02\x7b\x08\x01"), ValueError, "truncated inside a group", "key 'k'")
    try:
        f("text")
    except TypeError as e:
        assert "not str" in str(e), e
    else:
        raise AssertionError("str accepted")


def test_malformed_vectors_and_mutations_are_value_errors():
    """tests/bad's malformed RecordDicts, and every truncation and many byte
    flips of the good vectors: a ValueError naming from_recorddict (for bytes
    the extension's rd_valid also refuses), or a result, never another
    exception."""
    bad = sorted(
        glob.glob(os.path.join(ROOT, "tests", "bad", "recorddict", "*.pb"))
        + glob.glob(os.path.join(ROOT, "tests", "bad", "recorddict_item", "*.pb"))
    )
    assert len(bad) >= 30, bad
    for path in bad:
        with open(path, "rb") as f:
            expect_error(sar.from_recorddict, f.read(), ValueError)
    rng, con = random.Random(7), ar_connect()
    for entry, blob in vectors():
        cuts = [blob[:n] for n in range(len(blob))]
        flips = []
        for _ in range(300 if blob else 0):
            b = bytearray(blob)
            b[rng.randrange(len(b))] = rng.randrange(256)
            flips.append(bytes(b))
        for mutated in cuts + flips:
            try:
                sar.from_recorddict(mutated, copy=False)
            except ValueError as e:
                assert str(e).startswith("from_recorddict: "), (entry["file"], str(e))
                # never stricter than the extension (which also checks each .npy against its item)
                assert con.execute("SELECT rd_valid(?)", (mutated,)).fetchone()[0] == 0, (entry["file"], str(e))


# --- read as protobuf reads: merged occurrences, tags of at most 5 bytes ----------------


class _Arr:
    """What pbsplit's encoder needs of an array: Flower's Array fields."""

    def __init__(self, arr):
        self.dtype, self.shape, self.stype, self.data = str(arr.dtype), arr.shape, "numpy.ndarray", sar.to_npy(arr)


def _random_arr(rng):
    shape = tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 3)))
    dtype = rng.choice(["float32", "float64", "int64", "uint8"])
    return _Arr(np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape))


def _strict_rd(rd):
    return {
        name: {
            k: (v.dtype.str, v.shape, v.tobytes()) if isinstance(v, np.ndarray) else strict(v) for k, v in rec.items()
        }
        for name, rec in rd.items()
    }


def test_split_occurrences_read_as_sql_reads_them():
    """RecordDicts whose record, value, list and Array fields are split into
    occurrences protobuf merges (tests/python/pbsplit.py; the Flower group
    checks the same encoder against Flower's protobuf): from_recorddict
    reads the content the encoder meant, to_recorddict of it writes the bytes
    the extension's rd_delete re-encodes, and the extension reads the same."""
    import pbsplit

    con = ar_connect()
    rng = random.Random(20261126)
    for case in range(300):
        content = pbsplit.random_content(rng, _random_arr)
        messy = pbsplit.Enc(rng).recorddict(content)
        got = sar.from_recorddict(messy)
        want = {}
        for name, kind, rec in content:
            if kind == "array":
                want[name] = {k: sar.from_npy(a.data) for k, a in rec.items()}
            else:
                want[name] = (sar.MetricRecord if kind == "metric" else sar.ConfigRecord)(rec)
        assert _strict_rd(got) == _strict_rd(want), (case, messy.hex())
        canon = con.execute("SELECT rd_delete(?, 'absent')", (messy,)).fetchone()[0]
        assert sar.to_recorddict(got) == canon, (case, messy.hex())
        assert _strict_rd(sar.from_recorddict(canon)) == _strict_rd(got), case


def test_merge_cases_of_the_sql_golden_file():
    """tests/sql/recorddict_merge.sql's cases (with the bytes Flower writes
    for each): the package reads each as it reads Flower's bytes."""
    con = ar_connect()
    with open(os.path.join(ROOT, "tests", "sql", "recorddict_merge.sql")) as f:
        sql = f.read()
    con.executescript(sql[: sql.index("-- re-encoded as Flower writes it")])
    rows = con.execute("SELECT what, messy, canon FROM cases").fetchall()
    assert len(rows) >= 15, rows
    for what, messy, canon in rows:
        assert _strict_rd(sar.from_recorddict(messy)) == _strict_rd(sar.from_recorddict(canon)), what
        if not what.startswith("array:"):  # (the arrays are legacy raw items: to_recorddict writes .npy ones)
            assert sar.to_recorddict(sar.from_recorddict(messy)) == canon, what
    # the exact values
    from pbsplit import dbl, ld, metric_rd

    assert sar.from_recorddict(metric_rd(ld(21, dbl(1.0)), ld(21, dbl(2.0)))) == {"m": {"a": [1.0, 2.0]}}
    assert sar.from_recorddict(metric_rd(dbl(1.0), b"")) == {"m": {"a": 1.0}}
    assert sar.from_recorddict(metric_rd(dbl(1.0), ld(21, b""))) == {"m": {"a": []}}


def test_tags_longer_than_5_bytes_are_errors():
    f = sar.from_recorddict
    item = bytes.fromhex("050a016d1a00")  # after the tag: an item 'm', an empty metric record
    assert f(b"\x8a\x80\x80\x80\x00" + item) == {"m": {}}
    expect_error(f, b"\x8a\x80\x80\x80\x80\x00" + item, ValueError, "tag longer than 5 bytes at byte 0")
    expect_error(f, b"\x8a" + b"\x80" * 9 + b"\x00" + item, ValueError, "tag longer than 5 bytes at byte 0")
    expect_error(f, b"\x88\x80\x80\x80\x10\x00\x0a" + item, ValueError, "invalid field number")
    in_value = bytes.fromhex("0a1a0a016d1a150a130a016b120e8980808080000000000000000000")
    expect_error(f, in_value, ValueError, "tag longer than 5 bytes", "key 'k'")
    for blob in (in_value, b"\x8a\x80\x80\x80\x80\x00" + item):
        assert ar_connect().execute("SELECT rd_valid(?)", (blob,)).fetchone()[0] == 0
