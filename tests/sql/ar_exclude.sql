-- SPDX-License-Identifier: Apache-2.0
-- ar_exclude(rec, pattern, ...): the complement of ar_select(rec, pattern, ...), in record order.
CREATE TABLE m(rec BLOB);
INSERT INTO m VALUES (readfile('tests/data/records/mlp_dict.pb'));
SELECT ar_keys(ar_exclude(rec, 'fc?.b*')), ar_keys(ar_select(rec, 'fc?.b*')) FROM m;
-- several patterns: a key goes when it matches any of them
SELECT ar_keys(ar_exclude(rec, '*.num_batches_tracked', 'fc2.*')), ar_keys(ar_select(rec, '*.num_batches_tracked', 'fc2.*')) FROM m;
-- together they hold every item once, with its bytes
SELECT ar_merge(ar_select(rec, 'fc1.*'), ar_exclude(rec, 'fc1.*')) = rec FROM m;
SELECT ar_len(ar_exclude(rec, '*')), ar_len(ar_exclude(rec, 'nothing')), ar_exclude(rec, 'nothing') = rec FROM m;
-- GLOB: case-sensitive, [...] classes, ? one character; a key holding NUL never matches, so it is never excluded
SELECT ar_keys(ar_exclude(ar('A', npy_from_json('[1]'), 'a', npy_from_json('[2]'), 'ab', npy_from_json('[3]')), 'a'));
SELECT ar_keys(ar_exclude(ar('l0', npy_from_json('[1]'), 'l1', npy_from_json('[2]'), 'l2', npy_from_json('[3]')), 'l[01]'));
SELECT ar_len(ar_exclude(ar(char(97, 0, 98), npy_from_json('[1]')), '*')), ar_len(ar_select(ar(char(97, 0, 98), npy_from_json('[1]')), '*'));
SELECT ar_exclude(x'', '*') = x'';
-- NULL in, NULL out (any argument)
SELECT ar_exclude(NULL, '*') IS NULL, ar_exclude(x'', NULL) IS NULL, ar_exclude(x'', '*', NULL) IS NULL;
-- errors
SELECT ar_exclude(x'');
SELECT ar_exclude(x'', 1);
SELECT ar_exclude(x'', '*', x'00');
SELECT ar_exclude('rec', '*');
SELECT ar_exclude(x'0a', '*');
SELECT ar_select(x'');
