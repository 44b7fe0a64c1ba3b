-- SPDX-License-Identifier: Apache-2.0
-- RecordDicts are read as protobuf reads them: a singular message field
-- written more than once is the merge of its occurrences. An item's record
-- written twice holds both records' items (another oneof member in between
-- replaces it); a metric or config value written twice merges as protobuf
-- merges a oneof (a scalar member sets the value, a list member of the type
-- held appends, of another type starts anew, an empty value message changes
-- nothing). Tags are at most 5 bytes, field numbers at most 2^29 - 1.
-- canon: the bytes Flower writes after reading messy
-- (recorddict_to_proto(recorddict_from_proto(RecordDict.FromString(messy))),
-- flwr 1.42; tests/flower/test_protobuf_merge.py checks the same cases there).
CREATE TABLE cases(what TEXT, messy BLOB, canon BLOB);
INSERT INTO cases VALUES
  ('metric: two double_list values for a key (concatenated)', x'0a260a016d1a210a1f0a0161120caa010909000000000000f03f120caa0109090000000000000040', x'0a210a016d1a1c0a1a0a01611215aa01120a10000000000000f03f0000000000000040'),
  ('metric: two double_list members in one value (concatenated)', x'0a240a016d1a1f0a1d0a01611218aa010909000000000000f03faa0109090000000000000040', x'0a210a016d1a1c0a1a0a01611215aa01120a10000000000000f03f0000000000000040'),
  ('metric: a double, then an empty value (kept)', x'0a170a016d1a120a100a0161120909000000000000f03f1200', x'0a150a016d1a100a0e0a0161120909000000000000f03f'),
  ('metric: a double, then an empty double_list (replaced)', x'0a1a0a016d1a150a130a0161120909000000000000f03f1203aa0100', x'0a0f0a016d1a0a0a080a01611203aa0100'),
  ('metric: list, double, list (the last list anew)', x'0a310a016d1a2c0a2a0a0161120caa010909000000000000f03f1209090000000000001440120caa0109090000000000000040', x'0a190a016d1a140a120a0161120daa010a0a080000000000000040'),
  ('metric: a double_list, then a sint_list (replaced)', x'0a1d0a016d1a180a160a01611211aa010909000000000000f03fb201020808', x'0a120a016d1a0d0a0b0a01611206b201030a0108'),
  ('metric: an empty value, then a sint64 (set)', x'0a100a016d1a0b0a090a0161120012021005', x'0a0e0a016d1a090a070a016112021005'),
  ('metric: the record written twice (items together)', x'0a270a016d1a100a0e0a0161120909000000000000f03f1a100a0e0a01621209090000000000000040', x'0a250a016d1a200a0e0a0161120909000000000000f03f0a0e0a01621209090000000000000040'),
  ('config: a string, then an empty value (kept)', x'0a120a0163220d0a0b0a016112042a0268691200', x'0a100a0163220b0a090a016112042a026869'),
  ('config: string_list in two values (concatenated)', x'0a1a0a016322150a130a01611206ca01030a01781206ca01030a0179', x'0a150a016322100a0e0a01611209ca01060a01780a0179'),
  ('array: array_record written twice (items together)', x'0a390a0161121d0a1b0a017712160a07666c6f6174333212010222080000c03f000000c012150a130a0176120e0a04696e74381201032203010203', x'0a370a016112320a1b0a017712160a07666c6f6174333212010222080000c03f000000c00a130a0176120e0a04696e74381201032203010203'),
  ('array: array_record, then an empty metric_record (replaced)', x'0a240a0161121d0a1b0a017712160a07666c6f6174333212010222080000c03f000000c01a00', x'0a050a01611a00'),
  ('array: empty array_records around one (merged)', x'0a260a01611200121d0a1b0a017712160a07666c6f6174333212010222080000c03f000000c01200', x'0a220a0161121d0a1b0a017712160a07666c6f6174333212010222080000c03f000000c0'),
  ('array: a config record, then array_record in three pieces', x'0a5a0a01612200121d0a1b0a017712160a07666c6f6174333212010222080000c03f000000c012150a130a0176120e0a04696e74381201032203010203121d0a1b0a017812160a07666c6f6174333212010222080000c03f000000c0', x'0a540a0161124f0a1b0a017712160a07666c6f6174333212010222080000c03f000000c00a130a0176120e0a04696e743812010322030102030a1b0a017812160a07666c6f6174333212010222080000c03f000000c0'),
  ('record dict: 5-byte tags', x'8a80808000190a016d1a140a120a0161120d8980808000000000000000f03f', x'0a150a016d1a100a0e0a0161120909000000000000f03f');
