-- SPDX-License-Identifier: Apache-2.0
-- Element access: npy(raw, dtype, shape), npy_raw, npy_to_json,
-- npy_from_json (1 and 2 arguments) and npy_item, on scalars, empty arrays,
-- ndim 8, Fortran order and both byte orders.

-- npy_to_json of NumPy's files: nested lists in C order, floats at their
-- own precision, NaN/Inf as strings, complex as [re, im]
SELECT npy_to_json(readfile('tests/data/npy/dtype_na_b1.npy'));
SELECT npy_to_json(readfile('tests/data/npy/dtype_na_i1.npy'));
SELECT npy_to_json(readfile('tests/data/npy/dtype_le_i8.npy'));
SELECT npy_to_json(readfile('tests/data/npy/dtype_be_i8.npy'));
SELECT npy_to_json(readfile('tests/data/npy/dtype_le_u8.npy'));
SELECT npy_to_json(readfile('tests/data/npy/dtype_be_u4.npy'));
SELECT npy_to_json(readfile('tests/data/npy/dtype_le_f2.npy'));
SELECT npy_to_json(readfile('tests/data/npy/dtype_be_f4.npy'));
SELECT npy_to_json(readfile('tests/data/npy/dtype_le_c8.npy'));
SELECT npy_to_json(readfile('tests/data/npy/dtype_be_c16.npy'));
SELECT npy_to_json(readfile('tests/data/npy/special_f2.npy'));
SELECT npy_to_json(readfile('tests/data/npy/special_f4.npy'));
SELECT npy_to_json(readfile('tests/data/npy/scalar_f8.npy')), npy_to_json(readfile('tests/data/npy/scalar_i4.npy'));
SELECT npy_to_json(readfile('tests/data/npy/empty_1d_f4.npy')), npy_to_json(readfile('tests/data/npy/empty_2x0x3_i8.npy'));
SELECT npy_to_json(readfile('tests/data/npy/fortran_3d_i2.npy'));
SELECT npy_to_json(readfile('tests/data/npy/ndim_8_u1.npy'));
SELECT npy_to_json(readfile('tests/data/npy/v2_header_f4.npy')), npy_to_json(readfile('tests/data/npy/v3_header_i4.npy'));
-- the result is JSON SQLite reads (json_type, not json_valid: json_valid answers 0 when it runs out of memory)
SELECT json_type(npy_to_json(readfile('tests/data/npy/special_f4.npy'))),
       json_extract(npy_to_json(readfile('tests/data/npy/fortran_2d_f4.npy')), '$[2][1]');

-- npy_raw: the payload in C order, in the file's byte order
SELECT hex(npy_raw(readfile('tests/data/npy/dtype_be_i2.npy'))), hex(npy_raw(readfile('tests/data/npy/dtype_le_i2.npy')));
SELECT hex(npy_raw(readfile('tests/data/npy/fortran_2d_f4.npy')));
SELECT hex(npy_raw(readfile('tests/data/npy/fortran_3d_i2.npy')));
SELECT hex(npy_raw(readfile('tests/data/npy/scalar_i4.npy'))), typeof(npy_raw(readfile('tests/data/npy/empty_2x0x3_i8.npy'))),
       length(npy_raw(readfile('tests/data/npy/empty_2x0x3_i8.npy')));
SELECT length(npy_raw(readfile('tests/data/npy/layer_conv_f4.npy')));

