-- SPDX-License-Identifier: Apache-2.0
-- Packed records: ar_pack / rd_pack, ar_unpack / rd_unpack, ar_pack_base, ar_pack_info,
-- and what every other reader says of a packed BLOB. Sizes that depend on zstd's
-- output are compared, not printed. (Every record against every other, and the
-- cross-checks with NumPy, are tests/python/test_packed.py's: this file also runs
-- under out-of-memory injection, one run per allocation of every statement.)
CREATE TABLE f(name TEXT);
INSERT INTO f VALUES ('dtype_be_c16'), ('dtype_be_f4'), ('dtype_be_f8'), ('dtype_be_i2'), ('dtype_be_i4'),
  ('dtype_be_i8'), ('dtype_be_u4'), ('dtype_le_c16'), ('dtype_le_c8'), ('dtype_le_f2'), ('dtype_le_f4'),
  ('dtype_le_f8'), ('dtype_le_i2'), ('dtype_le_i4'), ('dtype_le_i8'), ('dtype_le_u2'), ('dtype_le_u4'),
  ('dtype_le_u8'), ('dtype_na_b1'), ('dtype_na_i1'), ('dtype_na_u1'), ('empty_1d_f4'), ('empty_2x0x3_i8'),
  ('fortran_2d_f4'), ('fortran_3d_i2'), ('layer_conv_f4'), ('ndim_8_u1'), ('scalar_f8'), ('scalar_i4'),
  ('special_f2'), ('special_f4'), ('v1_explicit_f8'), ('v2_header_f4'), ('v3_header_i4'), ('vector_1_f4');
-- every .npy of tests/data/npy in one record (every dtype, both byte orders, Fortran order,
-- shapes () and 0-length, NaN, -0.0, infinities, .npy versions 1 to 3)
CREATE TABLE r(name TEXT, rec BLOB);
INSERT INTO r SELECT 'all', ar_agg(name, readfile('tests/data/npy/' || name || '.npy')) FROM f;
INSERT INTO r SELECT 'base', ar_agg(name, readfile('tests/data/npy/' || name || '.npy')) FROM f WHERE name NOT LIKE '%be%';
INSERT INTO r SELECT 'mlp', readfile('tests/data/records/mlp_dict.pb');
INSERT INTO r SELECT 'mlp+', ar_add(rec, ar_scale(rec, 0.001)) FROM r WHERE name = 'mlp';
INSERT INTO r SELECT 'noisy', ar_add_noise(rec, 0.001, 7) FROM r WHERE name = 'mlp';
INSERT INTO r SELECT 'legacy', readfile('tests/data/records/legacy_raw.pb');
INSERT INTO r SELECT 'unicode', readfile('tests/data/records/unicode_keys.pb');
INSERT INTO r SELECT 'list', readfile('tests/data/records/list_3.pb');
INSERT INTO r VALUES ('empty', x'');
SELECT ar_len(rec) FROM r WHERE name = 'all';
-- round trips, bit for bit: without a base, against each other record, against itself
SELECT name, ar_unpack(ar_pack(rec)) = rec FROM r WHERE name IN ('all', 'legacy', 'empty') ORDER BY name;
SELECT a.name, b.name, ar_unpack(ar_pack(a.rec, b.rec), b.rec) = a.rec FROM r AS a, r AS b
  WHERE (a.name, b.name) IN (VALUES ('all', 'base'), ('mlp+', 'mlp'), ('empty', 'mlp'))
  ORDER BY a.name, b.name;
SELECT ar_unpack(ar_pack(a.rec, b.rec, '{"chunk": 1024, "level": 1}'), b.rec) = a.rec FROM r AS a, r AS b
  WHERE a.name = 'mlp+' AND b.name = 'mlp';
