-- SPDX-License-Identifier: Apache-2.0
-- Flower's strategies: rd_mean (FedAvg.aggregate_train) and ar_server_step
-- (FedAvgM, FedAdam, FedYogi, FedAdagrad); NULLs and every error.

CREATE TABLE replies(rnd INTEGER, content BLOB);
INSERT INTO replies VALUES
  (1, rd('arrays', 'array', ar('w', npy_from_json('[[1, 2], [3, 4]]', 'float32'), 'b', npy_from_json('[1]', 'float64')),
         'metrics', 'metric', '{"num-examples": 1, "loss": 0.5, "acc": [1, 2]}')),
  (1, rd('arrays', 'array', ar('w', npy_from_json('[[3, 4], [5, 6]]', 'float32'), 'b', npy_from_json('[3]', 'float64')),
         'metrics', 'metric', '{"num-examples": 3, "loss": 1.5, "acc": [3, 4]}')),
  (2, rd('arrays', 'array', ar('b', npy_from_json('[2]', 'float64'), 'w', npy_from_json('[[2, 2], [2, 2]]', 'float32')),
         'metrics', 'metric', '{"num-examples": 2.5, "loss": 1, "acc": [0, 0]}', 'config', 'config', '{"x": "ignored"}'));
SELECT rnd, rd_keys(rd_mean(content)), rd_metrics(rd_mean(content)), npy_to_json(ar_get(rd_array_record(rd_mean(content)), 'w')) FROM replies GROUP BY rnd;
SELECT hex(rd_mean(content)) FROM replies WHERE rnd = 1;
SELECT rd_metrics(rd_mean(content, 'loss')) FROM replies;
SELECT npy_to_json(ar_get(rd_array_record(rd_mean(rd('g', 'array', ar('x', npy_from_json(v, t)), 'm', 'metric', '{"n": 1}'), 'n')), 'x'))
  FROM (SELECT '[1, 2, 3]' AS v, 'int16' AS t UNION ALL SELECT '[0, 1, 1]', 'int16');
SELECT npy_to_json(ar_get(rd_array_record(rd_mean(rd('g', 'array', ar('x', npy_from_json(v, 'float16')), 'm', 'metric', '{"n": 1}'), 'n')), 'x'))
  FROM (SELECT '[1, 2, 3]' AS v UNION ALL SELECT '[0.1, 1, 1]');
SELECT rd_mean(content) IS NULL FROM replies WHERE rnd = 3;
SELECT rd_mean(NULL), rd_mean(content) IS NULL FROM (SELECT NULL AS content);
-- rd_mean errors name the row
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}') AS c
  UNION ALL SELECT rd('a', 'array', ar('w', npy_from_json('[1, 2]')), 'm', 'metric', '{"num-examples": 1}'));
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}') AS c
  UNION ALL SELECT rd('a', 'array', ar('w', npy_from_json('[1]', 'float32')), 'm', 'metric', '{"num-examples": 1}'));
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}') AS c
  UNION ALL SELECT rd('a', 'array', ar('v', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}'));
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}') AS c
  UNION ALL SELECT rd('a', 'array', ar('w', npy_from_json('[1]'), 'v', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}'));
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}') AS c
  UNION ALL SELECT rd('b', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}'));
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}') AS c
  UNION ALL SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'n', 'metric', '{"num-examples": 1}'));
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1, "l": 1}') AS c
  UNION ALL SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1, "l": [1]}'));
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1, "l": [1, 2]}') AS c
  UNION ALL SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1, "l": [1]}'));
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1, "l": 1}') AS c
  UNION ALL SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1, "k": 1}'));
SELECT rd_mean(c) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1, "l": 1}') AS c
  UNION ALL SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"num-examples": 1}'));
SELECT rd_mean(rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"n": [1]}'), 'n');
SELECT rd_mean(rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"n": 1}'));
SELECT rd_mean(rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"n": 0}'), 'n');
SELECT rd_mean(rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"n": 9223372036854775807}'), 'n') FROM (SELECT 1 UNION ALL SELECT 2);
SELECT rd_mean(rd('a', 'array', ar('w', npy_from_json('[1]')), 'b', 'array', x'', 'm', 'metric', '{"n": 1}'), 'n');
SELECT rd_mean(rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"n": 1}', 'k', 'metric', '{}'), 'n');
SELECT rd_mean(rd('a', 'array', ar('w', npy_from_json('[[1, 2]]', 'complex64')), 'm', 'metric', '{"n": 1}'), 'n');
SELECT rd_mean(rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"n": 1}'), 7);
SELECT rd_mean(c, k) FROM (SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"n": 1, "k": 1}') AS c, 'n' AS k
  UNION ALL SELECT rd('a', 'array', ar('w', npy_from_json('[1]')), 'm', 'metric', '{"n": 1, "k": 1}'), 'k');
SELECT rd_mean('text');
SELECT rd_mean(x'0102');

