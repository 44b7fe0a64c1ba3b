#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the malformed-input corpus for the foundation formats into
tests/bad/: .npy files, Flower ArrayRecord protobuf records, JSON arrays and
shapes, dtype strings; and one manifest per group of inputs that share the
functions reading them (see tests/host/badrun.c for the manifest format).

Each input is made by hand below, with the substring its error must
contain. The files are committed; run this script again after changing it
(python3 tests/bad/gen_foundation.py) and commit what changes. Standard
library only.
"""

import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

# --- writing -------------------------------------------------------------------

GROUPS = {}  # manifest name -> [(relative file, substring)]


def put(group, subdir, name, data, want):
    path = os.path.join(subdir, name)
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    full = os.path.join(HERE, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)
    entries = GROUPS.setdefault(group, [])
    assert all(p != path for p, _ in entries), path
    entries.append((path, want))


# --- .npy ----------------------------------------------------------------------

MAGIC = b"\x93NUMPY"


def npy(header, payload=b"", version=(1, 0), pad=True, hlen=None):
    """A .npy file with this header text (padded like numpy.save unless
    pad is False) and payload; hlen overrides the header length field."""
    if isinstance(header, str):
        header = header.encode("latin-1")
    lsize = 2 if version[0] == 1 else 4
    if pad:
        total = len(MAGIC) + 2 + lsize + len(header) + 1
        header = header + b" " * ((64 - total % 64) % 64) + b"\n"
    n = len(header) if hlen is None else hlen
    length = struct.pack("<H", n) if lsize == 2 else struct.pack("<I", n)
    return MAGIC + bytes(version) + length + header + payload


def hdr(descr="'<f4'", fortran="False", shape="(2,)"):
    return "{'descr': %s, 'fortran_order': %s, 'shape': %s, }" % (descr, fortran, shape)


F4x2 = b"\x00\x00\x80\x3f\x00\x00\x00\x40"


# A safetensors file holding one float32 tensor [1.0, 2.0].
_ST_HEADER = b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
SAFETENSORS = struct.pack("<Q", len(_ST_HEADER)) + _ST_HEADER + F4x2


def gen_npy():
    g = "npy"

    def p(name, data, want):
        put(g, "npy", name + ".npy", data, want)

    # magic, version, header length
    p("empty", b"", "empty blob is not a .npy file")
    p("magic_1_byte", b"\x93", "truncated at byte 1: no .npy version")
    p("magic_5_bytes", b"\x93NUMP", "truncated at byte 5: no .npy version")
    p("magic_only", MAGIC, "truncated at byte 6: no .npy version")
    p("magic_major_only", MAGIC + b"\x01", "truncated at byte 7: no .npy version")
    p("magic_wrong_last_letter", b"\x93NUMPX\x01\x00" + npy(hdr())[8:], "not a .npy file (bad magic)")
    p("magic_lowercase", b"\x93numpy" + npy(hdr())[6:], "bad magic")
    p("magic_without_x93", b"NUMPY\x01\x00" + npy(hdr())[8:], "bad magic")
    p(
        "zip_file",
        b"PK\x03\x04\x14\x00\x00\x00\x08\x00",
        "got a .npz archive, not a .npy file: convert it with ar_from_npz",
    )
    p("zip_empty", b"PK\x05\x06" + b"\x00" * 18, "got a .npz archive, not a .npy file")
    p("safetensors_file", SAFETENSORS, "got a safetensors file, not a .npy file: convert it with ar_from_safetensors")
    p("safetensors_header_too_long", b"\x40" + b"\x00" * 7 + b"{}", "bad magic")
    p("pickle", b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00", "bad magic")
    p("text", b"[1.0, 2.0]", "bad magic")
    p("record_blob", b"\x0a\x03\x0a\x01a", "got a record, not a .npy file")
    p("scalar_f4_bytes", b"\x00\x00\xc0\x3f", "got a 4-byte BLOB, not a .npy file: a NumPy scalar")
    p("scalar_f8_bytes", b"\x00\x00\x00\x00\x00\x00\xf8\x3f", "got an 8-byte BLOB, not a .npy file")
    p("version_0_0", npy(hdr(), F4x2, (0, 0)), "unsupported .npy format version 0.0")
    p("version_4_0", npy(hdr(), F4x2, (4, 0)), "unsupported .npy format version 4.0")
    p("version_1_1", npy(hdr(), F4x2, (1, 1)), "unsupported .npy format version 1.1")
    p("version_2_1", npy(hdr(), F4x2, (2, 1)), "unsupported .npy format version 2.1")
    p("version_255_255", npy(hdr(), F4x2, (255, 255)), "unsupported .npy format version 255.255")
    p("v1_no_header_length", MAGIC + b"\x01\x00", "truncated at byte 8: no header length")
    p("v1_half_header_length", MAGIC + b"\x01\x00\x10", "truncated at byte 9: no header length")
    p("v2_short_header_length", MAGIC + b"\x02\x00\x10\x00\x00", "truncated at byte 11: no header length")
    p("v3_no_header_length", MAGIC + b"\x03\x00", "truncated at byte 8: no header length")
    p(
        "v1_header_length_past_end",
        npy(hdr(), b"", hlen=500),
        "header truncated at byte 128 (header length 500 needs 510 bytes)",
    )
    p(
        "v2_header_length_4g",
        npy(hdr(), b"", (2, 0), hlen=0xFFFFFFFF),
        "header length 4294967295 needs 4294967307 bytes",
    )
    p("v3_header_length_past_end", npy(hdr(), b"", (3, 0), hlen=0x10000), "header truncated at byte 128")
    p("header_length_zero", npy("", b"", pad=False), "header is not a dictionary (byte 10)")
    p("header_cut_short", npy(hdr(), F4x2, hlen=30), "cannot parse header: unexpected end at byte 40")

    # the header literal
    p("header_list", npy("[1, 2]"), "header is not a dictionary (byte 10)")
    p("header_string", npy("'descr'"), "header is not a dictionary")
    p("header_spaces", npy("   "), "header is not a dictionary (byte 64)")
    p("header_open_brace", npy("{"), "cannot parse header: unexpected end")
    p(
        "header_unclosed_dict",
        npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), ", F4x2),
        "cannot parse header: unexpected end",
    )
    p(
        "header_missing_colon",
        npy("{'descr' '<f4', 'fortran_order': False, 'shape': (2,)}", F4x2),
        "cannot parse header: unexpected character at byte 19",
    )
    p(
        "header_missing_comma",
        npy("{'descr': '<f4' 'fortran_order': False, 'shape': (2,)}", F4x2),
        "cannot parse header: unexpected character at byte 26",
    )
    p(
        "header_double_comma",
        npy("{'descr': '<f4',, 'fortran_order': False, 'shape': (2,)}", F4x2),
        "cannot parse header: unexpected character at byte 26",
    )
    p("header_unterminated_string", npy("{'descr': '<f4", pad=False), "cannot parse header: unexpected end at byte 24")
    p(
        "header_newline_in_string",
        npy("{'descr': '<f\n4', 'fortran_order': False, 'shape': (2,)}", F4x2),
        "cannot parse header: unexpected character at byte 23",
    )
    p(
        "header_mismatched_quotes",
        npy("{'descr\": '<f4', 'fortran_order': False, 'shape': (2,)}", F4x2),
        "cannot parse header",
    )
    p("header_lowercase_false", npy(hdr(fortran="false"), F4x2), "cannot parse header: unexpected character at byte 44")
    p("header_word_fals", npy(hdr(fortran="Fals"), F4x2), "cannot parse header: unexpected character at byte 44")
    p("header_call", npy(hdr(descr="dtype('<f4')"), F4x2), "cannot parse header: unexpected character at byte 20")
    p("header_unicode_prefix_word", npy(hdr(descr="x'<f4'"), F4x2), "cannot parse header: unexpected character")
    p("header_text_after_dict", npy(hdr() + " x", F4x2), "cannot parse header: text after the dictionary at byte 68")
    p("header_two_dicts", npy(hdr() + hdr(), F4x2), "text after the dictionary")
    p(
        "header_nul_byte",
        npy("{'descr': '<f4',\x00 'fortran_order': False, 'shape': (2,)}", F4x2),
        "cannot parse header: unexpected character at byte 26",
    )
    p(
        "header_set_literal",
        npy("{'descr': {'<f4'}, 'fortran_order': False, 'shape': (2,)}", F4x2),
        "cannot parse header: unexpected character",
    )
    p("header_nested_too_deeply", npy(hdr(shape="(" * 40 + "2," + ")" * 40), F4x2), "nested too deeply")
    p("header_descr_nested_too_deeply", npy(hdr(descr="[" * 40 + "]" * 40), F4x2), "nested too deeply")
    p(
        "header_unexpected_key",
        npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", F4x2),
        "header has unexpected key 'extra'",
    )
    p(
        "header_unexpected_key_non_ascii",
        npy("{'descr': '<f4', 'fortran_order': False, 'sh\xe4pe': (2,)}".encode("latin-1"), F4x2),
        "header has unexpected key 'sh?pe'",
    )
    p(
        "header_key_utf8",
        npy("{'descr': '<f4', 'fortran_order': False, 'ſhape': (2,)}".encode("utf-8"), F4x2),
        "header has unexpected key 'ſhape'",
    )
    p(
        "header_key_int",
        npy("{1: 2, 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", F4x2),
        "header has a key that is not a string",
    )
    p(
        "header_key_none",
        npy("{None: 2, 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", F4x2),
        "header has a key that is not a string",
    )
    p(
        "header_key_tuple",
        npy("{(1,): 2, 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", F4x2),
        "header has a key that is not a string",
    )
    p("header_no_descr", npy("{'fortran_order': False, 'shape': (2,), }", F4x2), "header has no 'descr' key")
    p("header_no_fortran_order", npy("{'descr': '<f4', 'shape': (2,), }", F4x2), "header has no 'fortran_order' key")
    p("header_no_shape", npy("{'descr': '<f4', 'fortran_order': False, }", F4x2), "header has no 'shape' key")
    p("header_empty_dict", npy("{}"), "header has no 'descr' key")
    p("fortran_order_string", npy(hdr(fortran="'False'"), F4x2), "header: fortran_order is not True or False")
    p("fortran_order_int", npy(hdr(fortran="0"), F4x2), "header: fortran_order is not True or False")
    p("fortran_order_none", npy(hdr(fortran="None"), F4x2), "header: fortran_order is not True or False")

    # shape
    p("shape_list", npy(hdr(shape="[2]"), F4x2), "header: shape is not a tuple of integers")
    p("shape_float", npy(hdr(shape="(2.0,)"), F4x2), "header: shape is not a tuple of integers")
    p("shape_exponent", npy(hdr(shape="(1e3,)"), F4x2), "header: shape is not a tuple of integers")
    p("shape_complex", npy(hdr(shape="(2j,)"), F4x2), "header: shape is not a tuple of integers")
    p("shape_string", npy(hdr(shape="('2',)"), F4x2), "header: shape is not a tuple of integers")
    p("shape_none_entry", npy(hdr(shape="(2, None)"), F4x2), "header: shape is not a tuple of integers")
    p("shape_bare_int", npy(hdr(shape="2"), F4x2), "header: shape is not a tuple of integers")
    p("shape_parenthesized_int", npy(hdr(shape="(2)"), F4x2), "header: shape is not a tuple of integers")
    p("shape_nested_tuple", npy(hdr(shape="((2,),)"), F4x2), "header: shape is not a tuple of integers")
    p("shape_none", npy(hdr(shape="None"), F4x2), "header: shape is not a tuple of integers")
    p("shape_bool", npy(hdr(shape="(True,)"), F4x2), "header: shape is not a tuple of integers")
    p("shape_negative", npy(hdr(shape="(-1,)"), F4x2), "negative dimension -1 in shape")
    p("shape_negative_second", npy(hdr(shape="(3, -2)"), F4x2), "negative dimension -2 in shape")
    p("shape_int64_min", npy(hdr(shape="(-9223372036854775808,)"), F4x2), "negative dimension -9223372036854775808")
    p("shape_past_int64", npy(hdr(shape="(9223372036854775808,)"), F4x2), "shape dimension does not fit in 64 bits")
    p("shape_huge", npy(hdr(shape="(99999999999999999999999,)"), F4x2), "shape dimension does not fit in 64 bits")
    p("shape_65_dims", npy(hdr(shape="(" + "1, " * 65 + ")"), F4x2), "shape has 65 dimensions (at most 64)")
    p(
        "shape_elements_overflow",
        npy(hdr(shape="(4294967296, 4294967296, 4294967296)")),
        "shape has more than 2^64 elements",
    )
    p(
        "shape_bytes_overflow",
        npy(hdr(descr="'<f8'", shape="(2305843009213693952,)")),
        "shape has more bytes than fit in 64 bits",
    )
    p("shape_long_suffix_v3", npy(hdr(shape="(2L,)"), F4x2, (3, 0)), "cannot parse header: unexpected character")
    p("shape_trailing_word", npy(hdr(shape="(2x,)"), F4x2), "cannot parse header: unexpected character")
    p("shape_sign_only", npy(hdr(shape="(-,)"), F4x2), "cannot parse header: unexpected character")

    # descr
    p("descr_int", npy(hdr(descr="4"), F4x2), "unsupported dtype: descr is not a type string")
    p("descr_none", npy(hdr(descr="None"), F4x2), "unsupported dtype: descr is not a type string")
    p("descr_dict", npy(hdr(descr="{'names': ['a']}"), F4x2), "unsupported dtype: descr is not a type string")
    p("descr_tuple", npy(hdr(descr="('<f4', (2,))"), F4x2), "unsupported dtype: descr is not a type string")
    p(
        "descr_structured",
        npy(hdr(descr="[('a', '<f4'), ('b', '<i4')]"), F4x2),
        "unsupported dtype: structured (record) dtypes are not numeric arrays",
    )
    p("descr_object", npy(hdr(descr="'|O'"), b"\x80\x04N."), "unsupported dtype '|O' (object arrays hold pickled")
    p("descr_unicode", npy(hdr(descr="'<U10'"), F4x2), "unsupported dtype '<U10' (unicode strings are not numeric)")
    p("descr_bytes", npy(hdr(descr="'|S5'"), F4x2), "unsupported dtype '|S5' (byte strings are not numeric)")
    p("descr_void", npy(hdr(descr="'|V8'"), F4x2), "unsupported dtype '|V8' (void/structured data is not numeric)")
    p("descr_datetime", npy(hdr(descr="'<M8[ns]'"), F4x2), "unsupported dtype '<M8[ns]' (datetimes are not supported)")
    p("descr_timedelta", npy(hdr(descr="'<m8[s]'"), F4x2), "(datetimes are not supported)")
    p("descr_float128", npy(hdr(descr="'<f16'"), F4x2), "unsupported dtype '<f16' (long double has no portable layout)")
    p("descr_complex256", npy(hdr(descr="'<c32'"), F4x2), "(long double has no portable layout)")
    p("descr_longdouble_code", npy(hdr(descr="'g'"), F4x2), "(long double has no portable layout)")
    p("descr_float3", npy(hdr(descr="'<f3'"), F4x2), "unsupported dtype '<f3' (not a NumPy numeric dtype)")
    p("descr_int16_bytes", npy(hdr(descr="'<i16'"), F4x2), "unsupported dtype '<i16' (not a NumPy numeric dtype)")
    p("descr_empty", npy(hdr(descr="''"), F4x2), "unsupported dtype '' (not a NumPy numeric dtype)")
    p("descr_double_order", npy(hdr(descr="'<<f4'"), F4x2), "unsupported dtype '<<f4'")
    p("descr_trailing_space", npy(hdr(descr="'<f4 '"), F4x2), "unsupported dtype '<f4 '")
    p("descr_escape", npy(hdr(descr="'<f\\\\4'"), F4x2), "unsupported dtype '<f\\\\4'")
    p("descr_invalid_utf8", npy(hdr(descr="'\xff\xfe'").encode("latin-1"), F4x2), "unsupported dtype '??'")
    p("descr_control_chars", npy(hdr(descr="'\x01\x02'"), F4x2), "unsupported dtype '??'")
    p(
        "descr_long",
        npy(hdr(descr="'" + "f" * 100 + "'"), F4x2),
        "unsupported dtype 'ffffffffffffffffffffffffffffffffffffffffffffffff...'",
    )

    # payload
    p(
        "data_one_byte_short",
        npy(hdr(), F4x2[:7]),
        "data truncated at byte 135: shape needs 8 payload bytes, blob has 7",
    )
    p("data_missing", npy(hdr(shape="(10,)")), "data truncated at byte 128: shape needs 40 payload bytes, blob has 0")
    p("data_scalar_missing", npy(hdr(descr="'<f8'", shape="()")), "shape needs 8 payload bytes, blob has 0")
    p(
        "data_large_shape",
        npy(hdr(descr="'<f8'", shape="(1000, 1000)"), b"\x00" * 16),
        "shape needs 8000000 payload bytes, blob has 16",
    )
    p(
        "data_fortran_short",
        npy(hdr(fortran="True", shape="(2, 3)"), b"\x00" * 20),
        "shape needs 24 payload bytes, blob has 20",
    )
    p(
        "data_complex_short",
        npy(hdr(descr="'<c16'", shape="(2,)"), b"\x00" * 24),
        "shape needs 32 payload bytes, blob has 24",
    )
    p("data_v2_short", npy(hdr(shape="(4,)"), F4x2, (2, 0)), "shape needs 16 payload bytes, blob has 8")
    p(
        "data_v3_short",
        npy(hdr(descr="'<i8'", shape="(3,)"), b"\x00" * 23, (3, 0)),
        "shape needs 24 payload bytes, blob has 23",
    )
    p(
        "data_bool_short",
        npy(hdr(descr="'|b1'", shape="(5, 5)"), b"\x01" * 24),
        "shape needs 25 payload bytes, blob has 24",
    )


# --- records -------------------------------------------------------------------


def varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def tag(field, wt):
    return varint(field << 3 | wt)


def ld(field, payload):
    if isinstance(payload, str):
        payload = payload.encode("utf-8")
    return tag(field, 2) + varint(len(payload)) + payload


def array(dtype="float32", shape=(2,), stype="numpy.ndarray", data=None):
    if data is None:
        data = npy(hdr()) + F4x2
    out = b""
    if dtype:
        out += ld(1, dtype)
    if shape:
        out += ld(2, b"".join(varint(d) for d in shape))
    if stype:
        out += ld(3, stype)
    if data:
        out += ld(4, data)
    return out


def item(key, arr=None):
    return ld(1, ld(1, key) + ld(2, array() if arr is None else arr))


GOOD = item("a")


def gen_records():
    g = "record"

    def p(name, data, want):
        put(g, "record", name + ".pb", data, want)

    p("truncated_tag_only", b"\x0a", "record blob truncated at byte 1 (item 0)")
    p("truncated_item", b"\x0a\x05\x0a\x01", "record blob truncated at byte 4 (item 0)")
    p("truncated_second_item", GOOD + b"\x0a\x10" + GOOD[2:8], "record blob truncated at byte")
    p("varint_11_bytes_tag", b"\x80" * 10 + b"\x01", "record blob has a tag longer than 5 bytes at byte 0")
    # protobuf reads tags of at most 5 bytes, their value below 2^32
    p("tag_6_bytes", b"\x8a\x80\x80\x80\x80\x00\x00", "record blob has a tag longer than 5 bytes at byte 0")
    p("tag_5_bytes_33_bits", b"\x8a\x80\x80\x80\x10\x00", "record blob has an invalid field number at byte 0")
    p("item_tag_6_bytes", ld(1, b"\x8a\x80\x80\x80\x80\x00\x01w"), "tag longer than 5 bytes at byte 2 (item 0)")
    p("varint_11_bytes_length", b"\x0a" + b"\xff" * 10 + b"\x01", "varint longer than 10 bytes at byte 1 (item 0)")
    p("varint_unterminated", b"\x0a\x80\x80", "record blob truncated at byte 3 (item 0)")
    p("field_zero", b"\x02\x00", "record blob has an invalid field number at byte 0")
    p("field_too_large", varint((1 << 29) << 3 | 2) + b"\x00", "record blob has an invalid field number at byte 0")
    p("wire_type_6", b"\x0e\x00", "record blob has invalid wire type 6 at byte 0")
    p("wire_type_7", b"\x0f\x00", "record blob has invalid wire type 7 at byte 0")
    p("items_as_varint", b"\x08\x01", "record blob has wrong wire type 0 for ArrayRecord.items at byte 0")
    p("items_as_fixed64", b"\x09" + b"\x00" * 8, "wrong wire type 1 for ArrayRecord.items")
    p("items_as_fixed32", b"\x0d" + b"\x00" * 4, "wrong wire type 5 for ArrayRecord.items")
    p("items_as_group", b"\x0b\x0c", "wrong wire type 3 for ArrayRecord.items")
    p("items_as_end_group", b"\x0c", "wrong wire type 4 for ArrayRecord.items")
    p("unknown_fixed64_truncated", GOOD + b"\x11\x00\x00\x00", "record blob truncated at byte")
    p("unknown_fixed32_truncated", b"\x15\x00\x00", "record blob truncated at byte 3")
    p("unknown_varint_truncated", b"\x10\x80", "record blob truncated at byte 2")
    p("unknown_bytes_past_end", b"\x12\x7f\x00", "record blob truncated at byte 3")
    p("unknown_bytes_length_2_63", b"\x12" + varint(1 << 63), "record blob truncated at byte 11")
    p("unknown_group_unclosed", b"\x13\x08\x01", "record blob truncated inside a group at byte 3")
    p("unknown_end_group_alone", b"\x14", "record blob has an unexpected end-group at byte 0")
    p("unknown_group_mismatched_end", b"\x13\x08\x01\x1c", "record blob has a mismatched end-group at byte 3")
    p("unknown_groups_nested_70", b"\x13" * 70 + b"\x14" * 70, "record blob nests groups too deeply")
    p("item_key_as_varint", ld(1, b"\x08\x01"), "wrong wire type 0 for Item.key at byte 2 (item 0)")
    p(
        "item_value_as_varint",
        ld(1, ld(1, "w") + b"\x10\x01"),
        "wrong wire type 0 for Item.value at byte 5 (item 0, key 'w')",
    )
    p("item_key_past_end", ld(1, b"\x0a\x09abc"), "record blob truncated at byte 7 (item 0)")
    p("item_value_past_end", ld(1, ld(1, "w") + b"\x12\x20\x0a"), "record blob truncated at byte 8 (item 0, key 'w')")
    p(
        "item_error_names_item_3",
        GOOD + item("b") + item("c") + ld(1, ld(1, "d") + b"\x10\x01"),
        "wrong wire type 0 for Item.value at byte",
    )
    p("item_unknown_group_unclosed", ld(1, ld(1, "w") + b"\x1b\x08\x01"), "truncated inside a group")
    p("array_dtype_as_varint", item("w", b"\x08\x01"), "wrong wire type 0 for Array.dtype")
    p("array_stype_as_fixed32", item("w", b"\x1d\x00\x00\x00\x00"), "wrong wire type 5 for Array.stype")
    p("array_data_as_fixed64", item("w", b"\x21" + b"\x00" * 8), "wrong wire type 1 for Array.data")
    p("array_shape_as_fixed64", item("w", b"\x11" + b"\x00" * 8), "wrong wire type 1 for Array.shape")
    p("array_shape_as_group", item("w", b"\x13\x14"), "wrong wire type 3 for Array.shape")
    p("array_dtype_past_end", item("w", b"\x0a\x09float"), "record blob truncated at byte")
    p("array_shape_negative", item("w", b"\x10" + varint(-1)), "record blob has negative dimension -1 at byte")
    p("array_shape_negative_packed", item("w", ld(2, varint(3) + varint(-5))), "record blob has negative dimension -5")
    p("array_shape_int32_min", item("w", b"\x10" + varint(-(1 << 31))), "negative dimension -2147483648")
    p("array_shape_packed_truncated", item("w", ld(2, b"\x80")), "record blob truncated")
    p("array_shape_packed_varint_too_long", item("w", ld(2, b"\xff" * 11)), "varint longer than 10 bytes")
    p("array_shape_65_dims", item("w", b"\x10\x01" * 65), "record blob has a shape with more than 64 dimensions")
    p("array_shape_65_dims_packed", item("w", ld(2, b"\x01" * 65)), "shape with more than 64 dimensions")
    p(
        "array_shape_65_dims_merged",
        ld(1, ld(1, "w") + ld(2, ld(2, b"\x01" * 40)) + ld(2, ld(2, b"\x01" * 25))),
        "shape with more than 64 dimensions",
    )
    p("array_unknown_field_truncated", item("w", b"\x2d\x00"), "record blob truncated")
    p("key_invalid_utf8", item(b"\xff\xfe"), "record key is not valid UTF-8 at byte 3 (item 0)")
    p("key_overlong_nul", item(b"a\xc0\x80"), "record key is not valid UTF-8")
    p("key_surrogate", item(b"\xed\xa0\x80"), "record key is not valid UTF-8")
    p("key_past_u10ffff", item(b"\xf4\x90\x80\x80"), "record key is not valid UTF-8")
    p("key_cut_character", item(b"\xe6\x97"), "record key is not valid UTF-8")
    p("key_lone_continuation", item(b"\x80"), "record key is not valid UTF-8")
    p(
        "dtype_invalid_utf8",
        item("w", array(dtype=b"\xff")),
        "record dtype is not valid UTF-8 at byte 3 (item 0, key 'w')",
    )
    p(
        "stype_invalid_utf8",
        item("w", array(stype=b"numpy\xc0")),
        "record stype is not valid UTF-8 at byte 3 (item 0, key 'w')",
    )
    p("duplicate_key", item("a") + item("a"), "record has duplicate key 'a' (items 0 and 1)")
    p(
        "duplicate_key_far_apart",
        b"".join(item("k%d" % i) for i in range(20)) + item("k7"),
        "record has duplicate key 'k7' (items 7 and 20)",
    )
    p(
        "duplicate_empty_key",
        item("") + b"".join(item("k%d" % i) for i in range(17)) + item(""),
        "record has duplicate key '' (items 0 and 18)",
    )
    p(
        "duplicate_key_via_repeated_field",
        item("a") + ld(1, ld(1, "x") + ld(1, "a") + ld(2, array())),
        "record has duplicate key 'a' (items 0 and 1)",
    )
    p("npy_file", npy(hdr()) + F4x2, "got a .npy file, not a record: wrap it with ar('key', npy)")
    p(
        "npz_file",
        b"PK\x03\x04\x14\x00\x00\x00\x08\x00",
        "got a .npz archive, not a record: convert it with ar_from_npz(blob)",
    )
    p("npz_empty", b"PK\x05\x06" + b"\x00" * 18, "got a .npz archive, not a record")
    p(
        "safetensors_file",
        SAFETENSORS,
        "got a safetensors file, not a record: convert it with ar_from_safetensors(blob)",
    )
    p("text", b"hello, world", "record blob")
    p("zeros", b"\x00" * 16, "record blob has an invalid field number at byte 0")


NOT_NUMERIC = {
    "numpy_data_object",
    "numpy_data_structured",
    "numpy_data_version_9",
    "raw_dtype_unknown",
    "raw_dtype_empty",
    "raw_dtype_unicode",
    "raw_dtype_object",
    "raw_no_value",
}


def gen_record_items():
    """Records whose structure is fine but whose array 'bad' is not."""
    g = "record_item"

    def p(name, arr, want, before=b""):
        put(g, "record_item", name + ".pb", before + item("bad", arr), want)
        # ar_compare gives an array it cannot read as numbers (no NumPy
        # dtype, an unsupported .npy version) a row saying why; broken bytes
        # are an error.
        also = "record_item_not_numeric" if name in NOT_NUMERIC else "record_item_broken"
        GROUPS.setdefault(also, []).append(("record_item/%s.pb" % name, want))

    p("numpy_data_not_npy", array(data=b"not a .npy"), "not a .npy file (bad magic) (item 0, key 'bad')")
    p("numpy_data_empty", array(data=b""), "empty blob is not a .npy file (item 0, key 'bad')")
    p("numpy_data_truncated", array(data=(npy(hdr()) + F4x2)[:-1]), "data truncated at byte 135")
    p(
        "numpy_data_object",
        array(dtype="object", data=npy(hdr(descr="'|O'")) + b"\x80\x04N."),
        "unsupported dtype '|O' (object arrays hold pickled Python objects, which are never loaded) (item 0, key 'bad')",
    )
    p("numpy_data_structured", array(data=npy(hdr(descr="[('a', '<f4')]")) + F4x2), "structured (record) dtypes")
    p(
        "numpy_data_version_9",
        array(data=npy(hdr(), F4x2, (9, 0))),
        "unsupported .npy format version 9.0 (item 0, key 'bad')",
    )
    p("numpy_data_bad_header", array(data=npy("{'descr': '<f4'") + F4x2), "cannot parse header")
    p(
        "numpy_bad_item_is_third",
        array(data=b"\x93NUMPY"),
        "truncated at byte 6: no .npy version (item 2, key 'bad')",
        before=item("a") + item("b"),
    )
    p(
        "raw_dtype_unknown",
        array(dtype="float128", stype="", data=b"\x00" * 16),
        "unsupported dtype 'float128' (long double has no portable layout) (item 0, key 'bad')",
    )
    p(
        "raw_dtype_empty",
        array(dtype="", stype="", data=b"\x00" * 8),
        "unsupported dtype '' (not a NumPy numeric dtype)",
    )
    p("raw_dtype_unicode", array(dtype="<U3", stype="", data=b"\x00" * 24), "(unicode strings are not numeric)")
    p("raw_dtype_object", array(dtype="object", stype="", data=b"\x00" * 8), "unsupported dtype 'object'")
    p("raw_no_value", b"", "unsupported dtype '' (not a NumPy numeric dtype) (item 0, key 'bad')")
    p(
        "raw_size_short",
        array(dtype="float32", shape=(2,), stype="", data=b"\x00" * 7),
        "raw array data has 7 bytes, dtype and shape need 8 (item 0, key 'bad')",
    )
    p(
        "raw_size_long",
        array(dtype="int64", shape=(1,), stype="", data=b"\x00" * 9),
        "raw array data has 9 bytes, dtype and shape need 8",
    )
    p(
        "raw_size_scalar_empty",
        array(dtype="float64", shape=(), stype="", data=b""),
        "raw array data has 0 bytes, dtype and shape need 8",
    )
    p(
        "raw_bytes_overflow",
        array(dtype="float64", shape=(2147483647, 2147483647), stype="", data=b""),
        "raw array dtype and shape need more than 2^64 bytes (item 0, key 'bad')",
    )
    p(
        "raw_elements_overflow",
        array(dtype="uint8", shape=(2147483647,) * 3, stype="", data=b""),
        "shape has more than 2^64 elements (item 0, key 'bad')",
    )
    p(
        "stype_almost_numpy",
        array(stype="numpy.ndarray ", data=npy(hdr()) + F4x2),
        "raw array data has 136 bytes, dtype and shape need 8",
    )
    p("stype_numpy_uppercase", array(stype="NUMPY.NDARRAY", data=npy(hdr()) + F4x2), "raw array data has 136 bytes")


def gen_record_mismatch():
    """Records whose Array fields disagree with their .npy (only ar_valid and
    ar_error look)."""
    g = "record_mismatch"

    def p(name, arr, want):
        put(g, "record_mismatch", name + ".pb", item("bad", arr), want)

    p(
        "dtype_differs",
        array(dtype="float64"),
        "dtype 'float64' does not match the .npy dtype 'float32' (item 0, key 'bad')",
    )
    p("dtype_is_descr", array(dtype="<f4"), "dtype '<f4' does not match the .npy dtype 'float32'")
    p("dtype_missing", array(dtype=""), "dtype '' does not match the .npy dtype 'float32'")
    p(
        "dtype_big_endian",
        array(dtype="float32", data=npy(hdr(descr="'>f4'")) + F4x2),
        "dtype 'float32' does not match the .npy dtype '>f4'",
    )
    p("dtype_invalid_text", array(dtype="\u00e9\u00e9"), "dtype '\u00e9\u00e9' does not match")
    p("shape_differs", array(shape=(3,)), "shape does not match the .npy shape (item 0, key 'bad')")
    p("shape_missing", array(shape=()), "shape does not match the .npy shape")
    p("shape_extra_dim", array(shape=(2, 1)), "shape does not match the .npy shape")
    p("shape_zero", array(shape=(0,)), "shape does not match the .npy shape")


# --- JSON and dtype strings -------------------------------------------------------


def gen_json():
    def p(group, name, text, want):
        put(group, group, name + ".txt", text, want)

    g = "json_array"
    p(g, "empty", "", "unexpected end of JSON at byte 0")
    p(g, "spaces", "   ", "unexpected end of JSON at byte 3")
    p(g, "open_bracket", "[", "unexpected end of JSON at byte 1")
    p(g, "close_bracket", "]", "unexpected ']' at byte 0")
    p(g, "trailing_comma", "[1,]", "unexpected ']' at byte 3")
    p(g, "leading_comma", "[,1]", "unexpected ',' at byte 1")
    p(g, "double_comma", "[1,,2]", "unexpected ',' at byte 3")
    p(g, "missing_comma", "[1 2]", "expected ',' or ']' at byte 3")
    p(g, "missing_comma_lists", "[[1] [2]]", "expected ',' or ']' at byte 5")
    p(g, "comma_after", "[1],", "text after the JSON value at byte 3")
    p(g, "two_values", "[1] [2]", "text after the JSON value at byte 4")
    p(g, "two_numbers", "1 2", "text after the JSON value at byte 2")
    p(g, "word_after", "[1]x", "text after the JSON value at byte 3")
    p(g, "unclosed", "[1, 2", "unexpected end of JSON at byte 5")
    p(g, "unclosed_inner", "[[1,2],[3,4]", "unexpected end of JSON at byte 12")
    p(g, "ragged_lengths", "[[1,2],[3]]", "ragged nested lists (lengths differ) at byte 9")
    p(g, "ragged_number_for_list", "[[1,2],3]", "ragged nested lists (a number where a list belongs) at byte 7")
    p(g, "ragged_list_for_number", "[1,[2]]", "ragged nested lists (a list where a number belongs) at byte 3")
    p(g, "ragged_depth", "[[1],[[2]]]", "ragged nested lists (a list where a number belongs) at byte 6")
    p(g, "ragged_empty_then_full", "[[],[1]]", "ragged nested lists (lengths differ) at byte 6")
    p(g, "leading_zero", "[01]", "number with a leading zero at byte 1")
    p(g, "dot_without_digits", "[1.]", "expected a digit after '.' at byte 1")
    p(g, "exponent_without_digits", "[1e]", "expected a digit in the exponent at byte 1")
    p(g, "exponent_sign_only", "[1e+]", "expected a digit in the exponent at byte 1")
    p(g, "minus_only", "[-]", "expected a number at byte 1")
    p(g, "plus_sign", "[+1]", "expected a number at byte 1")
    p(g, "leading_dot", "[.5]", "expected a number at byte 1")
    p(g, "hex_number", "[0x10]", "expected ',' or ']' at byte 2")
    p(g, "bare_nan", "[NaN]", "expected a number at byte 1")
    p(g, "bare_infinity", "[Infinity]", "expected a number at byte 1")
    p(g, "other_string", '["abc"]', 'unexpected string (only "NaN", "Infinity", "-Infinity" are numbers) at byte 1')
    p(g, "nan_with_space", '["nan "]', "unexpected string")
    p(g, "number_as_string", '["1"]', "unexpected string")
    p(g, "word_tru", "[tru]", "expected a number at byte 1")
    p(g, "word_nul", "[nul]", "expected a number at byte 1")
    p(g, "object", '{"a": 1}', "expected a number at byte 0")
    p(g, "object_in_list", "[{}]", "expected a number at byte 1")
    p(g, "nul_byte", "[\x00]", "expected a number at byte 1")
    p(g, "invalid_utf8", "[\udcff]", "expected a number at byte 1")
    p(g, "number_too_long", "[" + "1" * 600 + "]", "number too long at byte 1")
    p(g, "nested_66_deep", "[" * 66 + "]" * 66, "JSON nested too deeply at byte 65")
    p(g, "nested_1000_deep", "[" * 1000 + "1" + "]" * 1000, "JSON nested too deeply at byte 65")
    p(g, "dims_65", "[" * 65 + "1" + "]" * 65, "more than 64 dimensions")

    g = "json_range"  # read as int8
    p(g, "int8_128", "[128]", "value at byte 1 is out of range for int8")
    p(g, "int8_minus_129", "[1, -129]", "value at byte 4 is out of range for int8")
    p(g, "int8_fraction", "[1.5]", "value at byte 1 is not an integer, dtype is int8")
    p(g, "int8_nan", '["NaN"]', "value at byte 1 is not an integer, dtype is int8")
    p(g, "int8_null", "[null]", "value at byte 1 is not an integer")
    p(g, "int8_infinity", '[[1], ["-Infinity"]]', "value at byte 7 is not an integer")
    p(g, "int8_huge_float", "[1e300]", "value at byte 1 is out of range for int8")
    p(g, "int8_past_uint64", "[18446744073709551616]", "value at byte 1 is out of range for int8")
    p(g, "int8_exponent_fraction", "[1.25e1]", "is not an integer, dtype is int8")

    g = "json_range_u64"  # read as uint64
    p(g, "uint64_minus_1", "[-1]", "value at byte 1 is out of range for uint64")
    p(g, "uint64_2_64", "[18446744073709551616]", "value at byte 1 is out of range for uint64")
    p(g, "uint64_1e20", "[1e20]", "value at byte 1 is out of range for uint64")
    p(g, "uint64_fraction", "[0.5]", "value at byte 1 is not an integer, dtype is uint64")

    g = "json_complex"  # read as complex64
    p(g, "not_pairs", "[1, 2, 3]", "complex values must be [re, im] pairs (innermost lists of length 2)")
    p(g, "triples", "[[1, 2, 3]]", "complex values must be [re, im] pairs")
    p(g, "singles", "[[1], [2]]", "complex values must be [re, im] pairs")
    p(g, "scalar", "5", "complex values must be [re, im] pairs")

    g = "json_shape"
    msg = "shape must be a JSON array of non-negative integers"
    for name, text in [
        ("empty", ""),
        ("open_bracket", "["),
        ("negative", "[-1]"),
        ("fraction", "[1.5]"),
        ("string", '["2"]'),
        ("trailing_comma", "[2,]"),
        ("leading_comma", "[,2]"),
        ("object", "{}"),
        ("null", "null"),
        ("exponent", "[1e3]"),
        ("nested", "[[2]]"),
        ("bool", "[true]"),
        ("past_uint64", "[18446744073709551616]"),
        ("past_int64", "[9223372036854775808]"),
        ("bare_negative", "-3"),
        ("two_numbers", "2 3"),
        ("text_after", "[2] x"),
        ("missing_comma", "[1 2]"),
        ("unclosed", "[2,3"),
        ("bare_fraction", "2.5"),
        ("nan", '["NaN"]'),
    ]:
        p(g, name, text, msg)
    p(g, "dims_65", "[" + ",".join(["1"] * 65) + "]", "shape has more than 64 dimensions")


def gen_dtypes():
    g = "dtype"

    def p(name, text, why):
        put(g, g, name + ".txt", text, why)

    p("empty", "", "unsupported dtype '' (not a NumPy numeric dtype)")
    p("float128", "float128", "unsupported dtype 'float128' (long double has no portable layout)")
    p("f16", "f16", "unsupported dtype 'f16' (long double has no portable layout)")
    p("c32", ">c32", "unsupported dtype '>c32' (long double has no portable layout)")
    p("longdouble_g", "g", "(long double has no portable layout)")
    p("clongdouble_G", "G", "(long double has no portable layout)")
    p("unicode", "<U4", "unsupported dtype '<U4' (unicode strings are not numeric)")
    p("unicode_code", "U", "(unicode strings are not numeric)")
    p("bytes", "|S3", "(byte strings are not numeric)")
    p("bytes_a", "a10", "(byte strings are not numeric)")
    p("object", "O", "unsupported dtype 'O' (object arrays hold pickled Python objects, which are never loaded)")
    p("object_o8", "|O8", "(object arrays hold pickled Python objects")
    p(
        "object_name",
        "object",
        "unsupported dtype 'object' (object arrays hold pickled Python objects, which are never loaded)",
    )
    p("void", "V16", "(void/structured data is not numeric)")
    p("datetime", "M8", "(datetimes are not supported)")
    p("timedelta_unit", "m8[s]", "(datetimes are not supported)")
    p("int128", "int128", "unsupported dtype 'int128'")
    p("i3", "i3", "unsupported dtype 'i3' (not a NumPy numeric dtype)")
    p("f1", "f1", "unsupported dtype 'f1'")
    p("c4", "c4", "unsupported dtype 'c4'")
    p("b2", "b2", "unsupported dtype 'b2'")
    p("u16", "<u16", "unsupported dtype '<u16'")
    p("unknown_char", "x", "unsupported dtype 'x' (not a NumPy numeric dtype)")
    p("double_order", "<<f4", "unsupported dtype '<<f4'")
    p("order_only", "<", "unsupported dtype '<'")
    p("trailing_space", "<f4 ", "unsupported dtype '<f4 '")
    p("leading_space", " f4", "unsupported dtype ' f4'")
    p("suffix", "f4x", "unsupported dtype 'f4x'")
    p("capitalised", "Float32", "unsupported dtype 'Float32'")
    p("upper_case", "FLOAT32", "unsupported dtype 'FLOAT32'")
    p("space_inside", "float 32", "unsupported dtype 'float 32'")
    p("hyphen", "int-8", "unsupported dtype 'int-8'")
    p("python_str", "str", "unsupported dtype 'str'")
    p("invalid_utf8", "\udcff\udcfe", "unsupported dtype '??'")
    p("control_chars", "\x01f4", "unsupported dtype '?f4'")
    p("long", "float" * 20, "unsupported dtype 'floatfloatfloatfloatfloatfloatfloatfloatfloatflo...'")
    p("question_size", "?1", "unsupported dtype '?1'")


# --- manifests -------------------------------------------------------------------

NPY_READERS = """\
read npy_dtype SELECT npy_dtype(?1)
read npy_descr SELECT npy_descr(?1)
read npy_shape SELECT npy_shape(?1)
read npy_ndim SELECT npy_ndim(?1)
read npy_numel SELECT npy_numel(?1)
read npy_nbytes SELECT npy_nbytes(?1)
read npy_fortran SELECT npy_fortran(?1)
read npy_version SELECT npy_version(?1)
read npy_raw SELECT npy_raw(?1)
read npy_to_json SELECT npy_to_json(?1)
read npy_item SELECT npy_item(?1, 0)
read npy_each SELECT * FROM npy_each(?1)
read ar SELECT ar('k', ?1)
read ar_from_list SELECT ar_from_list(?1)
read ar_set SELECT ar_set(x'', 'k', ?1)
read ar_agg SELECT ar_agg('k', ?1)
read ar_agg_list SELECT ar_agg_list(?1)
read ar_inspect SELECT * FROM ar_inspect(?1, 32, 32, 'npy')
false SELECT npy_valid(?1)
false SELECT coalesce(ar_describe(?1) LIKE '{"kind":"npy"%', 0)
message SELECT npy_error(?1)
"""

RECORD_READERS = """\
read ar_len SELECT ar_len(?1)
read ar_keys SELECT ar_keys(?1)
read ar_count_bytes SELECT ar_count_bytes(?1)
read ar_json SELECT ar_json(?1)
read ar_has SELECT ar_has(?1, 'a')
read ar_get SELECT ar_get(?1, 'a')
read ar_data SELECT ar_data(?1, 'a')
read ar_dtype SELECT ar_dtype(?1, 'a')
read ar_shape SELECT ar_shape(?1, 'a')
read ar_stype SELECT ar_stype(?1, 'a')
read ar_nbytes SELECT ar_nbytes(?1, 'a')
read ar_set SELECT ar_set(?1, 'k', npy_from_json('[1]'))
read ar_delete SELECT ar_delete(?1, 'a')
read ar_rename SELECT ar_rename(?1, 'a', 'b')
read ar_merge SELECT ar_merge(?1)
read ar_merge SELECT ar_merge(x'', ?1)
read ar_select SELECT ar_select(?1, '*')
read ar_exclude SELECT ar_exclude(?1, '*')
read ar_cast_like SELECT ar_cast_like(?1, x'')
read ar_cast_like SELECT ar_cast_like(x'', ?1)
read array_record SELECT * FROM array_record(?1)
read ar_compare SELECT * FROM ar_compare(?1, x'')
read ar_compare SELECT * FROM ar_compare(x'', ?1)
read ar_check SELECT ar_check(?1)
read ar_inspect SELECT * FROM ar_inspect(?1, 32, 32, 'arrayrecord')
false SELECT ar_valid(?1)
false SELECT coalesce(ar_describe(?1) LIKE '{"kind":"arrayrecord"%', 0)
message SELECT ar_error(?1)
"""

HEADERS = {
    "npy": ("Malformed .npy files: every function that reads a .npy value.", "", NPY_READERS),
    "record": (
        "Malformed Flower ArrayRecord protobuf records: every function that reads a record.",
        "",
        RECORD_READERS,
    ),
    "record_item": (
        "Records with a well-formed structure and one bad array, keyed 'bad': the functions that read array data.",
        "",
        """\
