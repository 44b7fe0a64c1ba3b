-- SPDX-License-Identifier: Apache-2.0
-- ar_rolling_mean(query, frame): each row's ar_mean over itself and the frame - 1 rows before it,
-- bit for bit the plain ar_mean of the frame (a correlated subquery per row) and the window form.
-- 12 rounds of a float32 model (two keys, values of many magnitudes), NULL records in rounds 4 and 9.
CREATE TABLE r(round INTEGER PRIMARY KEY, rec BLOB, n INTEGER);
WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 11)
INSERT INTO r SELECT i, CASE WHEN i IN (4, 9) THEN NULL ELSE
  ar('w', npy_from_json(json_array((i * 7919 % 1000) / 37.0, -(i * 104729 % 997) / 3.0e5, (i * i % 13) * 1.0e6 + 0.1, 1.0 / (i + 3), -2.5e-7 * i),
                        'float32'),
     'b', npy_from_json(json_array(i % 5 - 2, (i * 31 % 7) / 9.0), 'float32')) END, 10 + i * 3 % 11 FROM c;
CREATE TABLE frames(f INTEGER);
INSERT INTO frames VALUES (1), (2), (5), (20);
-- weighted: every row equals the subquery (ar_mean of the frame's rows) and the window form
SELECT f.f, count(*), sum(m.rec IS s.m), sum(m.rec IS w.m), sum(m.rows = s.k), sum(m.label = m.position)
  FROM frames f, ar_rolling_mean('SELECT rec, n, round FROM r ORDER BY round', f.f) m
  JOIN (SELECT f2.f, r.round, (SELECT ar_mean(t.rec, t.n) FROM r t WHERE t.round BETWEEN r.round - f2.f + 1 AND r.round) m,
               (SELECT count(t.rec) FROM r t WHERE t.round BETWEEN r.round - f2.f + 1 AND r.round) k
          FROM frames f2, r) s ON s.f = f.f AND s.round = m.label
  JOIN (SELECT 1 f, round, ar_mean(rec, n) OVER (ORDER BY round ROWS BETWEEN 0 PRECEDING AND CURRENT ROW) m FROM r
        UNION ALL SELECT 2, round, ar_mean(rec, n) OVER (ORDER BY round ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM r
        UNION ALL SELECT 5, round, ar_mean(rec, n) OVER (ORDER BY round ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) FROM r
        UNION ALL SELECT 20, round, ar_mean(rec, n) OVER (ORDER BY round ROWS BETWEEN 19 PRECEDING AND CURRENT ROW) FROM r) w
    ON w.f = f.f AND w.round = m.label
 GROUP BY f.f ORDER BY f.f;
-- unweighted (a query of one column: no weight, no label)
SELECT f.f, count(*), sum(m.rec IS (SELECT ar_mean(t.rec) FROM r t WHERE t.round BETWEEN m.position - f.f + 1 AND m.position)),
       sum(m.rec IS w.m), count(m.label)
  FROM frames f, ar_rolling_mean('SELECT rec FROM r ORDER BY round', f.f) m
  JOIN (SELECT 1 f, round, ar_mean(rec) OVER (ORDER BY round ROWS BETWEEN 0 PRECEDING AND CURRENT ROW) m FROM r
        UNION ALL SELECT 2, round, ar_mean(rec) OVER (ORDER BY round ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM r
        UNION ALL SELECT 5, round, ar_mean(rec) OVER (ORDER BY round ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) FROM r
        UNION ALL SELECT 20, round, ar_mean(rec) OVER (ORDER BY round ROWS BETWEEN 19 PRECEDING AND CURRENT ROW) FROM r) w
    ON w.f = f.f AND w.round = m.position
 GROUP BY f.f ORDER BY f.f;
-- the values themselves, a frame of 3
SELECT position, label, rows, npy_to_json(ar_get(rec, 'b')), ar_dtype(rec, 'w') FROM ar_rolling_mean('SELECT rec, n, round FROM r ORDER BY round', 3);
-- rows in the query's order (here backwards), labels of any type passed through
SELECT position, label, typeof(label), rows, npy_to_json(ar_get(rec, 'b'))
  FROM ar_rolling_mean('SELECT rec, 1, CASE WHEN round % 3 = 0 THEN ''r'' || round WHEN round % 3 = 1 THEN round * 0.5 END FROM r WHERE round > 6 ORDER BY round DESC', 2);
-- float64 models: the plain mean of each frame (the window form sums exactly, so it may differ in the last bit)
CREATE TABLE d(round INTEGER PRIMARY KEY, rec BLOB, n REAL);
INSERT INTO d VALUES (0, ar('x', npy_from_json('[0.1, 1e16]')), 1), (1, ar('x', npy_from_json('[0.2, 1]')), 0.3), (2, ar('x', npy_from_json('[0.3, -1e16]')), 7),
                     (3, ar('x', npy_from_json('[0.7, 3]')), 0.1), (4, ar('x', npy_from_json('[1e-9, 5]')), 2.5);
SELECT m.position, npy_to_json(ar_get(m.rec, 'x')), m.rec = (SELECT ar_mean(t.rec, t.n) FROM d t WHERE t.round BETWEEN m.position - 2 AND m.position),
       npy_to_json(ar_get(w.m, 'x'))
  FROM ar_rolling_mean('SELECT rec, n FROM d ORDER BY round', 3) m
  JOIN (SELECT round, ar_mean(rec, n) OVER (ORDER BY round ROWS 2 PRECEDING) m FROM d) w ON w.round = m.position;
-- a frame of NULL records only: rows 0, rec NULL; records without arrays give the empty record, as ar_mean
SELECT position, rows, typeof(rec), length(rec) FROM ar_rolling_mean('VALUES (NULL), (NULL), (x''''), (NULL), (NULL), (NULL)', 2);
SELECT ar_mean(column1) IS x'' FROM (VALUES (x''), (NULL));
-- the hidden columns give the arguments back; per run, the arguments taken from another table
SELECT query, frame, count(*) FROM ar_rolling_mean('SELECT rec FROM r', 4);
CREATE TABLE runs(run INTEGER, first INTEGER, last INTEGER);
INSERT INTO runs VALUES (1, 0, 3), (2, 5, 11);
SELECT u.run, m.label, m.rows, m.rec = (SELECT ar_mean(t.rec, t.n) FROM r t WHERE t.round BETWEEN max(u.first, m.label - 1) AND m.label)
  FROM runs u, ar_rolling_mean(printf('SELECT rec, n, round FROM r WHERE round BETWEEN %d AND %d ORDER BY round', u.first, u.last), 2) m
 WHERE m.position % 2 = 1;
-- a rolling mean of rolling means: the query may use the table itself
SELECT position, npy_to_json(ar_get(rec, 'b')) FROM ar_rolling_mean('SELECT rec FROM ar_rolling_mean(''SELECT rec FROM r WHERE round < 4 ORDER BY round'', 2)', 2);
-- a frame's mean is computed when its rec is read: position, label and rows alone never run ar_mean
SELECT count(*), sum(rows) FROM ar_rolling_mean('SELECT rec, n, round FROM r UNION ALL SELECT x''0102'', 1, 99', 3);
-- NULL query or frame: no rows; comments and whitespace around the query are fine
SELECT count(*) FROM ar_rolling_mean(NULL, 3);
SELECT count(*) FROM ar_rolling_mean('SELECT rec FROM r', NULL);
SELECT count(*) FROM ar_rolling_mean('  -- the rounds
  /* in order */ SELECT rec FROM r ORDER BY round; -- done
  ', 3);
-- errors: the arguments
SELECT * FROM ar_rolling_mean('SELECT rec FROM r', 0);
SELECT * FROM ar_rolling_mean('SELECT rec FROM r', -2);
SELECT * FROM ar_rolling_mean('SELECT rec FROM r', 2.0);
SELECT * FROM ar_rolling_mean('SELECT rec FROM r', '2');
SELECT * FROM ar_rolling_mean('SELECT rec FROM r');
SELECT * FROM ar_rolling_mean(x'53454c454354203120', 2);
SELECT * FROM ar_rolling_mean(42, 2);
SELECT * FROM ar_rolling_mean('', 2);
SELECT * FROM ar_rolling_mean(' /* nothing */ -- at all', 2);
SELECT * FROM ar_rolling_mean('SELECT rec FROM nowhere', 2);
SELECT * FROM ar_rolling_mean('SELEC rec FROM r', 2);
SELECT * FROM ar_rolling_mean('DELETE FROM r', 2);
SELECT * FROM ar_rolling_mean('INSERT INTO r(rec) SELECT rec FROM r', 2);
SELECT * FROM ar_rolling_mean('PRAGMA table_info(r)', 2);
SELECT * FROM ar_rolling_mean('EXPLAIN SELECT rec FROM r', 2);
SELECT * FROM ar_rolling_mean('ATTACH '':memory:'' AS other', 2);
SELECT * FROM ar_rolling_mean('BEGIN', 2);
SELECT * FROM ar_rolling_mean('SELECT rec FROM r; SELECT rec FROM r', 2);
SELECT * FROM ar_rolling_mean('SELECT rec FROM r; DROP TABLE r', 2);
SELECT * FROM ar_rolling_mean('SELECT rec, n, round, round FROM r', 2);
SELECT count(*) FROM r;
-- errors: the rows, named by their position (ar_mean's message, its rows turned into positions)
SELECT position, length(rec) FROM ar_rolling_mean('SELECT rec, n, round FROM r UNION ALL SELECT ''not a record'', 1, 99 ORDER BY 3', 3);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT rec, n, round FROM r UNION ALL SELECT 7, 1, 99 ORDER BY 3', 3);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT CASE WHEN round = 6 THEN x''0a05'' ELSE rec END, n FROM r ORDER BY round', 3);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT CASE WHEN round = 6 THEN ar(''w'', npy_from_json(''[1, 2]'', ''float32''), ''b'', npy_from_json(''[1, 2]'', ''float32'')) ELSE rec END, n FROM r ORDER BY round', 3);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT CASE WHEN round = 7 THEN ar_cast(rec, ''float64'', ''all'') ELSE rec END, n FROM r ORDER BY round', 4);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT CASE WHEN round = 7 THEN ar_delete(rec, ''b'') ELSE rec END, n FROM r ORDER BY round', 4);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT CASE WHEN round = 7 THEN ar_set(rec, ''row 3'', npy_from_json(''[1]'')) ELSE rec END, n FROM r ORDER BY round', 4);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT rec, CASE WHEN round = 5 THEN NULL ELSE n END FROM r ORDER BY round', 3);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT rec, CASE WHEN round = 5 THEN ''ten'' ELSE n END FROM r ORDER BY round', 3);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT rec, CASE WHEN round = 5 THEN 1e308 * 10 ELSE n END FROM r ORDER BY round', 3);
SELECT position, length(rec) FROM ar_rolling_mean('SELECT rec, CASE WHEN round = 5 THEN -n ELSE n END FROM r ORDER BY round', 2);
-- a frame read alone: ar_mean's row numbers are still the positions
SELECT position, length(rec) FROM ar_rolling_mean('SELECT CASE WHEN round = 6 THEN x''0a05'' ELSE rec END, n FROM r ORDER BY round', 3) WHERE position = 7;
SELECT position, length(rec) FROM ar_rolling_mean('SELECT CASE WHEN round = 6 THEN ar_delete(rec, ''b'') ELSE rec END, n FROM r ORDER BY round', 3) WHERE position = 8;
-- a NULL record's weight is not read, as ar_mean skips the row
SELECT count(rec) FROM ar_rolling_mean('SELECT rec, CASE WHEN rec IS NULL THEN ''none'' ELSE n END FROM r ORDER BY round', 3);
-- the query failing while it runs
SELECT position, length(rec) FROM ar_rolling_mean('SELECT rec, n, ar_len(CASE WHEN round = 3 THEN x''0a'' ELSE rec END) FROM r ORDER BY round', 2);
-- the schema cannot use it under trusted_schema=OFF: the query may call anything the connection has
CREATE VIEW rolling AS SELECT position, rows FROM ar_rolling_mean('SELECT rec FROM r', 2);
SELECT count(*) FROM rolling;
PRAGMA trusted_schema = OFF;
SELECT count(*) FROM rolling;
PRAGMA trusted_schema = ON;
