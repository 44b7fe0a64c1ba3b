-- SPDX-License-Identifier: Apache-2.0
-- sql/views.sql — ready-made views over sql/schema.sql.
--
--   .load ./build/arrayrecord
--   .read sql/schema.sql
--   .read sql/views.sql
--
-- Client updates are full models, as Flower clients send them back; an
-- "update" below is the client model minus the global model it started
-- from (the previous round's global model).

-- Every array of every client update: shapes, dtypes, sizes.
CREATE VIEW IF NOT EXISTS update_arrays AS
SELECT u.run, u.round, u.client, a.position, a.key, a.dtype, a.shape, a.numel, a.nbytes
FROM client_updates AS u, array_record(u.rec) AS a;

-- FedAvg of each round's client models, weighted by num_examples — the
-- model Flower's FedAvg strategy would build.
CREATE VIEW IF NOT EXISTS round_fedavg AS
SELECT run, round, count(*) AS clients, sum(num_examples) AS num_examples,
       ar_mean(rec, num_examples) AS rec
FROM client_updates
GROUP BY run, round;

-- Each client's update against the global model it started from: its L2
-- norm, its cosine to the server's aggregate update (negative = it pulls
-- the other way), and the cosine of the client model to the new global model.
CREATE VIEW IF NOT EXISTS client_update_stats AS
SELECT u.run, u.round, u.client, u.num_examples,
       ar_norm(ar_sub(u.rec, prev.rec)) AS update_norm,
       ar_cosine(ar_sub(u.rec, prev.rec), ar_sub(g.rec, prev.rec)) AS cosine_to_global_update,
       ar_cosine(u.rec, g.rec) AS cosine_to_global_model
FROM client_updates AS u
JOIN global_models AS prev ON prev.run = u.run AND prev.round = u.round - 1
LEFT JOIN global_models AS g ON g.run = u.run AND g.round = u.round;

-- The same per layer: which layers each client moved, and how far.
CREATE VIEW IF NOT EXISTS layer_update_norms AS
SELECT u.run, u.round, u.client, a.key,
       npy_norm(npy_sub(ar_get(u.rec, a.key), ar_get(prev.rec, a.key))) AS update_norm
FROM client_updates AS u
JOIN global_models AS prev ON prev.run = u.run AND prev.round = u.round - 1,
     array_record(u.rec) AS a;

-- Size of the global model per round.
CREATE VIEW IF NOT EXISTS model_sizes AS
SELECT run, round, ar_len(rec) AS arrays, ar_numel(rec) AS parameters,
       length(rec) AS bytes, ar_count_bytes(rec) AS count_bytes
FROM global_models;
