-- SPDX-License-Identifier: Apache-2.0
-- ar_compare(a, b): two records key by key, one pass over each pair.
CREATE TABLE g(rec BLOB);
CREATE TABLE u(client TEXT, rec BLOB);
INSERT INTO g VALUES (ar('w', npy_from_json('[[1, 2], [3, 4]]', 'float32'), 'steps', npy_from_json('[10]'), 'b', npy_from_json('[1, 2]'), 'z', npy_from_json('[0, 0]'), 'gone', npy_from_json('[7]')));
INSERT INTO u VALUES
  ('c1', ar('w', npy_from_json('[[1, 2.5], [3, 3]]', 'float32'), 'steps', npy_from_json('[10.5]'), 'new', npy_from_json('[1.5]'), 'b', npy_from_json('[1, 2, 3]'), 'z', npy_from_json('[0, 1]'))),
  ('c2', ar('w', npy_from_json('[[1, 2], [3, 4]]', 'float32'), 'steps', npy_from_json('[10]'), 'b', npy_from_json('[1, 2]'), 'z', npy_from_json('[0, 0]'), 'gone', npy_from_json('[7]')));
-- every column: same, dtype, a_only, shape, b_only; the zero norm gives NULL cosine and rel_change
SELECT * FROM ar_compare((SELECT rec FROM u WHERE client = 'c1'), (SELECT rec FROM g));
-- a record against itself: nothing changed
SELECT key, match, norm_diff, max_abs_diff, changed, cosine, rel_change FROM ar_compare((SELECT rec FROM g), (SELECT rec FROM g));
-- joined to the table its arguments come from (hidden columns arg_a, arg_b)
SELECT u.client, c.key, c.match, c.rel_change FROM u, g, ar_compare(u.rec, g.rec) c WHERE c.match <> 'same' OR c.rel_change > 0 ORDER BY u.client, c.position;
SELECT arg_a = (SELECT rec FROM u WHERE client = 'c1'), arg_b = (SELECT rec FROM g) FROM ar_compare((SELECT rec FROM u WHERE client = 'c1'), (SELECT rec FROM g)) LIMIT 1;
-- keys in another order pair by key; rows follow a's order
SELECT position, key, b_position, match FROM ar_compare(ar('x', npy_from_json('[1]'), 'y', npy_from_json('[2]')), ar('y', npy_from_json('[2]'), 'x', npy_from_json('[1]'), 'q', npy_from_json('[3]')));
-- the numbers agree with the single-purpose functions, bit for bit
SELECT c.key, c.norm_a = s.l2, c.norm_a = npy_norm(ar_get(m.a, c.key)), c.norm_b = npy_norm(ar_get(m.b, c.key)),
       c.dot = ar_dot(ar_select(m.a, c.key), ar_select(m.b, c.key)), c.cosine = ar_cosine(ar_select(m.a, c.key), ar_select(m.b, c.key)),
       c.norm_diff = npy_norm(npy_sub(npy_cast(ar_get(m.a, c.key), 'float64'), npy_cast(ar_get(m.b, c.key), 'float64'))),
       c.max_abs_diff = npy_norm(npy_sub(npy_cast(ar_get(m.a, c.key), 'float64'), npy_cast(ar_get(m.b, c.key), 'float64')), 'inf'),
       c.mean_diff = npy_mean(npy_sub(npy_cast(ar_get(m.a, c.key), 'float64'), npy_cast(ar_get(m.b, c.key), 'float64')))
  FROM (SELECT readfile('tests/data/fedavg/f32_client0.pb') a, readfile('tests/data/fedavg/f32_result.pb') b) m, ar_compare(m.a, m.b) c
  JOIN ar_stats(m.a) s ON s.key = c.key;
SELECT key, match, numel, changed, nonfinite_a, nonfinite_b FROM ar_compare(readfile('tests/data/fedavg/mixed_int_client0.pb'), readfile('tests/data/fedavg/mixed_int_result.pb'));
-- dtypes: bool as 0/1, big-endian and Fortran arrays, float16, integers
SELECT key, dtype, b_dtype, match, norm_diff, max_abs_diff, changed FROM ar_compare(
  ar('bool', npy_from_json('[true, false, true]', 'bool'), 'be', readfile('tests/data/npy/dtype_be_f8.npy'), 'f', readfile('tests/data/npy/fortran_2d_f4.npy'), 'h', npy_from_json('[1, 2.5]', 'float16'), 'i', npy_from_json('[-5, 9]', 'int8')),
  ar('bool', npy_from_json('[1, 1, 1]', 'uint8'), 'be', npy_cast(readfile('tests/data/npy/dtype_be_f8.npy'), 'float64'), 'f', npy_cast(readfile('tests/data/npy/fortran_2d_f4.npy'), 'float64'), 'h', npy_from_json('[1, 2]', 'float16'), 'i', npy_from_json('[5, 9]', 'uint64')));
