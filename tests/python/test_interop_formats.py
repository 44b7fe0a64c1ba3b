# SPDX-License-Identifier: Apache-2.0
"""safetensors and .npz, both ways.

safetensors: files written by `st_write`, a writer that follows the format
description (8-byte little-endian header length, JSON header of dtype /
shape / data_offsets, optional "__metadata__" string map, data after the
header), are read back; our files are parsed by `st_read`, a reader that
enforces the same description strictly. .npz: archives written by NumPy
(np.savez, np.savez_compressed, and a ZIP64 one written by zipfile) are
read, ours are opened by np.load and compared with what NumPy writes.
Malformed inputs of both kinds give clear errors.
"""

import io
import json
import sqlite3
import struct
import zipfile

import numpy as np
from arlib import connect, data, load_npy, npy_bytes, record_bytes

# --- safetensors from the format description -------------------------------

ST_DTYPES = {
    "BOOL": "?",
    "U8": "<u1",
    "I8": "<i1",
    "U16": "<u2",
    "I16": "<i2",
    "F16": "<f2",
    "U32": "<u4",
    "I32": "<i4",
    "F32": "<f4",
    "U64": "<u8",
    "I64": "<i8",
    "F64": "<f8",
    "C64": "<c8",
}
ST_SIZES = {"BF16": 2, "F8_E4M3": 1, "F8_E5M2": 1}


