-- SPDX-License-Identifier: Apache-2.0
-- Flower Messages and Contexts: rd_from_message, flower_message_metadata,
-- rd_from_context, flower_context_config; Flower's vectors
-- (tests/data/recorddict/messages, contexts), hand-made edge cases, NULLs
-- and every error.

CREATE TABLE m(name TEXT, msg BLOB, content BLOB);
INSERT INTO m VALUES
  ('instruction', readfile('tests/data/recorddict/messages/instruction.pb'), readfile('tests/data/recorddict/messages/instruction.content.pb')),
  ('reply', readfile('tests/data/recorddict/messages/reply.pb'), readfile('tests/data/recorddict/messages/reply.content.pb')),
  ('error_reply', readfile('tests/data/recorddict/messages/error_reply.pb'), NULL),
  ('empty_content', readfile('tests/data/recorddict/messages/empty_content.pb'), x'');
SELECT name, rd_from_message(msg) IS content, typeof(rd_from_message(msg)), length(rd_from_message(msg)) FROM m;
SELECT name, flower_message_metadata(msg) FROM m;
SELECT rd_keys(rd_from_message(msg)) FROM m WHERE name = 'reply';

CREATE TABLE c(name TEXT, ctx BLOB, state BLOB);
INSERT INTO c VALUES
  ('serverapp', readfile('tests/data/recorddict/contexts/serverapp.pb'), readfile('tests/data/recorddict/contexts/serverapp.state.pb')),
  ('clientapp', readfile('tests/data/recorddict/contexts/clientapp.pb'), readfile('tests/data/recorddict/contexts/clientapp.state.pb')),
  ('empty_state', readfile('tests/data/recorddict/contexts/empty_state.pb'), readfile('tests/data/recorddict/contexts/empty_state.state.pb'));
SELECT name, rd_from_context(ctx) = state, typeof(rd_from_context(ctx)), flower_context_config(ctx) FROM c;

-- NULL in, NULL out
SELECT rd_from_message(NULL) IS NULL, flower_message_metadata(NULL) IS NULL, rd_from_context(NULL) IS NULL, flower_context_config(NULL) IS NULL;

-- proto3 defaults: an empty Message has no content; an empty Context an empty state
SELECT rd_from_message(x'') IS NULL, flower_message_metadata(x''), hex(rd_from_context(x'')), typeof(rd_from_context(x'')), flower_context_config(x'');
-- repeated metadata fields merge; repeated content / state fields concatenate
SELECT flower_message_metadata(x'0a0208070a0218010a074205747261696e');
SELECT rd_keys(rd_from_message(x'12070a050a01611a0012070a050a01622200')), rd_keys(rd_from_context(x'22070a050a01611a0022070a050a01622200'));
-- uint64 extremes exact, non-finite doubles as objects; errors with negative codes, empty errors
SELECT flower_message_metadata(x'0a2808ffffffffffffffffff0120ffffffffffffffffff0139000000000000f87f49000000000000f0ff');
SELECT json_extract(flower_message_metadata(x'1a0208011a041202c3a9'), '$.error'), json_extract(flower_message_metadata(x'1a00'), '$.error');
-- every Scalar type; map keys sorted; a Scalar written twice keeps the last member set
SELECT flower_context_config(x'08ffffffffffffffffff0110051a100a0175120b30ffffffffffffffffff011a0e0a016412090900000000000000802a100a03696e66120909000000000000f07f2a0c0a04626c6f6212047a0200012a070a0173120240092a070a0165120272002a070a017a12026800');
SELECT flower_context_config(x'2a0e0a016b1202300112037201781200');
SELECT flower_context_config(x'2a070a0162120240062a070a0161120268012a080a01621203720178');
-- Flower 1.42's optional task ids (set, zero, unset, written twice) and the Context's series_id
SELECT flower_message_metadata(x'0a0450075800'), flower_message_metadata(x'0a0f58ffffffffffffffffff01500150020a00');
SELECT flower_context_config(x'08013005'), flower_context_config(x'3001300230ffffffffffffffffff01');
SELECT flower_message_metadata(x'0a025201');
-- unknown top-level fields are skipped
SELECT flower_message_metadata(x'f8010132020801'), flower_context_config(x'3801');

-- errors: arguments
SELECT rd_from_message('text');
SELECT flower_message_metadata(1);
SELECT rd_from_context('text');
SELECT flower_context_config(2.5);
-- errors: malformed Messages
SELECT rd_from_message(x'0a');
SELECT flower_message_metadata(x'0a021001');
SELECT flower_message_metadata(x'0a03390000');
SELECT flower_message_metadata(x'1a031201ff');
SELECT flower_message_metadata(x'0801');
SELECT rd_from_message(x'12010a');
SELECT rd_from_message(x'12070a050a01611a0012070a050a01611a00');
SELECT flower_message_metadata(x'1a0212');
-- errors: another Flower type where a Message is expected, and back
SELECT rd_from_message(readfile('tests/data/recorddict/full.pb'));
SELECT flower_message_metadata(readfile('tests/data/records/mlp_dict.pb'));
SELECT rd_from_message(readfile('tests/data/recorddict/contexts/clientapp.pb'));
SELECT flower_context_config(readfile('tests/data/recorddict/messages/error_reply.pb'));
-- errors: malformed Contexts and config entries
SELECT flower_context_config(x'0a00');
SELECT rd_from_context(x'22010a');
SELECT flower_context_config(x'2a0a0a016b12051500000000');
SELECT flower_context_config(x'2a060a026c721200');
SELECT flower_context_config(x'2a040a026c72');
SELECT flower_context_config(x'2a08120270010a026c72');
SELECT flower_context_config(x'1a070a01ff12023001');
SELECT flower_context_config(x'1a080a016b12037201c3');
SELECT flower_context_config(x'08012a070a0161120230012a070a026c72120230');
SELECT flower_context_config(x'2a0a0a03');
SELECT rd_from_context(x'1a020801');
