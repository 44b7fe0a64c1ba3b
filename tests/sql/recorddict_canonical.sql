-- SPDX-License-Identifier: Apache-2.0
-- RecordDict builders write canonical bytes: RecordDicts that protobuf and
-- Flower read but that Flower did not write that way (unknown fields, fields
-- out of order, overlong varints, unpacked or split shapes and lists, empty
-- fields written, a field or oneof member written twice, an Array in two
-- merged value occurrences, legacy raw items, uint64 for small ints, empty
-- lists of another type) come out of rd_set, rd_delete, rd_agg, rd,
-- rd_from_message and rd_from_context as rd(...) writes the same content;
-- a malformed record of an item a builder re-encodes is an error.

-- messy: the input; len: its length as a varint (to wrap it in a Message or
-- a Context); canon: rd(...) of the same content.
CREATE TABLE cases(what TEXT, messy BLOB, len BLOB, canon BLOB);
INSERT INTO cases VALUES
  ('array: shape unpacked', x'0a210a0161121c0a1a0a017712150a07666c6f61743332100222080000c03f000000c0', x'23', rd('a', 'array', x'0a1b0a017712160a07666c6f6174333212010222080000c03f000000c0')),
  ('array: shape as a packed run and an unpacked value', x'0a240a0161121f0a1d0a016d12180a07666c6f61743332120101100222080000c03f000000c0', x'26', rd('a', 'array', x'0a1c0a016d12170a07666c6f617433321202010222080000c03f000000c0')),
  ('array: unknown fields of every wire type at every level', x'48ac025101010101010101015a027a7a65000000006b70016c0ab90148ac025101010101010101015a027a7a65000000006b70016c0a0161129a0148ac025101010101010101015a027a7a65000000006b70016c0a6648ac025101010101010101015a027a7a65000000006b70016c0a0177122f0a07666c6f6174333248ac025101010101010101015a027a7a65000000006b70016c12010222080000c03f000000c048ac025101010101010101015a027a7a65000000006b70016c48ac025101010101010101015a027a7a65000000006b70016c', x'd501', rd('a', 'array', x'0a1b0a017712160a07666c6f6174333212010222080000c03f000000c0')),
  ('array: fields out of order', x'0a22121d0a1b121622080000c03f000000c01201020a07666c6f617433320a01770a0161', x'24', rd('a', 'array', x'0a1b0a017712160a07666c6f6174333212010222080000c03f000000c0')),
  ('array: overlong varints', x'0abd808080000a016112af8080808080808080000aac000a017712a48080000a07666c6f61743332128380800082800022888080808080808080000000c03f000000c0', x'43', rd('a', 'array', x'0a1b0a017712160a07666c6f6174333212010222080000c03f000000c0')),
  ('array: empty fields written (key, stype, scalar shape)', x'0a1e0a016112190a170a0012130a07666c6f6174333212001a00220400004040', x'20', rd('a', 'array', x'0a11120f0a07666c6f61743332220400004040')),
  ('array: duplicate key, dtype, stype and data (the last kept)', x'0a390a016112340a320a01780a0177122a0a04696e74381a046a756e6b22046a756e6b0a07666c6f617433321201021a0022080000c03f000000c0', x'3b', rd('a', 'array', x'0a1b0a017712160a07666c6f6174333212010222080000c03f000000c0')),
  ('array: the Array in two value occurrences (merged, shape concatenated)', x'0a260a016112210a1f0a016d120c0a07666c6f61743332120101120c100222080000c03f000000c0', x'28', rd('a', 'array', x'0a1c0a016d12170a07666c6f617433321202010222080000c03f000000c0')),
  ('array: legacy raw item with another stype', x'0a2f0a0161122a0a280a017712231a0c746f7263682e54656e736f7222080000c03f000000c00a07666c6f617433321002', x'31', rd('a', 'array', x'0a290a017712240a07666c6f617433321201021a0c746f7263682e54656e736f7222080000c03f000000c0')),
  ('metric: unpacked double list, sint list in two packed runs', x'0a450a016d1a400a240a0164121faa011c09000000000000e03f09000000000000f87f0a0800000000000000800a180a01691213b201100a01050a0bffffffffffffffffff0108', x'47', rd('m', 'metric', '{"d": [0.5, {"double": "NaN"}, -0.0], "i": [-3, -9223372036854775808, 4]}')),
  ('metric: uint64 for small ints (Flower writes sint64), huge uint64 kept', x'0a490a016d1a440a070a0175120218070a120a03626967120b18ffffffffffffffffff010a0d0a02756c1207ba01040a0201020a160a02626c1210ba010d080108ffffffffffffffffff01', x'4b', rd('m', 'metric', '{"u": 7, "big": 18446744073709551615, "ul": [1, 2], "bl": [1, 18446744073709551615]}')),
  ('metric: empty lists of any type (Flower: double_list)', x'0a410a016d1a3c0a090a0265311203b201000a0b0a0265321205ba01020a000a220a026533121caa011948ac025101010101010101015a027a7a65000000006b70016c', x'43', rd('m', 'metric', '{"e1": [], "e2": [], "e3": []}')),
  ('metric: another oneof member first, value before key, unknown fields, overlong varints', x'0a84010a016d1a7f48ac025101010101010101015a027a7a65000000006b70016c0a481224100a48ac025101010101010101015a027a7a65000000006b70016c09000000000000044048ac025101010101010101015a027a7a65000000006b70016c0a01780a046c6f73730a958080808000120eb2010b08818080808080808080000a8180006e', x'8701', rd('m', 'metric', '{"loss": 2.5, "n": [-1]}')),
  ('metric: bool, string and bytes members are unknown to a metric record', x'0a1d0a016d1a180a160a016b121109000000000000f03f20012a0173320162', x'1f', rd('m', 'metric', '{"k": 1.0}')),
  ('config: bool as 2, unknown fields between string list elements, empty bytes list (Flower: bool_list)', x'0a560a016322510a080a026f6e120220020a2a0a01731225ca01220a016148ac025101010101010101015a027a7a65000000006b70016c0a000a02c3bc0a080a01651203d201000a0f0a02626c1209c2010608050a020001', x'58', rd('c', 'config', '{"on": true, "s": ["a", "", "ü"], "e": [], "bl": [true, false, true]}')),
  ('config: empty string and bytes, duplicate keys of an item, bytes list, uint64', x'0a3f0a0163223a0a070a017312022a000a0d0a046a756e6b120232000a01620a0e0a0262731208d201050a000a01ff0a100a0175120b1880808080808080808001', x'41', rd('c', 'config', '{"s": "", "b": {"bytes": ""}, "bs": [{"bytes": ""}, {"bytes": "/w=="}], "u": 9223372036854775808}')),
  ('record dict: another member first, name after record, unknown fields, overlong, empty records', x'48ac025101010101010101015a027a7a65000000006b70016c0a071a0012000a01610aaa8080808080000a81006d48ac025101010101010101015a027a7a65000000006b70016c1a8980000a070a016b120210020a050a01632200', x'5b', rd('a', 'array', x'', 'm', 'metric', '{"k": 1}', 'c', 'config', '{}'));
