-- SPDX-License-Identifier: Apache-2.0
-- ar_cast_like(rec, template): every array cast to the dtype its key has in template.
-- The motivating case: FedAvg makes PyTorch's int64 num_batches_tracked float64.
CREATE TABLE m(name TEXT, rec BLOB);
INSERT INTO m VALUES
  ('global', ar('w', npy_from_json('[0.5, 1.5]', 'float32'), 'bn.num_batches_tracked', npy_from_json('10'), 'be', npy_from_json('[1, 2]', '>f4'))),
  ('mean', ar('w', npy_from_json('[0.25, -1]', 'float32'), 'bn.num_batches_tracked', npy_from_json('12.9'), 'extra', npy_from_json('[1.5]'), 'be', npy_from_json('[1, 2]')));
SELECT c.key, c.dtype, npy_to_json(ar_get(r, c.key)), npy_descr(ar_get(r, c.key))
  FROM (SELECT ar_cast_like((SELECT rec FROM m WHERE name = 'mean'), (SELECT rec FROM m WHERE name = 'global')) r), array_record(r) c;
-- a FedAvg of the test clients, cast back: integer arrays are integers again, floats untouched
SELECT key, dtype FROM array_record(readfile('tests/data/fedavg/mixed_int_result.pb'));
SELECT key, dtype, npy_to_json(ar_get(r, key)) = npy_to_json(npy_cast(ar_get(readfile('tests/data/fedavg/mixed_int_result.pb'), key), dtype))
  FROM (SELECT ar_cast_like(readfile('tests/data/fedavg/mixed_int_result.pb'), readfile('tests/data/fedavg/mixed_int_client0.pb')) r), array_record(r);
-- truncation toward zero, as astype: -1.5 -> -1, 2.9 -> 2; narrowing wraps
SELECT npy_to_json(ar_get(ar_cast_like(ar('k', npy_from_json('[300, -1]')), ar('k', npy_from_json('[0, 0]', 'uint8'))), 'k'));
SELECT npy_to_json(ar_get(ar_cast_like(ar('k', npy_from_json('[-1.5, 2.9]')), ar('k', npy_from_json('[0, 0]', 'int16'))), 'k'));
-- same dtypes: the bytes come back unchanged; keys the template lacks stay; keys only the template has are ignored
SELECT ar_cast_like(rec, rec) = rec FROM m;
SELECT ar_cast_like(readfile('tests/data/records/legacy_raw.pb'), x'') = readfile('tests/data/records/legacy_raw.pb');
SELECT ar_keys(ar_cast_like(ar('a', npy_from_json('[1]')), ar('z', npy_from_json('[1]', 'int8'), 'a', npy_from_json('[1]', 'float16'))));
SELECT ar_cast_like(x'', readfile('tests/data/records/mlp_dict.pb')) = x'';
-- an item the template lacks is copied without being read; raw items described alike (a BF16 tensor) are kept
SELECT ar_cast_like(readfile('tests/data/bad_records/npy_data_corrupt.pb'), x'') = readfile('tests/data/bad_records/npy_data_corrupt.pb');
SELECT ar_json(r), ar_cast_like(r, r) = r FROM (SELECT ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0') r);
-- NULL in, NULL out
SELECT ar_cast_like(NULL, x'') IS NULL, ar_cast_like(x'', NULL) IS NULL;
-- errors: shapes, values with no integer, bad records and arrays on either side
SELECT ar_cast_like(ar('w', npy_from_json('[1, 2]')), ar('w', npy_from_json('[[1, 2]]')));
SELECT ar_cast_like(ar('w', npy_from_json('[1, "NaN"]')), ar('w', npy_from_json('[1, 2]')));
SELECT ar_cast_like(ar('w', npy_from_json('[1e10]')), ar('w', npy_from_json('[1]', 'int32')));
SELECT ar_cast_like(x'0a', x'');
SELECT ar_cast_like(x'', x'0a');
SELECT ar_cast_like(x'', 'text');
SELECT ar_cast_like(readfile('tests/data/records/mlp_dict.pb'), readfile('tests/data/bad_records/npy_data_corrupt.pb'));
SELECT ar_cast_like(readfile('tests/data/bad_records/npy_data_corrupt.pb'), readfile('tests/data/records/mlp_dict.pb'));
SELECT ar_cast_like(ar('h', npy_from_json('[1, 2, 3]')), ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'));
