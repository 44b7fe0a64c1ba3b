-- SPDX-License-Identifier: Apache-2.0
-- ar_inspect(blob [, bins [, grid [, kind]]]): one row per array with everything a viewer shows.
-- a .npy: one row, no record or key
SELECT * FROM ar_inspect(npy_from_json('[[1, 2, "NaN"], [3, "Infinity", 4.5], ["-Infinity", 0, 1]]'), 4, 2);
SELECT position, record, key, dtype, shape, numel, nbytes, nan, histogram, heatmap FROM ar_inspect(readfile('tests/data/npy/fortran_3d_i2.npy'), 3, 2);
SELECT dtype, min, max, histogram, heatmap FROM ar_inspect(readfile('tests/data/npy/dtype_na_b1.npy'), 2, 2);
SELECT dtype, shape, nan, posinf, neginf, histogram FROM ar_inspect(readfile('tests/data/npy/special_f2.npy'), 5);
-- 0-d, empty, all NaN, a single value (lo == hi widens by 0.5), a 1xN and an Nx1 matrix, a grid larger than the matrix
SELECT shape, histogram, heatmap FROM ar_inspect(readfile('tests/data/npy/scalar_f8.npy'), 2);
SELECT shape, min, nan, histogram, heatmap FROM ar_inspect(readfile('tests/data/npy/empty_2x0x3_i8.npy'));
SELECT nan, histogram, heatmap FROM ar_inspect(npy_from_json('[["NaN", "NaN"], ["NaN", "NaN"]]', 'float32'));
SELECT histogram, heatmap FROM ar_inspect(npy_from_json('[[7, 7, 7]]', 'int8'), 4, 5);
SELECT heatmap FROM ar_inspect(npy_from_json('[[1], [2], [3], [4], [5]]'), 1, 2);
-- 4-D conv weights as a grid of kernels: [o,i,y,x] at row o*kh+y, column i*kw+x
SELECT shape, heatmap FROM ar_inspect(npy_reshape(npy_from_json('[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23]'), '[2,3,2,2]'), 1, 2);
SELECT shape, heatmap FROM ar_inspect(npy_reshape(npy_from_json('[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23]'), '[2,3,2,2]'), 1, 256);
SELECT shape, heatmap FROM ar_inspect(npy_reshape(npy_from_json('[0,1,2,3,4,5]'), '[2,3,1,1]'), 1, 256);
-- 3-D and 5-D as (shape[0], the rest)
SELECT shape, heatmap FROM ar_inspect(npy_reshape(npy_from_json('[0,1,2,3,4,5,6,7,8,9,10,11]'), '[2,3,2]'), 1, 256);
SELECT shape, heatmap FROM ar_inspect(npy_reshape(npy_from_json('[0,1,2,3,4,5,6,7]'), '[2,1,2,1,2]'), 1, 256);
-- complex: NaN elements counted, no infinity counts, histogram or heatmap
SELECT dtype, min, mean, nan, posinf, neginf, histogram, heatmap FROM ar_inspect(npy_from_json('[[[1, 2], ["NaN", 0]], [["Infinity", 1], [0, "NaN"]]]', 'complex64'));
-- a range float64 arithmetic cannot divide into bins: no histogram
SELECT histogram FROM ar_inspect(npy_from_json('[-1.7e308, 1.7e308]'));
-- records: the statistics are ar_stats'
SELECT position, record, key, dtype, shape, numel, nbytes, min, max, mean, std, l2, nan, posinf, neginf FROM ar_inspect(readfile('tests/data/records/mlp_dict.pb'));
SELECT count(*) FROM ar_inspect(readfile('tests/data/records/mlp_dict.pb')) i JOIN ar_stats(readfile('tests/data/records/mlp_dict.pb')) s
  ON s.key = i.key AND s.min = i.min AND s.max = i.max AND s.mean = i.mean AND s.std = i.std AND s.l2 = i.l2 AND s.nonfinite = i.nan + i.posinf + i.neginf;
