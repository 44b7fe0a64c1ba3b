#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the malformed-input corpus for the interop formats into tests/bad/:
safetensors files (and metadata arguments), .npz archives, and Flower object
sets; one manifest per group of inputs that share the functions reading
them (see tests/host/badrun.c for the manifest format).

Each input is made by hand below, with the substring its error must
contain. The files are committed; run this script again after changing it
(python3 tests/bad/gen_interop.py) and commit what changes. Standard library
only; the writing helpers are gen_foundation.py's.

A Flower object set is one file: for each object, its id (64 characters),
its content length (8 decimal digits) and the content. The manifest's SQL
splits it with a recursive CTE and feeds ar_inflate, in file order and in
reverse.
"""

import hashlib
import json
import os
import shutil
import struct
import zlib

import gen_foundation as foundation
from gen_foundation import hdr, npy, put

F4x2 = foundation.F4x2
NPY_F4 = npy(hdr()) + F4x2  # a float32 [2] .npy

# --- safetensors -------------------------------------------------------------------


def st_file(header, data=b"", hlen=None):
    """A file from a header (dict, or raw text/bytes) and its data section."""
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":"))
    if isinstance(header, str):
        header = header.encode("utf-8", "surrogateescape")
    n = len(header) if hlen is None else hlen
    return struct.pack("<Q", n) + header + data


def tensor(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


W = '{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'


def gen_safetensors():
    g = "safetensors"

    def p(name, data, want):
        put(g, "safetensors", name + ".safetensors", data, want)

    # the header length
    p("empty", b"", "file too short (0 bytes; the header length takes 8)")
    p("seven_bytes", b"\x02\x00\x00\x00\x00\x00\x00", "file too short (7 bytes")
    p("header_length_over_limit", struct.pack("<Q", 100000001) + b"{}", "header length 100000001 exceeds the limit")
    p("header_length_max", struct.pack("<Q", 2**64 - 1) + b"{}", "header length 18446744073709551615 exceeds")
    p("header_length_past_end", st_file("{}", hlen=3), "header length 3 runs past the end of the file (10 bytes)")
    p("header_length_zero", st_file(b"", b"{}"), "safetensors header: unexpected end of JSON at byte 8")
    # the header's JSON
    p("header_not_utf8", st_file(b'{"w\xff":{}}'), "safetensors header is not valid UTF-8")
    p("header_bom", st_file(b"\xef\xbb\xbf{}"), "expected an object at byte 8")
    p("header_array", st_file("[]"), "expected an object at byte 8")
    p("header_string", st_file('"{}"'), "expected an object at byte 8")
    p("header_spaces_only", st_file("        "), "unexpected end of JSON at byte 16")
    p("header_unterminated", st_file('{"w":'), "unexpected end of JSON at byte 13")
    p("header_trailing_text", st_file("{} {}"), "unexpected text after the JSON value at byte 11")
    p("header_trailing_nul", st_file(b"{}\x00"), "unexpected text after the JSON value at byte 10")
    p("header_nul_padding", st_file(W.encode() + b"\x00" * 7, F4x2), "unexpected text after the JSON value")
    p("header_single_quotes", st_file("{'w': {}}"), "expected a string key at byte 9")
    p("header_trailing_comma", st_file(W[:-1] + ",}", F4x2), "expected a string key")
    p("header_comment", st_file("{} // safetensors"), "unexpected text after the JSON value at byte 11")
    p("header_nested_too_deep", st_file('{"w":{"x":' + "[" * 70 + "]" * 70 + "}}"), "JSON nested too deeply")
    p("name_bad_escape", st_file('{"w\\x":{}}'), "bad escape in a string at byte 11")
    p("name_lone_surrogate", st_file('{"\\udc00":{}}'), "unpaired surrogate escape at byte 10")
    p("name_control_character", st_file('{"a\tb":{}}'), "control character in a string at byte 11")
    p(
        "name_duplicate",
        st_file('{"w":%s,"w":%s}' % (json.dumps(tensor()), json.dumps(tensor(offsets=(8, 16)))), F4x2 * 2),
        "duplicate tensor 'w'",
    )
    p(
        "name_duplicate_by_escape",
        st_file('{"w":%s,"\\u0077":%s}' % (json.dumps(tensor()), json.dumps(tensor(offsets=(8, 16)))), F4x2 * 2),
        "duplicate tensor 'w'",
    )
    # tensor entries
    p("entry_not_object", st_file('{"w":[0,8]}'), "entry of tensor 'w' is not an object")
    p("entry_null", st_file('{"w":null}'), "entry of tensor 'w' is not an object")
    p("dtype_unknown", st_file({"w": tensor("F128")}, F4x2), "unknown dtype 'F128'")
    p("dtype_lowercase", st_file({"w": tensor("f32")}, F4x2), "unknown dtype 'f32'")
    p("dtype_numpy_name", st_file({"w": tensor("float32")}, F4x2), "unknown dtype 'float32'")
    p("dtype_not_string", st_file('{"w":{"dtype":32,"shape":[2],"data_offsets":[0,8]}}', F4x2), "expected a string")
    p("dtype_missing", st_file('{"w":{"shape":[2],"data_offsets":[0,8]}}', F4x2), "tensor 'w' lacks \"dtype\"")
    p("shape_missing", st_file('{"w":{"dtype":"F32","data_offsets":[0,8]}}', F4x2), "tensor 'w' lacks \"shape\"")
    p("offsets_missing", st_file('{"w":{"dtype":"F32","shape":[2]}}', F4x2), "tensor 'w' lacks \"data_offsets\"")
    p(
        "field_duplicate",
        st_file('{"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}', F4x2),
        "duplicate field",
    )
    p("shape_not_array", st_file('{"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}', F4x2), "expected an array")
    p(
        "shape_negative",
        st_file('{"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}', F4x2),
        "expected a non-negative integer",
    )
    p(
        "shape_float",
        st_file('{"w":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}', F4x2),
        "expected a non-negative integer",
    )
    p(
        "shape_string",
        st_file('{"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}}', F4x2),
        "expected a non-negative integer",
    )
    p(
        "shape_65_dims",
        st_file({"w": tensor(shape=[1] * 65, offsets=(0, 4))}, F4x2[:4]),
        "shape has more than 64 dimensions",
    )
    p(
        "shape_dim_2_to_64",
        st_file('{"w":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,0]}}'),
        "integer too large",
    )
    p(
        "shape_product_overflows",
        st_file({"w": tensor("U8", [2**32, 2**32, 2**32], (0, 0))}),
        "shape of tensor 'w' overflows",
    )
    p("shape_bits_overflow", st_file({"w": tensor("F64", [2**61], (0, 0))}), "shape of tensor 'w' overflows")
    p(
        "offsets_one",
        st_file('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}}', F4x2),
        "data_offsets must hold two integers",
    )
    p(
        "offsets_three",
        st_file('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}}', F4x2),
        "data_offsets must hold two integers",
    )
    p(
        "offsets_negative",
        st_file('{"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}}', F4x2),
        "expected a non-negative integer",
    )
    p(
        "offsets_not_from_zero",
        st_file({"w": tensor(offsets=(4, 12))}, F4x2 + F4x2[:4]),
        "tensor 'w' has data_offsets [4, 12], expected it to start at 0",
    )
    p(
        "offsets_reversed",
        st_file({"w": tensor(offsets=(8, 0))}, F4x2),
        "tensor 'w' has data_offsets [8, 0], expected it to start at 0",
    )
    p(
        "offsets_gap",
        st_file({"a": tensor(), "b": tensor(offsets=(12, 20))}, F4x2 * 2 + F4x2[:4]),
        "tensor 'b' has data_offsets [12, 20], expected it to start at 8",
    )
    p(
        "offsets_overlap",
        st_file({"a": tensor(), "b": tensor(offsets=(4, 12))}, F4x2 + F4x2[:4]),
        "tensor 'b' has data_offsets [4, 12], expected it to start at 8",
    )
    p(
        "offsets_same_range",
        st_file({"a": tensor(), "b": tensor()}, F4x2),
        "tensor 'b' has data_offsets [0, 8], expected it to start at 8",
    )
    p(
        "offsets_end_huge",
        st_file({"w": tensor(offsets=(0, 2**64 - 1))}, F4x2),
        "tensor 'w' needs 8 bytes for its shape and dtype F32, data_offsets give 18446744073709551615",
    )
    p(
        "size_too_small",
        st_file({"w": tensor(shape=(3,))}, F4x2),
        "tensor 'w' needs 12 bytes for its shape and dtype F32, data_offsets give 8",
    )
    p(
        "size_for_another_dtype",
        st_file({"w": tensor("F64")}, F4x2),
        "tensor 'w' needs 16 bytes for its shape and dtype F64, data_offsets give 8",
    )
    p(
        "sub_byte_f4_odd",
        st_file({"w": tensor("F4", (3,), (0, 2))}, b"\x12\x34"),
        "tensor 'w' of F4 does not fill whole bytes",
    )
    p(
        "sub_byte_f6",
        st_file({"w": tensor("F6_E2M3", (3,), (0, 3))}, b"\x01\x02\x03"),
        "tensor 'w' of F6_E2M3 does not fill whole bytes",
    )
    p(
        "data_longer_than_tensors",
        st_file({"w": tensor()}, F4x2 + b"\x00\x00\x00\x00"),
        "the tensors cover 8 bytes but the data section has 12",
    )
    p("data_truncated", st_file({"w": tensor()}, F4x2[:5]), "the tensors cover 8 bytes but the data section has 5")
    p("data_without_tensors", st_file("{}", b"\x00"), "the tensors cover 0 bytes but the data section has 1")
    # __metadata__
    p("metadata_twice", st_file('{"__metadata__":{},"__metadata__":{}}'), "duplicate __metadata__")
    p("metadata_array", st_file('{"__metadata__":["a"]}'), "__metadata__ must be an object of strings")
    p("metadata_number_value", st_file('{"__metadata__":{"epoch":3}}'), "__metadata__ must be an object of strings")
    p("metadata_nested", st_file('{"__metadata__":{"a":{"b":"c"}}}'), "__metadata__ must be an object of strings")
    p("metadata_duplicate_key", st_file('{"__metadata__":{"a":"1","a":"2"}}'), "__metadata__ has a duplicate key")
    p(
        "metadata_duplicate_by_escape",
        st_file('{"__metadata__":{"a":"1","\\u0061":"2"}}'),
        "__metadata__ has a duplicate key",
    )
    p("metadata_unterminated", st_file('{"__metadata__":{"a":"1"'), "unexpected end of JSON")
    p("metadata_by_escape_twice", st_file('{"__metadata__":{},"\\u005f_metadata__":{}}'), "duplicate __metadata__")

    # Valid safetensors that a record cannot hold.
    g2 = "safetensors_record"
    put(
        g2,
        "safetensors_record",
        "dim_over_int32.safetensors",
        st_file({"w": tensor("U8", (0, 2**31), (0, 0))}),
        "tensor 'w': dimension 2147483648 does not fit Flower's int32 shape",
    )
    put(
        g2,
        "safetensors_record",
        "dim_2_to_63.safetensors",
        st_file({"w": tensor("U8", (2**63, 0), (0, 0))}),
        "dimension 9223372036854775807 does not fit Flower's int32 shape",
    )


def gen_safetensors_metadata():
    g = "safetensors_metadata"

    def p(name, text, want):
        put(g, "safetensors_metadata", name + ".json", text, want)

    p("empty", "", "argument 2: unexpected end of JSON at byte 0")
    p("not_json", "format=pt", "argument 2: metadata must be an object of strings at byte 0")
    p("array", '["a", "b"]', "metadata must be an object of strings at byte 0")
    p("number_value", '{"epoch": 3}', "metadata must be an object of strings at byte 10")
    p("null_value", '{"a": null}', "metadata must be an object of strings at byte 6")
    p("nested", '{"a": {"b": "c"}}', "metadata must be an object of strings at byte 6")
    p("duplicate_key", '{"a": "1", "a": "2"}', "metadata has a duplicate key at byte 11")
    p("trailing_text", '{"a": "1"} x', "argument 2: unexpected text after the JSON value at byte 11")
    p("trailing_nul", '{"a": "1"}\x00', "argument 2: unexpected text after the JSON value at byte 10")
    p("unterminated", '{"a": "1"', "argument 2: unexpected end of JSON at byte 9")
    p("bad_escape", '{"a": "\\q"}', "argument 2: bad escape in a string at byte 7")
    p("lone_surrogate", '{"a": "\\ud800"}', "argument 2: unpaired surrogate escape at byte 7")
    p("raw_newline", '{"a": "x\ny"}', "argument 2: control character in a string at byte 8")
    p("not_utf8", '{"a": "\udcff"}', "argument 2 is not valid UTF-8")


# --- npz -------------------------------------------------------------------------------


def local_header(name, data, method=0, flags=0, crc=None, csize=None, usize=None, extra=b"", name_len=None):
    crc = zlib.crc32(data) if crc is None else crc
    return (
        struct.pack(
            "<IHHHHHIIIHH",
            0x04034B50,
            20,
            flags,
            method,
            0,
            0x21,
            crc,
            len(data) if csize is None else csize,
            len(data) if usize is None else usize,
            len(name) if name_len is None else name_len,
            len(extra),
        )
        + name
        + extra
    )


def central_entry(name, offset, data_len, usize, crc, method=0, flags=0, extra=b"", comment=b""):
    return (
        struct.pack(
            "<IHHHHHHIIIHHHHHII",
            0x02014B50,
            0x0314,
            20,
            flags,
            method,
            0,
            0x21,
            crc,
            data_len,
            usize,
            len(name),
            len(extra),
            len(comment),
            0,
            0,
            0x01800000,
            offset,
        )
        + name
        + extra
        + comment
    )


def eocd(count, cd_size, cd_offset, comment=b"", disk=0, cd_disk=0, count_here=None):
    return (
        struct.pack(
            "<IHHHHIIH",
            0x06054B50,
            disk,
            cd_disk,
            count if count_here is None else count_here,
            count,
            cd_size,
            cd_offset,
            len(comment),
        )
        + comment
    )


def deflate(data):
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return c.compress(data) + c.flush()


def npz(members, comment=b"", zip64=None, tweak_central=None):
    """An archive of members [(name, payload, options)]; options: method,
    flags, crc, csize, usize (as stated), stored (bytes written instead of the
    payload), central_extra, local_offset. zip64: 'locator' adds a ZIP64 end
    record and locator (with overrides in the dict)."""
    out, central = b"", b""
    for name, payload, o in members:
        if isinstance(name, str):
            name = name.encode("utf-8", "surrogateescape")
        method = o.get("method", 0)
        stored = o.get("stored", deflate(payload) if method == 8 else payload)
        crc = o.get("crc", zlib.crc32(payload))
        usize = o.get("usize", len(payload))
        csize = o.get("csize", len(stored))
        offset = len(out)
        out += local_header(name, stored, method, o.get("flags", 0), crc, csize, usize) + stored
        central += central_entry(
            name,
            o.get("local_offset", offset),
            csize,
            usize,
            crc,
            method,
            o.get("flags", 0),
            o.get("central_extra", b""),
        )
    if tweak_central:
        central = tweak_central(central)
    cd_offset = len(out)
    out += central
    n = len(members)
    if zip64 is not None:
        rec_at = len(out)
        out += struct.pack(
            "<IQHHIIQQQQ",
            0x06064B50,
            44,
            45,
            45,
            zip64.get("disk", 0),
            zip64.get("cd_disk", 0),
            zip64.get("count", n),
            zip64.get("count", n),
            zip64.get("cd_size", len(central)),
            zip64.get("cd_offset", cd_offset),
        )
        if zip64.get("signature") is not None:
            out = out[:rec_at] + zip64["signature"] + out[rec_at + 4 :]
        out += struct.pack(
            "<IIQI", 0x07064B50, zip64.get("locator_disk", 0), zip64.get("rec_at", rec_at), zip64.get("disks", 1)
        )
        return out + eocd(0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, comment)
    return out + eocd(n, len(central), cd_offset, comment)


def zip64_extra(*values, size=None):
    body = b"".join(struct.pack("<Q", v) for v in values)
    return struct.pack("<HH", 1, len(body) if size is None else size) + body


def gen_npz():
    g = "npz"

    def p(name, data, want):
        put(g, "npz", name + ".npz", data, want)

    good = ("w.npy", NPY_F4, {})
    ok = npz([good])
    # finding the directory
    p("empty", b"", "not a zip archive (0 bytes)")
    p("twenty_one_bytes", ok[-21:], "not a zip archive (21 bytes)")
    p("npy_file", NPY_F4 + b"\x00" * 30, "not a zip archive (no end of central directory record)")
    p("no_end_record", ok[:-22] + b"\x00" * 22, "no end of central directory record")
    p("end_record_comment_past_end", ok[:-2] + b"\x10\x00", "no end of central directory record")
    cd_at = ok.index(b"PK\x01\x02")
    p("multi_disk", ok[:-22] + eocd(1, 51, cd_at, disk=1), "multi-disk zip archives are not supported")
    p("directory_past_end", ok[:-22] + eocd(1, 51, len(ok)), "central directory (51 bytes at ")
    p("directory_size_past_end", ok[:-22] + eocd(1, 5000, cd_at), "central directory (5000 bytes at")
    p(
        "directory_offset_2_to_32",
        ok[:-22] + eocd(1, 51, 0xFFFFFFFE),
        "central directory (51 bytes at 4294967294) lies outside the archive",
    )
    p("too_many_entries", ok[:-22] + eocd(2, 51, cd_at), "central directory claims 2 entries in 51 bytes")
    p("entry_bad_signature", ok[:cd_at] + b"PK\x01\x03" + ok[cd_at + 4 :], "bad central directory entry")
    p("entry_name_past_directory", ok[: cd_at + 28] + b"\xff\x00" + ok[cd_at + 30 :], "bad central directory entry")
    p("entry_extra_past_directory", ok[: cd_at + 30] + b"\x40\x00" + ok[cd_at + 32 :], "bad central directory entry")
    p("needs_zip64_count", ok[:-22] + eocd(0xFFFF, 51, cd_at), "needs a ZIP64 end record but has none")
    p("needs_zip64_offset", ok[:-22] + eocd(1, 51, 0xFFFFFFFF), "needs a ZIP64 end record but has none")
    # ZIP64
    p("zip64_locator_past_record", npz([good], zip64={"rec_at": 10**6}), "bad ZIP64 end of central directory record")
    p(
        "zip64_record_bad_signature",
        npz([good], zip64={"signature": b"PK\x06\x07"}),
        "bad ZIP64 end of central directory record",
    )
    p("zip64_locator_other_disk", npz([good], zip64={"locator_disk": 1}), "multi-disk zip archives are not supported")
    p("zip64_locator_two_disks", npz([good], zip64={"disks": 2}), "multi-disk zip archives are not supported")
    p("zip64_record_other_disk", npz([good], zip64={"disk": 3}), "multi-disk zip archives are not supported")
    p("zip64_count_huge", npz([good], zip64={"count": 2**63}), "central directory claims 9223372036854775808 entries")
    p("zip64_directory_outside", npz([good], zip64={"cd_offset": 2**40}), "lies outside the archive")
    p(
        "zip64_extra_short",
        npz([("w.npy", NPY_F4, {"csize": 0xFFFFFFFF, "usize": 0xFFFFFFFF, "central_extra": zip64_extra(len(NPY_F4))})]),
        "member 'w.npy' has a short ZIP64 extra field",
    )
    p(
        "zip64_extra_local_offset_huge",
        npz([("w.npy", NPY_F4, {"local_offset": 0xFFFFFFFF, "central_extra": zip64_extra(2**40)})]),
        "member 'w.npy': no local header at byte 1099511627776",
    )
    p(
        "zip64_extra_sizes_lie",
        npz(
            [
                (
                    "w.npy",
                    NPY_F4,
                    {
                        "csize": 0xFFFFFFFF,
                        "usize": 0xFFFFFFFF,
                        "central_extra": zip64_extra(len(NPY_F4), len(NPY_F4) + 1),
                    },
                )
            ]
        ),
        "stored member 'w.npy' has sizes",
    )
    # members
    p(
        "local_offset_past_end",
        npz([("w.npy", NPY_F4, {"local_offset": 5000})]),
        "member 'w.npy': no local header at byte 5000",
    )
    p("local_bad_signature", b"PK\x03\x05" + ok[4:], "member 'w.npy': no local header at byte 0")
    p("local_lengths_past_end", ok[:28] + b"\xff\xff" + ok[30:], "member 'w.npy' is truncated")
    p("stored_truncated", npz([("w.npy", NPY_F4, {"csize": 5000, "usize": 5000})]), "member 'w.npy' is truncated")
    p("stored_sizes_differ", npz([("w.npy", NPY_F4, {"usize": len(NPY_F4) + 1})]), "stored member 'w.npy' has sizes")
    p(
        "stored_bad_crc",
        npz([("w.npy", NPY_F4, {"crc": zlib.crc32(NPY_F4) ^ 1})]),
        "member 'w.npy' fails its CRC-32 check",
    )
    p(
        "stored_payload_flipped",
        npz([("w.npy", NPY_F4, {"stored": NPY_F4[:-1] + b"\x41", "crc": zlib.crc32(NPY_F4)})]),
        "member 'w.npy' fails its CRC-32 check",
    )
    p("deflate_bad_crc", npz([("w.npy", NPY_F4, {"method": 8, "crc": 0})]), "member 'w.npy' fails its CRC-32 check")
    p(
        "deflate_garbage",
        npz([("w.npy", NPY_F4, {"method": 8, "stored": b"\xff" * 20})]),
        "member 'w.npy' has corrupt or truncated deflate data",
    )
    p(
        "deflate_truncated",
        npz([("w.npy", NPY_F4, {"method": 8, "stored": deflate(NPY_F4)[:-6]})]),
        "member 'w.npy' has corrupt or truncated deflate data",
    )
    p(
        "deflate_zlib_header",
        npz([("w.npy", NPY_F4, {"method": 8, "stored": zlib.compress(NPY_F4)})]),
        "member 'w.npy' has corrupt or truncated deflate data",
    )
    p(
        "deflate_short_of_stated",
        npz([("w.npy", NPY_F4, {"method": 8, "usize": len(NPY_F4) + 10})]),
        "member 'w.npy' inflates to 136 bytes, its header says 146",
    )
    big = npy("{'descr': '|u1', 'fortran_order': False, 'shape': (100000,), }") + bytes(100000)
    p(
        "deflate_bomb_lies_about_size",
        npz([("w.npy", big, {"method": 8, "usize": 1000})]),
        "member 'w.npy' inflates to more than its stated 1000 bytes",
    )
    p(
        "deflate_zero_stated",
        npz([("w.npy", NPY_F4, {"method": 8, "usize": 0})]),
        "member 'w.npy' inflates to more than its stated 0 bytes",
    )
    p(
        "method_bzip2",
        npz([("w.npy", NPY_F4, {"method": 12})]),
        "member 'w.npy' uses compression method 12 (only stored and deflate are read)",
    )
    p("method_lzma", npz([("w.npy", NPY_F4, {"method": 14})]), "uses compression method 14")
    p("method_deflate64", npz([("w.npy", NPY_F4, {"method": 9})]), "uses compression method 9")
    p("encrypted", npz([("w.npy", NPY_F4, {"flags": 1})]), "member 'w.npy' is encrypted")
    p("strong_encryption", npz([("w.npy", NPY_F4, {"flags": 0x40})]), "member 'w.npy' is encrypted")
    p("name_not_npy", npz([("w.txt", NPY_F4, {})]), "member 'w.txt' is not a .npy file")
    p("name_npy_uppercase", npz([("w.NPY", NPY_F4, {})]), "member 'w.NPY' is not a .npy file")
    p("name_too_short", npz([("npy", NPY_F4, {})]), "member 'npy' is not a .npy file")
    p("name_directory", npz([("w/", b"", {})]), "member 'w/' is not a .npy file")
    p("name_not_utf8", npz([("w\udcff.npy", NPY_F4, {})]), "member name is not UTF-8")
    p("name_duplicate", npz([good, good]), "duplicate member 'w.npy'")
    p("second_member_bad", npz([good, ("b.npy", NPY_F4, {"crc": 7})]), "member 'b.npy' fails its CRC-32 check")
    # member contents
    p("member_not_npy", npz([("w.npy", b"PK\x03\x04 not a .npy", {})]), "member 'w.npy': not a .npy file (bad magic)")
    p("member_empty", npz([("w.npy", b"", {})]), "member 'w.npy': empty blob is not a .npy file")
    p("member_truncated_npy", npz([("w.npy", NPY_F4[:-3], {"method": 8})]), "member 'w.npy': ")
    p(
        "member_pickle",
        npz([("w.npy", npy("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }"), {})]),
        "member 'w.npy': ",
    )
    p(
        "member_dim_over_int32",
        npz([("w.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2147483648), }"), {})]),
        "member 'w.npy': dimension 2147483648 does not fit Flower's int32 shape",
    )


# --- Flower objects ------------------------------------------------------------------


def sha(content):
    return hashlib.sha256(content).hexdigest()


def obj(type_name, children, body):
    if isinstance(body, str):
        body = body.encode("utf-8", "surrogateescape")
    return ("%s %s %d" % (type_name, ",".join(children), len(body))).encode() + b"\x00" + body


def chunk(data):
    return obj("ArrayChunk", [], data)


def array_obj(chunk_ids, dtype="float32", shape=(2,), stype="numpy.ndarray", indices=None, body=None):
    if body is None:
        body = json.dumps(
            {
                "dtype": dtype,
                "shape": list(shape),
                "stype": stype,
                "arraychunk_ids": list(range(len(chunk_ids))) if indices is None else indices,
            }
        )
    return obj("Array", chunk_ids, body)


def record_obj(items, children=None, body=None):
    """items: {key: array content}; children default to the arrays' ids."""
    ids = []
    for content in items.values():
        if sha(content) not in ids:
            ids.append(sha(content))
    if body is None:
        body = json.dumps({k: sha(v) for k, v in items.items()})
    return obj("ArrayRecord", ids if children is None else children, body)


