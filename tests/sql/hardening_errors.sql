-- SPDX-License-Identifier: Apache-2.0
-- Regression tests for error reporting found while hardening (see also
-- tests/bad for the malformed-input corpus).

-- A shape whose element count overflows 64 bits is a corrupt input, named
-- as such, not SQLite's bare "string or blob too big".
SELECT npy_dtype(readfile('tests/data/bad_npy/shape_overflow.npy'));
SELECT npy_shape(readfile('tests/data/bad_npy/shape_overflow.npy'));
-- A legacy raw array (stype "", dtype float64, shape [2^31-1, 2^31-1]) whose dtype and shape need more than 2^64 bytes.
SELECT ar_get(x'0a1a0a017712150a07666c6f61743634120affffffff07ffffffff07', 'w');
SELECT ar_error(x'0a1a0a017712150a07666c6f61743634120affffffff07ffffffff07');
-- ... and one with more than 2^64 elements.
SELECT ar_get(x'0a240a0177121f0a07666c6f617436341214ffffffff07ffffffff07ffffffff07ffffffff07', 'w');

-- JSON error offsets point at the offending value, not past it.
SELECT npy_from_json('[[1,2],3]');
SELECT npy_from_json('[[1,2],[3]]');

-- A comparison other than '=' on a table's argument column names the
-- missing argument instead of failing the plan ("no query solution").
SELECT count(*) FROM array_record WHERE arg > x'00';
SELECT count(*) FROM npy_each WHERE arg IS NOT NULL;
