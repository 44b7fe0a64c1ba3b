# SPDX-License-Identifier: Apache-2.0
"""Write the malformed RecordDict groups of tests/bad: recorddict (the
RecordDict structure: every rd_* reader fails) and recorddict_item (an
item's MetricRecord / ConfigRecord / ArrayRecord: the functions that read
that record fail, rd_valid is 0). Run it from anywhere; commit the result."""

from gen_foundation import SAFETENSORS, F4x2, array, hdr, ld, npy, varint, write_group

NPY_F4x2 = npy(hdr()) + F4x2


def vi(field, v):
    return varint(field << 3) + varint(v)


def rditem(name, kind, rec):
    return ld(1, ld(1, name) + ld(kind, rec))


def item(key, value):
    return ld(1, ld(1, key) + ld(2, value))


M, C, A = 3, 4, 2

STRUCTURE = [
    ("truncated_tag_only", b"\x0a", "record dict truncated at byte 1 (item 0)"),
    ("truncated_item", rditem(b"m", M, b"")[:-1], "record dict truncated at byte 6 (item 0)"),
    ("items_as_varint", b"\x08\x01", "record dict has wrong wire type 0 for RecordDict.items at byte 0"),
    ("field_zero", b"\x00", "record dict has an invalid field number at byte 0"),
    ("wire_type_7", b"\x0f", "record dict has invalid wire type 7 at byte 0"),
    ("varint_11_bytes", b"\x0a" + b"\xff" * 10 + b"\x01", "record dict has a varint longer than 10 bytes at byte 1"),
    ("no_record", ld(1, ld(1, b"m")), "record dict has an item without a record at byte 2 (item 0, key 'm')"),
    ("name_not_utf8", rditem(b"\xff", M, b""), "record dict has a name that is not valid UTF-8 at byte 2 (item 0)"),
    ("duplicate_name", rditem(b"a", M, b"") * 2, "record dict has duplicate name 'a' (items 0 and 1)"),
    # other formats: the message names the converter
    (
        "npz_file",
        b"PK\x03\x04\x14\x00\x00\x00\x08\x00",
        "got a .npz archive, not a record dict: make a record with ar_from_npz(blob)",
    ),
    (
        "safetensors_file",
        SAFETENSORS,
        "got a safetensors file, not a record dict: make a record with ar_from_safetensors",
    ),
    ("npy_file", NPY_F4x2, "got a .npy file, not a record dict: make a record with ar('key', npy)"),
    # a header of 10 bytes: its length field reads as an empty RecordDict item
    (
        "safetensors_header_10",
        b"\x0a\x00\x00\x00\x00\x00\x00\x00{}        ",
        "got a safetensors file, not a record dict: make a record with ar_from_safetensors(blob)",
    ),
    (
        "record_as_varint",
        ld(1, ld(1, b"m") + vi(M, 1)),
        "record dict has wrong wire type 0 for Item.metric_record at byte 5",
    ),
    ("name_as_varint", ld(1, vi(1, 1) + ld(M, b"")), "record dict has wrong wire type 0 for Item.key at byte 2"),
    ("unknown_truncated", b"\x11\x00", "record dict truncated at byte 2"),
    # protobuf reads tags of at most 5 bytes, their value below 2^32
    ("tag_6_bytes", b"\x8a\x80\x80\x80\x80\x00\x00", "record dict has a tag longer than 5 bytes at byte 0"),
    ("tag_11_bytes", b"\x8a" + b"\x80" * 9 + b"\x00\x00", "record dict has a tag longer than 5 bytes at byte 0"),
    ("tag_5_bytes_33_bits", b"\x8a\x80\x80\x80\x10\x00", "record dict has an invalid field number at byte 0"),
    (
        "item_tag_6_bytes",
        ld(1, b"\x8a\x80\x80\x80\x80\x00\x01m" + ld(M, b"")),
        "record dict has a tag longer than 5 bytes at byte 2 (item 0)",
    ),
    (
        "unknown_in_group_tag_6_bytes",
        b"\x13\x88\x80\x80\x80\x80\x00\x00\x14",
        "record dict has a tag longer than 5 bytes at byte 1",
    ),
    ("unterminated_group", b"\x13", "record dict truncated inside a group at byte 1"),
]

