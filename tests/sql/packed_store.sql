-- prelude: sql/schema.sql
-- SPDX-License-Identifier: Apache-2.0
-- The packed store of sql/schema.sql (its prelude): writes through the views replies,
-- global_models and client_updates packed into reply_store and model_store, read back bit for
-- bit; the raw store's refusals; a base deleted or changed first repacks the replies packed
-- against it; runs.options' packed and lossy. (tests/python/test_store.py compares every view
-- and recipe with the raw store's; this file also runs under out-of-memory injection.)
INSERT INTO runs(run, name, options) VALUES (1, 'a', NULL), (2, 'raw', '{"packed": false}'), (3, 'lossy', '{"lossy": "float16"}');
INSERT INTO clients(client) VALUES ('c0'), ('c1');
CREATE TEMP TABLE src(round INTEGER PRIMARY KEY, rec BLOB);
INSERT INTO src SELECT 0, readfile('tests/data/records/mlp_dict.pb');
INSERT INTO src SELECT round + 1, ar_add_noise(rec, 0.01, round + 1) FROM src;
INSERT INTO src SELECT round + 1, ar_add_noise(rec, 0.01, round + 1) FROM src WHERE round = 1;
INSERT INTO rounds(run, round) SELECT r.run, s.round FROM runs r, src s;
INSERT INTO global_models SELECT r.run, s.round, s.rec FROM runs r, src s;
INSERT INTO client_updates(run, round, client, num_examples, metrics, rec)
  SELECT r.run, s.round, 'c' || c.value, 10 + c.value, '{"loss": 0.5}', ar_add_noise(p.rec, 0.001, 10 * s.round + c.value)
  FROM runs r, src s JOIN src p ON p.round = s.round - 1, json_each('[0, 1]') c WHERE r.run <> 2 OR c.value = 0;
INSERT INTO replies(run, round, phase, pos, client, content, error_code, error_reason)
  VALUES (1, 2, 'evaluate', 0, 'c0', rd('metrics', 'metric', '{"num-examples": 5, "acc": 0.9}'), NULL, NULL),
         (1, 1, 'evaluate', 0, 'c0', NULL, 3, 'lost');
-- what is stored: run 1 packed (replies against the model of the round before), run 2 as it is
SELECT run, round, packed FROM model_store ORDER BY run, round;
SELECT run, round, phase, pos, packed, base_round, metrics, content IS NULL, error_code,
       CASE WHEN packed THEN json_extract(ar_pack_info(content), '$.lossy') END
FROM reply_store ORDER BY run, round, phase, pos;
-- read back: global models bit for bit in every run; client updates bit for bit where not lossy
SELECT g.run, count(*), sum(g.rec = s.rec) FROM global_models g JOIN src s USING (round) GROUP BY g.run;
SELECT u.run, count(*), sum(u.rec = ar_add_noise(p.rec, 0.001, 10 * u.round + CAST(substr(u.client, 2) AS INTEGER))),
       sum(ar_allclose(u.rec, ar_add_noise(p.rec, 0.001, 10 * u.round + CAST(substr(u.client, 2) AS INTEGER)), 0, 1e-5)),
       sum(u.num_examples), group_concat(DISTINCT u.metrics)
FROM client_updates u JOIN src p ON p.round = u.round - 1 GROUP BY u.run;
SELECT rd_metrics(content) FROM replies WHERE run = 1 AND phase = 'evaluate' AND content IS NOT NULL;
-- every reader of a stored row says what it holds
SELECT ar_len(rec) FROM model_store WHERE run = 1 AND round = 1;
-- the raw store's refusals, with the reason
INSERT INTO global_models VALUES (1, 3, x'');
INSERT INTO global_models VALUES (1, 3, NULL);
INSERT INTO replies(run, round, pos, client, content) VALUES (1, 1, 9, 'c0', x'0a05');
INSERT INTO replies(run, round, pos, client) VALUES (1, 1, 9, 'c0');
INSERT INTO global_models SELECT 1, 1, rec FROM src WHERE round = 0;
-- a base deleted, a base changed: the replies packed against it lose their base and read the same
CREATE TEMP TABLE before AS SELECT run, round, phase, pos, content FROM replies WHERE run = 1;
DELETE FROM global_models WHERE run = 1 AND round = 1;
UPDATE global_models SET rec = (SELECT rec FROM src WHERE round = 2) WHERE run = 1 AND round = 0;
SELECT round, pos, packed, base_round FROM reply_store WHERE run = 1 AND phase = 'train' ORDER BY round, pos;
SELECT count(*), sum(r.content IS b.content) FROM replies r JOIN before b USING (run, round, phase, pos);
-- a reply rewritten and deleted; a round deleted; a run deleted
UPDATE replies SET pos = 7 WHERE run = 3 AND round = 1 AND phase = 'train' AND pos = 0;
DELETE FROM replies WHERE run = 3 AND round = 2;
DELETE FROM rounds WHERE run = 2 AND round = 2;
DELETE FROM runs WHERE run = 1;
SELECT run, round, phase, pos FROM reply_store ORDER BY run, round, phase, pos;
SELECT run, round FROM model_store ORDER BY run, round;
