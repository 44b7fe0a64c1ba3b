-- SPDX-License-Identifier: Apache-2.0
-- Every malformed record vector (tests/data/bad_records) through every
-- function that reads a record: each error names the function and the
-- problem (byte offset, item, key when known), and ar_error gives the same
-- problem text without the name. npy_data_corrupt.pb is a well-formed
-- record whose first array is not a .npy: the metadata functions, which
-- never parse payloads, answer; ar_get, ar_valid and ar_error see it.

-- bad_records/duplicate_key.pb
SELECT ar_len(r) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_keys(r) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_count_bytes(r) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_json(r) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_has(r, 'a') FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT hex(ar_get(r, 'a')) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT length(ar_data(r, 'a')) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_dtype(r, 'a') FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_shape(r, 'a') FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_stype(r, 'a') FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_nbytes(r, 'a') FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_valid(r) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_error(r) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_keys(ar_set(r, 'new', npy_from_json('[1]'))) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_keys(ar_delete(r, 'a')) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_keys(ar_rename(r, 'a', 'renamed')) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_keys(ar_merge(r)) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_keys(ar_merge(x'', r)) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT ar_keys(ar_select(r, '*')) FROM (SELECT readfile('tests/data/bad_records/duplicate_key.pb') r);
SELECT key, dtype, shape FROM array_record(readfile('tests/data/bad_records/duplicate_key.pb'));

-- bad_records/len_past_end.pb
SELECT ar_len(r) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_keys(r) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_count_bytes(r) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_json(r) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_has(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT hex(ar_get(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT length(ar_data(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_dtype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_shape(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_stype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_nbytes(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_valid(r) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_error(r) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_keys(ar_set(r, 'new', npy_from_json('[1]'))) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_keys(ar_delete(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_keys(ar_rename(r, 'fc1.weight', 'renamed')) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_keys(ar_merge(r)) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_keys(ar_merge(x'', r)) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT ar_keys(ar_select(r, '*')) FROM (SELECT readfile('tests/data/bad_records/len_past_end.pb') r);
SELECT key, dtype, shape FROM array_record(readfile('tests/data/bad_records/len_past_end.pb'));

-- bad_records/not_a_record_text.pb
SELECT ar_len(r) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_keys(r) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_count_bytes(r) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_json(r) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_has(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT hex(ar_get(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT length(ar_data(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_dtype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_shape(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_stype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_nbytes(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_valid(r) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_error(r) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_keys(ar_set(r, 'new', npy_from_json('[1]'))) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_keys(ar_delete(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_keys(ar_rename(r, 'fc1.weight', 'renamed')) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_keys(ar_merge(r)) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_keys(ar_merge(x'', r)) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT ar_keys(ar_select(r, '*')) FROM (SELECT readfile('tests/data/bad_records/not_a_record_text.pb') r);
SELECT key, dtype, shape FROM array_record(readfile('tests/data/bad_records/not_a_record_text.pb'));

-- bad_records/npy_data_corrupt.pb
SELECT ar_len(r) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_keys(r) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_count_bytes(r) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_json(r) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_has(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT hex(ar_get(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT length(ar_data(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_dtype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_shape(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_stype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_nbytes(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_valid(r) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_error(r) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_keys(ar_set(r, 'new', npy_from_json('[1]'))) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_keys(ar_delete(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_keys(ar_rename(r, 'fc1.weight', 'renamed')) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_keys(ar_merge(r)) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_keys(ar_merge(x'', r)) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT ar_keys(ar_select(r, '*')) FROM (SELECT readfile('tests/data/bad_records/npy_data_corrupt.pb') r);
SELECT key, dtype, shape FROM array_record(readfile('tests/data/bad_records/npy_data_corrupt.pb'));

-- bad_records/truncated.pb
SELECT ar_len(r) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_keys(r) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_count_bytes(r) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_json(r) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_has(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT hex(ar_get(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT length(ar_data(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_dtype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_shape(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_stype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_nbytes(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_valid(r) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_error(r) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_keys(ar_set(r, 'new', npy_from_json('[1]'))) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_keys(ar_delete(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_keys(ar_rename(r, 'fc1.weight', 'renamed')) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_keys(ar_merge(r)) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_keys(ar_merge(x'', r)) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT ar_keys(ar_select(r, '*')) FROM (SELECT readfile('tests/data/bad_records/truncated.pb') r);
SELECT key, dtype, shape FROM array_record(readfile('tests/data/bad_records/truncated.pb'));

-- bad_records/truncated_1.pb
SELECT ar_len(r) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_keys(r) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_count_bytes(r) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_json(r) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_has(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT hex(ar_get(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT length(ar_data(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_dtype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_shape(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_stype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_nbytes(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_valid(r) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_error(r) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_keys(ar_set(r, 'new', npy_from_json('[1]'))) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_keys(ar_delete(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_keys(ar_rename(r, 'fc1.weight', 'renamed')) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_keys(ar_merge(r)) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_keys(ar_merge(x'', r)) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT ar_keys(ar_select(r, '*')) FROM (SELECT readfile('tests/data/bad_records/truncated_1.pb') r);
SELECT key, dtype, shape FROM array_record(readfile('tests/data/bad_records/truncated_1.pb'));

-- bad_records/varint_11_bytes.pb
SELECT ar_len(r) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_keys(r) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_count_bytes(r) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_json(r) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_has(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT hex(ar_get(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT length(ar_data(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_dtype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_shape(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_stype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_nbytes(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_valid(r) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_error(r) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_keys(ar_set(r, 'new', npy_from_json('[1]'))) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_keys(ar_delete(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_keys(ar_rename(r, 'fc1.weight', 'renamed')) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_keys(ar_merge(r)) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_keys(ar_merge(x'', r)) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT ar_keys(ar_select(r, '*')) FROM (SELECT readfile('tests/data/bad_records/varint_11_bytes.pb') r);
SELECT key, dtype, shape FROM array_record(readfile('tests/data/bad_records/varint_11_bytes.pb'));

-- bad_records/wrong_wiretype.pb
SELECT ar_len(r) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_keys(r) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_count_bytes(r) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_json(r) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_has(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT hex(ar_get(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT length(ar_data(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_dtype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_shape(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_stype(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_nbytes(r, 'fc1.weight') FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_valid(r) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_error(r) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_keys(ar_set(r, 'new', npy_from_json('[1]'))) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_keys(ar_delete(r, 'fc1.weight')) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_keys(ar_rename(r, 'fc1.weight', 'renamed')) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_keys(ar_merge(r)) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_keys(ar_merge(x'', r)) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT ar_keys(ar_select(r, '*')) FROM (SELECT readfile('tests/data/bad_records/wrong_wiretype.pb') r);
SELECT key, dtype, shape FROM array_record(readfile('tests/data/bad_records/wrong_wiretype.pb'));
