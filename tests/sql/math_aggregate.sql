-- SPDX-License-Identifier: Apache-2.0
-- Aggregates over rows of records: FedAvg (ar_mean), FedMedian (ar_median),
-- FedTrimmedAvg (ar_trimmed_mean), ar_sum, ar_min, ar_max, ar_stack.

-- Flower's own FedAvg vectors: same keys, dtypes and shapes as Flower's
-- result, values within float32 rounding (float64: 1e-12)
CREATE TABLE f32(rec, n);
INSERT INTO f32 VALUES (readfile('tests/data/fedavg/f32_client0.pb'), 38), (readfile('tests/data/fedavg/f32_client1.pb'), 69),
  (readfile('tests/data/fedavg/f32_client2.pb'), 249), (readfile('tests/data/fedavg/f32_client3.pb'), 778), (readfile('tests/data/fedavg/f32_client4.pb'), 422);
SELECT a.key, a.dtype, a.shape, npy_allclose(ar_get(r, a.key), ar_get(f, a.key), 1e-5, 1e-6)
  FROM (SELECT ar_mean(rec, n) r, readfile('tests/data/fedavg/f32_result.pb') f FROM f32), array_record(r) a;
CREATE TABLE f64(rec, n);
INSERT INTO f64 VALUES (readfile('tests/data/fedavg/f64_client0.pb'), 871), (readfile('tests/data/fedavg/f64_client1.pb'), 547),
  (readfile('tests/data/fedavg/f64_client2.pb'), 879), (readfile('tests/data/fedavg/f64_client3.pb'), 14), (readfile('tests/data/fedavg/f64_client4.pb'), 83);
SELECT a.key, a.dtype, npy_allclose(ar_get(r, a.key), ar_get(f, a.key), 1e-12, 0)
  FROM (SELECT ar_mean(rec, n) r, readfile('tests/data/fedavg/f64_result.pb') f FROM f64), array_record(r) a;
CREATE TABLE mixed(rec, n);
INSERT INTO mixed VALUES (readfile('tests/data/fedavg/mixed_int_client0.pb'), 603), (readfile('tests/data/fedavg/mixed_int_client1.pb'), 650),
  (readfile('tests/data/fedavg/mixed_int_client2.pb'), 213), (readfile('tests/data/fedavg/mixed_int_client3.pb'), 984), (readfile('tests/data/fedavg/mixed_int_client4.pb'), 314);
SELECT a.key, a.dtype, npy_allclose(ar_get(r, a.key), ar_get(f, a.key), 1e-5, 1e-6)
  FROM (SELECT ar_mean(rec, n) r, readfile('tests/data/fedavg/mixed_int_result.pb') f FROM mixed), array_record(r) a;

-- small rounds whose results are easy to check; row 2 is NULL and skipped
CREATE TABLE u(id INTEGER PRIMARY KEY, rec, n);
INSERT INTO u(rec, n) VALUES
  (ar('w', npy_from_json('[[1,2],[3,4]]', 'float32'), 'c', npy_from_json('[1, 10]', 'int16')), 1),
  (ar('c', npy_from_json('[3, 20]', 'int16'), 'w', npy_from_json('[[3,6],[9,12]]', 'float32')), 3),
  (NULL, 100),
  (ar('w', npy_cast(npy_from_json('[[5,0],[0,-4]]'), '>f4'), 'c', npy_from_json('[-1, 0]', 'int16')), 0);