-- npy(raw, dtype, shape) writes what numpy.save writes
SELECT hex(npy(x'0000a03f', 'float32', '[1]')) = hex(readfile('tests/data/npy/vector_1_f4.npy'));
SELECT hex(npy(npy_raw(b), npy_descr(b), npy_shape(b))) = hex(b) FROM (SELECT readfile('tests/data/npy/dtype_be_c16.npy') b);
SELECT hex(npy(npy_raw(b), npy_descr(b), npy_shape(b))) = hex(b) FROM (SELECT readfile('tests/data/npy/ndim_8_u1.npy') b);
SELECT hex(npy(npy_raw(b), npy_dtype(b), npy_shape(b))) = hex(b) FROM (SELECT readfile('tests/data/npy/scalar_f8.npy') b);
SELECT hex(npy(npy_raw(b), npy_dtype(b), npy_shape(b))) = hex(b) FROM (SELECT readfile('tests/data/npy/empty_2x0x3_i8.npy') b);
-- a Fortran file comes back as its C-order twin
SELECT npy_fortran(c), npy_to_json(c) = npy_to_json(b) FROM (SELECT b, npy(npy_raw(b), 'float32', '[3,4]') c FROM (SELECT readfile('tests/data/npy/fortran_2d_f4.npy') b));
-- the shape: JSON array, bare integer, or an INTEGER value
SELECT npy_to_json(npy(x'0102', 'uint8', 2)), npy_to_json(npy(x'0102', 'u1', '2')), npy_to_json(npy(x'0102', '|u1', ' [ 2 ] '));
SELECT npy_to_json(npy(x'2a', 'int8', '[]')), npy_shape(npy(x'2a', 'int8', '[1,1,1]'));
SELECT npy_to_json(npy(x'0100', 'bool', '[2]')), npy_to_json(npy(x'3c00', '>f2', '[1]')), npy_to_json(npy(x'003c', 'e', '[1]'));
SELECT npy_dtype(npy(x'', 'double', '[0]')), npy_dtype(npy(x'0000803f', 'f', '[1]')), npy_dtype(npy(x'', 'float_', '[0,7]'));
-- errors
SELECT npy(x'01', 'float32', '[1]');
SELECT npy(x'0000803f', 'float32', '[2]');
SELECT npy(x'00', 'float32', '[-1]');
SELECT npy(x'00', 'uint8', -1);
SELECT npy(x'00', 'uint8', '[1.0]');
SELECT npy(x'00', 'uint8', '1,');
SELECT npy(x'00', 'uint8', 1.0);
SELECT npy(x'00', 'uint8', x'5b315d');
SELECT npy(x'', 'float64', '[4294967296, 4294967296]');
SELECT npy(x'', 'float64', '[4294967296, 4294967295]');
SELECT npy(x'00', '<U1', '[1]');
SELECT npy(x'00', 'object', '[1]');
SELECT npy(x'00', 'float128', '[1]');
SELECT npy(x'00', 'banana', '[1]');
SELECT npy(x'00', 4, '[1]');
SELECT npy('raw', 'uint8', '[3]');
SELECT npy(3, 'uint8', '[1]');

-- npy_from_json: inferred dtype as np.array would choose it
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[[1, 2], [3, 4]]') b);
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[1, 2.5, -0.0]') b);
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[true, false]') b);
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[true, 2]') b);
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[9223372036854775808, 18446744073709551615]') b);
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[-1, 9223372036854775808]') b);
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('2.5') b);
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[]') b);
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[[], []]') b);
SELECT npy_dtype(b), npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('["NaN", "Infinity", "-Infinity", null, 1e308]') b);
-- with a dtype: converted like np.array(x, dtype)
SELECT npy_to_json(npy_from_json('[0.1, 65504, 70000, 1e-8, -0.0]', 'float16'));
SELECT npy_to_json(npy_from_json('[0.1, 16777217, 3.4028235e38, 1e39]', 'float32'));
SELECT npy_to_json(npy_from_json('[-128, 127, 0]', 'int8')), npy_to_json(npy_from_json('[0, 255]', 'uint8'));
SELECT npy_to_json(npy_from_json('[-9223372036854775808, 9223372036854775807]', 'int64'));
SELECT npy_to_json(npy_from_json('[0, 18446744073709551615]', '>u8'));
SELECT npy_to_json(npy_from_json('[1.0, 2e3, true]', 'int16'));
SELECT npy_to_json(npy_from_json('[2, 0, 0.5, "NaN", false]', 'bool'));
SELECT npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[[1, 2], [3.5, "-Infinity"]]', 'complex64') b);
SELECT npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[1, -2]', 'complex128') b);
SELECT npy_shape(b), npy_to_json(b) FROM (SELECT npy_from_json('[]', 'complex64') b);
SELECT npy_descr(npy_from_json('[1]', 'i')), npy_descr(npy_from_json('[1]', '>i4')), npy_descr(npy_from_json('[1]', 'uint')),
       npy_descr(npy_from_json('[1]', 'intp')), npy_descr(npy_from_json('[1]', '?'));
