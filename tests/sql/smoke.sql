-- SPDX-License-Identifier: Apache-2.0
SELECT npy_to_json(readfile('tests/data/npy/fortran_2d_f4.npy'));
SELECT npy_to_json(readfile('tests/data/npy/special_f4.npy'));
SELECT npy_to_json(npy_from_json('[1e300, 1.5e-7, 123456789012345680000, 0.1, 100, -0.0]'));
SELECT npy_to_json(npy_from_json('[0.1, 65504, 70000, 1e-8]', 'float16'));
SELECT hex(x.r) = hex(readfile('tests/data/records/mlp_dict.pb')) FROM (SELECT ar_agg(key, data) r FROM array_record(readfile('tests/data/records/mlp_dict.pb'))) x;
SELECT hex(x.r) = hex(readfile('tests/data/records/unicode_keys.pb')) FROM (SELECT ar_agg(key, data) r FROM array_record(readfile('tests/data/records/unicode_keys.pb'))) x;
SELECT hex(ar_merge(readfile('tests/data/records/list_3.pb'))) = hex(readfile('tests/data/records/list_3.pb'));
SELECT hex(ar_merge(readfile('tests/data/records/legacy_raw.pb'))) = hex(readfile('tests/data/records/legacy_raw.pb'));
SELECT hex(ar_from_list(ar_get(r,'0'), ar_get(r,'1'), ar_get(r,'2'))) = hex(r) FROM (SELECT readfile('tests/data/records/list_3.pb') r);
SELECT ar_keys(ar_set(r, 'new', ar_get(r,'0'))), ar_keys(ar_delete(r, '1')), ar_keys(ar_rename(r, '0', 'zero')), ar_keys(ar_select(readfile('tests/data/records/mlp_dict.pb'), 'fc1.*')) FROM (SELECT readfile('tests/data/records/list_3.pb') r);
SELECT ar_keys(ar_merge(readfile('tests/data/records/mlp_dict.pb'), readfile('tests/data/records/list_3.pb'), ar_select(readfile('tests/data/records/mlp_dict.pb'),'fc2*')));
SELECT length(ar_agg(key, data)) FROM array_record(x'');
SELECT ar_agg(key, data) FROM (SELECT 'a' key, readfile('tests/data/npy/scalar_f8.npy') data UNION ALL SELECT 'a', readfile('tests/data/npy/scalar_f8.npy'));
SELECT npy_item(readfile('tests/data/npy/fortran_2d_f4.npy'), 5), npy_item(readfile('tests/data/npy/dtype_le_u8.npy'), -1), npy_item(readfile('tests/data/npy/dtype_be_c16.npy'), 0);
SELECT i, idx, value FROM npy_each(readfile('tests/data/npy/fortran_3d_i2.npy')) LIMIT 5;
SELECT npy_error(readfile('tests/data/bad_npy/' || x)) FROM (SELECT 'empty.npy' x UNION ALL SELECT 'magic_only.npy' UNION ALL SELECT 'wrong_magic.npy' UNION ALL SELECT 'bad_version.npy' UNION ALL SELECT 'truncated_header.npy' UNION ALL SELECT 'truncated_data.npy' UNION ALL SELECT 'extra_trailing_bytes.npy' UNION ALL SELECT 'header_len_past_end.npy' UNION ALL SELECT 'object_dtype_pickle.npy' UNION ALL SELECT 'header_not_dict.npy' UNION ALL SELECT 'shape_overflow.npy' UNION ALL SELECT 'descr_unknown.npy' UNION ALL SELECT 'missing_shape_key.npy' UNION ALL SELECT 'shape_negative.npy' UNION ALL SELECT 'shape_too_big_for_data.npy' UNION ALL SELECT 'structured_dtype.npy' UNION ALL SELECT 'unicode_dtype.npy');
SELECT hex(npy(x'0000a03f', 'float32', '[1]')) = hex(readfile('tests/data/npy/vector_1_f4.npy')) ;
SELECT npy_to_json(npy(x'0102', 'uint8', 2)), npy(x'01', 'float32', '[1]');