SELECT key, histogram FROM ar_inspect(readfile('tests/data/records/mlp_dict.pb'), 4);
SELECT key, heatmap FROM ar_inspect(readfile('tests/data/records/legacy_raw.pb'), 2, 1);
-- a RecordDict: the arrays of each ArrayRecord, in order, numbered on
SELECT position, record, key, shape, numel, length(histogram), length(heatmap) FROM ar_inspect(readfile('tests/data/recorddict/full.pb'));
SELECT position, record, key FROM ar_inspect(rd('a', 'array', ar('w', npy_from_json('[1]')), 'none', 'array', x'', 'm', 'metric', '{"x": 1}', 'b', 'array', ar('u', npy_from_json('[2]'), 'v', npy_from_json('[3]'))));
SELECT count(*) FROM ar_inspect(readfile('tests/data/recorddict/empty_records.pb'));
-- an array without a NumPy dtype (a safetensors BF16 tensor): its message's dtype, shape and bytes, no numbers;
-- a RecordDict may hold one, a record holding one is read as a record when told so
SELECT * FROM ar_inspect(rd('st', 'array', ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0')));
SELECT key, dtype, numel, nbytes, l2 FROM ar_inspect(ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'), 32, 32, 'arrayrecord');
SELECT * FROM ar_inspect(ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0'));
-- the hidden columns: the argument and the settings in effect (kind as detected)
SELECT DISTINCT length(arg), bins, grid, kind FROM ar_inspect(readfile('tests/data/records/mlp_dict.pb'));
SELECT DISTINCT bins, grid, kind FROM ar_inspect(readfile('tests/data/records/mlp_dict.pb'), NULL, 3, NULL);
SELECT key FROM ar_inspect WHERE arg = readfile('tests/data/records/mlp_dict.pb') AND kind = 'arrayrecord' AND grid = 2;
-- kind forces the reading: an empty record, a record as a RecordDict
SELECT count(*) FROM ar_inspect(x'', 32, 32, 'arrayrecord');
SELECT record, key FROM ar_inspect(readfile('tests/data/recorddict/full.pb'), 32, 32, 'recorddict');
SELECT count(*) FROM ar_inspect(NULL);
-- per row, as a table's column
CREATE TABLE models(name TEXT, blob BLOB);
INSERT INTO models VALUES ('mlp', readfile('tests/data/records/mlp_dict.pb')), ('one', npy_from_json('[1, 2, 3]')), ('none', NULL);
SELECT m.name, i.position, i.key, i.l2 FROM models m, ar_inspect(m.blob) i ORDER BY m.name, i.position;
-- An invalid array read as a record: its key still lists, every other column raises (as ar_stats).
SELECT key FROM ar_inspect(readfile('tests/data/bad_records/npy_data_corrupt.pb'), 32, 32, 'arrayrecord');
SELECT key, dtype FROM ar_inspect(readfile('tests/data/bad_records/npy_data_corrupt.pb'), 32, 32, 'arrayrecord');
SELECT key, histogram FROM ar_inspect(readfile('tests/data/bad_records/npy_data_corrupt.pb'), 32, 32, 'arrayrecord');
-- errors
SELECT * FROM ar_inspect(readfile('tests/data/bad_records/npy_data_corrupt.pb'));
SELECT * FROM ar_inspect(x'');
SELECT * FROM ar_inspect(x'0a');
SELECT * FROM ar_inspect(readfile('tests/data/bad_npy/truncated_data.npy'));
SELECT * FROM ar_inspect(readfile('tests/data/bad_npy/truncated_data.npy'), 32, 32, 'npy');
SELECT * FROM ar_inspect(readfile('tests/data/records/mlp_dict.pb'), 32, 32, 'npy');
SELECT * FROM ar_inspect(x'0a060a016112010a', 32, 32, 'recorddict');
SELECT rd_error(x'0a060a016112010a'), ar_describe(x'0a060a016112010a');
SELECT * FROM ar_inspect(x'', 0);
SELECT * FROM ar_inspect(x'', 1025);
SELECT * FROM ar_inspect(x'', 2.5);
SELECT * FROM ar_inspect(x'', '8');
SELECT * FROM ar_inspect(x'', 8, 0);
SELECT * FROM ar_inspect(x'', 8, 257);
SELECT * FROM ar_inspect(x'', 8, 8, 'npz');
SELECT * FROM ar_inspect(x'', 8, 8, 1);
SELECT * FROM ar_inspect('text');
SELECT * FROM ar_inspect;
