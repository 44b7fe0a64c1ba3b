-- SPDX-License-Identifier: Apache-2.0
-- Every function with NULL in each argument position (NULL in -> NULL out,
-- except where docs/reference.md says otherwise), with arguments of the wrong type
-- (a clear error naming the function), and with empty values.

CREATE TEMP TABLE v AS SELECT
  readfile('tests/data/npy/dtype_le_f4.npy') AS npy,
  readfile('tests/data/records/list_3.pb') AS rec;

-- single arrays: NULL
SELECT npy_dtype(NULL), npy_descr(NULL), npy_shape(NULL), npy_ndim(NULL), npy_numel(NULL), npy_nbytes(NULL),
       npy_fortran(NULL), npy_version(NULL), npy_raw(NULL), npy_to_json(NULL), npy_valid(NULL), npy_error(NULL);
SELECT npy(NULL, 'float32', '[1]'), npy(x'00000000', NULL, '[1]'), npy(x'00000000', 'float32', NULL);
SELECT npy_from_json(NULL), npy_from_json(NULL, 'int8'), npy_from_json('[1]', NULL);
SELECT npy_item(NULL, 0), npy_item(npy, NULL) FROM v;
SELECT count(*) FROM npy_each(NULL);

-- single arrays: wrong types
SELECT npy_dtype('not a blob');
SELECT npy_shape(42);
SELECT npy_raw(1.5);
SELECT npy_valid('text'), npy_error('text'), npy_valid(7), npy_error(x'');
SELECT npy('raw', 'float32', '[1]');
SELECT npy(x'00000000', x'00', '[1]');
SELECT npy(x'00000000', 4, '[1]');
SELECT npy(x'00000000', 'float32', 1.5);
SELECT npy(x'00000000', 'float32', -1);
SELECT npy(x'00000000', 'float32', 1), npy_shape(npy(x'', 'int8', 0));
SELECT npy_from_json(x'5b315d');
SELECT npy_from_json('[1]', 3);
SELECT npy_item(npy, '0') FROM v;
SELECT npy_item(npy, 0.5) FROM v;
SELECT npy_item(npy, 12), npy_item(npy, -13) FROM v;
SELECT npy_item(npy, 9223372036854775807) FROM v;
SELECT npy_item(npy, -9223372036854775808) FROM v;
SELECT * FROM npy_each('text');
SELECT * FROM npy_each(x'00');

-- records: NULL
SELECT ar_len(NULL), ar_keys(NULL), ar_count_bytes(NULL), ar_json(NULL), ar_valid(NULL), ar_error(NULL);
SELECT ar_has(NULL, '0'), ar_get(NULL, '0'), ar_data(NULL, '0'), ar_dtype(NULL, '0'), ar_shape(NULL, '0'),
       ar_stype(NULL, '0'), ar_nbytes(NULL, '0');
SELECT ar_has(rec, NULL), ar_get(rec, NULL), ar_data(rec, NULL), ar_dtype(rec, NULL), ar_shape(rec, NULL),
       ar_stype(rec, NULL), ar_nbytes(rec, NULL) FROM v;
SELECT count(*) FROM array_record(NULL);

-- records: wrong types, integer keys, missing keys
SELECT ar_len('text');
SELECT ar_keys(3);
SELECT ar_get(rec, x'30') FROM v;
SELECT ar_get(rec, 0.0) FROM v;
SELECT ar_dtype(rec, 0), ar_shape(rec, 1), ar_nbytes(rec, 2), ar_has(rec, 3) FROM v;
SELECT ar_get(rec, 'missing') IS NULL, ar_data(rec, 'missing') IS NULL, ar_dtype(rec, 'missing') IS NULL,
       ar_shape(rec, 'missing') IS NULL, ar_stype(rec, 'missing') IS NULL, ar_nbytes(rec, 'missing') IS NULL FROM v;
SELECT ar_valid('text'), ar_error('text'), ar_valid(1), ar_error(2.5);
SELECT * FROM array_record('text');
SELECT * FROM array_record(1);

-- empty record (zero-length BLOB)
SELECT ar_len(x''), ar_keys(x''), ar_count_bytes(x''), ar_json(x''), ar_valid(x''), ar_error(x''), ar_has(x'', 'a');
SELECT count(*) FROM array_record(x'');

