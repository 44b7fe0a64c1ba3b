-- SPDX-License-Identifier: Apache-2.0
-- Building records: ar, ar_from_list, ar_set, ar_delete, ar_rename,
-- ar_merge, ar_select, and the aggregates ar_agg and ar_agg_list. Every
-- record written is canonical Flower serde bytes: rebuilding a Flower vector
-- from its own arrays gives back the same BLOB.
CREATE TABLE t(k TEXT, v BLOB);
INSERT INTO t SELECT key, data FROM array_record(readfile('tests/data/records/mlp_dict.pb'));

-- ar(key, npy, ...) and ar_from_list(npy, ...) rebuild Flower's own bytes
SELECT hex(ar('fc1.weight', ar_get(r, 'fc1.weight'), 'fc1.bias', ar_get(r, 'fc1.bias'), 'fc2.weight', ar_get(r, 'fc2.weight'),
              'fc2.bias', ar_get(r, 'fc2.bias'), 'bn.num_batches_tracked', ar_get(r, 'bn.num_batches_tracked'))) = hex(r)
  FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
SELECT hex(ar_from_list(ar_get(r, 0), ar_get(r, 1), ar_get(r, 2))) = hex(r) FROM (SELECT readfile('tests/data/records/list_3.pb') r);
SELECT hex(ar('couche.poids-é', ar_get(r, 'couche.poids-é'), '层', ar_get(r, '层'), '', ar_get(r, ''))) = hex(r)
  FROM (SELECT readfile('tests/data/records/unicode_keys.pb') r);
SELECT ar_json(ar('a', npy_from_json('[1.5, 2]', 'float32'), 'b', npy_from_json('7'), 3, npy_from_json('[[true]]')));
SELECT ar_json(ar_from_list(npy_from_json('[1]', '>i2'), npy_from_json('[]'), npy_from_json('[[[1]]]', 'uint8')));
-- ar() with no arguments and ar_from_list() are the empty record
SELECT typeof(ar()), length(ar()), length(ar_from_list()), ar_len(ar());
-- the stored arrays are the .npy bytes as given; dtype is str(arr.dtype)
SELECT ar_dtype(r, 'x'), ar_shape(r, 'x'), ar_stype(r, 'x'), ar_data(r, 'x') = readfile('tests/data/npy/dtype_be_f8.npy')
  FROM (SELECT ar('x', readfile('tests/data/npy/dtype_be_f8.npy')) r);
SELECT ar_dtype(r, 'f'), ar_shape(r, 'f'), npy_fortran(ar_get(r, 'f')) FROM (SELECT ar('f', readfile('tests/data/npy/fortran_2d_f4.npy')) r);
SELECT ar_json(ar('s', readfile('tests/data/npy/scalar_i4.npy'), 'e', readfile('tests/data/npy/empty_2x0x3_i8.npy'),
                  'n', readfile('tests/data/npy/ndim_8_u1.npy')));
-- errors
SELECT ar('a');
SELECT ar('a', npy_from_json('[1]'), 'b');
SELECT ar('a', npy_from_json('[1]'), 'a', npy_from_json('[2]'));
SELECT ar('a', npy_from_json('[1]'), 'b', npy_from_json('[2]'), 'a', npy_from_json('[3]'));
SELECT ar('a', x'00');
SELECT ar('a', 'not a blob');
SELECT ar(x'61', npy_from_json('[1]'));
SELECT ar(1.5, npy_from_json('[1]'));
SELECT ar(CAST(x'c0af' AS TEXT), npy_from_json('[1]'));
SELECT ar('a', readfile('tests/data/bad_npy/object_dtype_pickle.npy'));
SELECT ar('a', npy(x'', 'uint8', '[2147483648, 0]'));
SELECT ar_from_list(npy_from_json('[1]'), x'');
SELECT ar_from_list(npy(x'', 'uint8', '[0, 2147483648]'));

-- ar_set: replace in place (position kept) or append
SELECT ar_keys(r2), ar_dtype(r2, 'fc1.bias'), ar_shape(r2, 'fc1.bias'), ar_len(r2)
  FROM (SELECT ar_set(readfile('tests/data/records/mlp_dict.pb'), 'fc1.bias', npy_from_json('[1, 2, 3]', 'int8')) r2);
SELECT ar_keys(r2), npy_to_json(ar_get(r2, 'new')) FROM (SELECT ar_set(readfile('tests/data/records/list_3.pb'), 'new', npy_from_json('[[5]]')) r2);
SELECT ar_keys(ar_set(x'', 'only', npy_from_json('1'))), ar_keys(ar_set(readfile('tests/data/records/list_3.pb'), 1, npy_from_json('1')));
-- setting an array to itself gives the same bytes
SELECT hex(ar_set(r, 'fc2.weight', ar_get(r, 'fc2.weight'))) = hex(r) FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
-- legacy items that are not touched stay legacy; a set one becomes numpy.ndarray
SELECT quote(ar_stype(r2, 'w')), ar_stype(r2, 'b'), ar_dtype(r2, 'b'), ar_nbytes(r2, 'w')
  FROM (SELECT ar_set(readfile('tests/data/records/legacy_raw.pb'), 'b', npy_from_json('[1, 2]', 'int32')) r2);
SELECT ar_set(x'', 'k', x'');
SELECT ar_set(x'0a', 'k', npy_from_json('[1]'));
SELECT ar_set(x'', 'k', 'v');
SELECT ar_set(x'', 2.5, npy_from_json('[1]'));

