# SPDX-License-Identifier: Apache-2.0
"""Write the malformed Flower Message and Context groups of tests/bad:
message (the Message, Metadata and Error structure: rd_from_message and
flower_message_metadata fail), message_content (a malformed content
RecordDict: rd_from_message fails), message_context (the Context and its
config map entries and Scalars: rd_from_context and flower_context_config
fail) and message_state (a malformed state RecordDict: rd_from_context
fails). Inputs live in tests/bad/message/. Run it from anywhere; commit the
result."""

import struct

from gen_foundation import ld, varint, write_group

DIR = "message"


def vi(field, v):
    return varint(field << 3) + varint(v)


def dbl(field, d):
    return varint(field << 3 | 1) + struct.pack("<d", d)


def entry(m, key, scalar):
    return ld(m, ld(1, key) + ld(2, scalar))


RD_ITEM = ld(1, ld(1, b"m") + ld(3, b""))  # a RecordDict with one empty metric record 'm'

MESSAGE = [
    ("truncated_tag_only", b"\x0a", "message truncated at byte 1"),
    ("metadata_as_varint", vi(1, 1), "message has wrong wire type 0 for Message.metadata at byte 0"),
    ("content_as_varint", vi(2, 1), "message has wrong wire type 0 for Message.content at byte 0"),
    ("error_as_i64", b"\x19" + b"\0" * 8, "message has wrong wire type 1 for Message.error at byte 0"),
    ("field_zero", b"\x00", "message has an invalid field number at byte 0"),
    ("wire_type_7", b"\x0f", "message has invalid wire type 7 at byte 0"),
    ("varint_11_bytes", b"\x0a" + b"\xff" * 10 + b"\x01", "message has a varint longer than 10 bytes at byte 1"),
    ("unterminated_group", b"\x23", "message truncated inside a group at byte 1"),
    ("run_id_as_len", ld(1, ld(1, b"")), "message metadata has wrong wire type 2 for Metadata.run_id at byte 2"),
    (
        "message_id_as_varint",
        ld(1, vi(2, 1)),
        "message metadata has wrong wire type 0 for Metadata.message_id at byte 2",
    ),
    ("ttl_as_varint", ld(1, vi(7, 1)), "message metadata has wrong wire type 0 for Metadata.ttl at byte 2"),
    ("ttl_truncated", ld(1, b"\x39\0\0\0"), "message metadata truncated at byte 6"),
    (
        "created_at_as_i32",
        ld(1, b"\x4d\0\0\0\0"),
        "message metadata has wrong wire type 5 for Metadata.created_at at byte 2",
    ),
    ("run_id_varint_cut", ld(1, b"\x08\x80"), "message metadata truncated at byte 4"),
    (
        "message_id_not_utf8",
        ld(1, ld(2, b"\xff")),
        "message metadata has a message_id that is not valid UTF-8 at byte 4",
    ),
    (
        "message_type_surrogate",
        ld(1, ld(8, b"\xed\xa0\x80")),
        "message metadata has a message_type that is not valid UTF-8 at byte 4",
    ),
    ("group_id_truncated", ld(1, b"\x32\x05ab"), "message metadata truncated at byte 6"),
    ("error_code_as_len", ld(3, ld(1, b"")), "message error has wrong wire type 2 for Error.code at byte 2"),
    ("error_reason_not_utf8", ld(3, ld(2, b"\xc3")), "message error has a reason that is not valid UTF-8 at byte 4"),
    ("error_reason_as_varint", ld(3, vi(2, 1)), "message error has wrong wire type 0 for Error.reason at byte 2"),
    (
        "recorddict_given",
        RD_ITEM,
        "message metadata has wrong wire type 2 for Metadata.run_id at byte 2 (it reads as a RecordDict or an ArrayRecord, not a Message)",
    ),
    (
        "context_given",
        vi(1, 7) + ld(4, b""),
        "message has wrong wire type 0 for Message.metadata at byte 0 (it reads as a Context, not a Message)",
    ),
]

CONTENT = [
    ("content_truncated", ld(2, b"\x0a"), "message content (at byte 2): record dict truncated at byte 1 (item 0)"),
    (
        "content_no_record",
        ld(2, ld(1, ld(1, b"m"))),
        "message content (at byte 2): record dict has an item without a record at byte 2 (item 0, key 'm')",
    ),
    (
        "content_merged_duplicate",
        ld(2, RD_ITEM) + ld(1, vi(1, 1)) + ld(2, RD_ITEM),
        "message content (2 occurrences merged): record dict has duplicate name 'm' (items 0 and 1)",
    ),
    (  # the content is re-encoded: every record is read
        "content_metric_truncated",
        ld(2, ld(1, ld(1, b"m") + ld(3, ld(1, ld(1, b"k") + b"\x12")))),
        "message content (at byte 2): metric record 'm' truncated at byte 13 (item 0, key 'k')",
    ),
    (
        "content_array_truncated",
        ld(2, ld(1, ld(1, b"a") + ld(2, b"\x0a"))),
        "message content (at byte 2): array record 'a' (at byte 7): record blob truncated at byte 1 (item 0)",
    ),
    (
        "content_merged_config_not_utf8",
        ld(2, RD_ITEM) + ld(2, ld(1, ld(1, b"c") + ld(4, ld(1, ld(1, b"k") + ld(2, ld(5, b"\xff")))))),
        "message content (2 occurrences merged): config record 'c' has a string that is not valid UTF-8 at byte 23 "
        "(item 0, key 'k')",
    ),
]

