# SPDX-License-Identifier: Apache-2.0
"""Errors: every malformed vector through every function that reads its
format raises "<function>: <problem>", where <problem> is exactly what
npy_error / ar_error return; damaged inputs never crash and never pass
silently; the registered function list is what docs/reference.md documents."""

import json

import numpy as np
from arlib import connect, data, error_of, manifest, npy_bytes, one, record_bytes

# (function name, SQL with ?1 = the .npy)
NPY_READERS = [
    ("npy_dtype", "select npy_dtype(?1)"),
    ("npy_descr", "select npy_descr(?1)"),
    ("npy_shape", "select npy_shape(?1)"),
    ("npy_ndim", "select npy_ndim(?1)"),
    ("npy_numel", "select npy_numel(?1)"),
    ("npy_nbytes", "select npy_nbytes(?1)"),
    ("npy_fortran", "select npy_fortran(?1)"),
    ("npy_version", "select npy_version(?1)"),
    ("npy_raw", "select npy_raw(?1)"),
    ("npy_to_json", "select npy_to_json(?1)"),
    ("npy_item", "select npy_item(?1, 0)"),
    ("npy_each", "select * from npy_each(?1)"),
    ("ar", "select ar('k', ?1)"),
    ("ar_from_list", "select ar_from_list(?1)"),
    ("ar_set", "select ar_set(x'', 'k', ?1)"),
    ("ar_agg", "select ar_agg('k', ?1)"),
    ("ar_agg_list", "select ar_agg_list(?1)"),
]
# builders add the argument and key to the problem: "<problem> (argument 2, key 'k')"
BUILDERS = {
    "ar": "(argument 2, key 'k')",
    "ar_from_list": "(argument 1, key '0')",
    "ar_set": "(argument 3, key 'k')",
    "ar_agg": "(argument 2, key 'k')",
    "ar_agg_list": "(argument 1, key '0')",
}


def expected_message(name, problem, npy=True):
    if npy and name in BUILDERS:
        return f"{name}: {problem} {BUILDERS[name]}"
    return f"{name}: {problem}"


# (function name, SQL with ?1 = the record, ?2 = a key in it)
RECORD_READERS = [
    ("ar_len", "select ar_len(?1)"),
    ("ar_keys", "select ar_keys(?1)"),
    ("ar_count_bytes", "select ar_count_bytes(?1)"),
    ("ar_json", "select ar_json(?1)"),
    ("ar_has", "select ar_has(?1, ?2)"),
    ("ar_get", "select ar_get(?1, ?2)"),
    ("ar_data", "select ar_data(?1, ?2)"),
    ("ar_dtype", "select ar_dtype(?1, ?2)"),
    ("ar_shape", "select ar_shape(?1, ?2)"),
    ("ar_stype", "select ar_stype(?1, ?2)"),
    ("ar_nbytes", "select ar_nbytes(?1, ?2)"),
    ("ar_set", "select ar_set(?1, 'n', npy_from_json('1'))"),
    ("ar_delete", "select ar_delete(?1, ?2)"),
    ("ar_rename", "select ar_rename(?1, ?2, 'n')"),
    ("ar_merge", "select ar_merge(?1)"),
    ("ar_merge", "select ar_merge(x'', ?1)"),
    ("ar_select", "select ar_select(?1, '*')"),
    ("array_record", "select * from array_record(?1)"),
]
# functions that read a record item's array data, not just the structure
RECORD_DATA_READERS = {"ar_get"}


def _run(con, sql, *args):
    """The error message the statement raises, or None."""
    args = args[: 2 if "?2" in sql else 1 if "?" in sql else 0]
    try:
        con.execute(sql, args).fetchall()
    except Exception as e:  # noqa: BLE001 — any error is the answer here
        return str(e)
    return None


def test_bad_npy_vectors_every_reader_same_problem():
    con = connect()
    for e in manifest()["bad_npy"]:
        blob = data(e["file"])
        problem = one(con, "select npy_error(?)", blob)
        for name, sql in NPY_READERS:
            got = _run(con, sql, blob)
            if problem is None:
                assert got is None, (e["file"], name, got)
            else:
                assert got == expected_message(name, problem), (e["file"], name, got)
        # inside a record, as a numpy.ndarray item: ar_get and ar_error name the item
        rec = record_bytes([("ok", np.arange(2)), ("bad.w", ("float32", [2], "numpy.ndarray", blob))])
        if problem is None:
            assert one(con, "select ar_get(?, 'bad.w')", rec) == blob
            # the message's dtype/shape do not match the file's: ar_valid says so
            assert one(con, "select ar_error(?)", rec) == "shape does not match the .npy shape (item 1, key 'bad.w')"
        else:
            where = f"{problem} (item 1, key 'bad.w')"
            assert one(con, "select ar_error(?)", rec) == where, e["file"]
            assert one(con, "select ar_valid(?)", rec) == 0
            assert _run(con, "select ar_get(?, 'bad.w')", rec) == f"ar_get: {where}"
        # the metadata readers never open the payload
        assert one(con, "select ar_shape(?, 'bad.w')", rec) == "[2]"


def test_bad_record_vectors_every_reader_same_problem():
    con = connect()
    for e in manifest()["bad_records"]:
        rec = data(e["file"])
        problem = one(con, "select ar_error(?)", rec)
        assert problem, e["file"]
        structural = one(con, "select ar_len(?)", rec) if "npy_data" in e["file"] else None
        key = "a" if "duplicate" in e["file"] else "fc1.weight"
        for name, sql in RECORD_READERS:
            got = _run(con, sql, rec, key)
            if structural is not None and name not in RECORD_DATA_READERS:
                assert got is None, (e["file"], name, got)  # well-formed record: metadata answers
            else:
                assert got == expected_message(name, problem, npy=False), (e["file"], name, got)
        # every problem names where: an offset, or the item and key
        assert "byte" in problem or "item" in problem, problem


