-- SPDX-License-Identifier: Apache-2.0
-- examples/demo.sql — the main job end to end (run by `make demo`).
--
-- Three federated clients send a small MLP as Flower ArrayRecords; we keep
-- them in SQLite, look inside them, aggregate them with FedAvg in one
-- SELECT, assemble a record from per-layer rows, and export one array as a
-- .npy file that numpy.load reads.
.bail on
.load ./build/arrayrecord
.mode box
.headers on

CREATE TABLE updates(round INTEGER, client TEXT, num_examples INTEGER, rec BLOB);

-- Deterministic stand-in weights: a 4x3 matrix per client as nested JSON.
CREATE TEMP VIEW weights AS
SELECT salt, json_group_array(json(row_json)) AS matrix
FROM (SELECT salt, r.value AS r,
             (SELECT json_group_array(round(sin(r.value * 3 + c.value + salt), 4))
              FROM generate_series(0, 2) AS c) AS row_json
      FROM (SELECT 1 AS salt UNION ALL SELECT 2 UNION ALL SELECT 3), generate_series(0, 3) AS r
      ORDER BY salt, r.value)
GROUP BY salt;

-- Each client's update is a Flower ArrayRecord built from .npy arrays.
INSERT INTO updates
SELECT 1, client, num_examples,
       ar('fc1.weight', npy_from_json(w.matrix, 'float32'),
          'fc1.bias',   npy_from_json(json_array(0.1 * c.salt, -0.2, 0.3 / c.salt, 0.05), 'float32'),
          'fc2.weight', npy_from_json((SELECT json_group_array(round(cos(value + c.salt), 4))
                                       FROM generate_series(0, 7)), 'float32'),
          'step',       npy_from_json(c.salt * 100, 'int64'))
FROM (SELECT 'alice' AS client, 120 AS num_examples, 1 AS salt
      UNION ALL SELECT 'bob', 80, 2
      UNION ALL SELECT 'carol', 200, 3) AS c
JOIN weights AS w USING (salt);

.print
.print '== The updates table: one Flower ArrayRecord BLOB per client'
SELECT client, num_examples, length(rec) AS bytes, ar_len(rec) AS arrays,
       ar_keys(rec) AS keys, ar_count_bytes(rec) AS count_bytes, ar_valid(rec) AS valid
FROM updates;

.print
.print '== Every array of every update, with the array_record table'
SELECT u.client, a.position, a.key, a.dtype, a.shape, a.numel, a.nbytes
FROM updates AS u, array_record(u.rec) AS a
WHERE u.client IN ('alice', 'bob');

.print
.print '== Values of one array'
SELECT client, npy_to_json(ar_get(rec, 'fc1.bias')) AS "fc1.bias",
       npy_item(ar_get(rec, 'step'), 0) AS step
FROM updates;

.print
.print '== FedAvg of the round, weighted by num_examples, in one SELECT'
CREATE TABLE global_models(round INTEGER PRIMARY KEY, rec BLOB);
INSERT INTO global_models SELECT round, ar_mean(rec, num_examples) FROM updates GROUP BY round;
SELECT s.key, s.dtype, s.shape, round(s.mean, 4) AS mean, round(s.l2, 4) AS l2,
       CASE WHEN s.numel <= 4 THEN npy_to_json(ar_get(g.rec, s.key)) END AS "values"
FROM global_models AS g, ar_stats(g.rec) AS s;

.print
.print '== How far each client is from the new global model (weights only: fc*)'
SELECT u.client, round(ar_norm(ar_sub(ar_select(u.rec, 'fc*'), ar_select(g.rec, 'fc*'))), 4) AS l2_distance,
       round(ar_cosine(ar_select(u.rec, 'fc*'), ar_select(g.rec, 'fc*')), 4) AS cosine
FROM updates AS u JOIN global_models AS g USING (round);

.print
.print '== Assemble a checkpoint from per-layer rows with ar_agg (row order kept)'
CREATE TABLE layers(position INTEGER, name TEXT, npy BLOB);
INSERT INTO layers SELECT a.position, a.key, ar_get(u.rec, a.key)
  FROM updates AS u, array_record(u.rec) AS a
  WHERE u.client = 'carol' AND a.key LIKE 'fc%';
CREATE TABLE checkpoints(name TEXT, rec BLOB);
INSERT INTO checkpoints SELECT 'carol-fc-only', ar_agg(name, npy)
  FROM (SELECT name, npy FROM layers ORDER BY position);
SELECT name, ar_keys(rec) AS keys, length(rec) AS bytes,
       rec = ar_select((SELECT rec FROM updates WHERE client = 'carol'), 'fc*') AS same_as_ar_select
FROM checkpoints;

.print
.print '== Export fc1.weight of alice as a .npy file'
SELECT writefile('build/demo-fc1.weight.npy', ar_get(rec, 'fc1.weight')) AS bytes_written,
       npy_dtype(ar_get(rec, 'fc1.weight')) AS dtype, npy_shape(ar_get(rec, 'fc1.weight')) AS shape
FROM updates WHERE client = 'alice';
.print 'Load it in Python with: numpy.load("build/demo-fc1.weight.npy", allow_pickle=False)'
