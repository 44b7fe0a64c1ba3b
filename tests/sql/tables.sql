-- SPDX-License-Identifier: Apache-2.0
-- The table-valued functions array_record(rec) and npy_each(npy): columns,
-- joins against a table of records, NULL and bad arguments.
SELECT key, position, dtype, shape, ndim, numel, stype, nbytes, length(data) FROM array_record(readfile('tests/data/records/mlp_dict.pb'));
SELECT key, position, dtype, shape, ndim, numel, quote(stype), nbytes, hex(data) FROM array_record(readfile('tests/data/records/legacy_raw.pb'));
SELECT key, position, dtype, shape, ndim, numel, nbytes FROM array_record(readfile('tests/data/records/unicode_keys.pb'));
SELECT key, dtype, shape, ndim, numel FROM array_record(readfile('tests/data/records/list_3.pb')) WHERE ndim = 0;
SELECT count(*) FROM array_record(x'');
SELECT count(*) FROM array_record(NULL);
-- data is the stored bytes: .npy for numpy.ndarray items
SELECT key, npy_shape(data) = shape, npy_dtype(data) = dtype FROM array_record(readfile('tests/data/records/mlp_dict.pb'));
-- the hidden argument column reads back as NULL
SELECT arg = readfile('tests/data/records/list_3.pb') FROM array_record(readfile('tests/data/records/list_3.pb')) LIMIT 1;
-- an item of 64 dimensions, and one whose numel is huge but empty
SELECT key, ndim, numel, nbytes FROM array_record(ar('d64', npy(x'', 'f4', '[' || (WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 63) SELECT group_concat('1', ',') FROM c) || ',0]'),
                                                     'big', npy(x'', 'u1', '[2147483647, 2147483647, 2147483647, 0]')));

-- joins: one row per (update, array)
CREATE TABLE updates(client TEXT, rec BLOB);
INSERT INTO updates VALUES ('alice', readfile('tests/data/fedavg/f32_client0.pb')), ('bob', readfile('tests/data/fedavg/mixed_int_client1.pb')),
                           ('carol', x''), ('dave', NULL), ('erin', readfile('tests/data/records/legacy_raw.pb'));
SELECT u.client, a.key, a.shape FROM updates u, array_record(u.rec) a;
SELECT u.client, a.key, a.dtype FROM updates u JOIN array_record(u.rec) a ORDER BY a.key, u.client;
SELECT u.client, count(a.key) FROM updates u LEFT JOIN array_record(u.rec) a GROUP BY u.client ORDER BY u.client;
SELECT a.key, count(*), sum(a.nbytes) FROM updates u, array_record(u.rec) a GROUP BY a.key ORDER BY a.key;
SELECT client FROM updates u WHERE EXISTS (SELECT 1 FROM array_record(u.rec) WHERE key = 'count');
-- rebuild each update without its 'b' array
SELECT u.client, ar_keys((SELECT ar_agg(key, data) FROM array_record(u.rec) WHERE key <> 'b')) FROM updates u WHERE u.rec IS NOT NULL AND ar_len(u.rec) > 0 AND ar_stype(u.rec, 'w') = 'numpy.ndarray';
-- a bad row stops the join with a message naming the table function
INSERT INTO updates VALUES ('mallory', x'0a05');
SELECT u.client, a.key FROM updates u, array_record(u.rec) a;
SELECT u.client, a.key FROM updates u, array_record(u.rec) a WHERE ar_valid(u.rec);
-- table function errors: missing or wrong argument
SELECT * FROM array_record;
SELECT * FROM array_record();
SELECT * FROM array_record('text');
SELECT * FROM array_record(3);
SELECT * FROM array_record(x'0a');
SELECT * FROM array_record(readfile('tests/data/bad_records/duplicate_key.pb'));
SELECT * FROM array_record(x'', x'');

-- npy_each: one row per element in C order, like json_each
SELECT i, idx, value FROM npy_each(readfile('tests/data/npy/fortran_2d_f4.npy'));
SELECT i, idx, value, typeof(value) FROM npy_each(readfile('tests/data/npy/dtype_le_c8.npy'));
SELECT i, idx, value, typeof(value) FROM npy_each(readfile('tests/data/npy/special_f4.npy'));
SELECT arg = readfile('tests/data/npy/scalar_f8.npy') FROM npy_each(readfile('tests/data/npy/scalar_f8.npy'));
SELECT i, idx, value FROM npy_each(readfile('tests/data/npy/dtype_be_i8.npy')) WHERE i < 3;
SELECT i, idx, value, typeof(value) FROM npy_each(readfile('tests/data/npy/dtype_le_u8.npy')) WHERE i < 2;
SELECT i, idx, value FROM npy_each(readfile('tests/data/npy/dtype_na_b1.npy')) WHERE value;
SELECT i, idx, value FROM npy_each(readfile('tests/data/npy/scalar_f8.npy'));
SELECT count(*) FROM npy_each(readfile('tests/data/npy/empty_2x0x3_i8.npy'));
SELECT count(*), sum(value), min(idx), max(idx) FROM npy_each(readfile('tests/data/npy/ndim_8_u1.npy'));
SELECT count(*) FROM npy_each(NULL);
SELECT i, value FROM npy_each(npy_from_json('[[1, 2], [3, 4]]')) ORDER BY value DESC LIMIT 2;
-- aggregates over elements, and per array of a record
SELECT a.key, count(*), round(sum(e.value), 4) FROM array_record(readfile('tests/data/records/mlp_dict.pb')) a, npy_each(a.data) e
  GROUP BY a.key ORDER BY a.key;
SELECT a.key, e.i, e.value FROM array_record(readfile('tests/data/records/legacy_raw.pb')) a, npy_each(ar_get(readfile('tests/data/records/legacy_raw.pb'), a.key)) e;
-- errors
SELECT * FROM npy_each;
SELECT * FROM npy_each('text');
SELECT * FROM npy_each(1.5);
SELECT * FROM npy_each(x'');
SELECT * FROM npy_each(readfile('tests/data/bad_npy/truncated_data.npy'));
SELECT * FROM npy_each(readfile('tests/data/records/legacy_raw.pb'));
-- The hidden argument column is named arg, so a user's column named rec or
-- npy can be passed unqualified, in a join or a correlated subquery.
CREATE TABLE models(name TEXT, rec BLOB, npy BLOB);
INSERT INTO models VALUES ('m', readfile('tests/data/records/list_3.pb'), readfile('tests/data/npy/dtype_le_f4.npy'));
SELECT name, count(*) FROM models, array_record(rec);
SELECT name, (SELECT count(*) FROM array_record(rec)), (SELECT count(*) FROM ar_objects(rec)), (SELECT count(*) FROM ar_stats(rec)), (SELECT count(*) FROM npy_each(npy)) FROM models;