SELECT what, messy <> canon, rd_delete(messy, 'absent') = canon, rd_set(messy, 'new', 'config', '{"k": "v"}') = CAST(canon || rd('new', 'config', '{"k": "v"}') AS BLOB),
  rd_from_message(CAST(x'0a020807' || x'12' || len || messy AS BLOB)) = canon, rd_from_context(CAST(x'22' || len || messy || x'0803' AS BLOB)) = canon FROM cases;
-- rd_agg over the rows of record_dict: an ArrayRecord value as it is in the input
SELECT what, (SELECT rd_agg(d.name, d.kind, CASE d.kind WHEN 'array' THEN d.record WHEN 'metric' THEN rd_metrics(messy, d.name) ELSE rd_config(messy, d.name) END)
  FROM record_dict(messy) d) = canon FROM cases;
-- rd and rd_set given an ArrayRecord as it is in the input
SELECT what, rd('a', 'array', rd_array_record(messy, 'a')) = canon, rd_set(rd('a', 'metric', '{}'), 'a', 'array', rd_array_record(messy, 'a')) = canon
  FROM cases WHERE what LIKE 'array:%';
-- an item set or deleted: the others re-encoded
SELECT what, rd_set(CAST(messy || rd('z', 'metric', '{"z": 0}') AS BLOB), 'z', 'metric', '{"z": 1}') = CAST(canon || rd('z', 'metric', '{"z": 1}') AS BLOB),
  rd_delete(CAST(rd('z', 'config', '{}') || messy AS BLOB), 'z') = canon FROM cases;
-- the canonical bytes themselves
SELECT what, hex(rd_delete(messy, 'absent')) FROM cases WHERE what LIKE 'metric:%' OR what LIKE 'config:%' OR what LIKE 'record dict:%';
-- equal content, equal bytes: every case twice over, in one RecordDict each
SELECT count(DISTINCT a.messy), count(DISTINCT rd_delete(a.messy, 'absent')) FROM cases a
  WHERE a.canon = rd('a', 'array', x'0a1b0a017712160a07666c6f6174333212010222080000c03f000000c0');
-- NULLs as before
SELECT rd_set(NULL, 'a', 'metric', '{}') IS NULL, rd_delete(NULL, 'a') IS NULL, rd_from_message(NULL) IS NULL;
-- a malformed record of an item that is re-encoded; the item replaced or deleted is not read
SELECT rd_set(x'0a0b0a016d1a060a040a016b12', 'x', 'metric', '{}');
SELECT rd_delete(x'0a0b0a016d1a060a040a016b12', 'x');
SELECT rd_set(x'0a0b0a016d1a060a040a016b12', 'm', 'metric', '{}') = rd('m', 'metric', '{}'), rd_delete(x'0a0b0a016d1a060a040a016b12', 'm') = x'';
SELECT rd_set(x'0a060a016112010a', 'x', 'metric', '{}');
SELECT rd_delete(x'0a060a0161120100', 'x');
SELECT rd_from_message(x'120d0a0b0a016d1a060a040a016b12');
SELECT rd_from_context(x'22080a060a016112010a');
SELECT rd_agg(n, k, v) FROM (SELECT 'a' AS n, 'array' AS k, x'0a' AS v);