-- a Fortran-order array against the same values in C order: equal element by element
SELECT key, npy_fortran(ar_get(arg_a, key)), npy_fortran(ar_get(arg_b, key)), match, norm_diff, changed, dot = norm_a * norm_a FROM ar_compare(
  ar('f', readfile('tests/data/npy/fortran_2d_f4.npy')), ar('f', npy_from_json(npy_to_json(readfile('tests/data/npy/fortran_2d_f4.npy')), 'float32')));
-- NaN and infinities: counted; sums with them read as NULL, as NumPy's NaN; inf == inf is unchanged
SELECT key, norm_a, norm_b, norm_diff, max_abs_diff, mean_diff, changed, nonfinite_a, nonfinite_b FROM ar_compare(
  ar('nan', npy_from_json('[1, "NaN"]', 'float32'), 'inf', npy_from_json('["Infinity", 2]'), 'ok', npy_from_json('[1, 2]')),
  ar('nan', npy_from_json('[1, 2]', 'float32'), 'inf', npy_from_json('["Infinity", 3]'), 'ok', npy_from_json('["-Infinity", 2]')));
-- complex: norms and differences of |z|; no dot, cosine or mean
SELECT key, match, norm_a, norm_b, dot, cosine, norm_diff, max_abs_diff, mean_diff, changed FROM ar_compare(
  ar('c', npy_from_json('[[3, 4], [0, 1]]', 'complex64')), ar('c', npy_from_json('[0, 1]')));
-- empty arrays and scalars
SELECT key, shape, numel, norm_a, dot, cosine, norm_diff, max_abs_diff, mean_diff, rel_change, changed FROM ar_compare(
  ar('e', npy_from_json('[]'), 's', readfile('tests/data/npy/scalar_f8.npy')), ar('e', npy_from_json('[]', 'float32'), 's', readfile('tests/data/npy/scalar_f8.npy')));
-- items with no NumPy dtype (a safetensors BF16 tensor) and legacy raw items
SELECT key, dtype, shape, numel, b_dtype, match, note, norm_a, norm_b, norm_diff FROM ar_compare(
  ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'),
  ar('h', npy_from_json('[1, 2, 3]'), 'z', npy_from_json('[1, -1]', 'float16')));
SELECT key, dtype, shape, match, norm_diff FROM ar_compare(readfile('tests/data/records/legacy_raw.pb'), readfile('tests/data/records/legacy_raw.pb'));
-- empty and NULL records
SELECT count(*) FROM ar_compare(x'', x'');
SELECT key, match, norm_a, norm_b FROM ar_compare(x'', ar('w', npy_from_json('[3, 4]')));
SELECT count(*) FROM ar_compare(NULL, x'');
SELECT count(*) FROM ar_compare(x'', NULL);
-- errors: arguments, records, and an array whose bytes are broken (raised by the columns that open it)
SELECT * FROM ar_compare(x'0a', x'');
SELECT * FROM ar_compare(x'', x'0a01');
SELECT * FROM ar_compare('text', x'');
SELECT * FROM ar_compare(x'', 3);
SELECT * FROM ar_compare(x'');
SELECT * FROM ar_compare;
SELECT * FROM ar_compare WHERE arg_a = x'' AND arg_b > x'';
SELECT * FROM ar_compare(readfile('tests/data/fedavg/f32_client0.pb'), npy_from_json('[1]'));
SELECT key, position FROM ar_compare(readfile('tests/data/bad_records/npy_data_corrupt.pb'), x'');
SELECT key, match FROM ar_compare(readfile('tests/data/bad_records/npy_data_corrupt.pb'), x'');
SELECT key, norm_b FROM ar_compare(x'', readfile('tests/data/bad_records/npy_data_corrupt.pb'));