-- ar_delete: drop keys, ignore absent ones
SELECT ar_keys(ar_delete(r, 'fc1.weight')), ar_keys(ar_delete(r, 'fc1.bias', 'fc2.bias', 'missing')), ar_keys(ar_delete(r, 'nope'))
  FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
SELECT length(ar_delete(r, 0, 1, 2)), ar_keys(ar_delete(r, 1)) FROM (SELECT readfile('tests/data/records/list_3.pb') r);
SELECT hex(ar_delete(r)) = hex(r), hex(ar_delete(r, 'x')) = hex(r) FROM (SELECT readfile('tests/data/records/legacy_raw.pb') r);
SELECT ar_delete(x'', 'a', 1.5);
SELECT ar_delete();

-- ar_rename: in place; absent old key leaves the record unchanged
SELECT ar_keys(ar_rename(r, 'fc1.bias', 'bias1')), ar_keys(ar_rename(r, 'nope', 'x')), ar_keys(ar_rename(r, 'fc1.bias', 'fc1.bias'))
  FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
SELECT ar_get(ar_rename(r, 'fc2.bias', 'b2'), 'b2') = ar_get(r, 'fc2.bias') FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
SELECT ar_keys(ar_rename(readfile('tests/data/records/unicode_keys.pb'), '', 'empty'));
SELECT ar_rename(readfile('tests/data/records/mlp_dict.pb'), 'fc1.bias', 'fc2.bias');
SELECT ar_rename(x'', 'a', x'62');

-- ar_merge: dict.update semantics — first position, last value, new keys appended
SELECT ar_keys(m), npy_to_json(ar_get(m, '0')), ar_dtype(m, 'fc1.bias')
  FROM (SELECT ar_merge(readfile('tests/data/records/list_3.pb'), readfile('tests/data/records/mlp_dict.pb'),
                        ar('0', npy_from_json('[9]'), 'fc1.bias', npy_from_json('[true]'))) m);
SELECT hex(ar_merge(r)) = hex(r), hex(ar_merge(r, r)) = hex(r), hex(ar_merge(x'', r, x'')) = hex(r)
  FROM (SELECT readfile('tests/data/records/unicode_keys.pb') r);
SELECT length(ar_merge(x'')), length(ar_merge(x'', x''));
SELECT ar_merge();
SELECT ar_merge(x'', 'text');

-- ar_select: keys matching a GLOB (case-sensitive, * ? [...])
SELECT ar_keys(ar_select(r, 'fc1.*')), ar_keys(ar_select(r, '*.bias')), ar_keys(ar_select(r, 'fc?.weight')),
       ar_keys(ar_select(r, '[b]*')), ar_keys(ar_select(r, 'FC*')), ar_keys(ar_select(r, '*'))
  FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
SELECT ar_keys(ar_select(readfile('tests/data/records/unicode_keys.pb'), '?')), ar_keys(ar_select(readfile('tests/data/records/unicode_keys.pb'), ''));
SELECT hex(ar_select(r, '*')) = hex(r) FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
SELECT ar_select(x'', 3);

-- ar_agg(key, npy): a record from rows in row order
SELECT hex(ar_agg(k, v)) = hex(readfile('tests/data/records/mlp_dict.pb')) FROM (SELECT * FROM t ORDER BY rowid);
SELECT ar_keys(ar_agg(k, v)) FROM (SELECT * FROM t ORDER BY k);
SELECT ar_keys(ar_agg(k, v)) FROM (SELECT * FROM t ORDER BY k DESC);
SELECT substr(k, 1, 3) g, ar_keys(ar_agg(k, v)) FROM t GROUP BY g ORDER BY g;
-- rows with a NULL key or value are skipped; zero rows give the empty record
SELECT ar_keys(ar_agg(k, v)) FROM (SELECT 'a' k, npy_from_json('[1]') v UNION ALL SELECT NULL, npy_from_json('[2]')
                                   UNION ALL SELECT 'c', NULL UNION ALL SELECT 'd', npy_from_json('[4]'));
SELECT typeof(ar_agg(k, v)), length(ar_agg(k, v)) FROM t WHERE 0;
SELECT typeof(ar_agg(k, v)), length(ar_agg(k, v)) FROM (SELECT NULL k, NULL v);
-- errors name the row and the key
SELECT ar_agg(k, v) FROM (SELECT 'a' k, npy_from_json('[1]') v UNION ALL SELECT 'b', npy_from_json('[2]') UNION ALL SELECT 'a', npy_from_json('[3]'));
SELECT ar_agg(k, v) FROM (SELECT 'a' k, x'00' v);
SELECT ar_agg(k, v) FROM (SELECT 1.5 k, npy_from_json('[1]') v);
SELECT ar_agg(k, v) FROM (SELECT 'a' k, 'text' v);

-- ar_agg_list(npy): keys "0", "1", ... in row order
SELECT hex(ar_agg_list(v)) = hex(readfile('tests/data/records/list_3.pb'))
  FROM (SELECT data v FROM array_record(readfile('tests/data/records/list_3.pb')) ORDER BY position);
SELECT ar_keys(ar_agg_list(v)), ar_dtype(ar_agg_list(v), '1') FROM (SELECT v FROM t ORDER BY k);
SELECT ar_keys(ar_agg_list(v)) FROM (SELECT npy_from_json('[1]') v UNION ALL SELECT NULL UNION ALL SELECT npy_from_json('[2]'));
SELECT length(ar_agg_list(v)) FROM t WHERE 0;
SELECT ar_agg_list(v) FROM (SELECT x'93' v);
