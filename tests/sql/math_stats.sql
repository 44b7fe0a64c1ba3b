-- SPDX-License-Identifier: Apache-2.0
-- ar_stats(rec): one row of statistics per array.
SELECT * FROM ar_stats(readfile('tests/data/records/mlp_dict.pb'));
SELECT key, dtype, shape, numel, min, max, mean, std, l2, nonfinite FROM ar_stats(readfile('tests/data/records/legacy_raw.pb'));
-- complex (no order: min/max NULL; mean as "[re,im]"), empty, NaN/Inf (NULL statistics, counted)
SELECT * FROM ar_stats(ar('c', npy_from_json('[[1,2],[3,-4]]', 'complex64'), 'e', npy_from_json('[]'), 'n', npy_from_json('[1, "NaN", "Infinity"]', 'float32'), 'i', npy_cast(npy_from_json('[[1,-2],[3,4]]'), '>i8')));
-- big-endian and Fortran arrays, against the single-array functions
SELECT s.key, s.min = npy_min(a.data), s.max = npy_max(a.data), s.mean = npy_mean(a.data), s.std = npy_std(a.data), s.l2 = npy_norm(a.data)
  FROM ar_stats(ar('be', readfile('tests/data/npy/dtype_be_f8.npy'), 'f', readfile('tests/data/npy/fortran_3d_i2.npy'))) s
  JOIN array_record(ar('be', readfile('tests/data/npy/dtype_be_f8.npy'), 'f', readfile('tests/data/npy/fortran_3d_i2.npy'))) a ON a.key = s.key;
-- the table to spot a poisoned update: which client has the largest layer
CREATE TABLE updates(client TEXT, rec BLOB);
INSERT INTO updates VALUES ('a', ar('w', npy_from_json('[1, 1]'))), ('b', ar('w', npy_from_json('[300, -400]'))), ('c', ar('w', npy_from_json('[0, "NaN"]')));
SELECT u.client, s.l2, s.nonfinite FROM updates u, ar_stats(u.rec) s ORDER BY s.l2 DESC NULLS LAST;
-- NULL record: no rows; errors
SELECT count(*) FROM ar_stats(NULL);
SELECT * FROM ar_stats(x'0a');
-- An invalid array: its key still lists, every other column raises.
SELECT key, dtype FROM ar_stats(readfile('tests/data/bad_records/npy_data_corrupt.pb'));
SELECT key, numel FROM ar_stats(readfile('tests/data/bad_records/npy_data_corrupt.pb'));
SELECT * FROM ar_stats('text');
SELECT * FROM ar_stats;
SELECT key FROM ar_stats(readfile('tests/data/bad_records/npy_data_corrupt.pb'));
SELECT key, l2 FROM ar_stats(readfile('tests/data/bad_records/npy_data_corrupt.pb'));