read ar_get SELECT ar_get(?1, 'bad')
read ar_get SELECT npy_dtype(ar_get(?1, 'bad'))
read ar_get SELECT ar_get(?1, key) FROM array_record(?1) WHERE key = 'bad'
read ar_cast_like SELECT ar_cast_like(?1, ar('bad', npy_from_json('[1]')))
read ar_cast_like SELECT ar_cast_like(ar('bad', npy_from_json('[1]')), ?1)
read ar_check SELECT ar_check(?1)
false SELECT ar_valid(?1)
false SELECT coalesce(ar_describe(?1) LIKE '{"kind":"arrayrecord"%', 0)
message SELECT ar_error(?1)
""",
    ),
    "record_item_broken": (
        "The record_item inputs whose array bytes are broken: ar_compare and ar_inspect raise when they read the array.",
        "",
        """\
read ar_compare SELECT match FROM ar_compare(?1, x'') WHERE key = 'bad'
read ar_compare SELECT norm_b FROM ar_compare(x'', ?1) WHERE key = 'bad'
read ar_inspect SELECT * FROM ar_inspect(?1, 32, 32, 'arrayrecord')
""",
    ),
    "record_item_not_numeric": (
        "The record_item inputs whose array has no NumPy dtype: ar_compare gives a row saying why, ar_inspect one without numbers.",
        "",
        """\
