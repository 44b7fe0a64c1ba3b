-- SPDX-License-Identifier: Apache-2.0
-- npy_repr and ar_repr (NumPy's repr); tests/python/test_repr.py compares many more with NumPy.
SELECT npy_repr(npy_from_json('[[0.5, -1], [2, 3]]', 'float32'));
SELECT npy_repr(npy_from_json('[1e-5, 1, 1000, -2.5e300]'));
SELECT npy_repr(npy_from_json('["NaN", "Infinity", "-Infinity", 0.25]', 'float16'));
SELECT npy_repr(npy_from_json('[[1, -2], [3, 4]]', 'complex64'));
SELECT npy_repr(npy_from_json('[true, false]')), npy_repr(npy_from_json('true'));
SELECT npy_repr(npy_from_json('[0, 255, 7]', 'uint8')), npy_repr(npy_from_json('[-9223372036854775808, 1]'));
SELECT npy_repr(npy_from_json('1.5', 'float32')), npy_repr(npy_from_json('[]', 'float32'));
SELECT npy_repr(npy(x'', 'float32', '[0, 3]')), npy_repr(npy(x'', 'int64', '[2, 0, 1]'));
SELECT npy_repr(npy_from_json('[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30]', 'float32'));
SELECT npy_repr(npy_reshape(npy_from_json('[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24]', 'int16'), '[2, 3, 4]'), 10);
SELECT npy_repr(npy_from_json('[1, 2, 3]'), 0);
SELECT npy_repr(npy_from_json('[1]'), -1);
SELECT npy_repr(npy_from_json('[1]'), 1.5);
SELECT npy_repr(npy_from_json('[1]'), NULL), npy_repr(NULL);
SELECT npy_repr(x'0102');
SELECT npy_repr('text');
SELECT ar_repr(ar('fc.weight', npy_from_json('[[0.5, -1], [2, 3]]', 'float32'), 'it''s', npy_from_json('2.5')));
SELECT ar_repr(ar('w', npy_from_json('[1, 2, 3, 4, 5, 6, 7, 8]', 'int32')), 4);
SELECT ar_repr(x''), ar_repr(NULL), ar_repr(ar('a', npy_from_json('[1]')), NULL);
SELECT ar_repr(x'0a02');
SELECT ar_repr(ar('a', npy_from_json('[1]')), -3);
-- numpy_version: NumPy 2's byte-order names, shape suffix and float16/float32 cut-offs; bad versions
SELECT npy_repr(npy_from_json('[1.5, 1e7]', '>f4'), 1000, '2.4'), npy_repr(npy_from_json('[1.5, 1e7]', '>f4'), 1000, '2.0');
SELECT npy_repr(npy_from_json('[[1, 2, 3], [4, 5, 6], [7, 8, 9]]', '<u2'), 4, '2.2'), npy_repr(npy_from_json('[[1, 2, 3], [4, 5, 6], [7, 8, 9]]', '<u2'), 4, '2.1');
SELECT npy_repr(npy(x'', '>f8', '[2, 0]'), 1000, '2'), ar_repr(ar('a', npy_from_json('[1000]', 'float16')), 1000, '2.3');
SELECT npy_repr(npy_from_json('[1]'), 1000, x'32');
SELECT npy_repr(npy_from_json('[1]'), 1000, '2.');
SELECT ar_repr(ar('a', npy_from_json('[1]')), 1000, 'latest');
SELECT npy_repr(npy_from_json('[1]'), 1000, CAST(x'32c0' AS TEXT)), npy_repr(npy_from_json('[1]'), 1000, NULL) IS NULL;
SELECT npy_repr(npy_from_json('[1]'), 1000, '2.4' || char(0) || 'x');
