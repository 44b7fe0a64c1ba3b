-- SPDX-License-Identifier: Apache-2.0
-- ar_describe(blob [, max_items]): what a BLOB is, from its headers.
-- .npy files: every dtype, byte order, Fortran order, 0-d, empty
SELECT ar_describe(readfile('tests/data/npy/dtype_le_f4.npy'));
SELECT ar_describe(readfile('tests/data/npy/dtype_be_c16.npy'));
SELECT ar_describe(readfile('tests/data/npy/fortran_3d_i2.npy'));
SELECT ar_describe(readfile('tests/data/npy/scalar_f8.npy'));
SELECT ar_describe(readfile('tests/data/npy/empty_2x0x3_i8.npy'));
SELECT ar_describe(readfile('tests/data/npy/ndim_8_u1.npy'));
SELECT ar_describe(readfile('tests/data/npy/dtype_na_b1.npy'));
-- ArrayRecords: items bounded by max_items (default 3; 0 lists none)
SELECT ar_describe(readfile('tests/data/records/mlp_dict.pb'));
SELECT ar_describe(readfile('tests/data/records/mlp_dict.pb'), 0);
SELECT ar_describe(readfile('tests/data/records/mlp_dict.pb'), 100);
SELECT ar_describe(readfile('tests/data/records/legacy_raw.pb'));
SELECT ar_describe(readfile('tests/data/records/unicode_keys.pb'), 1);
-- nbytes: the arrays' data, not ar_count_bytes (which adds .npy headers and keys)
SELECT json_extract(ar_describe(r), '$.nbytes'), ar_count_bytes(r), (SELECT sum(npy_nbytes(ar_get(r, key))) FROM ar_stats(r))
  FROM (SELECT readfile('tests/data/records/mlp_dict.pb') AS r);
-- RecordDicts: values as rd_metrics / rd_config give them
SELECT ar_describe(readfile('tests/data/recorddict/full.pb'), 10);
SELECT json_extract(ar_describe(rd('m', 'metric', '{"num-examples": 120, "loss": 0.25}')), '$.items[0].values') = rd_metrics(rd('m', 'metric', '{"num-examples": 120, "loss": 0.25}'));
SELECT ar_describe(readfile('tests/data/recorddict/config_types.pb'));
SELECT ar_describe(readfile('tests/data/recorddict/empty_records.pb'));
SELECT ar_describe(rd('a', 'array', x''));
-- An ArrayRecord that also parses as a RecordDict (its items as RecordDict items) is an ArrayRecord.
SELECT ar_describe(ar('w', npy_from_json('[1, 2]', 'float32')));
-- An array without a NumPy dtype (a safetensors BF16 tensor): a valid record, but not described
-- (the viewer falls back); inside a RecordDict, which rd_valid accepts, its data bytes count.
SELECT ar_valid(r), ar_describe(r), ar_describe(rd('a', 'array', r)) FROM (SELECT ar_from_safetensors(x'8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f666673657473223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f666673657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f00404040003c00c0') AS r);
-- NULL for everything else, never an error
SELECT ar_describe(NULL), ar_describe('text'), ar_describe(1), ar_describe(1.5), ar_describe(x''), ar_describe(x'00');
SELECT ar_describe(readfile('tests/data/recorddict/empty.pb')), ar_describe(readfile('tests/data/records/empty.pb'));
SELECT ar_describe(readfile('tests/data/bad_npy/' || f)) FROM (SELECT 'truncated_data.npy' AS f UNION ALL SELECT 'truncated_header.npy' UNION ALL SELECT 'object_dtype_pickle.npy' UNION ALL SELECT 'magic_only.npy');
SELECT count(*) FROM (SELECT ar_describe(readfile('tests/data/bad_records/' || f)) AS d FROM (SELECT 'duplicate_key.pb' AS f UNION ALL SELECT 'len_past_end.pb' UNION ALL SELECT 'npy_data_corrupt.pb' UNION ALL SELECT 'truncated.pb' UNION ALL SELECT 'wrong_wiretype.pb')) WHERE d IS NOT NULL;
SELECT ar_describe(ar('w', npy_from_json('[1]')), NULL);
-- errors: max_items only
SELECT ar_describe(x'', -1);
SELECT ar_describe(x'', 'three');
SELECT ar_describe(x'', 2.5);
