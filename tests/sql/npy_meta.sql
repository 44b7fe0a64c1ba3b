-- SPDX-License-Identifier: Apache-2.0
-- Metadata of every .npy vector made by NumPy (tests/data/npy): dtype as
-- str(arr.dtype), descr, shape, ndim, numel, payload bytes, Fortran flag,
-- format version. Compare with tests/data/MANIFEST.json.
CREATE TABLE v(name TEXT);
INSERT INTO v VALUES
  ('dtype_be_c16.npy'), ('dtype_be_f4.npy'), ('dtype_be_f8.npy'), ('dtype_be_i2.npy'), ('dtype_be_i4.npy'),
  ('dtype_be_i8.npy'), ('dtype_be_u4.npy'), ('dtype_le_c16.npy'), ('dtype_le_c8.npy'), ('dtype_le_f2.npy'),
  ('dtype_le_f4.npy'), ('dtype_le_f8.npy'), ('dtype_le_i2.npy'), ('dtype_le_i4.npy'), ('dtype_le_i8.npy'),
  ('dtype_le_u2.npy'), ('dtype_le_u4.npy'), ('dtype_le_u8.npy'), ('dtype_na_b1.npy'), ('dtype_na_i1.npy'),
  ('dtype_na_u1.npy'), ('empty_1d_f4.npy'), ('empty_2x0x3_i8.npy'), ('fortran_2d_f4.npy'), ('fortran_3d_i2.npy'),
  ('layer_conv_f4.npy'), ('ndim_8_u1.npy'), ('scalar_f8.npy'), ('scalar_i4.npy'), ('special_f2.npy'),
  ('special_f4.npy'), ('v1_explicit_f8.npy'), ('v2_header_f4.npy'), ('v3_header_i4.npy'), ('vector_1_f4.npy');
SELECT name, npy_dtype(b), npy_descr(b), npy_shape(b), npy_ndim(b), npy_numel(b), npy_nbytes(b), npy_fortran(b),
       npy_version(b), npy_valid(b), npy_error(b), length(b)
  FROM (SELECT name, readfile('tests/data/npy/' || name) b FROM v) ORDER BY name;

-- results are typed: text, text, text, integers
SELECT typeof(npy_dtype(b)), typeof(npy_descr(b)), typeof(npy_shape(b)), typeof(npy_ndim(b)), typeof(npy_numel(b)),
       typeof(npy_nbytes(b)), typeof(npy_fortran(b)), typeof(npy_version(b)), typeof(npy_valid(b)), typeof(npy_error(b))
  FROM (SELECT readfile('tests/data/npy/scalar_f8.npy') b);

-- the shape is JSON SQLite's json functions can read
SELECT json_array_length(npy_shape(b)), json_extract(npy_shape(b), '$[7]')
  FROM (SELECT readfile('tests/data/npy/ndim_8_u1.npy') b);

-- arrays we build get the same metadata NumPy's files have
SELECT npy_dtype(b), npy_descr(b), npy_shape(b), npy_numel(b), npy_nbytes(b), npy_version(b), length(b)
  FROM (SELECT npy_from_json('[[1,2,3],[4,5,6]]', '>u2') b);
SELECT npy_dtype(b), npy_descr(b), npy_shape(b), npy_numel(b), npy_nbytes(b)
  FROM (SELECT npy(zeroblob(0), 'float64', '[3,0,2]') b);

-- wrong argument types: a .npy is a BLOB
SELECT npy_dtype('text');
SELECT npy_descr(42);
SELECT npy_shape(1.5);
SELECT npy_ndim('');
SELECT npy_numel(x'');
SELECT npy_nbytes(x'93');
SELECT npy_fortran(CAST('x' AS BLOB));
SELECT npy_version(7);
-- ... but npy_valid and npy_error report instead of raising
SELECT npy_valid('text'), npy_error('text'), npy_valid(42), npy_error(42), npy_valid(1.5), npy_error(x'');
-- a table of mixed rows can be scanned without aborting
SELECT name, npy_valid(b), npy_error(b) FROM (
  SELECT 'good' name, readfile('tests/data/npy/vector_1_f4.npy') b
  UNION ALL SELECT 'text', 'abc' UNION ALL SELECT 'null', NULL UNION ALL SELECT 'junk', x'00112233'
  UNION ALL SELECT 'pickle', readfile('tests/data/bad_npy/object_dtype_pickle.npy'));
