-- SPDX-License-Identifier: Apache-2.0
-- npy_* math: reductions, elementwise functions, dtypes, layouts and errors.
-- Values are small so every expected output can be checked by hand.

-- reductions of [[1,2],[3,4]] as float32, then int8 (min/max stay INTEGER)
SELECT npy_sum(x), npy_mean(x), npy_min(x), npy_max(x), npy_std(x), npy_norm(x), npy_norm(x, 1), npy_norm(x, 'inf'), npy_count_nonfinite(x)
  FROM (SELECT npy_from_json('[[1,2],[3,4]]', 'float32') x);
SELECT npy_sum(x), npy_min(x), typeof(npy_min(x)), npy_max(x) FROM (SELECT npy_from_json('[[1,2],[3,-4]]', 'int8') x);
-- Fortran order (values 0..23) and big-endian files
SELECT npy_sum(x), npy_mean(x), npy_min(x), npy_max(x), npy_std(x) FROM (SELECT readfile('tests/data/npy/fortran_3d_i2.npy') x);
SELECT npy_sum(x), npy_max(x) FROM (SELECT readfile('tests/data/npy/fortran_2d_f4.npy') x);
SELECT npy_min(x), npy_max(x), npy_sum(x) FROM (SELECT readfile('tests/data/npy/dtype_be_f4.npy') x);
-- integers: min/max exact; sums exact until rounded once to REAL (in double
-- INT64_MIN + INT64_MAX would cancel to 0 and the sum come out 1727)
SELECT npy_min(x), npy_max(x), npy_sum(x) FROM (SELECT readfile('tests/data/npy/dtype_be_i8.npy') x);
SELECT npy_sum(npy_from_json('[true, false, true]')), npy_mean(npy_from_json('[true, false, true, true]'));
SELECT npy_max(npy_from_json('[18446744073709551615, 1]', 'uint64')), npy_min(npy_from_json('[-9223372036854775808, 0]', 'int64'));
-- complex: sums and means are "[re,im]" text; std and norm are real; there is no order
SELECT npy_sum(z), npy_mean(z), npy_std(z), npy_norm(z), npy_norm(z, 1) FROM (SELECT npy_from_json('[[3,4],[0,-2]]', 'complex64') z);
SELECT npy_min(npy_from_json('[[1,2]]', 'complex128'));
-- NaN results read as NULL, infinities survive, nonfinite counts both
SELECT npy_sum(x), npy_min(x), npy_norm(x, 'inf'), npy_count_nonfinite(x) FROM (SELECT npy_from_json('[1, "NaN", "Infinity"]') x);
SELECT npy_sum(x), npy_max(x), npy_min(x) FROM (SELECT npy_from_json('[1, "Infinity", -2]', 'float16') x);
-- empty arrays: sum and norms 0, the rest NULL
SELECT npy_sum(e), npy_mean(e), npy_min(e), npy_std(e), npy_norm(e), npy_norm(e, 'inf'), npy_dot(e, e), npy_allclose(e, e)
  FROM (SELECT npy_from_json('[]', 'float32') e);
-- dot, cosine, allclose
SELECT npy_dot(a, b), npy_cosine(a, b), npy_cosine(a, a), npy_cosine(a, npy_scale(a, 0))
  FROM (SELECT npy_from_json('[1,2,3]') a, npy_from_json('[4,5,6]', 'int32') b);
SELECT npy_dot(npy_from_json('[[1,2],[3,4]]', 'complex64'), npy_from_json('[[1,0],[0,1]]', 'complex64'));
SELECT npy_allclose(npy_from_json('[1, 1e10]'), npy_from_json('[1.000001, 1.00001e10]')),
       npy_allclose(npy_from_json('[1, "NaN"]'), npy_from_json('[1, "NaN"]')),
       npy_allclose(npy_from_json('["Infinity"]'), npy_from_json('["Infinity"]')),
       npy_allclose(npy_from_json('[1.0, 1.1]'), npy_from_json('1.05'), 0.1),
       npy_allclose(npy_from_json('[0]'), npy_from_json('[1e-9]'), 0, 0);
-- elementwise: NumPy's result dtype, and the same bytes np.save writes
SELECT npy_dtype(npy_add(npy_from_json('[1]', 'int8'), npy_from_json('[1]', 'uint8'))),
       npy_dtype(npy_add(npy_from_json('[1]', 'int16'), npy_from_json('[1]', 'float16'))),
       npy_dtype(npy_mul(npy_from_json('[1]', 'uint64'), npy_from_json('[1]', 'int64'))),
       npy_dtype(npy_sub(npy_from_json('[1]', 'float64'), npy_from_json('[[1,0]]', 'complex64'))),
       npy_dtype(npy_add(npy_from_json('[true]'), npy_from_json('[true]')));
