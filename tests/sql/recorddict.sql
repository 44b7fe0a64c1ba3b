-- SPDX-License-Identifier: Apache-2.0
-- RecordDicts: record_dict, rd_len, rd_keys, rd_array_record, rd_metrics,
-- rd_config, rd_value, rd_valid, rd_error, rd, rd_set, rd_delete, rd_agg;
-- Flower's vectors (tests/data/recorddict), NULLs and every error.

CREATE TABLE v(name TEXT, c BLOB);
INSERT INTO v VALUES ('full', readfile('tests/data/recorddict/full.pb')), ('metric_types', readfile('tests/data/recorddict/metric_types.pb')),
  ('config_types', readfile('tests/data/recorddict/config_types.pb')), ('empty', readfile('tests/data/recorddict/empty.pb')),
  ('empty_records', readfile('tests/data/recorddict/empty_records.pb')), ('shared_records', readfile('tests/data/recorddict/shared_records.pb'));
SELECT v.name, d.name, d.position, d.kind, d.nitems, length(d.record) FROM v, record_dict(v.c) d ORDER BY v.rowid, d.position;
SELECT name, rd_len(c), rd_keys(c), rd_valid(c), rd_error(c) FROM v;
-- every vector rebuilds byte for byte from its items, through the JSON mapping
SELECT v.name, (SELECT rd_agg(d.name, d.kind, CASE d.kind WHEN 'array' THEN d.record WHEN 'metric' THEN rd_metrics(v.c, d.name) ELSE rd_config(v.c, d.name) END)
  FROM record_dict(v.c) d) = v.c FROM v;
SELECT rd_metrics(c) FROM v WHERE name = 'metric_types';
SELECT rd_config(c) FROM v WHERE name = 'config_types';
SELECT rd_metrics(c, 'metrics'), rd_config(c, 'config') FROM v WHERE name = 'empty_records';
SELECT hex(c) FROM v WHERE name = 'empty_records';
SELECT hex(rd('arrays', 'array', x'', 'metrics', 'metric', '{}', 'config', 'config', '{}'));
-- rd_value: every type
SELECT k, typeof(rd_value(c, 'metrics', k)), rd_value(c, 'metrics', k) FROM v, json_each(rd_keys(c)) j,
  (SELECT value AS k FROM json_each('["int","neg","int64_min","uint64_min","uint64_max","float","neg_zero","tiny","nan","inf","-inf","double_list","uint_list","empty_list"]'))
  WHERE v.name = 'metric_types';
SELECT k, typeof(rd_value(c, 'config', k)), quote(rd_value(c, 'config', k)) FROM v,
  (SELECT value AS k FROM json_each('["true","false","uint64","str","str_empty","str_unicode","bytes","bytes_empty","bool_list","string_list","bytes_list","empty_list"]'))
  WHERE v.name = 'config_types';
SELECT rd_value(c, 'metrics', 'absent') IS NULL, rd_value(c, 'absent', 'x') IS NULL FROM v WHERE name = 'full';
-- typing as Flower types Python values
SELECT hex(rd('m', 'metric', '{"i": 1, "u": 9223372036854775808, "d": 1.0, "z": 0, "l": [1, 2], "ul": [1, 18446744073709551615], "dl": [0.5], "e": []}'));
SELECT rd_metrics(rd('m', 'metric', '{"i": 1, "u": 9223372036854775808, "d": 1.0, "z": 0, "l": [1, 2], "ul": [1, 18446744073709551615], "dl": [0.5], "e": [], "x": 1e400, "n": {"double": "-Infinity"}}'));
SELECT hex(rd('c', 'config', '{"b": false, "s": "", "y": {"bytes": ""}, "e": [], "sl": ["", "a"], "bl": [{"bytes": "AA=="}]}'));
SELECT rd_config(rd('c', 'config', '{"b": false, "s": "", "y": {"bytes": ""}, "e": [], "sl": ["", "a"], "bl": [{"bytes": "AA=="}], "esc": "a\u00e9\n"}'));
-- rd_set / rd_delete / rd_agg
SELECT rd_keys(rd_set(c, 'config', 'array', ar('w', npy_from_json('[1]')))), rd_keys(rd_set(c, 'new', 'config', '{"a": "b"}')) FROM v WHERE name = 'full';
SELECT rd_set(rd_set(c, 'metrics', 'metric', '{"x": 1}'), 'metrics', 'metric', rd_metrics(c)) = c FROM v WHERE name = 'full';
SELECT rd_keys(rd_delete(c, 'metrics')), length(rd_delete(c, 'arrays', 'metrics', 'config')), typeof(rd_delete(c, 'arrays', 'metrics', 'config')) FROM v WHERE name = 'full';
SELECT rd_keys(rd_agg(n, k, val)) FROM (SELECT 'a' n, 'metric' k, '{}' val UNION ALL SELECT NULL, 'metric', '{}' UNION ALL SELECT 'b', 'config', '{}');
SELECT typeof(rd_agg(n, k, val)), length(rd_agg(n, k, val)) FROM (SELECT 'a' n, 'metric' k, '{}' val WHERE 0);
-- FedAvg from whole replies
CREATE TABLE replies(round INTEGER, node_id INTEGER, content BLOB);
INSERT INTO replies VALUES
  (1, 1, rd('arrays', 'array', ar('w', npy_from_json('[1.0, 2.0]', 'float32')), 'metrics', 'metric', '{"num-examples": 30}')),
  (1, 2, rd('arrays', 'array', ar('w', npy_from_json('[3.0, 6.0]', 'float32')), 'metrics', 'metric', '{"num-examples": 10}'));
