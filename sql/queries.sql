-- SPDX-License-Identifier: Apache-2.0
-- sql/queries.sql — a cookbook of questions people ask of a federated
-- experiment, over sql/schema.sql and sql/views.sql.
--
-- Each recipe starts with a "-- name:" line. Parameters are named:
--   :run      a run (every recipe)
--   :round    a round (largest_updates, export_layer, replay_strategies)
--   :key      a layer's key in the record (export_layer)
--   :round_a  :round_b   the two rounds to compare (diff_checkpoints)
--   :strategy_a  :strategy_b   two server strategies, 'fedavg', 'fedavgm',
--             'fedadam', 'fedyogi' or 'fedadagrad' (replay_strategies)
--   :options_a  :options_b     their options as JSON, '{}' for Flower's
--             defaults, e.g. '{"eta": 0.05}' (replay_strategies)
--   :state_a  :state_b   the two strategies' states after round :round - 1,
--             as the previous step returned them (replay_strategies; unused,
--             and may be NULL, in round 0)
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

-- Scale-safe, as sql/views.sql: no recipe sorts, groups or materializes
-- rows that carry a record BLOB (the only sorts are of the final rows, which
-- hold numbers and keys); a record that a recipe needs several times is read
-- once, through a scalar subquery that depends on parameters only (SQLite
-- evaluates it once per statement). Recipes that rank layers leave PyTorch
-- buffers out (see sql/views.sql): delete their "NOT is_buffer" line to
-- include them.

-- name: layer_norm_jumps
-- Which layer's weights jumped? The L2 norm of every layer of the global
-- model per round against the previous round (round - 1), ratios above 1.5
-- first. Trained parameters only: BatchNorm's running statistics and
-- integer counters are left out (delete the "is_buffer" line to see them).
SELECT g.round, c.key, round(c.norm_b, 4) AS previous, round(c.norm_a, 4) AS norm,
       round(c.norm_a / c.norm_b, 2) AS ratio
