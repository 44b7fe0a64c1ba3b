-- SPDX-License-Identifier: Apache-2.0
-- ar_* record math: key by key, results are canonical records of
-- numpy.save-identical arrays; key sets must match.

CREATE TABLE m(name TEXT, rec BLOB);
INSERT INTO m VALUES
  ('a', ar('w', npy_from_json('[[1,2],[3,4]]', 'float32'), 'b', npy_from_json('[0.5, -0.5]'), 'steps', npy_from_json('[10]'))),
  ('b', ar('b', npy_from_json('[1.5, 1.5]'), 'w', npy_from_json('[[1,1],[1,1]]', 'float32'), 'steps', npy_from_json('[2]')));

-- sums and deltas keep the first record's key order (b's keys come in another order)
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_add((SELECT rec FROM m WHERE name = 'a'), (SELECT rec FROM m WHERE name = 'b')) r), array_record(r);
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_sub((SELECT rec FROM m WHERE name = 'a'), (SELECT rec FROM m WHERE name = 'b')) r), array_record(r);
-- scale: floats keep their dtype, the int64 array becomes float64
SELECT key, dtype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_scale(rec, 0.5) r FROM m WHERE name = 'a'), array_record(r);
-- cast: floating arrays only unless 'all'
SELECT key, dtype FROM (SELECT ar_cast(rec, 'float16') r FROM m WHERE name = 'a'), array_record(r);
SELECT key, dtype FROM (SELECT ar_cast(rec, 'float16', 'all') r FROM m WHERE name = 'a'), array_record(r);
SELECT hex(ar_get(ar_cast(rec, 'float16'), 'w')) = hex(npy_cast(ar_get(rec, 'w'), 'float16')) FROM m WHERE name = 'a';
-- a result is the same bytes the builders write for the same arrays
SELECT hex(ar_scale(rec, 2)) = hex(ar('w', npy_scale(ar_get(rec, 'w'), 2), 'b', npy_scale(ar_get(rec, 'b'), 2), 'steps', npy_scale(ar_get(rec, 'steps'), 2))) FROM m WHERE name = 'a';
-- numbers over all arrays: norm sqrt(30 + 0.5 + 100), dot 10 + 0 + 20, cosine, numel
SELECT ar_norm(a.rec), ar_dot(a.rec, b.rec), ar_cosine(a.rec, b.rec), ar_numel(a.rec), ar_allclose(a.rec, a.rec), ar_allclose(a.rec, b.rec)
  FROM m a, m b WHERE a.name = 'a' AND b.name = 'b';
SELECT ar_allclose(rec, ar_scale(rec, 1.000001)), ar_allclose(rec, ar_scale(rec, 1.000001), 0, 0), ar_allclose(rec, ar_scale(rec, 1.001), 0.01) FROM m WHERE name = 'a';
-- legacy raw items are read as arrays and written back as .npy items
SELECT key, stype, npy_to_json(ar_get(r, key)) FROM (SELECT ar_scale(readfile('tests/data/records/legacy_raw.pb'), 2) r), array_record(r);
-- the empty record
SELECT length(ar_add(x'', x'')), ar_norm(x''), ar_numel(x''), ar_dot(x'', x''), ar_cosine(x'', x''), ar_allclose(x'', x'');
-- errors name the key
SELECT ar_add((SELECT rec FROM m WHERE name = 'a'), ar_delete((SELECT rec FROM m WHERE name = 'b'), 'steps'));
SELECT ar_sub(ar_delete((SELECT rec FROM m WHERE name = 'a'), 'w'), (SELECT rec FROM m WHERE name = 'b'));
SELECT ar_dot(rec, ar_set(rec, 'b', npy_from_json('[1,2,3]'))) FROM m WHERE name = 'a';
SELECT ar_cast(ar_set(rec, 'b', npy_from_json('[1, "NaN"]')), 'int8', 'all') FROM m WHERE name = 'a';
SELECT ar_cast(rec, 'int8', 'some') FROM m WHERE name = 'a';
SELECT ar_cosine(ar('z', npy_from_json('[[1,2]]', 'complex64')), ar('z', npy_from_json('[[1,2]]', 'complex64')));
SELECT ar_norm(readfile('tests/data/bad_records/npy_data_corrupt.pb'));
SELECT ar_norm(x'0a');
-- NULL in, NULL out
SELECT ar_add(NULL, rec), ar_scale(rec, NULL), ar_cast(rec, NULL), ar_norm(NULL), ar_allclose(rec, NULL), ar_numel(NULL) FROM m WHERE name = 'a';
