-- ar_compare(a, b, base): the hidden columns against a base record (the
-- model both started from), computed in the same pass as the pair's.
CREATE TABLE m(name TEXT, rec BLOB);
INSERT INTO m VALUES
  ('start',  ar('w', npy_from_json('[[0, 1], [2, 3]]', 'float32'), 'b', npy_from_json('[1, 1, 1]', 'float64'), 'n', npy_from_json('7', 'int64'))),
  ('client', ar('w', npy_from_json('[[1, 1], [2, 5]]', 'float32'), 'b', npy_from_json('[2, 0, 1]', 'float64'), 'n', npy_from_json('9', 'int64'), 'extra', npy_from_json('[1]'))),
  ('global', ar('w', npy_from_json('[[0.5, 2], [2, 4]]', 'float32'), 'b', npy_from_json('[1, 1]', 'float64'), 'n', npy_from_json('8', 'int64')));
SELECT key, match, norm_diff, norm_a_base, norm_b_base, dot_base, round(cosine_base, 12)
  FROM ar_compare((SELECT rec FROM m WHERE name = 'client'), (SELECT rec FROM m WHERE name = 'global'), (SELECT rec FROM m WHERE name = 'start'));
SELECT key, norm_a_base, norm_b_base, dot_base, cosine_base, arg_base IS NULL
  FROM ar_compare((SELECT rec FROM m WHERE name = 'client'), (SELECT rec FROM m WHERE name = 'global'), NULL);
SELECT count(*) FROM ar_compare(x'', x'', x'');
SELECT key, norm_a_base FROM ar_compare(ar('z', npy_from_json('[[1, 2]]', 'complex64')), ar('z', npy_from_json('[[1, 2]]', 'complex64')), ar('z', npy_from_json('[[0, 0]]', 'complex64')));
-- the same numbers for the pair with and without a base
SELECT count(*) FROM ar_compare((SELECT rec FROM m WHERE name = 'client'), (SELECT rec FROM m WHERE name = 'global')) two
  JOIN ar_compare((SELECT rec FROM m WHERE name = 'client'), (SELECT rec FROM m WHERE name = 'global'), (SELECT rec FROM m WHERE name = 'start')) three
  USING (key) WHERE two.norm_diff IS three.norm_diff AND two.dot IS three.dot AND two.max_abs_diff IS three.max_abs_diff;
SELECT * FROM ar_compare(ar('w', npy_from_json('[1]')), ar('w', npy_from_json('[1]')), 'text');
SELECT * FROM ar_compare(ar('w', npy_from_json('[1]')), ar('w', npy_from_json('[1]')), x'0a');
