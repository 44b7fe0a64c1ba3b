-- SPDX-License-Identifier: Apache-2.0
-- Window forms of the aggregates (xValue, xInverse), ar_ema, and the per-array npy_agg_* aggregates.
CREATE TABLE r(run INTEGER, round INTEGER, rec BLOB, n INTEGER);
INSERT INTO r VALUES (1, 1, ar('w', npy_from_json('[1e30, 1]'), 'i', npy_from_json('[1, 2]', 'int32')), 1),
                     (1, 2, ar('i', npy_from_json('[3, 4]', 'int32'), 'w', npy_from_json('[1, 1e30]', 'float64')), 2),
                     (1, 3, NULL, 5),
                     (1, 4, ar('w', npy_from_json('[2, 3]', 'float64'), 'i', npy_from_json('[5, 6]', 'int32')), 1),
                     (1, 5, ar('w', npy_from_json('[4, 5]', 'float64'), 'i', npy_from_json('[7, 8]', 'int32')), 1);
SELECT round, npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT round, ar_sum(rec) OVER (ORDER BY round ROWS 1 PRECEDING) x FROM r);
SELECT round, npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT round, ar_mean(rec, n) OVER (ORDER BY round ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) x FROM r);
-- Rows summed before the first value (FOLLOWING) are added as the plain aggregate adds them: row 3 shows 1e30 + 1 rounded.
SELECT round, npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT round, ar_mean(rec) OVER (ORDER BY round ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) x FROM r);
SELECT round, npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT round, ar_ema(rec, 0.5) OVER (ORDER BY round) x FROM r);
SELECT round, npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT round, ar_median(rec) OVER (ORDER BY round ROWS 2 PRECEDING) x FROM r);
SELECT round, npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT round, ar_trimmed_mean(rec, 0.25) OVER (ORDER BY round ROWS 3 PRECEDING) x FROM r);
SELECT round, npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT round, ar_stack(rec) OVER (ORDER BY round ROWS 1 PRECEDING) x FROM r);
SELECT round, npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT round, ar_sum(rec) OVER (ORDER BY round ROWS BETWEEN 2 PRECEDING AND 1 PRECEDING) x FROM r);
SELECT npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT ar_ema(rec, 0.25) x FROM r);
SELECT round, npy_to_json(ar_get(x, 'w')), npy_to_json(ar_get(x, 'i')) FROM (SELECT round, ar_ema(rec, 0.5) OVER (ORDER BY round ROWS 1 PRECEDING) x FROM r);
SELECT ar_ema(rec, 0) FROM r;
SELECT ar_ema(rec, 'NaN') FROM r;
SELECT ar_ema(rec, NULL) FROM r;
SELECT round, ar_mean(rec, n - 2) OVER (ORDER BY round ROWS 1 PRECEDING) FROM r;
SELECT ar_mean(x) OVER (ORDER BY k ROWS 1 PRECEDING) FROM (SELECT 1 k, ar('w', npy_from_json('[1]')) x UNION ALL SELECT 2, ar('w', npy_from_json('[1, 2]')));
SELECT ar_median(x) OVER (ORDER BY k ROWS 1 PRECEDING) FROM (SELECT 1 k, ar('w', npy_from_json('[1]')) x UNION ALL SELECT 2, ar('v', npy_from_json('[1]')));
-- per array
SELECT key, npy_to_json(npy_agg_sum(a.data)), npy_to_json(npy_agg_mean(a.data, r.n)), npy_to_json(npy_agg_min(a.data)), npy_to_json(npy_agg_max(a.data)) FROM r, array_record(r.rec) a GROUP BY key ORDER BY key;
SELECT key, npy_to_json(npy_agg_median(a.data)), npy_to_json(npy_agg_trimmed_mean(a.data, 0.25)), npy_to_json(npy_agg_stack(a.data)), npy_to_json(npy_agg_ema(a.data, 0.5)) FROM r, array_record(r.rec) a GROUP BY key ORDER BY key;
SELECT ar_agg(key, m) = ar_median(rec) FROM (SELECT key, npy_agg_median(a.data) m FROM r, array_record(r.rec) a GROUP BY key ORDER BY key = 'i'), (SELECT ar_median(rec) rec FROM r);
SELECT round, npy_to_json(npy_agg_mean(ar_get(rec, 'w')) OVER (ORDER BY round ROWS 1 PRECEDING)) FROM r;
SELECT round, npy_to_json(npy_agg_median(ar_get(rec, 'i')) OVER (ORDER BY round ROWS 1 PRECEDING)) FROM r;
SELECT npy_agg_sum(v) FROM (SELECT npy_from_json('[1, 2]') v UNION ALL SELECT npy_from_json('[1, 2, 3]'));
SELECT npy_agg_sum(v) FROM (SELECT npy_from_json('[1, 2]') v UNION ALL SELECT npy_from_json('[1, 2]', 'float32'));
SELECT npy_agg_mean('x');
SELECT npy_agg_median(x'00');
SELECT npy_agg_min(npy_from_json('[[1, 2]]', 'complex64'));
SELECT npy_agg_stack(NULL);
-- Krum, its scores and Bulyan as window functions: frames too small for f give NULL
SELECT round, npy_to_json(ar_get(ar_krum(rec, n, 1) OVER (ORDER BY round ROWS 3 PRECEDING), 'w')) FROM r;
SELECT round, ar_krum_scores(rec, 1) OVER (ORDER BY round ROWS 2 PRECEDING) FROM r;
SELECT round, npy_to_json(ar_get(ar_krum(rec, n, 0, 2) OVER (ORDER BY round ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING), 'w')) FROM r;
SELECT round, npy_to_json(ar_get(ar_bulyan(rec, 0) OVER (ORDER BY round ROWS BETWEEN 3 PRECEDING AND 1 FOLLOWING), 'w')) FROM r;
