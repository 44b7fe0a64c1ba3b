#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the seed inputs of the fuzz harnesses for the interop formats and
the math layer into tests/fuzz/corpus/NAME/seed_*: small safetensors files,
.npz archives (NumPy's own np.savez / np.savez_compressed, and member lists
for fuzz_npz to pack), Flower object sets (from tests/data/objects) and
records to deflate, JSON documents, and array pairs for fuzz_math. Each
harness's header comment describes its input format.

Run from anywhere with Debian's python3 (NumPy for the .npz seeds); the
output is deterministic. Commit what changes.
"""

import io
import json
import os
import random
import sqlite3
import struct
import zipfile
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
SEP = b"@@@@"


def write(name, seeds):
    d = os.path.join(CORPUS, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if f.startswith("seed_"):
            os.remove(os.path.join(d, f))
    for label, data in seeds:
        with open(os.path.join(d, "seed_" + label), "wb") as f:
            f.write(data)


def npy(arr):
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


# --- safetensors ------------------------------------------------------------------


def safetensors(tensors, metadata=None, pad=True):
    """tensors: [(name, dtype, shape, bytes)] in data order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def gen_safetensors():
    f4 = struct.pack("<6f", 1, -2, 3.5, 0, float("inf"), float("nan"))
    seeds = [
        ("empty", safetensors([])),
        ("metadata_only", safetensors([], {"format": "pt", "note": "caf\u00e9"})),
        ("f32_2x3", safetensors([("w", "F32", [2, 3], f4)], {"format": "np"})),
        (
            "every_numpy_dtype",
            safetensors(
                [
                    ("b", "BOOL", [3], b"\x00\x01\x01"),
                    ("u8", "U8", [2], b"\x01\xff"),
                    ("i8", "I8", [2], b"\x80\x7f"),
                    ("i16", "I16", [1], struct.pack("<h", -2)),
                    ("u16", "U16", [1], struct.pack("<H", 65535)),
                    ("f16", "F16", [2], struct.pack("<2e", 1.5, -0.0)),
                    ("i32", "I32", [1], struct.pack("<i", -7)),
                    ("u32", "U32", [1], struct.pack("<I", 7)),
                    ("f64", "F64", [1], struct.pack("<d", 0.1)),
                    ("i64", "I64", [1], struct.pack("<q", -1)),
                    ("u64", "U64", [1], struct.pack("<Q", 2**64 - 1)),
                    ("c64", "C64", [1], struct.pack("<2f", 1, -1)),
                ]
            ),
        ),
        (
            "raw_dtypes",
            safetensors(
                [
                    ("bf", "BF16", [2], b"\x80\x3f\x00\x40"),
                    ("e5", "F8_E5M2", [3], b"\x01\x02\x03"),
                    ("e4", "F8_E4M3", [1], b"\x7f"),
                    ("e8", "F8_E8M0", [1], b"\x7f"),
                    ("fn", "F8_E4M3FNUZ", [1], b"\x00"),
                    ("f5", "F8_E5M2FNUZ", [1], b"\x00"),
                    ("f4", "F4", [2], b"\x21"),
                    ("f6", "F6_E2M3", [4], b"\x01\x02\x03"),
                    ("f6b", "F6_E3M2", [4], b"\x04\x05\x06"),
                ]
            ),
        ),
        (
            "zero_size_and_scalar",
            safetensors(
                [("z", "F32", [0, 5], b""), ("s", "I64", [], struct.pack("<q", 42)), ("z2", "U8", [3, 0], b"")]
            ),
        ),
        (
            "escaped_names",
            safetensors([('l\u00e4yer."q"\\n', "F16", [1], b"\x00\x3c"), ("\U0001f600", "U8", [1], b"\x05")]),
        ),
        ("unpadded_4d", safetensors([("x", "I16", [1, 2, 1, 2], struct.pack("<4h", 1, 2, 3, 4))], pad=False)),
    ]
    # Hand-written headers: unknown fields, whitespace, escapes in keys.
    text = (
        b'{ "__metadata__" : { "a" : "b" } , "t\\u0031" : { "shape" : [ 2 ] , "dtype" : "U8" , '
        b'"data_offsets" : [ 0 , 2 ] , "extra" : [ {"x": null}, true, 1.5e3 ] } }'
    )
    seeds.append(("whitespace_unknown_fields", struct.pack("<Q", len(text)) + text + b"\x01\x02"))
    write("safetensors", seeds)


# --- npz -------------------------------------------------------------------------


def savez(compress, **arrays):
    b = io.BytesIO()
    (np.savez_compressed if compress else np.savez)(b, **arrays)
    return b.getvalue()