def test_damaged_inputs_never_pass_silently():
    """Every byte of small valid inputs flipped in turn, and every truncation:
    each function either answers or raises its own '<name>: ...' error, and
    *_valid / *_error agree with the readers."""
    con = connect()
    npy = npy_bytes(np.arange(6, dtype="<i2").reshape(2, 3))
    rec = record_bytes([("w", np.arange(3, dtype="<f4")), ("b", ("int8", [2], "", b"\x01\x02"))])
    for base, readers, check in ((npy, NPY_READERS, "npy"), (rec, RECORD_READERS, "ar")):
        variants = [base[:n] for n in range(len(base))]
        for i in range(len(base)):
            for flip in (0x01, 0x80, 0xFF):
                b = bytearray(base)
                b[i] ^= flip
                variants.append(bytes(b))
        for blob in variants:
            valid, problem = con.execute(f"select {check}_valid(?1), {check}_error(?1)", (blob,)).fetchone()
            assert valid == (problem is None)
            for name, sql in readers:
                got = _run(con, sql, blob, "w")
                if got is not None:
                    assert got.startswith(name + ": ") or got == "string or blob too big", (name, got)
                    assert problem is not None, (name, got, blob)
                    if check == "npy" or name not in RECORD_DATA_READERS:
                        assert got == expected_message(name, problem, check == "npy") or "duplicate key" in got, (
                            name,
                            got,
                            problem,
                        )


def test_argument_type_errors_name_the_argument():
    con = connect()
    cases = {
        "select npy_dtype('x')": "npy_dtype: argument 1 must be a .npy BLOB, got text",
        "select npy(x'', 'f4', 1.5)": "npy: argument 3 must be a JSON shape (text), got a real",
        "select npy_from_json(x'00')": "npy_from_json: argument 1 must be JSON (text), got a blob",
        "select ar_len(1)": "ar_len: argument 1 must be a record BLOB, got an integer",
        "select ar_get(x'', x'00')": "ar_get: argument 2 must be a key (text)",
        "select ar_merge(x'', 2)": "ar_merge: argument 2 must be a record BLOB, got an integer",
        "select ar_select(x'', 2)": "ar_select: argument 2 must be a GLOB pattern (text), got an integer",
        "select ar('k', 'v')": "ar: argument 2 must be a .npy BLOB, got text",
        "select * from array_record('x')": "array_record: argument 1 must be a record BLOB, got text",
        "select * from npy_each(2)": "npy_each: argument 1 must be a .npy BLOB, got an integer",
        "select * from array_record": "array_record: missing argument (a record BLOB)",
        "select * from npy_each": "npy_each: missing argument (a .npy BLOB)",
    }
    for sql, msg in cases.items():
        assert error_of(con, sql) == msg, sql
    # and *_error reports the same text as a value
    assert one(con, "select npy_error('x')") == "argument 1 must be a .npy BLOB, got text"
    assert one(con, "select ar_error(1)") == "argument 1 must be a record BLOB, got an integer"


EXPECTED_FUNCTIONS = {
    "npy_dtype",
    "npy_descr",
    "npy_shape",
    "npy_ndim",
    "npy_numel",
    "npy_nbytes",
    "npy_fortran",
    "npy_version",
    "npy",
    "npy_raw",
    "npy_to_json",
    "npy_from_json",
    "npy_item",
    "npy_valid",
    "npy_error",
    "ar_len",
    "ar_keys",
    "ar_count_bytes",
    "ar_json",
    "ar_has",
    "ar_get",
    "ar_data",
    "ar_dtype",
    "ar_shape",
    "ar_stype",
    "ar_nbytes",
    "ar_valid",
    "ar_error",
    "ar",
    "ar_from_list",
    "ar_set",
    "ar_delete",
    "ar_rename",
    "ar_merge",
    "ar_select",
    "ar_agg",
    "ar_agg_list",
    "ar_version",
    "ar_debug",
}


def test_core_functions_are_registered_deterministic_and_innocuous():
    """The core array and record functions are all there, deterministic and
    innocuous (usable in indexes, CHECKs, views and triggers)."""
    con = connect()
    rows = con.execute(
        "select name, builtin, type, narg, flags from pragma_function_list where name like 'ar%' or name like 'npy%'"
    ).fetchall()
    names = {r[0] for r in rows}
    missing = EXPECTED_FUNCTIONS - names
    assert not missing, missing
    SQLITE_DETERMINISTIC, SQLITE_INNOCUOUS = 0x800, 0x200000
    for name, _builtin, _kind, _narg, flags in rows:
        if name in EXPECTED_FUNCTIONS:
            assert flags & SQLITE_DETERMINISTIC and flags & SQLITE_INNOCUOUS, name
    modules = {r[0] for r in con.execute("select name from pragma_module_list")}
    assert {"array_record", "npy_each"} <= modules
    # deterministic functions work in an index and a CHECK constraint
    con.execute("create table m(rec blob check (ar_valid(rec)))")
    con.execute("create index m_len on m(ar_len(rec))")
    con.execute("insert into m values (?)", (data("records/list_3.pb"),))
    assert _run(con, "insert into m values (x'0a')") == "CHECK constraint failed: ar_valid(rec)"
    assert one(con, "select count(*) from m where ar_len(rec) = 3") == 1
    # the JSON results are valid JSON
    assert json.loads(one(con, "select ar_json(rec) from m"))
