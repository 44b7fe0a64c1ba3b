# SPDX-License-Identifier: Apache-2.0
"""One voice for errors: the Python readers (from_npy, from_record,
from_recorddict) say what the extension says about the same bytes.

Every binary input of tests/bad goes through the three readers and through
npy_error, ar_error and rd_error; then seeded random mutations (truncations,
byte flips, insertions, deletions) of valid .npy files, records and
RecordDicts do. For each pair the verdict (accepted or refused) must be the
same and, when refused, the message after the function's name must be the
extension's message, character for character.

The one exception, listed in EXCEPTIONS: a valid raw item of a dtype NumPy
lacks (stype 'safetensors', dtype 'BF16', 'F8_E4M3', ...), which the
extension holds and from_record cannot make an ndarray of (to_state_dict
reads it).
"""

import glob
import os
import random
import re
import sys

import numpy as np
from arlib import EXT, ROOT
from arlib import connect as ar_connect

sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
os.environ["AR_EXTENSION"] = EXT
import sqlite_arrayrecord as sar  # noqa: E402

BAD = os.path.join(ROOT, "tests", "bad")

# reader, its SQL twin, the reader's name as its messages start
READERS = (
    (sar.from_npy, "npy_error", "from_npy"),
    (sar.from_record, "ar_error", "from_record"),
    (sar.from_recorddict, "rd_error", "from_recorddict"),
)

# Where Python legitimately cannot say what SQL says: (reader name, pattern
# of its message, reason). SQL's message must be NULL (the bytes are valid).
EXCEPTIONS = (
    (
        "from_record",
        r"has no NumPy dtype; to_state_dict reads it as a torch tensor",
        "a valid raw item of a dtype NumPy lacks (BF16, F8_*): SQL holds it, NumPy cannot",
    ),
    (
        "from_recorddict",
        r"has no NumPy dtype; to_state_dict reads it as a torch tensor",
        "the same, inside a RecordDict's ArrayRecord",
    ),
)


def python_says(reader, blob):
    """None when the reader accepts blob, else its message."""
    try:
        reader(blob)
    except ValueError as e:
        return str(e)
    return None


def mismatch(con, blob, where):
    """The differences between the readers and the SQL functions on blob, as text lines."""
    out = []
    for reader, sql_fn, name in READERS:
        sql = con.execute(f"SELECT {sql_fn}(?)", (blob,)).fetchone()[0]
        py = python_says(reader, blob)
        if sql is None and py is not None:
            if any(name == n and re.search(p, py) for n, p, _ in EXCEPTIONS):
                continue
            out.append(f"{where}: {name} refuses what {sql_fn} accepts: {py}")
        elif sql is not None and py is None:
            out.append(f"{where}: {name} accepts what {sql_fn} refuses: {sql}")
        elif sql is not None and py != f"{name}: {sql}":
            out.append(f"{where}: {name}\n    python: {py}\n    sql:    {name}: {sql}")
    return out


def manifest_inputs():
    """(manifest, file name, bytes) of every binary input of tests/bad."""
    out = []
    for path in sorted(glob.glob(os.path.join(BAD, "*.manifest"))):
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        if "bind text" in lines:
            continue
        for line in lines:
            if " | " not in line or line.startswith("#"):
                continue
            rel = line.split(" | ", 1)[0].strip()
            with open(os.path.join(BAD, rel), "rb") as f:
                out.append((os.path.basename(path), rel, f.read()))
    return out


def test_every_bad_input_gets_the_extensions_message():
    con = ar_connect()
    inputs = manifest_inputs()
    assert len(inputs) > 400, len(inputs)
    problems = []
    for man, rel, blob in inputs:
        problems += mismatch(con, blob, f"{man} {rel}")
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:40])


def test_the_record_manifests_speak_of_the_python_readers_too():
    """The substrings the manifests expect from ar_error / rd_error / npy_error
    are in the Python readers' messages too."""
    con = ar_connect()
    checked = 0
    for man, fn in (
        ("npy.manifest", sar.from_npy),
        ("record.manifest", sar.from_record),
        ("record_item.manifest", sar.from_record),
        ("record_mismatch.manifest", sar.from_record),
        ("recorddict.manifest", sar.from_recorddict),
        ("recorddict_array.manifest", sar.from_recorddict),
        ("recorddict_item.manifest", sar.from_recorddict),
        ("recorddict_slip.manifest", sar.from_recorddict),
    ):
        with open(os.path.join(BAD, man), encoding="utf-8") as f:
            for line in f.read().splitlines():
                if " | " not in line or line.startswith("#"):
                    continue
                rel, want = (x.strip() for x in line.split(" | ", 1))
                with open(os.path.join(BAD, rel), "rb") as g:
                    said = python_says(fn, g.read())
                assert said is not None and want in said, (man, rel, want, said)
                checked += 1
    assert checked > 200, checked
    con.close()


# --- random mutations -------------------------------------------------------------------