-- the modes: against the same record everything is 'same'; a key only in the record, or a
-- dtype or size that changed, is packed on its own
SELECT DISTINCT json_extract(a.value, '$.mode') FROM r, json_each(ar_pack_info(ar_pack(rec, rec)), '$.arrays') AS a WHERE name = 'all';
SELECT json_extract(a.value, '$.key'), json_extract(a.value, '$.mode'), json_extract(a.value, '$.width')
  FROM r AS x, r AS b, json_each(ar_pack_info(ar_pack(x.rec, b.rec)), '$.arrays') AS a
  WHERE x.name = 'mlp+' AND b.name = 'mlp';
SELECT json_extract(a.value, '$.key'), json_extract(a.value, '$.mode') FROM r AS x, r AS b,
  json_each(ar_pack_info(ar_pack(x.rec, b.rec)), '$.arrays') AS a
  WHERE x.name = 'all' AND b.name = 'base' AND json_extract(a.value, '$.key') LIKE '%be%' ORDER BY 1 LIMIT 3;
SELECT json_extract(a.value, '$.key'), json_extract(a.value, '$.mode')
  FROM json_each(ar_pack_info(ar_pack(ar('w', npy_from_json('[1, 2, 3]', 'float64')), ar('w', npy_from_json('[1, 2, 3]', 'float32')))), '$.arrays') AS a;
SELECT json_extract(a.value, '$.mode')
  FROM json_each(ar_pack_info(ar_pack(ar('w', npy_from_json('[[1, 2], [3, 4]]', 'float32')), ar('w', npy_from_json('[1, 2, 3, 4]', 'float32')))), '$.arrays') AS a;
-- packing pays where it should
SELECT length(ar_pack(x.rec, b.rec)) < length(ar_pack(x.rec)), length(ar_pack(x.rec)) < length(x.rec)
  FROM r AS x, r AS b WHERE x.name = 'mlp+' AND b.name = 'mlp';
-- what the header says
SELECT ar_pack_base(ar_pack(x.rec, b.rec)) = ar_object_id(b.rec), ar_pack_base(ar_pack(x.rec)) IS NULL
  FROM r AS x, r AS b WHERE x.name = 'mlp+' AND b.name = 'mlp';
SELECT json_extract(i, '$.kind'), json_extract(i, '$.version'), json_extract(i, '$.size'), json_extract(i, '$.base_size'),
       json_extract(i, '$.lossy'), json_extract(i, '$.max_error'), json_extract(i, '$.chunk'), json_extract(i, '$.count'),
       json_array_length(i, '$.arrays[0].planes'), json_extract(i, '$.packed') = length(p)
  FROM (SELECT ar_pack_info(ar_pack(x.rec, b.rec, '{"chunk": 4096}')) AS i, ar_pack(x.rec, b.rec, '{"chunk": 4096}') AS p
        FROM r AS x, r AS b WHERE x.name = 'mlp+' AND b.name = 'mlp');
SELECT ar_pack_info(ar_pack(x''));
SELECT json_extract(ar_pack_info(ar_pack(rec)), '$.count'), ar_len(rec) FROM r WHERE name = 'unicode';
SELECT json_extract(a.value, '$.key') FROM r, json_each(ar_pack_info(ar_pack(rec)), '$.arrays') AS a WHERE name = 'unicode';
-- ar_describe tells a packed BLOB from its header and meta section
SELECT json_extract(d, '$.kind'), json_extract(d, '$.of'), json_extract(d, '$.size'), json_extract(d, '$.base') IS NOT NULL,
       json_extract(d, '$.lossy'), json_extract(d, '$.count'), json_array_length(d, '$.items'), json_extract(d, '$.items[1].mode')
  FROM (SELECT ar_describe(ar_pack(x.rec, b.rec), 2) AS d FROM r AS x, r AS b WHERE x.name = 'mlp+' AND b.name = 'mlp');
