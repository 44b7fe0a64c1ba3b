-- SPDX-License-Identifier: Apache-2.0
-- Every malformed .npy vector (tests/data/bad_npy, made by NumPy's own
-- writer and then damaged) through every function that reads a .npy: each
-- error names the function and the problem, and npy_error gives the same
-- problem text without the name. extra_trailing_bytes.npy is valid (np.load
-- reads it and ignores the tail), so it gives results, not errors.

-- bad_npy/bad_version.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/bad_version.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/bad_version.npy') b);

-- bad_npy/descr_unknown.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/descr_unknown.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/descr_unknown.npy') b);

-- bad_npy/empty.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/empty.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/empty.npy') b);

-- bad_npy/extra_trailing_bytes.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/extra_trailing_bytes.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/extra_trailing_bytes.npy') b);

-- bad_npy/header_len_past_end.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/header_len_past_end.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/header_len_past_end.npy') b);

-- bad_npy/header_not_dict.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/header_not_dict.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/header_not_dict.npy') b);

-- bad_npy/magic_only.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/magic_only.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/magic_only.npy') b);

-- bad_npy/missing_shape_key.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/missing_shape_key.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/missing_shape_key.npy') b);

-- bad_npy/object_dtype_pickle.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/object_dtype_pickle.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/object_dtype_pickle.npy') b);

-- bad_npy/shape_negative.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/shape_negative.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/shape_negative.npy') b);

-- bad_npy/shape_overflow.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/shape_overflow.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/shape_overflow.npy') b);

-- bad_npy/shape_too_big_for_data.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/shape_too_big_for_data.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/shape_too_big_for_data.npy') b);

-- bad_npy/structured_dtype.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/structured_dtype.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/structured_dtype.npy') b);

-- bad_npy/truncated_data.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/truncated_data.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_data.npy') b);

-- bad_npy/truncated_header.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/truncated_header.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/truncated_header.npy') b);

-- bad_npy/unicode_dtype.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/unicode_dtype.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/unicode_dtype.npy') b);

-- bad_npy/wrong_magic.npy
SELECT npy_dtype(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_descr(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_shape(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_ndim(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_numel(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_nbytes(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_fortran(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_version(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT hex(npy_raw(b)) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_to_json(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_item(b, 0) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_valid(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT npy_error(b) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT ar_keys(ar('k', b)) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT ar_keys(ar_from_list(b)) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT ar_keys(ar_set(x'', 'k', b)) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT i, value FROM npy_each(readfile('tests/data/bad_npy/wrong_magic.npy')) LIMIT 2;
SELECT ar_keys(ar_agg('k', b)) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);
SELECT ar_keys(ar_agg_list(b)) FROM (SELECT readfile('tests/data/bad_npy/wrong_magic.npy') b);

-- a record where a .npy belongs, a .npy where a record belongs, a scalar's bytes
SELECT npy_dtype(ar('w', npy_from_json('[1]')));
SELECT ar_get(npy_from_json('[1]'), 'w');
SELECT npy_shape(x'0000c03f'), npy_shape(x'000000000000f83f');
SELECT npy_error(x'000000000000f83f');