-- builders: NULL
SELECT ar(NULL, npy), ar('a', NULL), ar('a', npy, 'b', NULL) FROM v;
SELECT ar_from_list(NULL), ar_from_list(npy, NULL) FROM v;
SELECT ar_set(NULL, 'a', npy), ar_set(rec, NULL, npy), ar_set(rec, 'a', NULL) FROM v;
SELECT ar_delete(NULL, '0'), ar_delete(rec, NULL), ar_delete(rec, '0', NULL) FROM v;
SELECT ar_rename(NULL, '0', 'a'), ar_rename(rec, NULL, 'a'), ar_rename(rec, '0', NULL) FROM v;
SELECT ar_merge(NULL), ar_merge(rec, NULL), ar_merge(NULL, rec) FROM v;
SELECT ar_select(NULL, '*'), ar_select(rec, NULL) FROM v;
SELECT length(ar_agg(NULL, npy)), length(ar_agg('a', NULL)), length(ar_agg_list(NULL)) FROM v;

-- builders: arity, types, empties
SELECT length(ar()), length(ar_from_list()), ar_keys(ar_merge(x'')), ar_keys(ar_delete(x''));
SELECT ar('a');
SELECT ar('a', npy, 'b') FROM v;
SELECT ar(x'61', npy) FROM v;
SELECT ar(1.5, npy) FROM v;
SELECT ar_keys(ar(1, npy, 2, npy)) FROM v;
SELECT ar('a', 'not a blob');
SELECT ar_from_list(npy, 5) FROM v;
SELECT ar_set(rec, 'a', x'00') FROM v;
SELECT ar_set('text', 'a', npy) FROM v;
SELECT ar_delete(rec, x'30') FROM v;
SELECT ar_keys(ar_delete(rec, 'missing', '1', 'also missing')) FROM v;
SELECT ar_rename(rec, '0', '1') FROM v;
SELECT ar_keys(ar_rename(rec, '0', '0')), ar_keys(ar_rename(rec, 'missing', 'x')) FROM v;
SELECT ar_merge(rec, 'text') FROM v;
SELECT ar_select(rec, x'2a') FROM v;
SELECT ar_keys(ar_select(rec, '[02]')), ar_keys(ar_select(rec, 'none*')) FROM v;
-- A key holding a NUL never matches (GLOB would see only its prefix).
SELECT ar_keys(ar_select(r, 'a')), ar_keys(ar_select(r, 'a*')), ar_keys(ar_select(r, '*')) FROM (SELECT ar(CAST(x'610062' AS TEXT), npy_from_json('[1]'), 'c', npy_from_json('[2]')) AS r);
SELECT ar_agg(x'61', npy) FROM v;
SELECT ar_agg('a', 'not a blob');
SELECT ar_agg_list(3);
SELECT ar_keys(ar_agg_list(npy)) FROM (SELECT npy FROM v UNION ALL SELECT NULL UNION ALL SELECT npy FROM v);
SELECT ar_keys(ar_agg(k, npy)) FROM (SELECT 'x' k, npy FROM v UNION ALL SELECT NULL, npy FROM v UNION ALL SELECT 'y', npy FROM v);
SELECT ar_keys(ar_agg(k, n)) FROM (SELECT 'x' k, NULL n);

-- an npy value with a dimension beyond Flower's int32 shape (zero-size)
SELECT ar('a', npy(x'', 'float32', '[0, 2147483648]'));
SELECT ar_set(x'', 'a', npy(x'', 'float32', '[2147483648, 0]'));

-- the version functions take no argument
SELECT ar_version() = (SELECT ar_version()), ar_debug() LIKE 'version=' || ar_version() || '%';

-- a record past the sizes parsed without allocating (8 items inline, 16
-- compared pairwise): what the validators and the table do with it
CREATE TEMP TABLE big AS SELECT ar_agg_list(npy) AS rec
  FROM v, (WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20) SELECT x FROM c);
SELECT ar_valid(rec), ar_error(rec), ar_len(rec), (SELECT count(*) FROM array_record(big.rec)), ar_keys(ar_select(rec, '1?')) FROM big;
SELECT ar_error(CAST(rec || rec AS BLOB)), length(CAST(rec || rec AS BLOB)) = 2 * length(rec) FROM big;
