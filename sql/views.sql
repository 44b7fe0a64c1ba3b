-- SPDX-License-Identifier: Apache-2.0
-- sql/views.sql — ready-made views over sql/schema.sql.
--
--   .load ./build/arrayrecord
--   .read sql/schema.sql
--   .read sql/views.sql
--
-- Client updates are full models, as Flower clients send them back; an
-- "update" below is the client model minus the global model it started
-- from (the previous round's global model). The views need only the columns
-- of client_updates(run, round, client, num_examples, metrics, rec) and
-- global_models(run, round, rec), whether tables or views.
--
-- Scale-safe: models may be large (a resnet18 record is 45 MB), so no view
-- sorts, groups or materializes rows that carry a record BLOB through a
-- temporary B-tree (client_update_stats groups per-key numbers only), and
-- per-key numbers come from ar_compare(a, b [, base]), which reads each
-- record once per row (ar_get(rec, key) per key would make SQLite read the
-- whole BLOB again for every key). tests/python/test_scale_safe.py
-- checks the query plans and the temporary space of every view. Whole-model
-- numbers are sums over ar_compare's rows; they use SQLite's sqrt()
-- (SQLite 3.35 or newer built with its math functions, as the sqlite3 shell
-- and Python's sqlite3 are).
--
-- PyTorch buffers. A state_dict holds BatchNorm's running statistics
-- (*.running_mean, *.running_var) and counters (*.num_batches_tracked, int64)
-- beside the trained parameters; they move for other reasons than training
-- and dominate "largest change" rankings. layer_update_norms marks them with
-- is_buffer = 1 (a key ending in running_mean, running_var or
-- num_batches_tracked, or an array of an integer or bool dtype, which no
-- trained parameter has); the recipes of sql/queries.sql that rank layers
-- leave them out unless told otherwise. The whole-model numbers of
-- client_update_stats cover every array, buffers included, as ar_norm does.

-- Every array of every client update: shapes, dtypes, sizes.
CREATE VIEW IF NOT EXISTS update_arrays AS
SELECT u.run, u.round, u.client, a.position, a.key, a.dtype, a.shape, a.numel, a.nbytes
FROM client_updates AS u, array_record(u.rec) AS a;

-- FedAvg of each round's client models, weighted by num_examples — the
-- model Flower's FedAvg strategy would build. The GROUP BY reads the
-- (run, round) primary key's index in order: no sort, one model's
-- accumulators in memory.
CREATE VIEW IF NOT EXISTS round_fedavg AS
SELECT run, round, count(*) AS clients, sum(num_examples) AS num_examples,
       ar_mean(rec, num_examples) AS rec
FROM client_updates
GROUP BY run, round;

-- Each client's update against the global model it started from: its L2
-- norm, its cosine to the server's aggregate update (negative = it pulls
-- the other way), and the cosine of the client model to the new global model.
-- With u the client model, p the previous global model and g the new one:
-- update_norm = |u - p|, cosine_to_global_update = cos(u - p, g - p),
-- cosine_to_global_model = cos(u, g): sums over the keys of one
-- ar_compare(u, g, p) per client update (its rows against the base p: a
-- single pass over the three records, each read once), the differences
-- exact in double, not rounded to float32 as ar_sub's would be. NULL when g
-- is not stored (u is then compared with the empty record x''), or a norm
-- is 0. The GROUP BY groups those per-key rows, numbers only: num_examples
-- is read after grouping, by a subquery on the group's (run, round,
-- client), so no grouped row carries the update's RecordDict.
CREATE VIEW IF NOT EXISTS client_update_stats AS
SELECT u.run, u.round, u.client,
       (SELECT v.num_examples FROM client_updates AS v WHERE v.run = u.run AND v.round = u.round AND v.client = u.client)
         AS num_examples,
       sqrt(sum(c.norm_a_base * c.norm_a_base)) AS update_norm,
       sum(c.dot_base) / (sqrt(sum(c.norm_a_base * c.norm_a_base)) * sqrt(sum(c.norm_b_base * c.norm_b_base)))
         AS cosine_to_global_update,
       sum(c.dot) / (sqrt(sum(c.norm_a * c.norm_a)) * sqrt(sum(c.norm_b * c.norm_b))) AS cosine_to_global_model
FROM client_updates AS u
JOIN global_models AS prev ON prev.run = u.run AND prev.round = u.round - 1
LEFT JOIN global_models AS g ON g.run = u.run AND g.round = u.round,
     ar_compare(u.rec, coalesce(g.rec, x''), prev.rec) AS c
GROUP BY u.run, u.round, u.client;

-- The same per layer: which layers each client moved, and how far
-- (update_norm = |u - p| of that key), one ar_compare pass per client
-- update. is_buffer marks PyTorch buffers (see above): filter with
-- "WHERE NOT is_buffer" to rank trained parameters only. Keys of the
-- client model only (not in the previous global model) give a NULL norm.
CREATE VIEW IF NOT EXISTS layer_update_norms AS
SELECT u.run, u.round, u.client, c.key, c.norm_diff AS update_norm,
       (c.key GLOB '*running_mean' OR c.key GLOB '*running_var' OR c.key GLOB '*num_batches_tracked'
        OR c.dtype GLOB '*int*' OR c.dtype = 'bool') AS is_buffer
FROM client_updates AS u
JOIN global_models AS prev ON prev.run = u.run AND prev.round = u.round - 1,
     ar_compare(u.rec, prev.rec) AS c
WHERE c.position IS NOT NULL;

-- Size of the global model per round: arrays, parameters (ar_numel),
-- bytes, and Flower's count_bytes (ar_count_bytes: stored data plus key
-- lengths), from one array_record pass per model (each function of the
-- record on its own would make SQLite read the BLOB again for each); the
-- GROUP BY follows the primary key. bytes is read once per model, after
-- grouping (inside the aggregate it would be read again for every array:
-- in the packed store, unpacked again).
CREATE VIEW IF NOT EXISTS model_sizes AS
SELECT g.run, g.round, count(a.key) AS arrays, coalesce(sum(a.numel), 0) AS parameters,
       (SELECT length(x.rec) FROM global_models AS x WHERE x.run = g.run AND x.round = g.round) AS bytes,
       coalesce(sum(a.nbytes + length(a.key)), 0) AS count_bytes
FROM global_models AS g LEFT JOIN array_record(g.rec) AS a
GROUP BY g.run, g.round;