def st_write(tensors, metadata=None, order=None):
    """tensors: [(name, ndarray | (dtype, shape, raw bytes))]; header keys in
    `order` (default: as given), data in the given order."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors:
        if isinstance(t, np.ndarray):
            code = [k for k, v in ST_DTYPES.items() if np.dtype(v) == t.dtype.newbyteorder("<")][0]
            raw = np.ascontiguousarray(t).astype(t.dtype.newbyteorder("<")).tobytes()
            shape = list(t.shape)
        else:
            code, shape, raw = t
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if order:
        header = {k: header[k] for k in order}
    if metadata is not None:
        header = {"__metadata__": metadata, **header}
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def st_read(blob):
    """Strict reader: returns ({name: ndarray | (dtype, shape, raw)}, metadata, header text)."""
    (n,) = struct.unpack("<Q", blob[:8])
    assert n <= 100_000_000 and 8 + n <= len(blob)
    text = blob[8 : 8 + n].decode("utf-8")
    header = json.loads(text)
    metadata = header.pop("__metadata__", None)
    assert metadata is None or all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
    body = blob[8 + n :]
    spans = sorted((v["data_offsets"][0], v["data_offsets"][1], k) for k, v in header.items())
    pos = 0
    for begin, end, name in spans:
        assert begin == pos and end >= begin, name
        pos = end
    assert pos == len(body), "data section not fully covered"
    out = {}
    for name, v in header.items():
        begin, end = v["data_offsets"]
        raw = body[begin:end]
        if v["dtype"] in ST_DTYPES:
            dt = np.dtype(ST_DTYPES[v["dtype"]])
            assert len(raw) == int(np.prod(v["shape"], dtype=np.int64)) * dt.itemsize
            out[name] = np.frombuffer(raw, dtype=dt).reshape(v["shape"])
        else:
            assert len(raw) == int(np.prod(v["shape"], dtype=np.int64)) * ST_SIZES[v["dtype"]]
            out[name] = (v["dtype"], v["shape"], raw)
    return out, metadata, text


def sample_arrays():
    rng = np.random.default_rng(3)
    return [
        ("embed.weight", rng.standard_normal((4, 3)).astype(np.float32)),
        ("ln.bias", rng.standard_normal(5).astype(np.float16)),
        ("counts", np.arange(6, dtype=np.int64).reshape(2, 3)),
        ("mask", np.array([True, False, True])),
        ("bytes", np.arange(250, 256, dtype=np.uint8)),
        ("signed", np.array([-128, 127], dtype=np.int8)),
        ("u16", np.array([1, 65535], dtype=np.uint16)),
        ("i32", np.array([[-1]], dtype=np.int32)),
        ("u32", np.array([4000000000], dtype=np.uint32)),
        ("u64", np.array([2**64 - 1], dtype=np.uint64)),
        ("f64", np.array(np.pi)),
        ("c64", np.array([1 + 2j, -3j], dtype=np.complex64)),
        ("empty", np.zeros((0, 5), dtype=np.float32)),
        ('caf\u00e9 "q"', np.ones(2, dtype=np.float32)),
    ]


def record_arrays(con, rec):
    return [
        (k, load_npy(bytes(v))) for k, v in con.execute("SELECT key, ar_get(?, key) FROM array_record(?)", (rec, rec))
    ]


def test_safetensors_from_a_spec_writer_read_back():
    con = connect()
    arrays = sample_arrays()
    names = [k for k, _ in arrays]
    blob = st_write(arrays, metadata={"format": "pt", "note": "\u00e9"}, order=sorted(names))
    rec = con.execute("SELECT ar_from_safetensors(?)", (blob,)).fetchone()[0]
    got = record_arrays(con, rec)
    # items come in data order, which st_write made the list order
    assert [k for k, _ in got] == names
    for (k, want), (_, have) in zip(arrays, got):
        assert have.dtype == want.dtype.newbyteorder("<") and have.shape == want.shape, k
        np.testing.assert_array_equal(have, want)
    # the record is what Flower's ArrayRecord of those arrays serializes to
    assert rec == record_bytes(arrays)
    meta = con.execute("SELECT ar_safetensors_metadata(?)", (blob,)).fetchone()[0]
    assert json.loads(meta) == {"format": "pt", "note": "\u00e9"}


def test_our_safetensors_parse_with_a_spec_reader():
    con = connect()
    arrays = sample_arrays()
    # big-endian and Fortran-order inputs are written little-endian, C order
    arrays.append(("be", np.arange(6, dtype=">i4").reshape(2, 3)))
    arrays.append(("fortran", np.asfortranarray(np.arange(12, dtype=np.float64).reshape(3, 4))))
    rec = record_bytes(arrays)
    blob = con.execute("SELECT ar_to_safetensors(?, ?)", (rec, json.dumps({"framework": "np"}))).fetchone()[0]
    tensors, metadata, text = st_read(blob)
    assert metadata == {"framework": "np"}
    assert (8 + len(text.encode())) % 8 == 0 and text == text.rstrip(" ") + " " * (len(text) - len(text.rstrip(" ")))
    assert list(json.loads(text)) == ["__metadata__"] + [k for k, _ in arrays]  # record order
    for name, want in arrays:
        np.testing.assert_array_equal(tensors[name], want)
        assert tensors[name].shape == want.shape
    # and back: the record of little-endian C-order arrays
    again = con.execute("SELECT ar_from_safetensors(?)", (blob,)).fetchone()[0]
    for (_k, have), (_, want) in zip(record_arrays(con, again), arrays):
        np.testing.assert_array_equal(have, want)
        assert not have.dtype.byteorder == ">" and (have.flags.c_contiguous or have.ndim < 2)


def test_raw_bf16_and_f8_tensors_round_trip():
    con = connect()
    bf16 = bytes(range(12))
    blob = st_write(
        [("a", np.ones(2, np.float32)), ("h", ("BF16", [2, 3], bf16)), ("e", ("F8_E4M3", [4], b"\x01\x02\x03\x04"))]
    )
    rec = con.execute("SELECT ar_from_safetensors(?)", (blob,)).fetchone()[0]
    rows = con.execute("SELECT key, dtype, shape, stype, data FROM array_record(?)", (rec,)).fetchall()
    assert rows[1] == ("h", "BF16", "[2,3]", "safetensors", bf16)
    assert rows[2] == ("e", "F8_E4M3", "[4]", "safetensors", b"\x01\x02\x03\x04")
    out = con.execute("SELECT ar_to_safetensors(?)", (rec,)).fetchone()[0]
    tensors, _, _ = st_read(out)
    assert tensors["h"] == ("BF16", [2, 3], bf16) and tensors["e"] == ("F8_E4M3", [4], b"\x01\x02\x03\x04")
    try:
        con.execute("SELECT ar_get(?, 'h')", (rec,)).fetchone()
    except sqlite3.OperationalError as e:
        assert str(e) == "ar_get: unsupported dtype 'BF16' (not a NumPy numeric dtype) (item 1, key 'h')"
    else:
        raise AssertionError("a BF16 item read as a NumPy array")
    # such records are valid, in a RecordDict too (the validator knows raw items)
    assert con.execute("SELECT ar_valid(?1), rd_valid(rd('m', 'array', ?1))", (rec,)).fetchone() == (1, 1)
    # a raw item whose bytes do not fit its shape, or whose dtype is unknown, is not
    for bad, want in [
        (("BF16", [2, 3], bf16[:-1]), "data has 11 bytes, shape and dtype BF16 need 12 (item 0, key 'h')"),
        (("F8_E5M2", [2, 2], bytes(5)), "data has 5 bytes, shape and dtype F8_E5M2 need 4 (item 0, key 'h')"),
        (("XF9", [1], b"\x00"), "unsupported dtype 'XF9'"),
    ]:
        dtype, shape, data = bad
        blob = record_bytes([("h", (dtype, shape, "safetensors", data))])
        assert con.execute("SELECT ar_valid(?)", (blob,)).fetchone()[0] == 0, bad
        assert want in con.execute("SELECT ar_error(?)", (blob,)).fetchone()[0], bad


def error_of(con, sql, *args):
    try:
        con.execute(sql, args).fetchone()
    except (sqlite3.OperationalError, sqlite3.DataError) as e:
        return str(e)
    raise AssertionError("no error from " + sql)


def test_malformed_safetensors():
    con = connect()
    good = st_write([("a", np.ones(2, np.float32)), ("b", np.ones(1, np.float32))])
    hdr = lambda h, body=b"": struct.pack("<Q", len(h)) + h + body  # noqa: E731
    cases = [
        (good[:5], "ar_from_safetensors: file too short (5 bytes; the header length takes 8)"),
        (good[:-1], "ar_from_safetensors: the tensors cover 12 bytes but the data section has 11"),
        (good + b"\0", "ar_from_safetensors: the tensors cover 12 bytes but the data section has 13"),
        (
            good[:40],
            "ar_from_safetensors: header length %d runs past the end of the file (40 bytes)"
            % struct.unpack("<Q", good[:8])[0],
        ),
        (
            struct.pack("<Q", 10**9) + b"{}",
            "ar_from_safetensors: header length 1000000000 exceeds the limit of 100000000 bytes",
        ),
        (
            hdr(
                b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], '
                b'"data_offsets": [4, 8]}}',
                bytes(8),
            ),
            "ar_from_safetensors: tensor 'b' has data_offsets [4, 8], expected it to start at 8",
        ),
        (
            hdr(
                b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], '
                b'"data_offsets": [12, 16]}}',
                bytes(16),
            ),
            "ar_from_safetensors: tensor 'b' has data_offsets [12, 16], expected it to start at 8",
        ),
        (
            hdr(b'{"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}', bytes(8)),
            "ar_from_safetensors: tensor 'a' needs 12 bytes for its shape and dtype F32, data_offsets give 8",
        ),
        (
            hdr(b'{"a": {"dtype": "X9", "shape": [2], "data_offsets": [0, 2]}}', bytes(2)),
            "ar_from_safetensors: safetensors header: unknown dtype 'X9' at byte 24",
        ),
        (
            hdr(b'{"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]', bytes(8)),
            "ar_from_safetensors: safetensors header: unexpected end of JSON at byte 67",
        ),
        (hdr(b"\xff{}"), "ar_from_safetensors: safetensors header is not valid UTF-8"),
        (
            hdr(b'{"__metadata__": {"a": 1}}'),
            "ar_from_safetensors: safetensors header: __metadata__ must be an object of strings at byte 31",
        ),
    ]
    for blob, msg in cases:
        got = error_of(con, "SELECT ar_from_safetensors(?)", blob)
        assert got == msg, (got, msg)


def test_safetensors_errors_for_records_it_cannot_hold():
    con = connect()
    rec = record_bytes([("z", np.array([1 + 1j]))])
    assert (
        error_of(con, "SELECT ar_to_safetensors(?)", rec)
        == "ar_to_safetensors: complex128 has no safetensors dtype (item 0, key 'z')"
    )
    assert (
        error_of(con, "SELECT ar_to_safetensors(?, ?)", b"", '{"a": ["x"]}')
        == "ar_to_safetensors: argument 2: metadata must be an object of strings at byte 6"
    )


def test_safetensors_header_over_the_limit_is_named():
    # A control character in a key is written as \u00XX: a key of 16,666,667
    # of them makes a header just over the format's 100,000,000 bytes.
    con = connect()
    key = "\x01" * 16666667
    header = "{" + json.dumps(key) + ':{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'
    hlen = (len(header) + 7) // 8 * 8
    assert (
        error_of(con, "SELECT ar_to_safetensors(ar(?, npy_from_json('[1]', 'uint8')))", key)
        == "ar_to_safetensors: header length %d exceeds the limit of 100000000 bytes" % hlen
    )


# --- .npz ---------------------------------------------------------------------


def npz_bytes(compressed, **arrays):
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def npz_arrays():
    arrays = dict(sample_arrays())
    arrays["be"] = np.arange(6, dtype=">f8").reshape(3, 2)
    arrays["fortran"] = np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4))
    arrays["scalar"] = np.array(7, dtype=np.int32)
    arrays["c128"] = np.array([1 - 1j])
    arrays["dir/sub"] = np.zeros(3)
    return arrays


def test_npz_written_by_numpy_is_read():
    con = connect()
    arrays = npz_arrays()
    for compressed in (False, True):
        blob = npz_bytes(compressed, **arrays)
        rec = con.execute("SELECT ar_from_npz(?)", (blob,)).fetchone()[0]
        got = record_arrays(con, rec)
        assert [k for k, _ in got] == list(arrays)
        with np.load(io.BytesIO(blob)) as z:
            for k, have in got:
                want = z[k]
                assert have.dtype == want.dtype and have.shape == want.shape, k
                np.testing.assert_array_equal(have, want)
        # each item holds the member's .npy bytes, as Flower's Array would
        assert rec == record_bytes(list(arrays.items()))


def test_our_npz_is_what_numpy_writes():
    con = connect()
    arrays = npz_arrays()
    rec = record_bytes(list(arrays.items()))
    for compressed in (0, 1):
        ours = con.execute("SELECT ar_to_npz(?, ?)", (rec, compressed)).fetchone()[0]
        with np.load(io.BytesIO(ours)) as z:
            assert list(z.keys()) == list(arrays)
            for k, want in arrays.items():
                np.testing.assert_array_equal(z[k], want)
                assert z[k].dtype == want.dtype
        # byte for byte what NumPy writes (Python's zlib and ours are the same libz in this process)
        assert ours == npz_bytes(compressed, **arrays), "compressed" if compressed else "stored"


def test_legacy_raw_records_become_loadable_npz():
    con = connect()
    blob = con.execute("SELECT ar_to_npz(?)", (data("records/legacy_raw.pb"),)).fetchone()[0]
    with np.load(io.BytesIO(blob)) as z:
        np.testing.assert_array_equal(z["w"], np.arange(6, dtype=np.float32).reshape(2, 3))
        assert z["b"].dtype == np.int32 and z["b"].shape == (2,)


def test_zip64_archives_are_read():
    # zipfile writes ZIP64 extra fields in the central directory and the
    # ZIP64 end records only for huge archives; lowering its limits makes it
    # write them for a small one.
    con = connect()
    arrays = {"a": np.arange(5, dtype=np.float32), "b": np.eye(2)}
    saved = zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT
    zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = 0, 0
    try:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for k, v in arrays.items():
                zf.writestr(k + ".npy", npy_bytes(v))
        blob = buf.getvalue()
    finally:
        zipfile.ZIP64_LIMIT, zipfile.ZIP_FILECOUNT_LIMIT = saved
    assert b"PK\x06\x06" in blob and b"PK\x06\x07" in blob  # ZIP64 end record and locator
    rec = con.execute("SELECT ar_from_npz(?)", (blob,)).fetchone()[0]
    for k, have in record_arrays(con, rec):
        np.testing.assert_array_equal(have, arrays[k])


def zip_with(members, method=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        for name, payload in members:
            zf.writestr(name, payload)
    return buf.getvalue()


def test_npz_members_lose_bytes_after_their_payload():
    # np.load ignores them; the record holds what ar() would store.
    con = connect()
    a = np.arange(3, dtype=np.float32)
    blob = zip_with([("w.npy", npy_bytes(a) + b"trailing junk")])
    got = con.execute(
        "SELECT ar_from_npz(?) = ar('w', ?), ar_get(ar_from_npz(?), 'w') = ?", (blob, npy_bytes(a), blob, npy_bytes(a))
    ).fetchone()
    assert got == (1, 1), got


def test_malformed_npz():
    con = connect()
    blob = npz_bytes(False, a=np.arange(3, dtype=np.float32))
    central = blob.index(b"PK\x01\x02")
    flipped = bytearray(blob)
    flipped[central - 1] ^= 0xFF  # last data byte
    encrypted = bytearray(blob)
    encrypted[central + 8] |= 1
    cases = [
        (blob[:-10], "ar_from_npz: not a zip archive (no end of central directory record)"),
        (blob[:100] + blob[-22:], "ar_from_npz: central directory (51 bytes at 195) lies outside the archive"),
        (bytes(flipped), "ar_from_npz: member 'a.npy' fails its CRC-32 check"),
        (bytes(encrypted), "ar_from_npz: member 'a.npy' is encrypted"),
        (zip_with([("notes.txt", b"hello")]), "ar_from_npz: member 'notes.txt' is not a .npy file"),
        (zip_with([("a.npy", b"not numpy")]), "ar_from_npz: member 'a.npy': not a .npy file (bad magic)"),
        (
            zip_with([("a.npy", b"x")], zipfile.ZIP_BZIP2),
            "ar_from_npz: member 'a.npy' uses compression method 12 (only stored and deflate are read)",
        ),
        (
            npz_bytes(False, o=np.array([{"pickled": 1}], dtype=object)),
            "ar_from_npz: member 'o.npy': unsupported dtype '|O' (object arrays hold pickled Python objects, which are never loaded)",
        ),
        (b"", "ar_from_npz: not a zip archive (0 bytes)"),
    ]
    for bad, msg in cases:
        assert error_of(con, "SELECT ar_from_npz(?)", bad) == msg
    assert (
        error_of(con, "SELECT ar_to_npz(?, 'yes')", record_bytes([]))
        == "ar_to_npz: argument 2 must be 0 (stored) or 1 (deflate)"
    )


def test_zip_bombs_are_capped_by_the_length_limit():
    con = connect()
    # 48 MiB of zeros compress to ~48 KiB
    blob = npz_bytes(True, bomb=np.zeros(6 << 20))
    assert len(blob) < 100_000
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 8 << 20)
    assert error_of(con, "SELECT ar_from_npz(?)", blob) == "string or blob too big"
    # a directory that understates the size: inflating stops at the stated size
    central = blob.index(b"PK\x01\x02")
    lying = bytearray(blob)
    lying[central + 24 : central + 28] = struct.pack("<I", 1000)
    assert (
        error_of(con, "SELECT ar_from_npz(?)", bytes(lying))
        == "ar_from_npz: member 'bomb.npy' inflates to more than its stated 1000 bytes"
    )
    # with room enough it is an ordinary array
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 64 << 20)
    rec = con.execute("SELECT ar_from_npz(?)", (blob,)).fetchone()[0]
    assert con.execute("SELECT ar_shape(?, 'bomb')", (rec,)).fetchone()[0] == "[6291456]"