CONTEXT = [
    ("context_truncated", b"\x2a", "context truncated at byte 1"),
    ("context_run_id_as_len", ld(1, b""), "context has wrong wire type 2 for Context.run_id at byte 0"),
    ("context_node_id_as_i64", b"\x11" + b"\0" * 8, "context has wrong wire type 1 for Context.node_id at byte 0"),
    ("context_map_as_varint", vi(5, 1), "context has wrong wire type 0 for Context.run_config at byte 0"),
    ("context_state_as_varint", vi(4, 1), "context has wrong wire type 0 for Context.state at byte 0"),
    (
        "context_message_given",
        ld(1, vi(1, 1) + ld(8, b"train")),
        "context has wrong wire type 2 for Context.run_id at byte 0 (it reads as a Message, not a Context)",
    ),
    (
        "entry_no_value",
        ld(5, ld(1, b"lr")),
        "context run_config has an entry without a value at byte 2 (item 0, key 'lr')",
    ),
    (
        "entry_empty_scalar",
        entry(5, b"lr", b""),
        "context run_config has an entry without a value at byte 2 (item 0, key 'lr')",
    ),
    (
        "entry_unknown_member_only",
        entry(3, b"lr", b"\x15\0\0\0\0"),
        "context node_config has an entry without a value at byte 2 (item 0, key 'lr')",
    ),
    (
        "entry_key_as_varint",
        ld(3, vi(1, 1) + ld(2, vi(6, 1))),
        "context node_config has wrong wire type 0 for the entry key at byte 2 (item 0)",
    ),
    (
        "entry_value_as_varint",
        ld(5, ld(1, b"lr") + vi(2, 1)),
        "context run_config has wrong wire type 0 for the entry value at byte 6 (item 0, key 'lr')",
    ),
    (
        "entry_key_not_utf8",
        entry(5, b"\xff", vi(6, 1)),
        "context run_config has a key that is not valid UTF-8 at byte 2 (item 0)",
    ),
    (
        "entry_truncated",
        vi(1, 1) + entry(5, b"a", vi(6, 1)) + ld(5, ld(1, b"lr") + b"\x12\x02\x30"),
        "context run_config truncated at byte 20 (item 1, key 'lr')",
    ),
    (
        "scalar_double_as_varint",
        entry(5, b"lr", vi(1, 1)),
        "context run_config has wrong wire type 0 for Scalar.double at byte 8 (item 0, key 'lr')",
    ),
    (
        "scalar_double_truncated",
        entry(5, b"lr", b"\x09\0\0"),
        "context run_config truncated at byte 11 (item 0, key 'lr')",
    ),
    (
        "scalar_uint64_as_len",
        entry(5, b"lr", ld(6, b"")),
        "context run_config has wrong wire type 2 for Scalar.uint64 at byte 8 (item 0, key 'lr')",
    ),
    (
        "scalar_sint64_as_i64",
        entry(5, b"lr", dbl(8, 1.0)),
        "context run_config has wrong wire type 1 for Scalar.sint64 at byte 8 (item 0, key 'lr')",
    ),
    (
        "scalar_bool_as_len",
        entry(5, b"lr", ld(13, b"")),
        "context run_config has wrong wire type 2 for Scalar.bool at byte 8 (item 0, key 'lr')",
    ),
    (
        "scalar_string_not_utf8",
        entry(5, b"lr", ld(14, b"\xe2\x82")),
        "context run_config has a string value that is not valid UTF-8 at byte 10 (item 0, key 'lr')",
    ),
    (
        "scalar_bytes_as_varint",
        entry(5, b"lr", vi(15, 1)),
        "context run_config has wrong wire type 0 for Scalar.bytes at byte 8 (item 0, key 'lr')",
    ),
    (
        "scalar_varint_11_bytes",
        entry(5, b"lr", b"\x30" + b"\xff" * 10 + b"\x01"),
        "context run_config has a varint longer than 10 bytes at byte 9 (item 0, key 'lr')",
    ),
]

STATE = [
    ("state_truncated", ld(4, b"\x0a"), "context state (at byte 2): record dict truncated at byte 1 (item 0)"),
    (
        "state_merged_duplicate",
        ld(4, RD_ITEM) * 2,
        "context state (2 occurrences merged): record dict has duplicate name 'm' (items 0 and 1)",
    ),
    (  # the state is re-encoded: every record is read
        "state_array_bad_field",
        ld(4, ld(1, ld(1, b"a") + ld(2, b"\x00"))),
        "context state (at byte 2): array record 'a' (at byte 7): record blob has an invalid field number at byte 0",
    ),
]


write_group(
    "gen_message.py",
    "message",
    MESSAGE,
    [
        "read rd_from_message SELECT rd_from_message(?1)",
        "read flower_message_metadata SELECT flower_message_metadata(?1)",
    ],
    "# Malformed Flower Message protobufs (Message, Metadata, Error): every function that reads a Message.",
    DIR,
)

write_group(
    "gen_message.py",
    "message_content",
    CONTENT,
    [
        "read rd_from_message SELECT rd_from_message(?1)",
    ],
    "# Messages whose content RecordDict is malformed: rd_from_message.",
    DIR,
)

write_group(
    "gen_message.py",
    "message_context",
    CONTEXT,
    [
        "read rd_from_context SELECT rd_from_context(?1)",
        "read flower_context_config SELECT flower_context_config(?1)",
    ],
    "# Malformed Flower Context protobufs (config map entries, Scalars): every function that reads a Context.",
    DIR,
)

write_group(
    "gen_message.py",
    "message_state",
    STATE,
    [
        "read rd_from_context SELECT rd_from_context(?1)",
    ],
    "# Contexts whose state RecordDict is malformed: rd_from_context.",
    DIR,
)