SELECT npy_to_json(ar_get(ar_mean(rd_array_record(content), rd_value(content, 'metrics', 'num-examples')), 'w')) FROM replies;
-- NULLs
SELECT rd_len(NULL), rd_keys(NULL), rd_valid(NULL), rd_error(NULL), rd_array_record(NULL), rd_metrics(NULL), rd_config(NULL, 'x'),
  rd_value(NULL, 'a', 'b'), rd_value(x'', NULL, 'b'), rd_set(NULL, 'a', 'metric', '{}'), rd_set(x'', 'a', 'metric', NULL), rd_delete(NULL, 'a'), rd('a', 'metric', NULL);
SELECT count(*) FROM record_dict(NULL);
SELECT rd_metrics(c, 'absent') IS NULL, rd_array_record(c, 'absent') IS NULL FROM v WHERE name = 'full';
-- errors
SELECT rd_len('text');
SELECT rd_valid('text'), rd_error('text'), rd_valid(1);
SELECT rd_len(x'0a');
SELECT rd_len(x'08');
SELECT rd_len(x'0a020a00');
SELECT rd_len(x'0a030a016d');
SELECT rd_len(x'0a051a000a0178');
SELECT rd_len(x'0a041a00ffff');
SELECT rd_error(x'0a0b0a016d1a060a040a016b12');
SELECT rd_error(x'0a0d0a016d1a080a060a016b12011a');
SELECT rd_error(x'0a0b0a016d1a060a040a016b1200');
SELECT rd_error(x'0a0f0a016d1a0a0a080a016b1203aa0108');
SELECT rd_error(x'0a0f0a016d1a0a0a080a016b1203aa0101');
SELECT rd_error(x'0a0e0a016d220a0a080a016b12032a01ff');
SELECT rd_error(x'0a0a0a01611206000000000000');
SELECT rd_error(x'0a0b0a016d1a060a040a01ff1200');
SELECT rd_error(x'0a050a01ff1a00');
SELECT 'dup_names', rd_valid(x'0a050a01611a000a050a01611a00'), rd_error(x'0a050a01611a000a050a01611a00');
SELECT 'dup_keys', rd_valid(x'0a170a016d1a120a070a016b120210020a070a016b12021002'), rd_error(x'0a170a016d1a120a070a016b120210020a070a016b12021002');
SELECT 'no_value', rd_valid(x'0a0a0a016d1a050a030a016b'), rd_error(x'0a0a0a016d1a050a030a016b');
SELECT 'empty_value', rd_valid(x'0a0c0a016d1a070a050a016b1200'), rd_error(x'0a0c0a016d1a070a050a016b1200');
SELECT 'bad_utf8_string', rd_valid(x'0a0f0a0163220a0a080a016b12032a01ff'), rd_error(x'0a0f0a0163220a0a080a016b12032a01ff');
SELECT 'bad_utf8_key', rd_valid(x'0a0e0a016322090a070a01ff12021002'), rd_error(x'0a0e0a016322090a070a01ff12021002');
SELECT 'bad_utf8_list_string', rd_valid(x'0a160a016322110a0f0a016b120aca01070a026f6b0a01c3'), rd_error(x'0a160a016322110a0f0a016b120aca01070a026f6b0a01c3');
SELECT 'packed_double_cut', rd_valid(x'0a1a0a016d1a150a130a016b120eaa010b0a09000000000000000000'), rd_error(x'0a1a0a016d1a150a130a016b120eaa010b0a09000000000000000000');
SELECT 'unpacked_mixed', rd_valid(x'0a170a016d1a120a100a016b120bb2010808020a0204060808'), rd_error(x'0a170a016d1a120a100a016b120bb2010808020a0204060808');
SELECT 'unknown_fields', rd_valid(x'0a140a016d1a0f48010a0b0a016b1206380510022001'), rd_error(x'0a140a016d1a0f48010a0b0a016b1206380510022001');
SELECT 'metric_bool_unknown', rd_valid(x'0a0e0a016d1a090a070a016b12022001'), rd_error(x'0a0e0a016d1a090a070a016b12022001');
SELECT 'last_wins', rd_valid(x'0a110a016d1a0c0a0a0a016b12051002aa0100'), rd_error(x'0a110a016d1a0c0a0a0a016b12051002aa0100');
SELECT 'list_wrong_wt', rd_valid(x'0a110a016d1a0c0a0a0a016b1205aa01020803'), rd_error(x'0a110a016d1a0c0a0a0a016b1205aa01020803');
SELECT 'bad_array', rd_valid(x'0a060a016112010a'), rd_error(x'0a060a016112010a');
SELECT 'varint_long', rd_valid(x'0a180a016d1a130a110a016b120c10ffffffffffffffffffff01'), rd_error(x'0a180a016d1a130a110a016b120c10ffffffffffffffffffff01');
SELECT rd_metrics(x'0a170a016d1a120a100a016b120bb2010808020a0204060808'), rd_metrics(x'0a140a016d1a0f48010a0b0a016b1206380510022001'), rd_metrics(x'0a110a016d1a0c0a0a0a016b12051002aa0100');
SELECT nitems FROM record_dict(x'0a060a016112010a');
SELECT rd('a', 'array', ar('w', npy_from_json('[1]'))) = rd_set(x'', 'a', 'array', ar('w', npy_from_json('[1]')));
SELECT rd_array_record(c) FROM v WHERE name = 'metric_types';
SELECT rd_array_record(c) FROM v WHERE name = 'shared_records';
SELECT rd_array_record(c, 'metrics') FROM v WHERE name = 'full';
SELECT rd_metrics(c, 'arrays') FROM v WHERE name = 'full';
SELECT rd_config(c) FROM v WHERE name = 'metric_types';
SELECT rd_value(c, 'arrays', 'w') FROM v WHERE name = 'full';
SELECT rd_value(c, 'metrics', x'00') FROM v WHERE name = 'full';
SELECT rd_value(c, 1.5, 'x') FROM v WHERE name = 'full';
SELECT rd_metrics(x'0a0d0a016d1a080a060a016b12011a', 'm');
SELECT rd('a', 'metric');
SELECT rd('a', 'metric', '{}', 'a', 'config', '{}');
SELECT rd('a', 'bogus', '{}');
SELECT rd('a', 1, '{}');
SELECT rd('a', 'array', 'text');
SELECT rd('a', 'array', x'0a');
SELECT rd('a', 'metric', x'00');
SELECT rd('a', 'metric', '[1]');
SELECT rd('a', 'metric', '{"s": "x"}');
SELECT rd('a', 'metric', '{"b": true}');
SELECT rd('a', 'metric', '{"l": ["x"]}');
SELECT rd('a', 'metric', '{"l": [1, 2.5]}');
SELECT rd('a', 'config', '{"l": [true, "x"]}');
SELECT rd('a', 'metric', '{"l": [-1, 18446744073709551615]}');
SELECT rd('a', 'metric', '{"i": 18446744073709551616}');
SELECT rd('a', 'metric', '{"i": -9223372036854775809}');
SELECT rd('a', 'metric', '{"i": -9223372036854775808}') IS NOT NULL;
SELECT rd('a', 'metric', '{"n": null}');
SELECT rd('a', 'metric', '{"n": [[1]]}');
SELECT rd('a', 'metric', '{"d": {"double": "nan"}}');
SELECT rd('a', 'metric', '{"d": {"double": 1}}');
SELECT rd('a', 'metric', '{"d": {}}');
SELECT rd('a', 'metric', '{"d": {"double": "NaN", "x": "y"}}');
SELECT rd('a', 'metric', '{"d": {"other": "NaN"}}');
SELECT rd('a', 'metric', '{"d": {"bytes": "AA=="}}');
SELECT rd('a', 'config', '{"d": {"bytes": "AA="}}');
SELECT rd('a', 'config', '{"d": {"bytes": "AB=="}}');
SELECT rd('a', 'config', '{"d": {"bytes": "A*=="}}');
SELECT rd('a', 'metric', '{"x": 1, "x": 2}');
SELECT rd('a', 'metric', '{"x": 1');
SELECT rd('a', 'metric', '{"x": 1} 2');
SELECT rd('a', 'metric', '{"x": 01}');
SELECT rd_set(x'', 'a', 'metric');
SELECT rd_set(x'0a', 'a', 'metric', '{}');
SELECT rd_delete(x'');
SELECT rd_delete(x'0a', 'a');
SELECT rd_delete(x'', x'00');
SELECT rd_agg(n, 'metric', '{}') FROM (SELECT 'a' n UNION ALL SELECT 'b' UNION ALL SELECT 'a');
SELECT rd_agg('a', 'bogus', '{}');
SELECT * FROM record_dict('text');
SELECT * FROM record_dict(x'0a');
SELECT * FROM record_dict;
SELECT nitems FROM record_dict(x'0a0b0a016d1a060a040a016b12');
