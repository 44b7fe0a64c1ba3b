-- SPDX-License-Identifier: Apache-2.0
-- Packed records: the errors of ar_pack / rd_pack, ar_unpack / rd_unpack, ar_pack_base and
-- ar_pack_info, and what every other reader says of a packed BLOB (packed.sql has the
-- round trips; a file of its own keeps the setup that out-of-memory runs replay small).
CREATE TABLE m(name TEXT, rec BLOB);
INSERT INTO m SELECT 'mlp', readfile('tests/data/records/mlp_dict.pb');
INSERT INTO m SELECT 'mlp+', ar_add(rec, ar_scale(rec, 0.001)) FROM m WHERE name = 'mlp';
-- errors: the base
SELECT ar_unpack(ar_pack(x.rec, b.rec)) FROM m AS x, m AS b WHERE x.name = 'mlp+' AND b.name = 'mlp';
SELECT ar_unpack(ar_pack(x.rec, b.rec), x.rec) FROM m AS x, m AS b WHERE x.name = 'mlp+' AND b.name = 'mlp';
SELECT ar_unpack(ar_pack(x.rec, b.rec), x'0a00') FROM m AS x, m AS b WHERE x.name = 'mlp+' AND b.name = 'mlp';
SELECT ar_unpack(ar_pack(x.rec, b.rec), ar_pack(b.rec)) FROM m AS x, m AS b WHERE x.name = 'mlp+' AND b.name = 'mlp';
SELECT ar_unpack(ar_pack(x.rec, b.rec), 'text') FROM m AS x, m AS b WHERE x.name = 'mlp+' AND b.name = 'mlp';
SELECT ar_pack(rec, ar_pack(x'')) FROM m WHERE name = 'mlp';
SELECT ar_pack(rec, readfile('tests/data/recorddict/full.pb')) FROM m WHERE name = 'mlp';
SELECT ar_pack(rec, x'ff') FROM m WHERE name = 'mlp';
SELECT ar_pack(rec, NULL, '{"lossy": "float16"}') FROM m WHERE name = 'mlp';
-- errors: the record
SELECT ar_pack(x'ff');
SELECT ar_pack(ar_pack(x''));
SELECT ar_pack(readfile('tests/data/recorddict/full.pb'));
SELECT rd_pack(ar('w', npy_from_json('[1.5, 2]', 'float32')));
-- a small record dict that also reads as a record packs as either, losslessly
SELECT ar_unpack(ar_pack(rd('m', 'metric', '{"loss": 1}'))) = rd('m', 'metric', '{"loss": 1}');
SELECT rd_pack(x'ff');
SELECT ar_pack('text');
SELECT ar_unpack(x'');
SELECT ar_unpack(rec) FROM m WHERE name = 'mlp';
SELECT ar_unpack(x'00112233');
SELECT ar_unpack(rd_pack(x''));
SELECT rd_unpack(ar_pack(x''));
SELECT ar_unpack(1.5);
SELECT ar_pack_base(x'0a00');
SELECT ar_pack_info(x'0741525041434b01');
SELECT ar_pack_base(x'0741525041434b09');
-- errors: options
SELECT ar_pack(x'', NULL, '{"level": 99}');
SELECT ar_pack(x'', NULL, '{"level": -99999999999999999999}');
SELECT ar_pack(x'', NULL, '{"level": 1.5}');
SELECT ar_pack(x'', NULL, '{"level": "3"}');
SELECT ar_pack(x'', NULL, '{"chunk": 1000}');
SELECT ar_pack(x'', NULL, '{"chunk": 3000000}');
SELECT ar_pack(x'', NULL, '{"lossy": "float8"}');
SELECT ar_pack(x'', NULL, '{"lossy": 16}');
SELECT ar_pack(x'', NULL, '{"lossless": true}');
SELECT ar_pack(x'', NULL, '[1, 2]');
SELECT ar_pack(x'', NULL, '{"level": 3');
SELECT ar_pack(x'', NULL, 3);
-- every other reader says what a packed BLOB is and what unpacks it
SELECT ar_len(ar_pack(ar('w', npy_from_json('[1.5, 2]', 'float32'))));
SELECT ar_check(ar_pack(ar('w', npy_from_json('[1.5, 2]', 'float32'))));
SELECT ar_error(ar_pack(ar('w', npy_from_json('[1.5, 2]', 'float32')))), ar_valid(ar_pack(x''));
SELECT rd_check(rd_pack(rd('m', 'metric', '{"loss": 1}')));
SELECT rd_error(ar_pack(x''));
SELECT ar_error(rd_pack(x''));
SELECT npy_error(ar_pack(x'')), npy_error(rd_pack(x''));
SELECT rd_len(x'0741525041434b01');
SELECT * FROM array_record(ar_pack(x''));
SELECT * FROM ar_inspect(rd_pack(x''));
SELECT ar_mean(ar_pack(x''));
-- the connection's cache of unpacked records changes no result: a hit needs the very same packed
-- bytes and a base that passes unpacking's checks; anything else unpacks (and fails) as before
CREATE TABLE c(p BLOB, base BLOB, rec BLOB);
INSERT INTO c SELECT ar_pack(x.rec, b.rec), b.rec, x.rec FROM m AS x, m AS b WHERE x.name = 'mlp+' AND b.name = 'mlp';
SELECT ar_unpack(p, base) = rec, ar_unpack(p, base) = rec FROM c;
SELECT ar_unpack(p, rec) FROM c;
SELECT ar_unpack(p) FROM c;
SELECT ar_unpack(p, base) = rec FROM c;
-- results longer than SQLITE_LIMIT_LENGTH: an unpacked size over it is refused before anything is
-- allocated; a packed BLOB longer than its record (a small one) can be refused too
CREATE TABLE big(p BLOB);
INSERT INTO big SELECT ar_pack(ar('w', npy_from_json('[0, 0, 0, 0]', 'float32'))) UNION ALL
  SELECT ar_pack(ar('zeros', npy(zeroblob(16000), 'float32', '[4000]')));
SELECT limit_length(2000) > 2000;
SELECT ar_unpack(p) FROM big WHERE json_extract(ar_pack_info(p), '$.size') > 2000;
SELECT json_extract(ar_pack_info(p), '$.size'), json_extract(ar_describe(p), '$.size') FROM big ORDER BY 1;
SELECT limit_length(200) = 2000;
SELECT ar_pack(ar('w', npy_from_json('[1.5, 2]', 'float32')));
SELECT rd_pack(rd('a', 'array', ar('w', npy_from_json('[1.5, 2]', 'float32'))));
SELECT limit_length(1000000000) = 200;
SELECT length(ar_unpack(p)) FROM big ORDER BY 1;
