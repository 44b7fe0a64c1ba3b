-- SPDX-License-Identifier: Apache-2.0
-- ar_check / rd_check: validity checks that raise, for CHECK constraints.
SELECT ar_check(readfile('tests/data/records/mlp_dict.pb')), ar_check(x''), ar_check(readfile('tests/data/records/mlp_dict.pb'), 'nonempty');
-- the message is ar_error's, after the function's name
SELECT ar_error(x'0a01');
SELECT ar_check(x'0a01');
SELECT ar_error(readfile('tests/data/bad_records/npy_data_corrupt.pb'));
SELECT ar_check(readfile('tests/data/bad_records/npy_data_corrupt.pb'));
SELECT ar_error('text');
SELECT ar_check('text');
SELECT ar_check(x'', 'nonempty');
SELECT ar_check(x'', 'NonEmpty');
SELECT ar_check(x'', 'empty');
SELECT ar_check(x'', 1);
-- NULL in, NULL out: a CHECK passes on NULL (add NOT NULL to refuse it)
SELECT ar_check(NULL) IS NULL, ar_check(NULL, 'nonempty') IS NULL, ar_check(x'', NULL) IS NULL;
-- in a schema: the insert fails with the reason, not "CHECK constraint failed"
CREATE TABLE models(round INTEGER, rec BLOB NOT NULL CHECK (ar_check(rec, 'nonempty')));
INSERT INTO models VALUES (1, readfile('tests/data/records/mlp_dict.pb'));
INSERT INTO models VALUES (2, x'');
INSERT INTO models VALUES (3, readfile('tests/data/bad_records/truncated.pb'));
INSERT INTO models VALUES (4, npy_from_json('[1]'));
SELECT round FROM models;
-- RecordDicts
SELECT rd_check(rd('m', 'metric', '{"acc": 0.5}')), rd_check(x''), rd_check(rd('m', 'metric', '{"acc": 0.5}'), 'nonempty');
SELECT rd_error(x'0a01');
SELECT rd_check(x'0a01');
SELECT rd_check(x'', 'nonempty');
SELECT rd_check(3);
SELECT rd_check(NULL) IS NULL;
-- other formats where a record, a RecordDict or a .npy belongs: the message names the converter
SELECT ar_check(ar_to_npz(readfile('tests/data/records/mlp_dict.pb')));
SELECT ar_check(ar_to_safetensors(readfile('tests/data/records/mlp_dict.pb')));
SELECT ar_check(npy_from_json('[1]'));
SELECT ar_len(ar_to_npz(x''));
SELECT rd_len(ar_to_npz(readfile('tests/data/records/mlp_dict.pb')));
SELECT rd_check(ar_to_safetensors(readfile('tests/data/records/mlp_dict.pb')));
SELECT rd_len(npy_from_json('[1]'));
SELECT npy_dtype(ar_to_npz(readfile('tests/data/records/mlp_dict.pb')));
SELECT npy_sum(ar_to_safetensors(readfile('tests/data/records/mlp_dict.pb')));
SELECT * FROM ar_stats(ar_to_npz(readfile('tests/data/records/mlp_dict.pb')));
-- a safetensors-like header length that does not fit, or no '{': no hint
SELECT ar_len(x'ff000000000000007b7d');
SELECT ar_len(x'02000000000000005b5d');