def raw_deflate(data):
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def member(flags, name, payload, level=6):
    return bytes([flags, level, len(name)]) + name + payload


def gen_npz():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    seeds = [
        ("savez_one", savez(False, w=a)),
        ("savez_compressed_two", savez(True, w=a, b=np.array([1, -2], dtype=">i4"))),
        ("savez_fortran_bool", savez(False, f=np.asfortranarray(np.eye(3, dtype=bool)), s=np.float64(2.5))),
        ("savez_empty", savez(False)),
        ("savez_unicode_name", savez(True, **{"l\u00e4yer": np.zeros((0, 3), np.int8)})),
        ("savez_compressed_zeros", savez(True, z=np.zeros(4000, np.uint8))),
    ]
    # Python's zipfile without NumPy's forced ZIP64 extras, with a comment.
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("x.npy", npy(np.array([1.5, 2.5])))
        z.writestr("y.npy", npy(np.array(3, dtype=np.uint16)))
        z.comment = b"made by zipfile"
    seeds.append(("zipfile_comment", b.getvalue()))
    # Members for fuzz_npz to pack (first byte 0xB1).
    p1, p2 = npy(np.array([1, 2, 3], dtype="<i2")), npy(np.ones((2, 2), dtype=">f8"))
    seeds += [
        ("pack_stored", b"\xb1" + member(0, b"a", p1) + SEP + member(0, b"b", p2)),
        ("pack_deflate_zip64", b"\xb1" + member(1 | 4 | 8, b"a", p1, 9) + SEP + member(1 | 16, b"b", p2, 1)),
        ("pack_bad_crc", b"\xb1" + member(32, b"a", p1)),
        ("pack_size_off", b"\xb1" + member(1 | 128, b"a", p2)),
        ("pack_not_npy_name", b"\xb1" + member(64, b"a.txt", p1)),
        ("pack_raw_deflate", b"\xb1" + member(2, b"z", raw_deflate(p1 * 3)[:-2] + raw_deflate(p1))),
        ("pack_bomb", b"\xb1" + member(2, b"bomb", raw_deflate(npy(np.zeros(1 << 20, np.uint8))))),
    ]
    write("npz", seeds)


# --- Flower objects -----------------------------------------------------------------


def gen_flower():
    seeds = []
    objects = os.path.join(ROOT, "tests", "data", "objects")
    for d in sorted(os.listdir(objects)):
        parts = []
        for f in sorted(os.listdir(os.path.join(objects, d))):
            with open(os.path.join(objects, d, f), "rb") as fh:
                parts.append(fh.read())
        seeds.append(("objects_" + d, b"\x00" + SEP.join(parts)))
    records = os.path.join(ROOT, "tests", "data", "records")
    for f in sorted(os.listdir(records)):
        with open(os.path.join(records, f), "rb") as fh:
            rec = fh.read()
        if len(rec) > 2048:
            continue
        name = f[:-3]
        seeds.append(("record_" + name, b"\x01\x00" + rec))
        seeds.append(("record_chunk7_" + name, b"\x05\x07" + rec))
    rdobj = os.path.join(ROOT, "tests", "data", "recorddict", "objects")
    with open(os.path.join(rdobj, "MANIFEST.json")) as fh:
        sets = json.load(fh)["object_sets"]
    for entry in sets:
        parts = []
        for o in entry["objects"]:
            with open(os.path.join(rdobj, o["file"]), "rb") as fh:
                parts.append(fh.read())
        seeds.append(("rd_objects_" + entry["name"], b"\x00" + SEP.join(parts)))
    rds = os.path.join(ROOT, "tests", "data", "recorddict")
    for f in sorted(os.listdir(rds)):
        if not f.endswith(".pb"):
            continue
        with open(os.path.join(rds, f), "rb") as fh:
            rd = fh.read()
        seeds.append(("rd_" + f[:-3], b"\x81\x00" + rd))
        seeds.append(("rd_chunk7_" + f[:-3], b"\x85\x07" + rd))
    write("flower", seeds)


# --- JSON -----------------------------------------------------------------------------


def gen_json_read():
    docs = [
        '{"__metadata__": {"format": "pt"}, "w": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}}',
        '{"dtype": "float32", "shape": [2], "stype": "numpy.ndarray", "arraychunk_ids": [0, 1, 0]}',
        '{"fc1.weight": "0000000000000000000000000000000000000000000000000000000000000000"}',
        "[1, -0, 0.5, 1e10, -2.5E-3, 18446744073709551615, 18446744073709551616, true, false, null]",
        '"\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/\\b\\f\\r\\u0000"',
        '{"a": {"b": {"c": [[[]]]}}, "": ""}',
        "[" * 64 + "]" * 64,
        " \t\r\n{}\n",
        '"caf\u00e9 \u5c42"',
    ]
    write("json_read", [("doc%d" % i, d.encode()) for i, d in enumerate(docs)])


