-- SPDX-License-Identifier: Apache-2.0
-- NULL in, NULL out: every function, every argument position, with the
-- other arguments valid. The exceptions are documented: ar(), ar_from_list()
-- and ar_merge() with no arguments build the empty record, the aggregates
-- skip NULL rows, and the table functions give no rows for a NULL argument.
CREATE TABLE v(n BLOB, r BLOB);
INSERT INTO v VALUES (readfile('tests/data/npy/dtype_le_f4.npy'), readfile('tests/data/records/mlp_dict.pb'));

SELECT npy_dtype(NULL), npy_descr(NULL), npy_shape(NULL), npy_ndim(NULL), npy_numel(NULL), npy_nbytes(NULL),
       npy_fortran(NULL), npy_version(NULL), npy_raw(NULL), npy_to_json(NULL), npy_valid(NULL), npy_error(NULL);
SELECT npy(NULL, 'float32', '[1]'), npy(x'00000000', NULL, '[1]'), npy(x'00000000', 'float32', NULL);
SELECT npy_from_json(NULL), npy_from_json(NULL, 'int8'), npy_from_json('[1]', NULL);
SELECT npy_item(NULL, 0), npy_item(n, NULL) FROM v;

SELECT ar_len(NULL), ar_keys(NULL), ar_count_bytes(NULL), ar_json(NULL), ar_valid(NULL), ar_error(NULL);
SELECT ar_has(NULL, 'fc1.bias'), ar_get(NULL, 'fc1.bias'), ar_data(NULL, 'fc1.bias'), ar_dtype(NULL, 'fc1.bias'),
       ar_shape(NULL, 'fc1.bias'), ar_stype(NULL, 'fc1.bias'), ar_nbytes(NULL, 'fc1.bias') FROM v;
SELECT ar_has(r, NULL), ar_get(r, NULL), ar_data(r, NULL), ar_dtype(r, NULL), ar_shape(r, NULL), ar_stype(r, NULL),
       ar_nbytes(r, NULL) FROM v;

SELECT ar(NULL, n), ar('k', NULL), ar('a', n, NULL, n), ar('a', n, 'b', NULL) FROM v;
SELECT ar_from_list(NULL), ar_from_list(n, NULL), ar_from_list(NULL, n) FROM v;
SELECT ar_set(NULL, 'k', n), ar_set(r, NULL, n), ar_set(r, 'k', NULL) FROM v;
SELECT ar_delete(NULL), ar_delete(NULL, 'k'), ar_delete(r, NULL), ar_delete(r, 'fc1.bias', NULL) FROM v;
SELECT ar_rename(NULL, 'a', 'b'), ar_rename(r, NULL, 'b'), ar_rename(r, 'fc1.bias', NULL) FROM v;
SELECT ar_merge(NULL), ar_merge(r, NULL), ar_merge(NULL, r), ar_merge(r, r, NULL) FROM v;
SELECT ar_select(NULL, '*'), ar_select(r, NULL) FROM v;
-- arguments are checked left to right: a NULL before a bad argument gives
-- NULL, a bad argument before a NULL raises its error
SELECT ar_set(NULL, 'k', 'not a blob'), npy(NULL, 'no such dtype', 'x'), npy_item(NULL, 'x'), ar_get(NULL, 1.5);
SELECT npy(x'00', 'no such dtype', NULL);
SELECT ar_set(x'0a', 'k', NULL);

-- the aggregates skip NULL rows; all-NULL or no rows give the empty record
SELECT length(ar_agg(NULL, n)), length(ar_agg('k', NULL)), length(ar_agg_list(NULL)) FROM v;
-- the table functions give no rows
SELECT count(*) FROM array_record(NULL);
SELECT count(*) FROM npy_each(NULL);
SELECT count(*) FROM v, array_record(NULL);

-- functions without arguments
SELECT ar_version(), typeof(ar_version()), ar_debug() LIKE 'version=' || ar_version() || ' sqlite_header=%';
SELECT ar_version(1);
