-- SPDX-License-Identifier: Apache-2.0
-- Robust aggregation and differential privacy: Krum, MultiKrum, Bulyan
-- (ar_krum, ar_krum_scores, ar_bulyan), ar_clip_norm, ar_add_noise.

-- seven clients: five honest near [1, 2] (weights 1..5), two far away
CREATE TABLE u(id INTEGER PRIMARY KEY, rec, n);
INSERT INTO u(rec, n) VALUES
  (ar('w', npy_from_json('[1.0, 2.0]', 'float32'), 'c', npy_from_json('[1, 2]', 'int16')), 1),
  (ar('w', npy_from_json('[1.5, 2.0]', 'float32'), 'c', npy_from_json('[2, 2]', 'int16')), 2),
  (NULL, 9),
  (ar('c', npy_from_json('[1, 3]', 'int16'), 'w', npy_from_json('[1.0, 2.5]', 'float32')), 3),
  (ar('w', npy_from_json('[50, -40]', 'float32'), 'c', npy_from_json('[90, 90]', 'int16')), 4),
  (ar('w', npy_from_json('[0.5, 2.0]', 'float32'), 'c', npy_from_json('[1, 1]', 'int16')), 5),
  (ar('w', npy_from_json('[1.0, 1.5]', 'float32'), 'c', npy_from_json('[0, 2]', 'int16')), 6),
  (ar('w', npy_from_json('[-60, 70]', 'float32'), 'c', npy_from_json('[-80, 5]', 'int16')), 7);
SELECT ar_krum_scores(rec, 2) FROM u ORDER BY id;
SELECT ar_krum_scores(rec, 0) FROM u ORDER BY id;
-- Krum: the one best row; MultiKrum: the 3 best, weighted (int16 becomes float64)
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_krum(rec, n, 2) r FROM u ORDER BY id), array_record(r);
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_krum(rec, n, 2, 3) r FROM u ORDER BY id), array_record(r);
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_krum(rec, n, 1, 7) r FROM u ORDER BY id), array_record(r);
-- Bulyan with f = 1 on 7 rows: theta 5, beta 3
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_bulyan(rec, 1) r FROM u ORDER BY id), array_record(r);
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_bulyan(rec, 0) r FROM u ORDER BY id), array_record(r);
-- no rows, and records without arrays
SELECT ar_krum(rec, n, 0) IS NULL, ar_bulyan(rec, 0) IS NULL, ar_krum_scores(rec, 0) IS NULL FROM u WHERE 0;
SELECT hex(ar_krum(ar(), 1, 0)), ar_krum_scores(ar(), 0);
SELECT hex(ar_bulyan(x, 0)) FROM (SELECT ar() x UNION ALL SELECT ar() UNION ALL SELECT ar());
-- errors
SELECT ar_krum(rec, n, -1) FROM u;
SELECT ar_krum(rec, n, 7) FROM u;
SELECT ar_krum(rec, n, 1, 8) FROM u;
SELECT ar_krum(rec, n, 1, 0) FROM u;
SELECT ar_krum(rec, NULL, 1) FROM u;
SELECT ar_krum(rec, 'x', 1) FROM u;
SELECT ar_krum(rec, 0, 1) FROM u;
SELECT ar_krum(rec, n, '1') FROM u;
SELECT ar_krum(rec, n, NULL) FROM u;
SELECT ar_krum_scores(rec, id) FROM u;
SELECT ar_krum(rec, n, 1, id) FROM u;
SELECT ar_bulyan(rec, 2) FROM u;
SELECT ar_bulyan(x, 0) FROM (SELECT 'text' x);
SELECT ar_bulyan(x, 0) FROM (SELECT x'0a' x);
SELECT ar_bulyan(x, 0) FROM (SELECT ar('w', npy_from_json('[1, 2]', 'complex64')) x);
SELECT ar_krum(x, 1, 0) FROM (SELECT ar('w', npy_from_json('[0, 0]', 'float32')) x UNION ALL SELECT ar('w', npy_from_json('[0, 0, 0]', 'float32')));
SELECT ar_krum(x, 1, 0) FROM (SELECT ar('w', npy_from_json('[0, 0]', 'float32')) x UNION ALL SELECT ar('w', npy_from_json('[0, 0]', 'float64')));
SELECT ar_krum(x, 1, 0) FROM (SELECT ar('w', npy_from_json('[0, 0]', 'float32')) x UNION ALL SELECT ar('v', npy_from_json('[0, 0]', 'float32')));
SELECT ar_krum(x, 1, 0) FROM (SELECT ar('w', npy_from_json('[0, 0]', 'float32')) x UNION ALL SELECT ar('w', npy_from_json('[0, 0]', 'float32'), 'v', npy_from_json('[0, 0]', 'float32')));
SELECT ar_krum(x, 1, 0) FROM (SELECT ar('w', npy_from_json('[0, 0]', 'float32'), 'v', npy_from_json('[0, 0]', 'float32')) x UNION ALL SELECT ar('w', npy_from_json('[0, 0]', 'float32')));

-- clipping: norm 5 clipped to 1 (factor 0.2); a small update is unchanged; int becomes float64
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_clip_norm(ar('a', npy_from_json('[3, 0]', 'float32'), 'b', npy_from_json('[4]', 'int32')), 1) r), array_record(r);
SELECT npy_to_json(ar_get(ar_clip_norm(ar('a', npy_from_json('[0.3, 0.4]', 'float32')), 1), 'a'));
SELECT npy_to_json(ar_get(ar_clip_norm(ar('a', npy_from_json('[0, 0]', 'float16')), 1), 'a'));
SELECT ar_clip_norm(ar('a', npy_from_json('[1, 2]')), 0);
SELECT ar_clip_norm(ar('a', npy_from_json('[1, 2]')), -1);
SELECT ar_clip_norm(ar('a', npy_from_json('[1, 2]')), 1e999);
SELECT ar_clip_norm(ar('a', npy_from_json('[1, 2]')), 'x');
SELECT ar_clip_norm(ar('a', npy_from_json('[1, 2]', 'complex128')), 1);
SELECT ar_clip_norm(x'00', 1);
SELECT ar_clip_norm(ar('a', npy_from_json('[1, 2]')), NULL) IS NULL;

-- noise: reproducible with a seed; integer arrays unchanged; stddev 0 adds nothing
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_add_noise(ar('a', npy_from_json('[0, 0, 0]', 'float32'), 'i', npy_from_json('[1, 2]', 'int8'), 'd', npy_from_json('[0, 0]', 'float64'), 'h', npy_from_json('[0, 0]', 'float16'), 'c', npy_from_json('[[0, 0]]', 'complex64')), 1, 42) r), array_record(r);
SELECT ar_add_noise(x, 0.5, 7) = ar_add_noise(x, 0.5, 7), ar_add_noise(x, 0.5, 7) = ar_add_noise(x, 0.5, 8),
       npy_to_json(ar_get(ar_add_noise(x, 0, 7), 'a')), length(ar_add_noise(x, 1)) = length(x)
  FROM (SELECT ar('a', npy_from_json('[1, 2]', 'float32')) x);
SELECT ar_add_noise(ar('a', npy_from_json('[1, 2]')), -1, 1);
SELECT ar_add_noise(ar('a', npy_from_json('[1, 2]')), 1e999);
SELECT ar_add_noise(ar('a', npy_from_json('[1, 2]')), 1, 1.5);
SELECT ar_add_noise(x'00', 1, 1);
SELECT ar_add_noise(ar('a', npy_from_json('[1, 2]')), 1, NULL) IS NULL;
