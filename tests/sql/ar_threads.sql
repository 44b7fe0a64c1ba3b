-- ar_threads: the accumulating aggregates' thread count (process-wide),
-- returning the count set before. Results never depend on it.
SELECT ar_threads(2) >= 1;
SELECT ar_threads();
SELECT ar_threads(NULL), ar_threads(1, NULL), ar_threads();
SELECT ar_threads(3, 1024);
CREATE TABLE u(rec BLOB, n);
INSERT INTO u VALUES (ar('w', npy_from_json('[[1, 2], [3, 4]]', 'float32')), 1), (ar('w', npy_from_json('[[5, 6], [7, 8]]', 'float32')), 3);
SELECT npy_to_json(ar_get(ar_mean(rec, n), 'w')), npy_to_json(ar_get(ar_sum(rec), 'w')) FROM u;
SELECT ar_threads(1, 262144);
SELECT npy_to_json(ar_get(ar_mean(rec, n), 'w')), npy_to_json(ar_get(ar_sum(rec), 'w')) FROM u;
SELECT ar_threads(0);
SELECT ar_threads(65);
SELECT ar_threads(2, 0);
SELECT ar_threads('2');
SELECT ar_threads(2, 1.5);
SELECT ar_threads();