-- re-encoded as Flower writes it, and read the same
SELECT what, rd_delete(messy, 'absent') = canon, rd_set(messy, 'z', 'config', '{}') = CAST(canon || rd('z', 'config', '{}') AS BLOB),
  rd_keys(messy) = rd_keys(canon), (SELECT group_concat(kind || ':' || nitems) FROM record_dict(messy)) = (SELECT group_concat(kind || ':' || nitems) FROM record_dict(canon))
  FROM cases;
-- what the records hold
SELECT what, rd_metrics(messy, 'm') FROM cases WHERE what LIKE 'metric:%' OR what LIKE 'record dict:%';
SELECT what, rd_config(messy, 'c') FROM cases WHERE what LIKE 'config:%';
SELECT what, kind, nitems FROM cases, record_dict(messy) WHERE what LIKE 'array:%';
SELECT what, ar_keys(rd_array_record(messy, 'a')), rd('a', 'array', rd_array_record(messy, 'a')) = canon FROM cases WHERE what LIKE 'array:%' AND what NOT LIKE '%(replaced)';
SELECT what, rd('a', 'array', record) = canon FROM cases, record_dict(messy) WHERE what LIKE 'array:%' AND kind = 'array';
SELECT rd_value(messy, 'm', 'a') FROM cases WHERE what LIKE 'metric: two%';
-- Flower's objects of the same content are the same objects
SELECT what, rd_object_id(messy) = rd_object_id(canon),
  (SELECT group_concat(object_id) FROM rd_objects(messy)) = (SELECT group_concat(object_id) FROM rd_objects(canon)) FROM cases;
-- rd_mean (FedAvg) over replies whose ArrayRecord and MetricRecord are written in pieces
CREATE TABLE replies(messy BLOB, canon BLOB);
INSERT INTO replies VALUES
  (x'0ab7010a0161120012af010aac010a017712a6010a07666c6f617433321201021a0d6e756d70792e6e646172726179228801934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a0000803f000000400a3b0a016d1a140a120a0c6e756d2d6578616d706c6573120210041a200a1e0a046c6f73731209090000000000000000120909000000000000f03f1200',
   rd('a', 'array', ar('w', npy_from_json('[1.0, 2.0]', 'float32')), 'm', 'metric', '{"num-examples": 2, "loss": 1.0}')),
  (x'0ab7010a0161120012af010aac010a017712a6010a07666c6f617433321201021a0d6e756d70792e6e646172726179228801934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a00004040000080400a3b0a016d1a140a120a0c6e756d2d6578616d706c65731202100c1a200a1e0a046c6f73731209090000000000000000120909000000000000e03f1200',
   rd('a', 'array', ar('w', npy_from_json('[3.0, 4.0]', 'float32')), 'm', 'metric', '{"num-examples": 6, "loss": 0.5}'));
SELECT rd_delete(messy, 'x') = canon FROM replies;
SELECT (SELECT rd_mean(messy) FROM replies) = (SELECT rd_mean(canon) FROM replies), (SELECT rd_metrics(rd_mean(messy)) FROM replies);
-- a merged record's errors count bytes from the start of the RecordDict, its
-- items numbered on; a key in two of its pieces is a duplicate
SELECT rd_metrics(x'0a190a016d1a090a070a0161120210011a090a070a016b12020801', 'm');
SELECT rd_metrics(x'0a190a016d1a090a070a016b120210011a090a070a016b12021002', 'm');
-- tags: 5 bytes read, 6 or more an error; a 5-byte tag of 2^32 or more an error
SELECT rd_len(x'8a80808000050a016d1a00');
SELECT rd_len(x'8a8080808000050a016d1a00');
SELECT rd_len(x'0a098a80808000016d1a00');
SELECT rd_len(x'0a0a8a8080808000016d1a00');
SELECT rd_len(x'8880808010000a050a016d1a00');
SELECT rd_metrics(x'0a1a0a016d1a150a130a016b120e8980808080000000000000000000', 'm');
