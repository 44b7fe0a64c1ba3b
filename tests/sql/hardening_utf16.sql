-- SPDX-License-Identifier: Apache-2.0
-- A UTF-16 database: SQLite converts text arguments and results, so every
-- function taking text (keys, dtypes, JSON, shapes, patterns) and returning
-- it (JSON, names, messages) goes through that conversion.
PRAGMA encoding = 'UTF-16le';
CREATE TABLE t(rec BLOB, npy BLOB);
INSERT INTO t SELECT ar('clé', npy_from_json('[[1, 2], [3, 4]]', 'float32'), 'b', npy_from_json('[true]')),
                     npy_from_json('[1.5, 2.5]');
SELECT ar_keys(rec), ar_json(rec), ar_dtype(rec, 'clé'), ar_shape(rec, 'clé'), ar_has(rec, 'clé') FROM t;
SELECT ar_keys(ar_select(rec, 'cl*')), ar_keys(ar_rename(rec, 'clé', 'κλειδί')), ar_keys(ar_delete(rec, 'clé')) FROM t;
SELECT ar_keys(ar_set(rec, 'ключ', npy)), ar_keys(ar(1, npy)), ar_keys(ar_agg_list(npy)) FROM t;
SELECT npy_dtype(npy), npy_descr(npy), npy_shape(npy), npy_to_json(npy), npy_to_json(npy(npy_raw(npy), 'float64', '[2]')) FROM t;
SELECT npy_to_json(npy_from_json('[[1, 2]]', 'complex128')), npy_item(npy_from_json('[[1, 2]]', 'complex64'), 0);
SELECT key, dtype, shape, stype FROM array_record((SELECT rec FROM t));
SELECT i, idx, value FROM npy_each((SELECT npy FROM t));
SELECT ar_error(x'0a0100'), npy_error(x'00'), ar_valid(rec) FROM t;
SELECT npy_from_json('[1', 'int8');
SELECT npy(x'00', 'U4', '[1]');
SELECT ar_get(rec, 'missing') IS NULL, ar_rename(rec, 'clé', 'b') FROM t;
