-- SPDX-License-Identifier: Apache-2.0
-- Reading Flower ArrayRecord BLOBs (tests/data/records, made by Flower's
-- serde): ar_len, ar_keys, ar_count_bytes (== Flower's count_bytes()),
-- ar_json, ar_has, ar_get, ar_data, ar_dtype, ar_shape, ar_stype, ar_nbytes,
-- ar_valid, ar_error. Compare with tests/data/MANIFEST.json.
CREATE TABLE recs(name TEXT, rec BLOB);
INSERT INTO recs SELECT x, readfile('tests/data/records/' || x || '.pb')
  FROM (SELECT 'empty' x UNION ALL SELECT 'list_3' UNION ALL SELECT 'mlp_dict' UNION ALL SELECT 'unicode_keys'
        UNION ALL SELECT 'legacy_raw');
SELECT name, length(rec), ar_len(rec), ar_keys(rec), ar_count_bytes(rec), ar_valid(rec), ar_error(rec) FROM recs;
SELECT name, ar_json(rec) FROM recs;
SELECT json_type(ar_json(rec)), json_extract(ar_json(rec), '$."fc2.weight".shape[1]') FROM recs WHERE name = 'mlp_dict';

-- per key
SELECT k, ar_has(r, k), ar_dtype(r, k), ar_shape(r, k), ar_stype(r, k), ar_nbytes(r, k), length(ar_data(r, k)),
       npy_dtype(ar_get(r, k)), npy_shape(ar_get(r, k))
  FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r),
       (SELECT 'fc1.weight' k UNION ALL SELECT 'fc1.bias' UNION ALL SELECT 'fc2.weight' UNION ALL SELECT 'fc2.bias'
        UNION ALL SELECT 'bn.num_batches_tracked');
SELECT npy_to_json(ar_get(r, 'fc2.bias')), npy_to_json(ar_get(r, 'bn.num_batches_tracked'))
  FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
-- for numpy.ndarray items ar_get and ar_data are the stored .npy as is
SELECT ar_get(r, 'fc1.bias') = ar_data(r, 'fc1.bias') FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);
-- list keys: '0', '1', ...; an integer key is taken as its text
SELECT ar_has(r, 0), ar_has(r, '2'), ar_has(r, 3), npy_to_json(ar_get(r, 0)), npy_to_json(ar_get(r, 1)), npy_to_json(ar_get(r, 2)),
       ar_dtype(r, 2), ar_shape(r, 2)
  FROM (SELECT readfile('tests/data/records/list_3.pb') r);
-- non-ASCII and empty keys
SELECT ar_has(r, 'couche.poids-é'), ar_dtype(r, 'couche.poids-é'), ar_shape(r, '层'), ar_nbytes(r, ''), ar_dtype(r, ''),
       npy_to_json(ar_get(r, '层'))
  FROM (SELECT readfile('tests/data/records/unicode_keys.pb') r);
-- legacy raw records (stype ''): dtype and shape from the message, data the
-- raw C-order buffer; ar_get converts to a .npy, ar_data gives the raw bytes
SELECT ar_stype(r, 'w'), quote(ar_stype(r, 'w')), ar_dtype(r, 'w'), ar_shape(r, 'w'), ar_nbytes(r, 'w'), hex(ar_data(r, 'w')),
       npy_dtype(ar_get(r, 'w')), npy_shape(ar_get(r, 'w')), npy_to_json(ar_get(r, 'w')), npy_to_json(ar_get(r, 'b'))
  FROM (SELECT readfile('tests/data/records/legacy_raw.pb') r);
SELECT hex(npy_raw(ar_get(r, 'w'))) = hex(ar_data(r, 'w')), hex(ar_get(r, 'b')) = hex(npy(ar_data(r, 'b'), 'int32', '[2]'))
  FROM (SELECT readfile('tests/data/records/legacy_raw.pb') r);
-- missing keys give NULL; ar_has tells the difference
SELECT ar_has(r, 'nope'), ar_get(r, 'nope'), ar_data(r, 'nope'), ar_dtype(r, 'nope'), ar_shape(r, 'nope'), ar_stype(r, 'nope'),
       ar_nbytes(r, 'nope'), ar_has(r, 'FC1.WEIGHT'), ar_has(r, 'fc1.weight ')
  FROM (SELECT readfile('tests/data/records/mlp_dict.pb') r);

-- the empty record (zero-length BLOB)
SELECT ar_len(x''), ar_keys(x''), ar_json(x''), ar_count_bytes(x''), ar_has(x'', ''), ar_get(x'', ''), ar_valid(x''),
       ar_error(x''), ar_len(zeroblob(0));

-- results are typed
SELECT typeof(ar_len(r)), typeof(ar_keys(r)), typeof(ar_count_bytes(r)), typeof(ar_json(r)), typeof(ar_has(r, 'w')),
       typeof(ar_get(r, 'w')), typeof(ar_data(r, 'w')), typeof(ar_dtype(r, 'w')), typeof(ar_shape(r, 'w')),
       typeof(ar_stype(r, 'w')), typeof(ar_nbytes(r, 'w')), typeof(ar_valid(r)), typeof(ar_error(r))
  FROM (SELECT readfile('tests/data/records/legacy_raw.pb') r);

-- FedAvg vectors from Flower: client records and the aggregate
SELECT x, ar_len(r), ar_keys(r), ar_valid(r) FROM (SELECT x, readfile('tests/data/fedavg/' || x || '.pb') r
  FROM (SELECT 'f32_client0' x UNION ALL SELECT 'f64_result' UNION ALL SELECT 'mixed_int_client2' UNION ALL SELECT 'mixed_int_result'));
SELECT ar_json(readfile('tests/data/fedavg/mixed_int_result.pb'));

-- wrong argument types
SELECT ar_len('text');
SELECT ar_keys(1);
SELECT ar_count_bytes(2.5);
SELECT ar_json('x');
SELECT ar_has(x'', x'00');
SELECT ar_get(x'', 1.5);
SELECT ar_data('r', 'k');
SELECT ar_dtype(x'', CAST(x'ff' AS TEXT));
SELECT ar_shape(7, 'k');
SELECT ar_stype(x'', x'');
SELECT ar_nbytes(x'', 0.0);
SELECT ar_valid('text'), ar_error('text'), ar_valid(1), ar_error(1.5), ar_valid(x'0a'), ar_error(x'0a');
-- a table of mixed rows can be scanned without aborting
SELECT name, ar_valid(r), ar_error(r) FROM (
  SELECT 'good' name, readfile('tests/data/records/list_3.pb') r UNION ALL SELECT 'empty', x''
  UNION ALL SELECT 'null', NULL UNION ALL SELECT 'text', 'abc'
  UNION ALL SELECT 'bad npy', readfile('tests/data/bad_records/npy_data_corrupt.pb'));
