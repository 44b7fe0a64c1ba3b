#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes tests/sql/hardening_formats.sql: unusual but valid .npy headers and
records (built here as hex literals), planner paths of the tables, and JSON
edge values. Run it from the repository root after changing it, then
regenerate the .expected with tests/run --update-golden and review the diff."""

import struct


def npy(header, payload=b"", version=(1, 0)):
    header = header.encode("latin-1")
    lsize = 2 if version[0] == 1 else 4
    total = 6 + 2 + lsize + len(header) + 1
    header = header + b" " * ((64 - total % 64) % 64) + b"\n"
    n = struct.pack("<H", len(header)) if lsize == 2 else struct.pack("<I", len(header))
    return b"\x93NUMPY" + bytes(version) + n + header + payload


def varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def ld(f, p):
    if isinstance(p, str):
        p = p.encode()
    return varint(f << 3 | 2) + varint(len(p)) + p


I2x3 = struct.pack("<3h", 1, -2, 3)
headers = [
    ("tabs, CR, form feed and no trailing comma", "{'descr':\t'<i2',\r'fortran_order':\x0cFalse,'shape':(3,)}"),
    ("double quotes", '{"descr": "<i2", "fortran_order": False, "shape": (3,)}'),
    ("keys in another order", "{'shape': (3,), 'descr': '<i2', 'fortran_order': False}"),
    ("a repeated key: the last wins", "{'descr': '<f8', 'descr': '<i2', 'fortran_order': False, 'shape': (3,)}"),
    ("Python 2 long suffix (version 1.0)", "{'descr': '<i2', 'fortran_order': False, 'shape': (3L,)}"),
    ("explicit plus sign and underscores", "{'descr': '<i2', 'fortran_order': False, 'shape': (+3,)}"),
    ("digit separators", "{'descr': '<i2', 'fortran_order': False, 'shape': (0_3,)}"),
    ("escaped quote in a string", "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }"),
    ("spaces inside the tuple", "{'descr': '<i2', 'fortran_order': False, 'shape': ( 3 , ) }"),
    ("native byte order '='", "{'descr': '=i2', 'fortran_order': False, 'shape': (3,)}"),
    ("not-applicable order on a 2-byte type", "{'descr': '|i2', 'fortran_order': False, 'shape': (3,)}"),
    ("dtype name instead of a type string", "{'descr': 'int16', 'fortran_order': False, 'shape': (3,)}"),
    ("Fortran order on a 1-d array", "{'descr': '<i2', 'fortran_order': True, 'shape': (3,)}"),
]
lines = [
    "-- Unusual but valid inputs: .npy headers NumPy's reader accepts, records",
    "-- with unknown fields of every wire type, and planner paths of the tables.",
    "",
    "-- .npy headers (each holds the int16 values 1, -2, 3)",
]
for title, h in headers:
    blob = npy(h, I2x3)
    lines.append("-- " + title)
    lines.append(
        "SELECT npy_dtype(x'%s'), npy_shape(x'%s'), npy_to_json(x'%s');" % (blob.hex(), blob.hex(), blob.hex())
    )
v2 = npy("{'descr': '<i2', 'fortran_order': False, 'shape': (3,)}", I2x3, (2, 0))
v3 = npy("{'descr': '<i2', 'fortran_order': False, 'shape': (3,)}", I2x3, (3, 0))
lines.append("-- versions 2.0 and 3.0")
lines.append(
    "SELECT npy_version(x'%s'), npy_to_json(x'%s'), npy_version(x'%s'), npy_raw(x'%s');"
    % (v2.hex(), v2.hex(), v3.hex(), v3.hex())
)
lines.append("-- a floating-point shape entry is not an integer, even when followed by a sign")
bad = npy("{'descr': '<i2', 'fortran_order': False, 'shape': (1e+3,)}", I2x3)
lines.append("SELECT npy_error(x'%s');" % bad.hex())
f1 = npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1)}", struct.pack("<f", 2.5))
f23 = npy("{'descr': '>i2', 'fortran_order': True, 'shape': (2, 3)}", struct.pack(">6h", 1, 4, 2, 5, 3, 6))
lines.append("-- Fortran order: one element (no copy), and a big-endian 2x3 read in C order")
lines.append("SELECT npy_raw(x'%s'), npy_to_json(x'%s');" % (f1.hex(), f1.hex()))
lines.append("SELECT hex(npy_raw(x'%s')), npy_to_json(x'%s'), npy_item(x'%s', 1);" % (f23.hex(), f23.hex(), f23.hex()))
lines.append("SELECT i, idx, value FROM npy_each(x'%s');" % f23.hex())

# records with unknown fields
arr = (
    ld(1, "int16")
    + ld(2, varint(3))
    + ld(3, "numpy.ndarray")
    + ld(4, npy("{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }", I2x3))
)
unknown = (
    varint(12 << 3 | 0)
    + varint(300)  # varint
    + varint(13 << 3 | 1)
    + b"\x00" * 8  # fixed64
    + varint(14 << 3 | 5)
    + b"\x00" * 4  # fixed32
    + ld(15, b"junk")  # bytes
    + varint(16 << 3 | 3)
    + varint(1 << 3 | 0)
    + b"\x01"  # group with a varint,
    + varint(17 << 3 | 3)
    + varint(17 << 3 | 4)  # a nested empty group,
    + varint(16 << 3 | 4)
)  # closed
rec = unknown + ld(1, unknown + ld(1, "w") + unknown + ld(2, unknown + arr + unknown)) + unknown
lines.append("")
lines.append("-- records: unknown fields of every wire type at every level are skipped")
lines.append(
    "SELECT ar_keys(x'%s'), ar_shape(x'%s', 'w'), npy_to_json(ar_get(x'%s', 'w')), ar_valid(x'%s');"
    % (rec.hex(), rec.hex(), rec.hex(), rec.hex())
)
lines.append("SELECT hex(ar_merge(x'%s')) = hex(ar_merge(ar_merge(x'%s')));" % (rec.hex(), rec.hex()))
# unpacked shape, repeated value merges
unp = ld(
    1,
    ld(1, "u")
    + ld(2, ld(1, "uint8") + varint(2 << 3 | 0) + varint(2) + varint(2 << 3 | 0) + varint(1))
    + ld(2, ld(4, b"\x07\x08")),
)
lines.append("-- an unpacked shape, and a value given in two parts (protobuf merges them)")
lines.append(
    "SELECT ar_shape(x'%s', 'u'), ar_dtype(x'%s', 'u'), npy_to_json(ar_get(x'%s', 'u')), hex(ar_merge(x'%s'));"
    % (unp.hex(), unp.hex(), unp.hex(), unp.hex())
)
# empty value, empty key
emp = ld(1, ld(1, "e") + ld(2, b"")) + ld(1, ld(2, ld(1, "bool") + ld(2, varint(0)) + ld(4, b"\x01")))
lines.append("-- an item with an empty value, and an item with no key (the empty key)")
lines.append("SELECT ar_keys(x'%s'), hex(ar_merge(x'%s')), ar_json(x'%s');" % (emp.hex(), emp.hex(), emp.hex()))
lines.append("SELECT ar_error(x'%s');" % emp.hex())
# keys that need JSON escaping
lines.append("")
lines.append("-- keys that need escaping in JSON")
lines.append(
    "SELECT ar_keys(ar('a\"b', npy_from_json('[1]'), 'back\\slash', npy_from_json('[2]'), 'tab' || char(9) || 'nl' || char(10) || 'cr' || char(13), npy_from_json('[3]'), char(1), npy_from_json('[4]')));"
)
lines.append("SELECT ar('a', npy_from_json('[1]'), 'b', npy_from_json('[2]'), 'a', npy_from_json('[3]'));")
lines.append("")
lines.append("-- the tables: no argument, rowid, the hidden argument column, a constraint they cannot use")
lines.append("SELECT * FROM array_record;")
lines.append("SELECT * FROM npy_each;")
lines.append("SELECT rowid, key, rec IS NULL FROM array_record(x'%s');" % unp.hex())
lines.append("SELECT rowid, i, npy IS NULL FROM npy_each(npy_from_json('[5, 6]'));")
lines.append("SELECT count(*) FROM array_record WHERE rec > x'00';")
lines.append("SELECT count(*) FROM npy_each WHERE npy = x'00' OR npy = x'01';")
ovf = ld(1, ld(1, "o") + ld(2, ld(1, "uint8") + ld(2, varint(2147483647) * 3)))
lines.append("-- numel is NULL when the shape's product does not fit")
lines.append("SELECT key, shape, ndim, numel FROM array_record(x'%s');" % ovf.hex())
lines.append("-- both orders of a join work (the planner puts the argument's table first)")
lines.append("CREATE TABLE updates(client INTEGER, rec BLOB);")
lines.append("INSERT INTO updates VALUES (1, x'%s'), (2, x'%s');" % (unp.hex(), rec.hex()))
lines.append("SELECT u.client, a.key, a.shape FROM array_record(u.rec) a, updates u ORDER BY 1, 2;")
lines.append("SELECT u.client, e.i, e.value FROM updates u, npy_each(ar_get(u.rec, 'w')) e ORDER BY 1, 2;")
lines.append("")
lines.append("-- JSON: whitespace, exponents, inference, values at the edges of each dtype")
lines.append("SELECT npy_to_json(npy_from_json(' [ 1 ,\t2 ,\r\n3 ] '));")
lines.append(
    "SELECT npy_dtype(npy_from_json('[true, false]')), npy_dtype(npy_from_json('[1, 2]')), npy_dtype(npy_from_json('[1, 2.5]')), npy_dtype(npy_from_json('[]')), npy_dtype(npy_from_json('[18446744073709551616]')), npy_dtype(npy_from_json('[-9223372036854775809]'));"
)
lines.append("SELECT npy_to_json(npy_from_json('[1E2, 1e+2, 2.5E-1, -0, -0.0, 0.5e1]'));")
lines.append(
    "SELECT npy_to_json(npy_from_json('[-128, 127, true]', 'int8')), npy_to_json(npy_from_json('[0, 255]', 'uint8')), npy_to_json(npy_from_json('[-32768, 32767]', 'int16')), npy_to_json(npy_from_json('[65535]', 'uint16'));"
)
lines.append(
    "SELECT npy_to_json(npy_from_json('[-2147483648, 2147483647]', 'int32')), npy_to_json(npy_from_json('[4294967295]', 'uint32')), npy_to_json(npy_from_json('[-9223372036854775808, 9223372036854775807]', 'int64')), npy_to_json(npy_from_json('[18446744073709551615, 1e19, 2.0]', 'uint64'));"
)
lines.append(
    "SELECT npy_to_json(npy_from_json('[-1e18, 3.0]', 'int64')), npy_to_json(npy_from_json('[1, 0, 2.5, true]', 'bool')), npy_to_json(npy_from_json('[[1, 2], [true, \"NaN\"]]', 'complex64'));"
)
lines.append("SELECT npy_from_json('[9223372036854775808]', 'int64');")
lines.append("SELECT npy_from_json('[-1]', 'uint8');")
lines.append("SELECT npy_from_json('[4294967296]', 'uint32');")
lines.append(
    "SELECT npy_shape(npy(x'', 'float32', ' [ 0 , 3 ] ')), npy_shape(npy(x'', 'int8', ' 0 ')), npy_shape(npy(x'00', 'int8', '[]'));"
)
lines.append("-- a shape whose byte count overflows is a result too big to make")
lines.append("SELECT npy(x'', 'float64', '[4294967296, 4294967296, 4294967296]');")
open("tests/sql/hardening_formats.sql", "w").write("\n".join(lines) + "\n")