SELECT npy_to_json(npy_add(npy_from_json('[[1,2],[3,4]]', 'float32'), npy_from_json('[[10,20],[30,40]]', 'int8')));
SELECT npy_to_json(npy_sub(npy_from_json('[100, -100]', 'int8'), npy_from_json('[-100, 100]', 'int8')));
SELECT npy_to_json(npy_mul(npy_from_json('[[1,2],[3,-4]]', 'complex64'), npy_from_json('[[0,1],[2,0]]', 'complex64')));
SELECT npy_to_json(npy_mul(npy_from_json('[true, true, false]'), npy_from_json('[true, false, false]'))),
       npy_to_json(npy_add(npy_from_json('[true, false, false]'), npy_from_json('[true, false, true]')));
-- a () scalar broadcasts; Fortran inputs give a Fortran result
SELECT npy_to_json(npy_mul(npy_from_json('[1,2,3]', 'float32'), npy_from_json('2', 'float32')));
SELECT npy_fortran(r), npy_to_json(r) FROM (SELECT npy_add(readfile('tests/data/npy/fortran_2d_f4.npy'), npy_from_json('1', 'float32')) r);
SELECT hex(npy_add(npy_from_json('[0.5, 1.5]', 'float32'), npy_from_json('[0.5, 0.5]', 'float32')))
     = hex(npy_from_json('[1, 2]', 'float32'));
-- scale: floats keep their dtype, integers become float64
SELECT npy_dtype(r), npy_to_json(r) FROM (SELECT npy_scale(npy_from_json('[1,2,3]', 'int16'), 0.5) r);
SELECT npy_dtype(r), npy_to_json(r) FROM (SELECT npy_scale(npy_from_json('[0.1, 1000]', 'float16'), 3) r);
-- cast: astype, with the memory order kept; float -> int truncates; impossible values are errors
SELECT npy_to_json(npy_cast(npy_from_json('[-1.9, 1.9, 255.5]'), 'int16')), npy_to_json(npy_cast(npy_from_json('[300, -1]'), 'uint8'));
SELECT npy_descr(npy_cast(npy_from_json('[1]'), '>f4')), npy_fortran(npy_cast(readfile('tests/data/npy/fortran_2d_f4.npy'), 'float64'));
SELECT npy_to_json(npy_cast(npy_from_json('[[1.5,-2],[0,0]]', 'complex64'), 'float32')), npy_to_json(npy_cast(npy_from_json('[0, 0.5, "NaN"]'), 'bool'));
-- a float16 NaN widens with its payload as it is, signalling ones too (NumPy's half-to-double)
SELECT hex(npy_raw(npy_cast(npy(x'017d', 'float16', '[1]'), 'float64'))), hex(npy_raw(npy_cast(npy(x'01fd', 'float16', '[1]'), 'complex128'))), hex(npy_raw(npy_cast(npy(x'017e', 'float16', '[1]'), 'float64')));
SELECT npy_cast(npy_from_json('[1, "NaN"]'), 'int32');
SELECT npy_cast(npy_from_json('[1e10]'), 'int32');
SELECT npy_cast(npy_from_json('[1]'), 'U3');
-- reshape: one -1, C index order; a Fortran array is copied into C order
SELECT npy_shape(npy_reshape(npy_from_json('[[1,2,3],[4,5,6]]'), '[3,-1]')), npy_to_json(npy_reshape(npy_from_json('[[1,2,3],[4,5,6]]'), '[3,-1]'));
SELECT npy_to_json(npy_reshape(readfile('tests/data/npy/fortran_2d_f4.npy'), -1));
SELECT npy_fortran(npy_reshape(readfile('tests/data/npy/fortran_2d_f4.npy'), '[3,1,4]')), npy_fortran(npy_reshape(readfile('tests/data/npy/fortran_2d_f4.npy'), '[4,3]'));
SELECT npy_reshape(npy_from_json('[1,2,3]'), '[2,-1]');
SELECT npy_reshape(npy_from_json('[1,2,3]'), '[-1,-1]');
SELECT npy_reshape(npy_from_json('[1,2,3]'), '[-3]');
-- errors
SELECT npy_add(npy_from_json('[[1,2]]'), npy_from_json('[1,2]'));
SELECT npy_sub(npy_from_json('[true]'), npy_from_json('[false]'));
SELECT npy_norm(npy_from_json('[1]'), 3);
SELECT npy_dot(npy_from_json('[1,2]'), npy_from_json('[1,2,3]'));
SELECT npy_cosine(npy_from_json('[[1,2]]', 'complex64'), npy_from_json('[[1,2]]', 'complex64'));
SELECT npy_scale(npy_from_json('[1]'), 'two');
SELECT npy_sum(x'93'), npy_sum('x');
-- NULL in, NULL out
SELECT npy_sum(NULL), npy_add(NULL, npy_from_json('[1]')), npy_scale(npy_from_json('[1]'), NULL), npy_norm(npy_from_json('[1]'), NULL), npy_allclose(npy_from_json('[1]'), npy_from_json('[1]'), NULL);