-- ar_server_step: the first state is rd('arrays', 'array', model)
CREATE TABLE m(state BLOB, agg BLOB);
INSERT INTO m VALUES (rd('arrays', 'array', ar('w', npy_from_json('[1, -2, 0.5]', 'float32'))), ar('w', npy_from_json('[1.5, -2.5, 0.5]', 'float32')));
SELECT s, rd_keys(ar_server_step(s, state, agg, 1)), npy_to_json(ar_get(rd_array_record(ar_server_step(s, state, agg, 1), 'arrays'), 'w')) FROM m,
  (SELECT 'fedadam' AS s UNION ALL SELECT 'fedavg' UNION ALL SELECT 'fedyogi' UNION ALL SELECT 'fedadagrad' UNION ALL SELECT 'fedavgm');
SELECT npy_to_json(ar_get(rd_array_record(ar_server_step('fedavgm', state, agg, 1, '{"server_momentum": 0.9}'), 'momentum_vector'), 'w')) FROM m;
SELECT npy_to_json(ar_get(rd_array_record(ar_server_step('fedavgm', ar_server_step('fedavgm', state, agg, 1, o), agg, 2, o), 'arrays'), 'w'))
  FROM m, (SELECT '{"server_momentum": 0.5, "server_learning_rate": 2}' AS o);
SELECT npy_to_json(ar_get(rd_array_record(ar_server_step('fedadam', ar_server_step('fedadam', state, agg, 1), agg, 2, '{"eta": 1, "beta_1": 0, "beta_2": 0.5, "tau": 0, "eta_l": 3}'), 'v_t'), 'w')) FROM m;
SELECT hex(ar_server_step('fedavgm', state, agg, 1)) = hex(rd('arrays', 'array', agg)) FROM m;
-- NumPy 2 (the default): FedAdam's float64 eta_norm makes the model float64;
-- {"numpy": 1} keeps float32; float32 and float64 arrays promote as NumPy does
SELECT o, (SELECT group_concat(key || ':' || dtype, ' ') FROM array_record(rd_array_record(r, 'arrays'))),
       (SELECT group_concat(key || ':' || dtype, ' ') FROM array_record(rd_array_record(r, 'm_t'))),
       npy_to_json(ar_get(rd_array_record(r, 'arrays'), 'w'))
  FROM (SELECT o, ar_server_step('fedadam', rd('arrays', 'array', ar('w', npy_from_json('[1, 2]', 'float32'), 'b', npy_from_json('[1]', 'float32'))),
                                  ar('w', npy_from_json('[2, 2]', 'float32'), 'b', npy_from_json('[0.5]')), 1, o) AS r
          FROM (SELECT '{}' AS o UNION ALL SELECT '{"numpy": 1}'));
SELECT (SELECT group_concat(key || ':' || dtype, ' ') FROM array_record(rd_array_record(r, 'arrays'))),
       (SELECT group_concat(key || ':' || dtype, ' ') FROM array_record(rd_array_record(r, 'momentum_vector')))
  FROM (SELECT ar_server_step('fedavgm', rd('arrays', 'array', ar('w', npy_from_json('[1, 2]', 'float32')), 'momentum_vector', 'array', ar('w', npy_from_json('[1, 1]', 'float32'))),
                              ar('w', npy_from_json('[2.0, 2.5]')), 2, '{"server_momentum": 0.9}') AS r);
-- float64 and Fortran-order, big-endian models
-- a mix of dtypes read through the scratch blocks (big-endian float32 model and m_t)
-- gives the bytes of the native inputs
SELECT ar_server_step('fedadam', rd('arrays', 'array', ar('w', npy_cast(npy_from_json('[1, 2, 3]'), '>f4')), 'm_t', 'array', ar('w', npy_cast(npy_from_json('[0.5, 0, -1]'), '>f4'))),
                      ar('w', npy_from_json('[2, 2, 2.5]', 'float64')), 2)
     = ar_server_step('fedadam', rd('arrays', 'array', ar('w', npy_from_json('[1, 2, 3]', 'float32')), 'm_t', 'array', ar('w', npy_from_json('[0.5, 0, -1]', 'float32'))),
                      ar('w', npy_from_json('[2, 2, 2.5]', 'float64')), 2);
SELECT npy_to_json(ar_get(rd_array_record(ar_server_step('fedyogi', rd('arrays', 'array', ar('w', npy_cast(npy_from_json('[[1, 2], [3, 4]]'), '>f8'))),
  ar('w', npy_from_json('[[0, 0], [0, 0]]', 'float64')), 3), 'm_t'), 'w'));