# --- math ----------------------------------------------------------------------------


def math_input(ta, tb, flags, ndim, dims, cast, scale, payload):
    head = bytes([ta, tb, flags, ndim] + (list(dims) + [0, 0, 0, 0])[:4] + [cast] + [0] * 7)
    return head + struct.pack("<d", scale) + payload


def gen_math():
    # dtype codes: 0 bool, 1-4 int8..int64, 5-8 uint8..uint64, 9-11 float16..64, 12-13 complex
    pay = bytes(range(256)) * 4
    floats = struct.pack("<8d", 1.5, -2.0, float("nan"), float("inf"), -0.0, 1e300, 5e-324, 3.0)
    seeds = [
        ("f32_f32_2x3", math_input(10, 10, 0, 2, [2, 3], 11, 0.5, pay)),
        ("i8_u64_big_fortran", math_input(1, 8, 2 | 4, 2, [3, 4], 10, -3.0, pay)),
        ("f16_c64", math_input(9, 12, 1 | 8, 3, [2, 2, 2], 4, 1e-3, pay)),
        ("scalar_and_array", math_input(11, 3, 16, 1, [5], 0, 2.0, floats + pay)),
        ("empty", math_input(4, 11, 0, 2, [0, 3], 12, 1.0, pay)),
        ("bool_bool", math_input(0, 0, 0, 1, [4], 5, 2.0, b"\x00\x01\x05\x00" * 2)),
        ("shape_mismatch", math_input(11, 11, 64, 2, [2, 3], 13 | 0x80, 1.0, floats)),
        ("long_f64_fortran", math_input(11, 10, 4 | 8, 0x81, [24, 1], 11 | 0x80, 0.25, floats + pay)),
        ("c128_i64", math_input(13, 4, 0, 1, [3], 9, -1.0, floats + pay)),
        ("u16_i16_to_i8", math_input(6, 2, 1 | 2, 2, [1, 5], 1, 7.0, pay)),
    ]
    write("math", seeds)


# --- packed records ---------------------------------------------------------------


def packed_part(dtype_flags, payload):
    """One of fuzz_packed's item parts: a dtype byte, then the payload."""
    return bytes([dtype_flags]) + payload


def floats(n, seed, scale=1.0):
    r = random.Random(seed)
    return b"".join(struct.pack("<f", r.uniform(-1, 1) * scale) for _ in range(n))


def gen_packed():
    rec = [
        packed_part(0, floats(1100, 1)),
        packed_part(1, bytes(range(256))),
        packed_part(8, floats(100, 3)),
        packed_part(16, floats(64, 4)),
        packed_part(2, b"\x00\x3c" * 50),
    ]
    base = [
        packed_part(0, floats(1100, 1)[:-8] + bytes(8)),
        packed_part(1, bytes(range(256))),
        packed_part(8, floats(100, 5)),
    ]
    mlp = open(os.path.join(ROOT, "tests", "data", "records", "mlp_dict.pb"), "rb").read()
    seeds = []
    for label, ctl in [
        ("plain", b"\x00\x01"),
        ("nobase", b"\x01\x00"),
        ("lossy", b"\x02\x02\x10\x20\x30\x40\x80"),
        ("bf16", b"\x06\x00"),
        ("rd", b"\x08\x01\x00\x05\x01\x07\x40"),
    ]:
        seeds.append((label, b"P" + ctl + SEP + SEP.join(rec) + SEP + SEP + SEP.join(base)))
    seeds.append(("raw", b"P\x10\x00" + SEP + mlp))
    ext = os.path.join(ROOT, "build", "arrayrecord")
    try:
        con = sqlite3.connect(":memory:")
        con.enable_load_extension(True)
        con.load_extension(ext)
    except (AttributeError, sqlite3.OperationalError):
        con = None
    if con is not None:
        (p,) = con.execute(
            "SELECT ar_pack(ar_add(?1, ar_scale(?1, 0.001)), ?1, '{\"chunk\": 1024}')", (mlp,)
        ).fetchone()
        seeds.append(("packed_mlp", p))
        (p,) = con.execute("SELECT ar_pack(?1)", (mlp,)).fetchone()
        seeds.append(("packed_self", p))
    write("packed", seeds)


if __name__ == "__main__":
    gen_safetensors()
    gen_npz()
    gen_flower()
    gen_json_read()
    gen_math()
    gen_packed()