ITEM = [
    ("metric_truncated", rditem(b"m", M, item(b"k", vi(2, 1))[:-1]), "metric record 'm' truncated at byte"),
    (
        "metric_no_value",
        rditem(b"m", M, ld(1, ld(1, b"k"))),
        "metric record 'm' has an item without a value at byte 9 (item 0, key 'k')",
    ),
    (
        "metric_empty_value",
        rditem(b"m", M, item(b"k", b"")),
        "metric record 'm' has an item without a value at byte 9 (item 0, key 'k')",
    ),
    ("metric_bool_is_unknown", rditem(b"m", M, item(b"k", vi(4, 1))), "metric record 'm' has an item without a value"),
    (
        "metric_duplicate_key",
        rditem(b"m", M, item(b"k", vi(2, 2)) * 2),
        "metric record 'm' has duplicate key 'k' (items 0 and 1)",
    ),
    (
        "metric_double_as_varint",
        rditem(b"m", M, item(b"k", vi(1, 1))),
        "metric record 'm' has wrong wire type 0 for a double value",
    ),
    ("metric_double_truncated", rditem(b"m", M, item(b"k", b"\x09\x00\x00"))[:], "metric record 'm' truncated at byte"),
    (
        "metric_sint_as_len",
        rditem(b"m", M, item(b"k", ld(2, b""))),
        "metric record 'm' has wrong wire type 2 for sint64",
    ),
    (
        "metric_list_as_varint",
        rditem(b"m", M, item(b"k", vi(21, 1))),
        "metric record 'm' has wrong wire type 0 for double_list",
    ),
    (
        "metric_packed_double_cut",
        rditem(b"m", M, item(b"k", ld(21, ld(1, b"\0" * 9)))),
        "has a packed double list cut mid-value",
    ),
    (
        "metric_list_elem_wrong_type",
        rditem(b"m", M, item(b"k", ld(21, vi(1, 3)))),
        "has wrong wire type 0 for a double list element",
    ),
    (
        "metric_packed_varint_cut",
        rditem(b"m", M, item(b"k", ld(22, ld(1, b"\x80")))),
        "metric record 'm' truncated at byte",
    ),
    (
        "metric_varint_11_bytes",
        rditem(b"m", M, item(b"k", b"\x10" + b"\xff" * 10 + b"\x01")),
        "has a varint longer than 10 bytes",
    ),
    (
        "metric_key_not_utf8",
        rditem(b"m", M, item(b"\xc3", vi(2, 1))),
        "metric record 'm' has a key that is not valid UTF-8",
    ),
    ("metric_items_as_varint", rditem(b"m", M, vi(1, 1)), "metric record 'm' has wrong wire type 0 for items"),
    (
        "metric_value_tag_6_bytes",
        rditem(b"m", M, item(b"k", b"\x89\x80\x80\x80\x80\x00" + b"\0" * 8)),
        "metric record 'm' has a tag longer than 5 bytes at byte 14 (item 0, key 'k')",
    ),
    (
        "metric_list_tag_6_bytes",
        rditem(b"m", M, item(b"k", ld(21, b"\x89\x80\x80\x80\x80\x00" + b"\0" * 8))),
        "metric record 'm' has a tag longer than 5 bytes at byte 17 (item 0, key 'k')",
    ),
    # the record written twice: merged (its items together), each piece read where it is
    (
        "metric_merged_duplicate_key",
        ld(1, ld(1, b"m") + ld(M, item(b"k", vi(2, 1))) + ld(M, item(b"k", vi(2, 2)))),
        "metric record 'm' has duplicate key 'k' (items 0 and 1)",
    ),
    (
        "metric_merged_second_bad",
        ld(1, ld(1, b"m") + ld(M, item(b"a", vi(2, 1))) + ld(M, item(b"k", vi(1, 1)))),
        "metric record 'm' has wrong wire type 0 for a double value at byte 25 (item 1, key 'k')",
    ),
    # the value written twice: merged; a list then a truncated list of the same type
    (
        "metric_merged_value_list_cut",
        rditem(b"m", M, ld(1, ld(1, b"k") + ld(2, ld(21, ld(1, b"\0" * 8))) + ld(2, ld(21, ld(1, b"\0" * 9))))),
        "has a packed double list cut mid-value at byte 42 (item 0, key 'k')",
    ),
    (
        "config_string_not_utf8",
        rditem(b"m", C, item(b"k", ld(5, b"\xff"))),
        "config record 'm' has a string that is not valid UTF-8",
    ),
    (
        "config_list_string_not_utf8",
        rditem(b"m", C, item(b"k", ld(25, ld(1, b"ok") + ld(1, b"\xed\xa0\x80")))),
        "config record 'm' has a string that is not valid UTF-8",
    ),
    (
        "config_bytes_list_elem_varint",
        rditem(b"m", C, item(b"k", ld(26, vi(1, 1)))),
        "config record 'm' has wrong wire type 0 for a list element",
    ),
    (
        "config_bool_as_i64",
        rditem(b"m", C, item(b"k", b"\x21" + b"\0" * 8)),
        "config record 'm' has wrong wire type 1 for bool",
    ),
    ("config_string_truncated", rditem(b"m", C, item(b"k", b"\x2a\x05ab")), "config record 'm' truncated at byte"),
]