message SELECT match || ': ' || note FROM ar_compare(?1, x'') WHERE key = 'bad'
message SELECT match || ': ' || note FROM ar_compare(?1, ?1) WHERE key = 'bad'
message SELECT match || ': ' || note FROM ar_compare(x'', ?1) WHERE key = 'bad'
false SELECT count(*) != 1 FROM ar_inspect(?1, 32, 32, 'arrayrecord') WHERE key = 'bad' AND dtype IS NOT NULL AND shape IS NOT NULL AND coalesce(min, l2, nan, histogram, heatmap) IS NULL
""",
    ),
    "record_mismatch": (
        "Records whose Array dtype or shape disagree with the .npy header: only the validators look that deep.",
        "",
        """\
read ar_check SELECT ar_check(?1)
false SELECT ar_valid(?1)
false SELECT coalesce(ar_describe(?1) LIKE '{"kind":"arrayrecord"%', 0)
message SELECT ar_error(?1)
""",
    ),
    "json_array": (
        "Malformed JSON arrays for npy_from_json.",
        "bind text\n",
        """\
read npy_from_json SELECT npy_from_json(?1)
read npy_from_json SELECT npy_from_json(?1, 'float64')
read npy_from_json SELECT npy_from_json(?1, 'int32')
""",
    ),
    "json_range": ("JSON values outside int8.", "bind text\n", "read npy_from_json SELECT npy_from_json(?1, 'int8')\n"),
    "json_range_u64": (
        "JSON values outside uint64.",
        "bind text\n",
        "read npy_from_json SELECT npy_from_json(?1, 'uint64')\n",
    ),
    "json_complex": (
        "JSON that is not [re, im] pairs, read as complex.",
        "bind text\n",
        "read npy_from_json SELECT npy_from_json(?1, 'complex64')\n"
        "read npy_from_json SELECT npy_from_json(?1, '>c16')\n",
    ),
    "json_shape": (
        "Malformed shapes for npy(raw, dtype, shape).",
        "bind text\n",
        "read npy SELECT npy(x'', 'float32', ?1)\n",
    ),
    "dtype": (
        "Unsupported or malformed dtype strings.",
        "bind text\n",
        """\
