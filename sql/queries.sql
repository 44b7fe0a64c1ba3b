-- SPDX-License-Identifier: Apache-2.0
-- sql/queries.sql — a cookbook of questions people ask of a federated
-- experiment, over sql/schema.sql and sql/views.sql.
--
-- Each recipe starts with a "-- name:" line. Parameters are named:
--   :run      a run (every recipe)
--   :round    a round (largest_updates, export_layer)
--   :key      a layer's key in the record (export_layer)
--   :round_a  :round_b   the two rounds to compare (diff_checkpoints)
--   :strategy_a  :strategy_b   two server strategies, 'fedavg', 'fedavgm',
--             'fedadam', 'fedyogi' or 'fedadagrad' (replay_strategies)
--   :options_a  :options_b     their options as JSON, '{}' for Flower's
--             defaults, e.g. '{"eta": 0.05}' (replay_strategies)
-- In the sqlite3 shell set them first, e.g.
--   .param set :run 1
--   .param set :round 3
-- From Python pass a dict: con.execute(sql, {"run": 1, "round": 3}).
-- A parameter left unset is NULL, which would match no row and print
-- nothing; instead each recipe stops with "JSON path error near 'parameter
-- :run is not set'": its WHERE clause starts with a constant guard,
--   coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL
-- that SQLite evaluates once before reading any row, and that raises (the
-- text is an invalid JSON path) only when the parameter is NULL. Plain SQL,
-- so it works in any SQLite (RAISE() exists in triggers only).

-- name: layer_norm_jumps
-- Which layer's weights jumped? The L2 norm of every layer of the global
-- model per round against the previous round, ratios above 1.5 first.
WITH norms AS (
  SELECT g.run, g.round, a.key, npy_norm(ar_get(g.rec, a.key)) AS norm
  FROM global_models AS g, array_record(g.rec) AS a
  WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL
    AND g.run = :run
), steps AS (
  SELECT run, round, key, norm,
         lag(norm) OVER (PARTITION BY run, key ORDER BY round) AS previous
  FROM norms
)
SELECT round, key, round(previous, 4) AS previous, round(norm, 4) AS norm,
       round(norm / previous, 2) AS ratio
FROM steps
WHERE previous > 0 AND norm / previous > 1.5
ORDER BY ratio DESC;

-- name: clients_against_consensus
-- Which clients pull away from the consensus? Updates whose cosine to the
-- server's aggregate update is negative, worst first.
SELECT round, client, round(update_norm, 4) AS update_norm,
       round(cosine_to_global_update, 4) AS cosine
FROM client_update_stats
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL
  AND run = :run AND cosine_to_global_update < 0
ORDER BY cosine_to_global_update;

-- name: largest_updates
-- The largest client updates of a round, layer by layer.
SELECT client, key, round(update_norm, 4) AS update_norm
FROM layer_update_norms
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL AND coalesce(:round, json_extract('{}', 'parameter :round is not set')) IS NOT NULL
  AND run = :run AND round = :round
ORDER BY update_norm DESC
LIMIT 5;

-- name: export_layer
-- Export one layer of a global model as a .npy file that numpy.load reads
-- (writefile is the sqlite3 shell's; the file goes to the current directory).
SELECT writefile(:key || '-round' || round || '.npy', ar_get(rec, :key)) AS bytes_written
FROM global_models
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL AND coalesce(:round, json_extract('{}', 'parameter :round is not set')) IS NOT NULL AND coalesce(:key, json_extract('{}', 'parameter :key is not set')) IS NOT NULL
  AND run = :run AND round = :round;

-- name: diff_checkpoints
-- What changed between two checkpoints? Per layer: L2 of the difference,
-- largest absolute change, and whether they are equal within NumPy's
-- allclose tolerances.
SELECT s.key, round(s.l2, 6) AS l2_of_difference,
       round(max(abs(s.min), abs(s.max)), 6) AS max_abs_change,
       npy_allclose(ar_get(b.rec, s.key), ar_get(a.rec, s.key)) AS allclose
FROM global_models AS a, global_models AS b, ar_stats(ar_sub(b.rec, a.rec)) AS s
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL AND coalesce(:round_a, json_extract('{}', 'parameter :round_a is not set')) IS NOT NULL AND coalesce(:round_b, json_extract('{}', 'parameter :round_b is not set')) IS NOT NULL
  AND a.run = :run AND a.round = :round_a AND b.run = :run AND b.round = :round_b
ORDER BY s.l2 DESC;

-- name: fedavg_check
-- Recompute a round's FedAvg from the client updates and compare it with
-- the global model the server stored.
SELECT f.round, f.clients, f.num_examples,
       ar_allclose(f.rec, g.rec, 1e-5, 1e-6) AS matches_stored_global_model
FROM round_fedavg AS f
JOIN global_models AS g USING (run, round)
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL
  AND f.run = :run
ORDER BY f.round;

-- name: shrink_to_float16
-- Shrink the stored global models of a run to float16 (floating arrays
-- only; integer arrays keep their dtype). Bytes before and after:
SELECT sum(length(rec)) AS bytes_before, sum(length(ar_cast(rec, 'float16'))) AS bytes_after
FROM global_models
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL
  AND run = :run;
-- and to do it (uncomment):
-- UPDATE global_models SET rec = ar_cast(rec, 'float16') WHERE run = :run;

-- name: replay_strategies
-- Replay a run's logged client updates under two server strategies, from
-- the run's round-0 global model: the state after round r is
-- ar_server_step(strategy, state after round r - 1, FedAvg of round r's
-- updates, r), as Flower's ServerApp loop computes it. Per round, how far
-- apart the two global models are (L2 norm of their difference).
WITH RECURSIVE replay(round, a, b) AS (
  SELECT 0, rd('arrays', 'array', rec), rd('arrays', 'array', rec)
  FROM global_models
  WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL
    AND coalesce(:strategy_a, json_extract('{}', 'parameter :strategy_a is not set')) IS NOT NULL
    AND coalesce(:strategy_b, json_extract('{}', 'parameter :strategy_b is not set')) IS NOT NULL
    AND coalesce(:options_a, json_extract('{}', 'parameter :options_a is not set')) IS NOT NULL
    AND coalesce(:options_b, json_extract('{}', 'parameter :options_b is not set')) IS NOT NULL
    AND run = :run AND round = 0
  UNION ALL
  SELECT p.round + 1,
         ar_server_step(:strategy_a, p.a, f.agg, p.round + 1, :options_a),
         ar_server_step(:strategy_b, p.b, f.agg, p.round + 1, :options_b)
  FROM replay AS p,
       (SELECT round, ar_mean(rec, num_examples) AS agg FROM client_updates WHERE run = :run GROUP BY round) AS f
  WHERE f.round = p.round + 1
)
SELECT round, round(ar_norm(ar_sub(rd_array_record(a, 'arrays'), rd_array_record(b, 'arrays'))), 6) AS distance
FROM replay
ORDER BY round;