def seeds():
    """Valid .npy files, records and RecordDicts of many shapes."""
    npys = [
        sar.to_npy(np.arange(6, dtype=np.float32).reshape(2, 3)),
        sar.to_npy(np.asfortranarray(np.arange(12.0).reshape(3, 4))),
        sar.to_npy(np.array(3.5)),
        sar.to_npy(np.zeros((0, 4), ">i8")),
        sar.to_npy(np.array([True, False])),
        sar.to_npy(np.array([1 + 2j], np.complex64)),
    ]
    recs = [
        sar.to_record({"w": np.arange(6.0).reshape(2, 3), "b": np.ones(3, ">f4")}),
        sar.to_record({"": np.int8(3), "fc.weight": np.eye(2, dtype=np.float16)}),
        sar.to_record([np.zeros(0), np.arange(4, dtype=np.uint64)]),
        # a legacy raw item (stype other than numpy.ndarray)
        b"\x0a\x20\x0a\x01r\x12\x1b\x0a\x07float32\x12\x01\x02\x1a\x03raw\x22\x08" + np.ones(2, "<f4").tobytes(),
    ]
    rds = [
        sar.to_recorddict(
            {
                "w": {"a": np.arange(3.0), "b": np.ones((2, 2), np.int32)},
                "m": sar.MetricRecord({"x": 1, "y": [1.5, 2.0], "z": 2**64 - 1, "n": -3}),
                "c": sar.ConfigRecord({"s": "hé", "b": [True, False], "by": b"x", "l": ["a", "bc"], "f": 0.5}),
            }
        ),
        sar.to_recorddict({"": sar.ConfigRecord({"k": [b"a", b""], "u": [2**63, 1]}), "e": {}}),
    ]
    return npys, recs, rds


def mutate(rng, blob):
    b = bytearray(blob)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        op = rng.randrange(4)
        if op == 0 and b:
            del b[rng.randrange(len(b)) :]  # truncate
        elif op == 1 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)  # flip
        elif op == 2:
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.choice((1, 1, 2, 4))))  # insert
        elif b:
            i = rng.randrange(len(b))
            del b[i : i + rng.choice((1, 1, 2, 8))]  # delete
    return bytes(b)


def test_random_mutations_get_the_same_verdict_and_message():
    con = ar_connect()
    rng = random.Random(20261126)
    npys, recs, rds = seeds()
    problems, refused, n = [], 0, 0
    for kind, pool in (("npy", npys), ("record", recs), ("recorddict", rds)):
        for i in range(500):
            src = rng.randrange(len(pool))
            blob = mutate(rng, pool[src])
            got = mismatch(con, blob, f"{kind} seed {src} mutation {i} ({blob.hex()[:120]})")
            problems += got
            refused += con.execute("SELECT ar_error(?) IS NOT NULL", (blob,)).fetchone()[0]
            n += 1
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:30])
    # The mutations must reach past the first byte: most are refused, some not.
    assert n == 1500 and 0 < refused < n, (n, refused)


def test_the_seeds_are_valid_for_both():
    con = ar_connect()
    npys, recs, rds = seeds()
    for blob in npys:
        assert con.execute("SELECT npy_error(?)", (blob,)).fetchone()[0] is None
        sar.from_npy(blob)
    for blob in recs:
        assert con.execute("SELECT ar_error(?)", (blob,)).fetchone()[0] is None
        assert list(sar.from_record(blob)) == [r[0] for r in con.execute("SELECT key FROM array_record(?)", (blob,))]
    for blob in rds:
        assert con.execute("SELECT rd_error(?)", (blob,)).fetchone()[0] is None
        assert sar.to_recorddict(sar.from_recorddict(blob)) == blob


def test_the_exception_is_only_the_numpy_less_dtype():
    """A valid BF16 raw item: SQL holds it, from_record refuses it (the
    listed exception); a BF16 item of the wrong size gets SQL's message."""
    con = ar_connect()
    good = con.execute(
        "SELECT ar_from_safetensors(?)",
        (
            b"\x40\x00\x00\x00\x00\x00\x00\x00"
            + b'{"w":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}'.ljust(64)
            + b"\0" * 4,
        ),
    ).fetchone()[0]
    assert con.execute("SELECT ar_error(?)", (good,)).fetchone()[0] is None
    said = python_says(sar.from_record, good)
    assert said and re.search(EXCEPTIONS[0][1], said), said
    assert good.endswith(b"\x22\x04" + b"\0" * 4)
    # the same item with 3 data bytes: item and Array lengths one less
    assert good[:7] == b"\x0a\x21\x0a\x01w\x12\x1c", good
    bad = b"\x0a\x20\x0a\x01w\x12\x1b" + good[7:-6] + b"\x22\x03" + b"\0" * 3
    sql = con.execute("SELECT ar_error(?)", (bad,)).fetchone()[0]
    assert sql and "data has 3 bytes, shape and dtype BF16 need 4" in sql, sql
    assert python_says(sar.from_record, bad) == f"from_record: {sql}"