read npy SELECT npy(x'', ?1, '[0]')
read npy_from_json SELECT npy_from_json('[]', ?1)
""",
    ),
}


def write_group(maker, group, cases, checks, header, subdir=None):
    """A manifest of its own, group.manifest, for a generator that writes
    whole groups: cases are (name, bytes, expected error), written as
    subdir/name.pb (subdir defaults to the group's name)."""
    subdir = subdir or group
    os.makedirs(os.path.join(HERE, subdir), exist_ok=True)
    lines = [header, "# Made by tests/bad/%s; see tests/host/badrun.c for the format." % maker]
    lines += checks + [""]
    for name, blob, msg in cases:
        with open(os.path.join(HERE, subdir, name + ".pb"), "wb") as f:
            f.write(blob)
        lines.append("%s/%s.pb | %s" % (subdir, name, msg))
    with open(os.path.join(HERE, group + ".manifest"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_manifests(headers=HEADERS, maker="gen_foundation.py"):
    """One manifest per group in headers (title, bind line, checks), listing
    the inputs put() wrote for it."""
    for group, entries in GROUPS.items():
        title, bind, checks = headers[group]
        with open(os.path.join(HERE, group + ".manifest"), "w", encoding="utf-8", newline="\n") as f:
            f.write("# %s\n# Made by tests/bad/%s; see tests/host/badrun.c for the format.\n" % (title, maker))
            f.write(bind)
            f.write(checks)
            f.write("\n")
            for path, want in entries:
                f.write("%s | %s\n" % (path, want))


def main():
    for group in HEADERS:
        shutil.rmtree(os.path.join(HERE, group), ignore_errors=True)
    gen_npy()
    gen_records()
    gen_record_items()
    gen_record_mismatch()
    gen_json()
    gen_dtypes()
    write_manifests()
    print("%d inputs" % sum(len(v) for v in GROUPS.values()))


if __name__ == "__main__":
    main()