SELECT json_extract(ar_describe(rd_pack(rd('a', 'array', rec))), '$.of') FROM r WHERE name = 'mlp';
SELECT ar_describe(x'0741525041434b');
-- lossy: float arrays against a base within the stated error, the rest exact; where the
-- exact difference is smaller (a close update of a small array) it stays exact
SELECT json_extract(i, '$.lossy'), json_extract(i, '$.max_error') > 0, json_extract(i, '$.max_error') < 1e-6,
       json_extract(i, '$.arrays[0].mode'), json_extract(i, '$.arrays[4].mode')
  FROM (SELECT ar_pack_info(ar_pack(x.rec, b.rec, '{"lossy": "float16"}')) AS i FROM r AS x, r AS b WHERE x.name = 'noisy' AND b.name = 'mlp');
SELECT ar_allclose(ar_unpack(ar_pack(x.rec, b.rec, '{"lossy": "bfloat16"}'), b.rec), x.rec, 0, 1e-5),
       ar_unpack(ar_pack(x.rec, b.rec, '{"lossy": "bfloat16"}'), b.rec) = x.rec,
       ar_unpack(ar_pack(x.rec, b.rec, '{"lossy": null}'), b.rec) = x.rec
  FROM r AS x, r AS b WHERE x.name = 'noisy' AND b.name = 'mlp';
SELECT json_extract(ar_describe(ar_pack(x.rec, b.rec, '{"lossy": "float16"}')), '$.max_error') =
       json_extract(ar_pack_info(ar_pack(x.rec, b.rec, '{"lossy": "float16"}')), '$.max_error')
  FROM r AS x, r AS b WHERE x.name = 'noisy' AND b.name = 'mlp';
SELECT json_extract(a.value, '$.mode') FROM r AS x, r AS b, json_each(ar_pack_info(ar_pack(x.rec, b.rec, '{"lossy": "float16"}')), '$.arrays') AS a
  WHERE x.name = 'mlp+' AND b.name = 'mlp' AND json_extract(a.value, '$.key') = 'fc1.weight';
SELECT json_extract(ar_pack_info(ar_pack(ar('w', npy_from_json('[1, "NaN"]', 'float32')), ar('w', npy_from_json('[1, 2]', 'float32')), '{"lossy": "float16"}')), '$.arrays[0].mode');
SELECT json_extract(ar_pack_info(ar_pack(ar('w', npy_from_json('[1, 2]', 'int32')), ar('w', npy_from_json('[1, 3]', 'int32')), '{"lossy": "float16"}')), '$.arrays[0].mode');
-- RecordDicts: every ArrayRecord against the base, metric and config records kept
CREATE TABLE d(rd BLOB);
INSERT INTO d SELECT rd('arrays', 'array', x.rec, 'metrics', 'metric', '{"num-examples": 120, "loss": 0.25}', 'config', 'config', '{"lr": 0.1}') FROM r AS x WHERE x.name = 'mlp+';
INSERT INTO d SELECT readfile('tests/data/recorddict/full.pb');
SELECT rd_unpack(rd_pack(rd), NULL) = rd, rd_unpack(rd_pack(rd, b.rec), b.rec) = rd FROM d, r AS b WHERE b.name = 'mlp';
SELECT length(rd_pack(rd, b.rec)) < length(rd_pack(rd)), rd_value(rd_unpack(rd_pack(rd, b.rec), b.rec), 'metrics', 'loss')
  FROM d, r AS b WHERE b.name = 'mlp' AND rd_keys(rd) = '["arrays","metrics","config"]';
SELECT json_extract(ar_pack_info(rd_pack(rd)), '$.kind'), json_extract(ar_pack_info(rd_pack(rd)), '$.count') FROM d;
-- NULL: a NULL record gives NULL; a NULL base is no base, NULL options the defaults
SELECT ar_pack(NULL), rd_pack(NULL, x''), ar_unpack(NULL), rd_unpack(NULL, x''), ar_pack_base(NULL), ar_pack_info(NULL);
SELECT ar_pack(x'', NULL, NULL) = ar_pack(x''), rd_pack(x'', NULL, NULL) = rd_pack(x'');
-- a base given to a BLOB packed without one is not looked at
SELECT ar_unpack(ar_pack(rec), x'00') = rec FROM r WHERE name = 'mlp';