SELECT ar_server_step(NULL, state, agg, 1), ar_server_step('fedadam', NULL, agg, 1), ar_server_step('fedadam', state, agg, NULL), ar_server_step('fedadam', state, agg, 1, NULL) FROM m;
-- errors
SELECT ar_server_step('fedprox', state, agg, 1) FROM m;
SELECT ar_server_step('fedadam', state, agg, 1, '{"momentum": 1}') FROM m;
SELECT ar_server_step('fedavg', state, agg, 1, '{"server_momentum": 0.5}') FROM m;
SELECT ar_server_step('fedadagrad', state, agg, 1, '{"beta_2": 1}') FROM m;
SELECT ar_server_step('fedadam', state, agg, 1, '{"eta": "x"}') FROM m;
SELECT ar_server_step('fedadam', state, agg, 1, '{"eta": [1]}') FROM m;
SELECT ar_server_step('fedadam', state, agg, 1, '{"eta": {"double": "Infinity"}}') FROM m;
SELECT ar_server_step('fedadam', state, agg, 1, '{"eta": 1e300, "numpy": 1}') FROM m;
SELECT ar_server_step('fedyogi', state, agg, 1, '{"eta": 1e300}') FROM m;
SELECT ar_server_step('fedadam', state, agg, 1, '{"numpy": 3}') FROM m;
SELECT ar_server_step('fedadam', state, agg, 1, '{"numpy": 1.5}') FROM m;
SELECT ar_server_step('fedadam', state, ar('w', npy_from_json('[[1, 0], [2, 0], [3, 0]]', 'complex64')), 1) FROM m;
SELECT ar_server_step('fedadam', rd_set(state, 'm_t', 'array', ar('w', npy_from_json('[1, 2, 3]', 'float16'))), agg, 1) FROM m;
SELECT ar_server_step('fedadam', state, agg, 1, '[1]') FROM m;
SELECT ar_server_step('fedadam', state, agg, 1.5) FROM m;
SELECT ar_server_step(1, state, agg, 1) FROM m;
SELECT ar_server_step('fedadam', x'0102', agg, 1) FROM m;
SELECT ar_server_step('fedadam', state, x'0102', 1) FROM m;
SELECT ar_server_step('fedadam', rd('model', 'array', agg), agg, 1) FROM m;
SELECT ar_server_step('fedadam', rd('arrays', 'metric', '{}'), agg, 1) FROM m;
SELECT ar_server_step('fedadam', rd('arrays', 'array', ar('w', npy_from_json('[[1, 0]]', 'complex64'))), ar('w', npy_from_json('[[1, 0]]', 'complex64')), 1) FROM m;
SELECT ar_server_step('fedadam', state, ar('w', npy_from_json('[1, 2]', 'float32')), 1) FROM m;
SELECT ar_server_step('fedadam', state, ar('w', npy_from_json('[[1, 0], [2, 0], [3, 0]]', 'complex128')), 1) FROM m;
SELECT ar_server_step('fedadam', state, ar('v', npy_from_json('[1, 2, 3]', 'float32')), 1) FROM m;
SELECT ar_server_step('fedadam', state, ar('w', npy_from_json('[1, 2, 3]', 'float32'), 'v', npy_from_json('[1]')), 1) FROM m;
SELECT ar_server_step('fedadam', rd_set(state, 'm_t', 'array', ar('u', npy_from_json('[1, 2, 3]', 'float32'))), agg, 1) FROM m;
SELECT ar_server_step('fedadam', rd_set(state, 'v_t', 'array', ar('w', npy_from_json('[1, 2]', 'float32'))), agg, 1) FROM m;
SELECT ar_server_step('fedadam', rd_set(state, 'v_t', 'metric', '{}'), agg, 1) FROM m;
SELECT ar_server_step('fedadam', x'0a0b0a0661727261797312010a', agg, 1) FROM m;
SELECT ar_server_step('fedavgm', rd_set(state, 'momentum_vector', 'array', ar('w', npy_from_json('[[1, 0], [2, 0], [3, 0]]', 'complex128'))), agg, 1, '{"server_momentum": 0.5}') FROM m;
SELECT rd_keys(ar_server_step('fedadam', rd('arrays', 'array', ar('w', npy_from_json('[1, 2, 3]', 'float64'))), ar('w', npy_from_json('[1, 2, 3]', 'float64')), 1, '{"eta": 1e300}'));
-- integer and bool arrays: cast to the float NumPy 2 promotes them to (int64 -> float64, int16 and bool -> float32 against float32)
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT rd_array_record(ar_server_step('fedadam', rd('arrays', 'array', ar('n', npy_from_json('[3]', 'int64'), 'h', npy_from_json('[1, 2]', 'int16'), 'b', npy_from_json('[true]', 'bool'))), ar('n', npy_from_json('[4]', 'float64'), 'h', npy_from_json('[2, 2]', 'float32'), 'b', npy_from_json('[0]', 'float32')), 1, '{"numpy": 1}'), 'arrays') r), array_record(r);
SELECT npy_dtype(ar_get(rd_array_record(ar_server_step('fedavgm', rd('arrays', 'array', ar('n', npy_from_json('[3]', 'int64'))), ar('n', npy_from_json('[4]', 'float64')), 1, '{"server_momentum": 0.9}'), 'arrays'), 'n'));