-- range and parse errors name the byte
SELECT npy_from_json('[1, 128]', 'int8');
SELECT npy_from_json('[-1]', 'uint64');
SELECT npy_from_json('[-9223372036854775809]', 'int64');
SELECT npy_from_json('[18446744073709551616]', 'uint64');
SELECT npy_from_json('[1.5]', 'int32');
SELECT npy_from_json('[null]', 'uint8');
SELECT npy_from_json('[[1, 2, 3]]', 'complex64');
SELECT npy_from_json('[[1], [2, 3]]');
SELECT npy_from_json('[1, [2]]');
SELECT npy_from_json('[[1], 2]');
SELECT npy_from_json('[1, 2');
SELECT npy_from_json('[1, 2,]');
SELECT npy_from_json('[01]');
SELECT npy_from_json('["a"]');
SELECT npy_from_json('{"a": 1}');
SELECT npy_from_json('');
SELECT npy_from_json('[1]', 'U8');
SELECT npy_from_json('[1]', 'nope');
SELECT npy_from_json(x'5b315d');
SELECT npy_dtype(npy_from_json(12)), npy_shape(npy_from_json(12)), npy_to_json(npy_from_json(12)), npy_to_json(npy_from_json(0.1)), npy_to_json(npy_from_json(-3.75e-5)), npy_to_json(npy_from_json('-2.5e-300'));
SELECT npy_dtype(npy_from_json(9e999)), npy_to_json(npy_from_json(9e999)), npy_to_json(npy_from_json(-9e999, 'float32')), npy_to_json(npy_from_json(9e999, 'float64'));
SELECT npy_from_json(9e999, 'int32');
SELECT npy_from_json('[1]', 12);

-- npy_item: element i in C order as a SQL number; negative counts from the end
SELECT npy_item(b, 0), npy_item(b, 5), npy_item(b, 11), npy_item(b, -1), npy_item(b, -12)
  FROM (SELECT readfile('tests/data/npy/fortran_2d_f4.npy') b);
SELECT npy_item(b, 0), npy_item(b, 1), npy_item(b, 23) FROM (SELECT readfile('tests/data/npy/fortran_3d_i2.npy') b);
SELECT npy_item(b, 0), npy_item(b, 1), typeof(npy_item(b, 1)) FROM (SELECT readfile('tests/data/npy/dtype_be_i8.npy') b);
SELECT npy_item(b, 1), typeof(npy_item(b, 1)), npy_item(b, 0) FROM (SELECT readfile('tests/data/npy/dtype_le_u8.npy') b);
SELECT npy_item(b, 0), npy_item(b, 3), typeof(npy_item(b, 3)) FROM (SELECT readfile('tests/data/npy/dtype_na_b1.npy') b);
SELECT npy_item(b, 2), npy_item(b, 4), npy_item(b, 5), npy_item(b, 6) FROM (SELECT readfile('tests/data/npy/special_f2.npy') b);
SELECT npy_item(b, 0), typeof(npy_item(b, 0)) FROM (SELECT readfile('tests/data/npy/dtype_le_c8.npy') b);
SELECT npy_item(readfile('tests/data/npy/scalar_f8.npy'), 0), npy_item(readfile('tests/data/npy/scalar_i4.npy'), -1);
SELECT npy_item(readfile('tests/data/npy/ndim_8_u1.npy'), 255), npy_item(readfile('tests/data/npy/dtype_be_f4.npy'), 14);
SELECT npy_item(readfile('tests/data/npy/scalar_f8.npy'), 1);
SELECT npy_item(readfile('tests/data/npy/empty_1d_f4.npy'), 0);
SELECT npy_item(readfile('tests/data/npy/fortran_2d_f4.npy'), 12);
SELECT npy_item(readfile('tests/data/npy/fortran_2d_f4.npy'), -13);
SELECT npy_item(readfile('tests/data/npy/fortran_2d_f4.npy'), 1.0);
SELECT npy_item(readfile('tests/data/npy/fortran_2d_f4.npy'), '1');
SELECT npy_item(readfile('tests/data/npy/fortran_2d_f4.npy'), NULL);
SELECT npy_item('x', 0);