# ArrayRecord items: ar_* read them (through rd_array_record) as record blobs;
# the builders that re-encode them, rd_valid and rd_error name the item too.
ARRAY_ITEM = [
    ("array_truncated", rditem(b"m", A, b"\x0a"), "record blob truncated at byte 1 (item 0)"),
    ("array_field_zero", rditem(b"m", A, b"\x00"), "record blob has an invalid field number at byte 0"),
    (
        "array_value_as_varint",
        rditem(b"m", A, ld(1, ld(1, b"w") + vi(2, 1))),
        "record blob has wrong wire type 0 for Item.value at byte 5 (item 0, key 'w')",
    ),
    (
        "array_key_not_utf8",
        rditem(b"m", A, ld(1, ld(1, b"\xc3") + ld(2, b""))),
        "record key is not valid UTF-8 at byte 2 (item 0)",
    ),
    (
        "array_negative_dimension",
        rditem(b"m", A, item(b"w", ld(1, b"float32") + vi(2, 2**64 - 1))),
        "record blob has negative dimension -1 at byte 17 (item 0, key 'w')",
    ),
    (
        "array_duplicate_key",
        rditem(b"m", A, item(b"w", b"") * 2),
        "record has duplicate key 'w' (items 0 and 1)",
    ),
]


write_group(
    "gen_recorddict.py",
    "recorddict",
    STRUCTURE,
    [
        "read rd_len SELECT rd_len(?1)",
        "read rd_keys SELECT rd_keys(?1)",
        "read rd_array_record SELECT rd_array_record(?1, 'm')",
        "read rd_metrics SELECT rd_metrics(?1, 'm')",
        "read rd_config SELECT rd_config(?1, 'm')",
        "read rd_value SELECT rd_value(?1, 'm', 'k')",
        "read rd_set SELECT rd_set(?1, 'x', 'metric', '{}')",
        "read rd_delete SELECT rd_delete(?1, 'x')",
        "read record_dict SELECT * FROM record_dict(?1)",
        "read rd_check SELECT rd_check(?1)",
        "read ar_inspect SELECT * FROM ar_inspect(?1, 32, 32, 'recorddict')",
        "false SELECT rd_valid(?1)",
        'false SELECT coalesce(ar_describe(?1) LIKE \'{"kind":"recorddict"%\', 0)',
        "message SELECT rd_error(?1)",
    ],
    "# Malformed Flower RecordDict protobufs: every function that reads a RecordDict.",
)

write_group(
    "gen_recorddict.py",
    "recorddict_item",
    ITEM,
    [
        "read rd_value SELECT rd_value(?1, 'm', 'k')",
        "read record_dict SELECT nitems FROM record_dict(?1)",
        "read rd_set SELECT rd_set(?1, 'x', 'metric', '{}')",
        "read rd_delete SELECT rd_delete(?1, 'x')",
        "read rd_check SELECT rd_check(?1)",
        "false SELECT rd_valid(?1)",
        'false SELECT coalesce(ar_describe(?1) LIKE \'{"kind":"recorddict"%\', 0)',
        "message SELECT rd_error(?1)",
    ],
    "# RecordDicts whose item 'm' holds a malformed MetricRecord or ConfigRecord:\n"
    "# the functions that read that record (rd_set and rd_delete re-encode it).",
)

write_group(
    "gen_recorddict.py",
    "recorddict_array",
    ARRAY_ITEM,
    [
        "read ar_len SELECT ar_len(rd_array_record(?1, 'm'))",
        "read record_dict SELECT nitems FROM record_dict(?1)",
        "read ar_inspect SELECT * FROM ar_inspect(?1, 32, 32, 'recorddict')",
        "read rd_set SELECT rd_set(?1, 'x', 'metric', '{}')",
        "read rd_delete SELECT rd_delete(?1, 'x')",
        "false SELECT rd_valid(?1)",
        'false SELECT coalesce(ar_describe(?1) LIKE \'{"kind":"recorddict"%\', 0)',
        "message SELECT rd_error(?1)",
    ],
    "# RecordDicts whose item 'm' holds a malformed ArrayRecord: the functions\n"
    "# that read that record (rd_set and rd_delete re-encode it).",
)

write_group(
    "gen_recorddict.py",
    "recorddict_slip",
    [
        (
            "array_record",
            item(b"w", array(data=NPY_F4x2)),
            "got a record, not a record dict: wrap it with rd(name, 'array', rec)",
        ),
        (
            "array_record_two_items",
            item(b"w", array(data=NPY_F4x2)) + item(b"b", array(data=NPY_F4x2)),
            "got a record, not a record dict: wrap it with rd(name, 'array', rec)",
        ),
    ],
    [
        "read rd_check SELECT rd_check(?1)",
        "false SELECT rd_valid(?1)",
        "false SELECT ar_describe(?1) IS NULL",
        "message SELECT rd_error(?1)",
    ],
    "# Valid ArrayRecords where a RecordDict belongs: their items parse as RecordDict\n"
    "# items, so only the validators see the difference, and name it.",
)