-- FedAvg: (1*row0 + 3*row1 + 0*row3) / 4; int16 becomes float64; keys in row 0's order
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_mean(rec, n) r FROM u ORDER BY id), array_record(r);
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_mean(rec) r FROM u ORDER BY id), array_record(r);
-- sum: floats keep their dtype, int16 sums in int64
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_sum(rec) r FROM u ORDER BY id), array_record(r);
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_min(rec) r FROM u ORDER BY id), array_record(r);
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_max(rec) r FROM u ORDER BY id), array_record(r);
-- median of 3 rows (the middle value); trimmed mean with beta 0.34 drops 1 low and 1 high of 3
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_median(rec) r FROM u ORDER BY id), array_record(r);
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_trimmed_mean(rec, 0.34) r FROM u ORDER BY id), array_record(r);
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_trimmed_mean(rec, 0.2) r FROM u ORDER BY id), array_record(r);
-- median of an even count: the mean of the two middle values
SELECT npy_to_json(ar_get(ar_median(rec), 'w')) FROM u WHERE id < 3 ORDER BY id;
SELECT key, dtype, shape, npy_to_json(ar_get(r, key)) FROM (SELECT ar_stack(rec) r FROM u ORDER BY id), array_record(r);
-- NaN propagates through min/max/median; FedTrimmedAvg trims NaN first from the top (np.partition order)
CREATE TABLE nn(rec);
INSERT INTO nn VALUES (ar('x', npy_from_json('["NaN", 1, 5]'))), (ar('x', npy_from_json('[2, 2, 6]', 'float64'))), (ar('x', npy_from_json('[3, 3, 7]', 'float64')));
SELECT npy_to_json(ar_get(ar_max(rec), 'x')), npy_to_json(ar_get(ar_median(rec), 'x')), npy_to_json(ar_get(ar_trimmed_mean(rec, 0.34), 'x')) FROM nn;
-- no rows, only NULLs, empty records
SELECT ar_mean(rec, n), ar_sum(rec), ar_median(rec), ar_stack(rec) FROM u WHERE id > 10;
SELECT ar_mean(rec, n), ar_max(rec), ar_trimmed_mean(rec, 0.1) FROM u WHERE rec IS NULL;
SELECT length(ar_mean(x)), length(ar_stack(x)) FROM (SELECT x'' x UNION ALL SELECT x'');
-- errors name the key and the rows (rows count from 0, NULL ones included)
SELECT ar_mean(rec, n) FROM (SELECT rec, n FROM u UNION ALL SELECT ar_delete(rec, 'c'), 1 FROM u WHERE id = 1);
SELECT ar_sum(rec) FROM (SELECT rec FROM u WHERE id = 1 UNION ALL SELECT ar_set(rec, 'extra', npy_from_json('[1]')) FROM u WHERE id = 1);
SELECT ar_mean(rec) FROM (SELECT rec FROM u WHERE id = 1 UNION ALL SELECT ar_cast(rec, 'float64') FROM u WHERE id = 1);
SELECT ar_max(rec) FROM (SELECT rec FROM u WHERE id = 1 UNION ALL SELECT ar_set(rec, 'c', npy_from_json('[1,2,3]', 'int16')) FROM u WHERE id = 1);
SELECT ar_mean(rec, n - 1) FROM u WHERE id = 1;
SELECT ar_mean(rec, NULL) FROM u;
SELECT ar_mean(rec, 'heavy') FROM u;
SELECT ar_trimmed_mean(rec, 0.5) FROM u;
SELECT ar_trimmed_mean(rec, id / 10.0) FROM u;
SELECT ar_median(x) FROM (SELECT ar('z', npy_from_json('[[1,2]]', 'complex64')) x);
SELECT ar_mean(x) FROM (SELECT readfile('tests/data/fedavg/f32_client0.pb') x UNION ALL SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb'));
SELECT ar_sum(1);
-- Every error about one row's record names the row.
SELECT ar_mean(x) FROM (SELECT readfile('tests/data/fedavg/f32_client0.pb') x UNION ALL SELECT x'0a05');
SELECT ar_stack(x) FROM (SELECT NULL x UNION ALL SELECT 'text');
SELECT ar_sum(x) FROM (SELECT x'' x UNION ALL SELECT x'0a05');
SELECT ar_min(x) FROM (SELECT x'' x UNION ALL SELECT x'0a05');
SELECT ar_max(x) FROM (SELECT x'' x UNION ALL SELECT x'0a05');
SELECT ar_median(x) FROM (SELECT x'' x UNION ALL SELECT x'0a05');
SELECT ar_trimmed_mean(x, 0.1) FROM (SELECT x'' x UNION ALL SELECT x'0a05');
SELECT ar_stack(x) FROM (SELECT x'' x UNION ALL SELECT x'0a05');