FROM global_models AS g
JOIN global_models AS p ON p.run = g.run AND p.round = g.round - 1,
     ar_compare(g.rec, p.rec) AS c
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL
  AND g.run = :run
  AND NOT (c.key GLOB '*running_mean' OR c.key GLOB '*running_var' OR c.key GLOB '*num_batches_tracked' OR c.dtype GLOB '*int*' OR c.dtype = 'bool') -- is_buffer
  AND c.norm_b > 0 AND c.norm_a / c.norm_b > 1.5
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
-- The largest client updates of a round, layer by layer (trained
-- parameters only, delete the "is_buffer" line to rank buffers too).
SELECT client, key, round(update_norm, 4) AS update_norm
FROM layer_update_norms
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL AND coalesce(:round, json_extract('{}', 'parameter :round is not set')) IS NOT NULL
  AND run = :run AND round = :round
  AND NOT is_buffer
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
-- allclose tolerances. Every key the two have in common, buffers included
-- (a checkpoint diff). One ar_compare pass over the two records; allclose
-- (rtol 1e-5, atol 1e-8, against round_a's array) follows from its numbers
-- when they settle it with a factor 2 to spare: a largest difference of at
-- most atol / 2 is close, one above twice atol + rtol * (the L2 norm of
-- round_a's array, which bounds every element) is not. Only in between, or
-- with NaN or Inf, does npy_allclose compare the two arrays, reading both
-- records again for that key. The two rows are joined, not fetched by
-- scalar subqueries: SQLite hands a table's column to ar_compare as it
-- read it, where it would copy a subquery's value once more.
SELECT c.key, round(c.norm_diff, 6) AS l2_of_difference,
       round(c.max_abs_diff, 6) AS max_abs_change,
       coalesce(CASE WHEN c.nonfinite_a + c.nonfinite_b > 0 OR c.max_abs_diff IS NULL THEN NULL
                     WHEN c.max_abs_diff <= 0.5e-8 THEN 1
                     WHEN c.max_abs_diff > 2 * (1e-8 + 1e-5 * c.norm_b) THEN 0 END,
                npy_allclose(ar_get(b.rec, c.key), ar_get(a.rec, c.key))) AS allclose
FROM global_models AS b, global_models AS a, ar_compare(b.rec, a.rec) AS c
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL AND coalesce(:round_a, json_extract('{}', 'parameter :round_a is not set')) IS NOT NULL AND coalesce(:round_b, json_extract('{}', 'parameter :round_b is not set')) IS NOT NULL
  AND b.run = :run AND b.round = :round_b AND a.run = :run AND a.round = :round_a
  AND c.position IS NOT NULL AND c.b_position IS NOT NULL
ORDER BY c.norm_diff DESC;

-- name: fedavg_check
-- Recompute a round's FedAvg from the client updates and compare it with
-- the global model the server stored (the round_fedavg view's numbers, one
-- round at a time: no round's mean is held beyond its row). lossy_replies
-- is NULL for a run whose replies are stored exactly, else the float they
-- were stored as (LoggingStrategy(lossy=...)): such a run's global models
-- are not the FedAvg of its stored replies, and need not match.
SELECT g.round,
       (SELECT count(*) FROM client_updates AS u WHERE u.run = g.run AND u.round = g.round) AS clients,
       (SELECT sum(u.num_examples) FROM client_updates AS u WHERE u.run = g.run AND u.round = g.round) AS num_examples,
       ar_allclose((SELECT ar_mean(u.rec, u.num_examples) FROM client_updates AS u WHERE u.run = g.run AND u.round = g.round),
                   g.rec, 1e-5, 1e-6) AS matches_stored_global_model,
       json_extract((SELECT options FROM runs WHERE run = g.run), '$.lossy') AS lossy_replies
FROM global_models AS g
WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL
  AND g.run = :run
  AND EXISTS (SELECT 1 FROM client_updates AS u WHERE u.run = g.run AND u.round = g.round)
ORDER BY g.round;

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
-- Replay a run's logged client updates under two server strategies, one
-- round per statement: the caller runs it for :round = 0, 1, 2, ... and
-- passes back the two states it returned (examples/replay_strategies.py
-- does). Round 0 gives the run's round-0 global model as both states, round
-- r gives ar_server_step(strategy, state after round r - 1, FedAvg of round
-- r's updates, r), as Flower's ServerApp loop computes it. Columns: the
-- round, the two new states (RecordDicts) and how far apart the two global
-- models are (L2 norm of their difference). No row once the run has no
-- updates for :round. Only two states are held at a time, in the caller.
-- SQLite copies a value each time a subquery's column is used (a state is
-- up to a few hundred MB), so each is used as few times as it can be: the
-- FedAvg once per strategy, each new state once as a column and once for
-- the distance, and whether there is a row at all is asked of the tables'
-- keys (EXISTS), not of the states. With a LIMIT on s and on the outer
-- query SQLite runs s as a co-routine (each state computed once); with only
-- the inner one it would substitute s's expressions for s.a and s.b, and
-- step each strategy twice, once for the column and once for the distance.
SELECT :round AS round, s.a AS state_a, s.b AS state_b,
       round((SELECT sqrt(sum(c.norm_diff * c.norm_diff))
              FROM ar_compare(rd_array_record(s.a, 'arrays'), rd_array_record(s.b, 'arrays')) AS c), 6) AS distance
FROM (SELECT CASE WHEN :round = 0 THEN rd('arrays', 'array', m.rec)
                  ELSE ar_server_step(:strategy_a, :state_a, m.agg, :round, :options_a) END AS a,
             CASE WHEN :round = 0 THEN rd('arrays', 'array', m.rec)
                  ELSE ar_server_step(:strategy_b, :state_b, m.agg, :round, :options_b) END AS b
      FROM (SELECT (SELECT rec FROM global_models WHERE run = :run AND round = 0 AND :round = 0) AS rec,
                   (SELECT ar_mean(rec, num_examples) FROM client_updates WHERE run = :run AND round = :round AND :round > 0) AS agg) AS m
      WHERE coalesce(:run, json_extract('{}', 'parameter :run is not set')) IS NOT NULL
        AND coalesce(:round, json_extract('{}', 'parameter :round is not set')) IS NOT NULL
        AND coalesce(:strategy_a, json_extract('{}', 'parameter :strategy_a is not set')) IS NOT NULL
        AND coalesce(:strategy_b, json_extract('{}', 'parameter :strategy_b is not set')) IS NOT NULL
        AND coalesce(:options_a, json_extract('{}', 'parameter :options_a is not set')) IS NOT NULL
        AND coalesce(:options_b, json_extract('{}', 'parameter :options_b is not set')) IS NOT NULL
        AND coalesce(:state_a, CASE WHEN :round = 0 THEN 0 END, json_extract('{}', 'parameter :state_a is not set')) IS NOT NULL
        AND coalesce(:state_b, CASE WHEN :round = 0 THEN 0 END, json_extract('{}', 'parameter :state_b is not set')) IS NOT NULL
        AND CASE WHEN :round = 0 THEN EXISTS (SELECT 1 FROM global_models WHERE run = :run AND round = 0)
                 ELSE EXISTS (SELECT 1 FROM client_updates WHERE run = :run AND round = :round) END
      LIMIT 1) AS s
LIMIT 1;