def object_set(*contents, ids=None):
    """One file of objects: id, 8-digit length, content."""
    out = b""
    for k, c in enumerate(contents):
        oid = sha(c) if ids is None or ids[k] is None else ids[k]
        if isinstance(oid, str):
            oid = oid.encode()
        out += oid + b"%08d" % len(c) + c
    return out


def gen_flower():
    g = "flower"

    def p(name, data, want):
        put(g, "flower", name + ".objects", data, want)

    c1 = chunk(NPY_F4)
    a1 = array_obj([sha(c1)])
    r1 = record_obj({"w": a1})
    good = [c1, a1, r1]
    # ids and hashes
    p("id_not_hex", object_set(*good, ids=["x" * 64, None, None]), "object id must be 64 hex digits, got 'xxxx")
    p("id_63_digits", object_set(*good, ids=[sha(c1)[:63] + " ", None, None]), "object id must be 64 hex digits")
    p("id_of_other_object", object_set(*good, ids=[sha(a1), None, None]), "content hashes to " + sha(c1))
    p(
        "content_changed",
        object_set(c1[:-1] + b"\x00", a1, r1, ids=[sha(c1), None, None]),
        "object %s: content hashes to" % sha(c1),
    )
    # heads
    p("head_no_nul", object_set(b"ArrayChunk  3abc", a1, r1), "has no head (no NUL byte)")
    p("head_one_space", object_set(b"ArrayChunk 3\x00abc", a1, r1), "head is not '<type> <child ids> <body length>'")
    p("head_three_spaces", object_set(b"ArrayChunk   3\x00abc", a1, r1), "head is not '<type> <child ids>")
    p("head_no_length", object_set(b"ArrayChunk  \x00abc", a1, r1), "head is not '<type> <child ids>")
    p("head_unknown_type", object_set(b"Tensor  3\x00abc", a1, r1), "has unknown type 'Tensor'")
    p("head_type_lowercase", object_set(b"arraychunk  3\x00abc", a1, r1), "has unknown type 'arraychunk'")
    p("head_length_not_digits", object_set(b"ArrayChunk  3a\x00abc", a1, r1), "bad body length in the head")
    p("head_length_negative", object_set(b"ArrayChunk  -3\x00abc", a1, r1), "bad body length in the head")
    p(
        "head_length_overflows",
        object_set(b"ArrayChunk  99999999999999999999999\x00abc", a1, r1),
        "bad body length in the head",
    )
    p("head_length_wrong", object_set(b"ArrayChunk  5\x00abc", a1, r1), "head says the body has 5 bytes, it has 3")
    p("head_children_short", object_set(c1, obj("Array", [sha(c1)[:60]], "{}"), r1), "bad child id list in the head")
    p(
        "head_children_uppercase",
        object_set(c1, obj("Array", [sha(c1).upper()], "{}"), r1),
        "bad child id list in the head",
    )
    p(
        "head_children_semicolon",
        object_set(c1, obj("Array", [sha(c1) + ";" + sha(c1)], "{}"), r1),
        "bad child id list in the head",
    )
    p("head_child_twice", object_set(c1, obj("Array", [sha(c1), sha(c1)], "{}"), r1), "lists child %s twice" % sha(c1))
    p("chunk_with_children", object_set(obj("ArrayChunk", [sha(c1)], "abc"), a1, r1), "an ArrayChunk has no children")
    # the tree
    p("no_record", object_set(c1, a1), "no ArrayRecord object among the 2 objects")
    p("two_records", object_set(c1, a1, r1, record_obj({"v": a1})), "more than one ArrayRecord object")
    p("missing_array", object_set(c1, r1), "missing Array %s (child of ArrayRecord %s)" % (sha(a1), sha(r1)))
    p("missing_chunk", object_set(a1, r1), "missing ArrayChunk %s (child of Array %s)" % (sha(c1), sha(a1)))
    p(
        "child_wrong_type",
        object_set(c1, record_obj({"w": c1})),
        "object %s is an ArrayChunk, its parent %s wants an Array" % (sha(c1), sha(record_obj({"w": c1}))),
    )
    p(
        "array_child_is_array",
        object_set(c1, a1, array_obj([sha(a1)]), record_obj({"w": array_obj([sha(a1)])})),
        "is an Array, its parent %s wants an ArrayChunk" % sha(array_obj([sha(a1)])),
    )
    p("orphan_chunk", object_set(c1, a1, r1, chunk(b"spare")), "(ArrayChunk) is not part of ArrayRecord %s" % sha(r1))
    p("orphan_array", object_set(c1, a1, r1, array_obj([sha(c1)], dtype="int8")), "(Array) is not part of ArrayRecord")
    # ArrayRecord bodies
    p(
        "record_body_not_json",
        object_set(c1, a1, obj("ArrayRecord", [sha(a1)], "w=" + sha(a1))),
        "ArrayRecord %s body: expected an object at byte 0" % sha(obj("ArrayRecord", [sha(a1)], "w=" + sha(a1))),
    )
    p(
        "record_body_trailing_nul",
        object_set(c1, a1, record_obj({"w": a1}, body='{"w": "%s"}\x00' % sha(a1))),
        "body: unexpected text after the JSON value at byte 73",
    )
    p(
        "record_body_value_unlisted",
        object_set(c1, a1, record_obj({"w": a1}, children=[], body='{"w": "%s"}' % sha(a1))),
        "body: value is not one of the head's child ids at byte 6",
    )
    p(
        "record_body_value_uppercase",
        object_set(c1, a1, record_obj({"w": a1}, body='{"w": "%s"}' % sha(a1).upper())),
        "value is not one of the head's child ids",
    )
    p(
        "record_body_value_number",
        object_set(c1, a1, record_obj({"w": a1}, body='{"w": 1}')),
        "expected a string at byte 6",
    )
    p(
        "record_body_duplicate_key",
        object_set(c1, a1, record_obj({"w": a1}, body='{"w": "%s", "w": "%s"}' % (sha(a1), sha(a1)))),
        "duplicate key at byte 74",
    )
    p(
        "record_body_unused_child",
        object_set(
            c1,
            a1,
            chunk(b"x"),
            array_obj([sha(chunk(b"x"))], shape=(1,)),
            record_obj({"w": a1}, children=[sha(a1), sha(array_obj([sha(chunk(b"x"))], shape=(1,)))]),
        ),
        "lists child %s that its body does not use" % sha(array_obj([sha(chunk(b"x"))], shape=(1,))),
    )
    p(
        "record_body_bad_escape",
        object_set(c1, a1, record_obj({"w": a1}, body='{"\\w": "%s"}' % sha(a1))),
        "bad escape in a string at byte 2",
    )
    p(
        "record_body_not_utf8",
        object_set(c1, a1, record_obj({"w": a1}, body='{"\udcff": "%s"}' % sha(a1))),
        "body is not valid UTF-8",
    )

    # Array bodies
    def bad_array(name, body, want, children=None, extra=()):
        a = array_obj([sha(c1)] if children is None else list(children), body=body)
        p(name, object_set(c1, *extra, a, record_obj({"w": a})), want)

    bad_array("array_body_not_object", "[]", "body: expected an object at byte 0")
    bad_array(
        "array_body_unknown_key",
        '{"dtype": "float32", "shape": [2], "stype": "numpy.ndarray", "arraychunk_ids": [0], "x": 1}',
        "body: unexpected key at byte 84",
    )
    bad_array("array_body_duplicate_key", '{"dtype": "float32", "dtype": "float32"}', "body: duplicate key at byte 21")
    bad_array(
        "array_body_lacks_stype", '{"dtype": "float32", "shape": [2], "arraychunk_ids": [0]}', 'body lacks "stype"'
    )
    bad_array(
        "array_body_lacks_chunks",
        '{"dtype": "float32", "shape": [2], "stype": ""}',
        'body lacks "arraychunk_ids"',
        children=(),
    )
    bad_array(
        "array_body_dtype_number",
        '{"dtype": 4, "shape": [2], "stype": "", "arraychunk_ids": [0]}',
        "body: expected a string at byte 10",
    )
    bad_array(
        "array_body_shape_negative",
        '{"dtype": "float32", "shape": [-1], "stype": "", "arraychunk_ids": [0]}',
        "body: expected a non-negative integer at byte 31",
    )
    bad_array(
        "array_body_shape_over_int32",
        '{"dtype": "float32", "shape": [2147483648], "stype": "", "arraychunk_ids": [0]}',
        "dimension does not fit Flower's int32 shape at byte 31",
    )
    bad_array(
        "array_body_shape_65_dims",
        json.dumps({"dtype": "float32", "shape": [1] * 65, "stype": "", "arraychunk_ids": [0]}),
        "body: too many dimensions",
    )
    bad_array(
        "array_body_chunk_index_out_of_range",
        '{"dtype": "float32", "shape": [2], "stype": "", "arraychunk_ids": [0, 1]}',
        "chunk index 1 is out of range (1 children)",
    )
    bad_array(
        "array_body_chunk_index_not_integer",
        '{"dtype": "float32", "shape": [2], "stype": "", "arraychunk_ids": ["0"]}',
        "body: expected a non-negative integer at byte 67",
    )
    bad_array(
        "array_body_chunk_unused",
        '{"dtype": "float32", "shape": [2], "stype": "", "arraychunk_ids": [0]}',
        "lists child %s that its body does not use" % sha(chunk(b"spare")),
        children=(sha(c1), sha(chunk(b"spare"))),
        extra=(chunk(b"spare"),),
    )
    bad_array(
        "array_body_trailing_text",
        '{"dtype": "float32", "shape": [2], "stype": "", "arraychunk_ids": [0]} {}',
        "body: unexpected text after the JSON value at byte 71",
    )
    bad_array(
        "array_body_nested_ids",
        '{"dtype": "float32", "shape": [2], "stype": "", "arraychunk_ids": [[0]]}',
        "body: expected a non-negative integer at byte 67",
    )


