-- ar_pool: the bound on the memory the extension keeps between statements
-- (process-wide), returning the bound before; ar_pool_held: what is kept.
-- Results never depend on it: the same statements with the pool off give
-- the same bytes.
SELECT ar_pool(64 << 20) > 0;
SELECT ar_pool(), ar_pool_held() <= ar_pool();
SELECT ar_pool(NULL), ar_pool();
CREATE TABLE u(rec BLOB, n);
WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 3)
INSERT INTO u SELECT ar('w', npy_scale(npy(zeroblob(1 << 20), 'float32', '[512, 512]'), 1), 'b', npy_from_json('[1, 2]', 'float32')), i FROM k;
UPDATE u SET rec = ar_add(rec, ar_scale(rec, 0)) WHERE n = 2;
CREATE TABLE r AS SELECT ar_mean(rec, n) m, ar_median(rec) med, ar_trimmed_mean(rec, 0.34) t, sum(length(ar_get(rec, 'w'))) g FROM u;
SELECT length(m), length(med), length(t), g, npy_to_json(ar_get(m, 'b')), ar_pool_held() BETWEEN 1 AND 64 << 20 FROM r;
SELECT ar_pool(0), ar_pool_held();
SELECT m = (SELECT ar_mean(rec, n) FROM u), med = (SELECT ar_median(rec) FROM u), t = (SELECT ar_trimmed_mean(rec, 0.34) FROM u),
       g = (SELECT sum(length(ar_get(rec, 'w'))) FROM u), ar_pool_held() FROM r;
SELECT ar_pool(1 << 30);
SELECT ar_pool(-1);
SELECT ar_pool('2');
SELECT ar_pool(1.5);
SELECT ar_pool(1, 2);
SELECT ar_pool();
