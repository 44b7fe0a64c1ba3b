-- SPDX-License-Identifier: Apache-2.0
-- examples/tour.sql — a walk through sqlite-arrayrecord in the sqlite3 shell.
-- Run it whole with   sqlite3 < examples/tour.sql   (from the repository root,
-- after make), or paste it piece by piece.
.bail on
.load ./build/arrayrecord
.headers on
.mode column

-- 1. Arrays are .npy BLOBs, exactly what numpy.save writes.
.print '-- 1. arrays'
SELECT npy_dtype(a) AS dtype, npy_shape(a) AS shape, npy_nbytes(a) AS payload, length(a) AS file_bytes,
       npy_to_json(a) AS "values"
FROM (SELECT npy_from_json('[[1.5, -2], [0.25, 4]]', 'float32') AS a);

-- 2. A record is Flower's ArrayRecord protobuf: build one, look inside.
.print
.print '-- 2. records'
CREATE TEMP TABLE models(name TEXT PRIMARY KEY, rec BLOB);
INSERT INTO models VALUES
  ('init', ar('fc.weight', npy_from_json('[[0.5, -1.0], [2.0, 0.25]]', 'float32'),
              'fc.bias',   npy_from_json('[0.1, 0.2]', 'float32'),
              'steps',     npy_from_json('0', 'int64')));
SELECT name, ar_len(rec) AS arrays, ar_keys(rec) AS keys, ar_count_bytes(rec) AS count_bytes,
       ar_object_id(rec) AS flower_object_id
FROM models;
SELECT a.position, a.key, a.dtype, a.shape, a.nbytes FROM models m, array_record(m.rec) a;

-- 3. Edit records: set, delete, rename, merge, select by GLOB.
.print
.print '-- 3. editing'
SELECT ar_keys(ar_set(rec, 'fc.bias', npy_from_json('[0, 0]', 'float32'))) AS after_set,
       ar_keys(ar_delete(rec, 'steps')) AS after_delete,
       ar_keys(ar_rename(rec, 'steps', 'num_steps')) AS after_rename,
       ar_keys(ar_select(rec, 'fc.*')) AS selected
FROM models WHERE name = 'init';

-- 4. Math on arrays and on whole records, key by key.
.print
.print '-- 4. math'
SELECT npy_to_json(npy_add(w, w)) AS "w + w", round(npy_norm(w), 4) AS l2, npy_max(w) AS max,
       npy_to_json(npy_cast(w, 'float16')) AS as_f16
FROM (SELECT ar_get(rec, 'fc.weight') AS w FROM models WHERE name = 'init');
INSERT INTO models SELECT 'trained', ar_add(rec, ar_scale(rec, 0.1)) FROM models WHERE name = 'init';
SELECT round(ar_norm(ar_sub(t.rec, i.rec)), 6) AS update_norm, round(ar_cosine(t.rec, i.rec), 6) AS cosine,
       ar_numel(t.rec) AS parameters
FROM models t, models i WHERE t.name = 'trained' AND i.name = 'init';

-- 5. Federated aggregation over rows: FedAvg, FedMedian, FedTrimmedAvg.
.print
.print '-- 5. aggregates'
CREATE TEMP TABLE updates(client TEXT, n INTEGER, rec BLOB);
INSERT INTO updates
SELECT 'c' || value, 100 * value,
       ar('fc.weight', npy_from_json(json_array(json_array(value, 0), json_array(0, value)), 'float32'))
FROM generate_series(1, 5);
SELECT npy_to_json(ar_get(ar_mean(rec, n), 'fc.weight')) AS fedavg,
       npy_to_json(ar_get(ar_median(rec), 'fc.weight')) AS fedmedian,
       npy_to_json(ar_get(ar_trimmed_mean(rec, 0.2), 'fc.weight')) AS trimmed
FROM updates;
SELECT s.key, s.min, s.max, round(s.mean, 3) AS mean, round(s.l2, 3) AS l2, s.nonfinite
FROM (SELECT ar_mean(rec, n) AS r FROM updates) AS m, ar_stats(m.r) AS s;

-- 6. Other formats: safetensors and .npz round trips, Flower's object store.
.print
.print '-- 6. formats'
SELECT ar_from_safetensors(ar_to_safetensors(rec)) = rec AS safetensors_round_trip,
       ar_from_npz(ar_to_npz(rec, 1)) = rec AS npz_round_trip,
       (SELECT count(*) FROM ar_objects(rec)) AS flower_objects
FROM models WHERE name = 'init';

-- 7. Export an array for NumPy: numpy.load('build/tour-fc.weight.npy').
.print
.print '-- 7. export'
SELECT writefile('build/tour-fc.weight.npy', ar_get(rec, 'fc.weight')) AS bytes_written
FROM models WHERE name = 'trained';