FLOWER_SPLIT = (
    "WITH RECURSIVE o(rest, pos, id, content) AS (SELECT ?1, 0, NULL, NULL UNION ALL "
    "SELECT substr(rest, 73 + CAST(CAST(substr(rest, 65, 8) AS TEXT) AS INTEGER)), pos + 1, "
    "CAST(substr(rest, 1, 64) AS TEXT), substr(rest, 73, CAST(CAST(substr(rest, 65, 8) AS TEXT) AS INTEGER)) "
    "FROM o WHERE length(rest) > 0) "
)

HEADERS = {
    "safetensors": (
        "Malformed safetensors files: every function that reads one.",
        "",
        """\
read ar_from_safetensors SELECT ar_from_safetensors(?1)
read ar_safetensors_metadata SELECT ar_safetensors_metadata(?1)
""",
    ),
    "safetensors_record": (
        "Valid safetensors files that a Flower record cannot hold.",
        "",
        "read ar_from_safetensors SELECT ar_from_safetensors(?1)\n",
    ),
    "safetensors_metadata": (
        "Malformed metadata arguments of ar_to_safetensors.",
        "bind text\n",
        """\
read ar_to_safetensors SELECT ar_to_safetensors(x'', ?1)
read ar_to_safetensors SELECT ar_to_safetensors(ar('w', npy_from_json('[1]')), ?1)
""",
    ),
    "npz": ("Malformed .npz archives.", "", "read ar_from_npz SELECT ar_from_npz(?1)\n"),
    "flower": (
        "Malformed sets of Flower objects, for ar_inflate: each file holds objects as id (64 characters), "
        "content length (8 digits), content.",
        "",
        "read ar_inflate " + FLOWER_SPLIT + "SELECT ar_inflate(id, content) FROM o WHERE id IS NOT NULL\n"
        "read ar_inflate "
        + FLOWER_SPLIT
        + "SELECT ar_inflate(id, content) FROM (SELECT * FROM o WHERE id IS NOT NULL ORDER BY pos DESC)\n",
    ),
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for group in HEADERS:
        shutil.rmtree(os.path.join(here, group), ignore_errors=True)
    gen_safetensors()
    gen_safetensors_metadata()
    gen_npz()
    gen_flower()
    foundation.write_manifests(HEADERS, "gen_interop.py")
    print("%d inputs" % sum(len(v) for v in foundation.GROUPS.values()))


if __name__ == "__main__":
    main()
