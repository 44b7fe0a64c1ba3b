-- SPDX-License-Identifier: Apache-2.0
-- Flower's objects of RecordDicts and Messages: rd_object_id, rd_objects,
-- rd_inflate, flower_object_type, flower_object_children. Ids and contents
-- are those Flower wrote (tests/data/recorddict/objects, MANIFEST.json).

SELECT rd_object_id(readfile('tests/data/recorddict/objects/full.pb'));
SELECT rd_object_id(readfile('tests/data/recorddict/objects/shared_records.pb')), rd_object_id(x''), rd_object_id(NULL);

-- Every row is one of Flower's objects, byte for byte, in Flower's order.
SELECT rowid, object_id, type, children, length(content), content = readfile('tests/data/recorddict/objects/' || object_id || '.bin') FROM rd_objects(readfile('tests/data/recorddict/objects/full.pb'));
SELECT type, object_id, children FROM rd_objects(readfile('tests/data/recorddict/objects/shared_records.pb'));
SELECT CAST(substr(content, 1, instr(content, x'00') - 1) AS TEXT), CAST(substr(content, instr(content, x'00') + 1) AS TEXT) FROM rd_objects(readfile('tests/data/recorddict/objects/shared_records.pb')) WHERE type = 'RecordDict';
SELECT hex(content) FROM rd_objects(x'');
SELECT count(*) FROM rd_objects(NULL);
SELECT type, hex(substr(content, instr(content, x'00') + 1)) FROM rd_objects(rd('m', 'metric', '{"n": 5, "l": []}', 'c', 'config', '{"l": [], "s": "x"}'));

-- Inflating, rows in any order; a Message root gives its content.
SELECT hex(rd_inflate(object_id, content)) = hex(readfile('tests/data/recorddict/objects/full.pb')) FROM (SELECT * FROM rd_objects(readfile('tests/data/recorddict/objects/full.pb')) ORDER BY random());
SELECT rd_keys(rd_inflate(object_id, content)) FROM rd_objects(readfile('tests/data/recorddict/objects/shared_records.pb'));
CREATE TABLE objects(object_id TEXT PRIMARY KEY, content BLOB);
INSERT INTO objects SELECT object_id, content FROM rd_objects(readfile('tests/data/recorddict/objects/full.pb'));
INSERT INTO objects VALUES ('e52aa147bbc9bb3e9b75cd757bad710f98fbaf7325e83253bf54d161a053852a', readfile('tests/data/recorddict/objects/e52aa147bbc9bb3e9b75cd757bad710f98fbaf7325e83253bf54d161a053852a.bin'));
INSERT INTO objects VALUES ('b8258ff2aff6a4da31fc1e65c7505340d9dda2162d049a1897be32e9ee8f88cd', readfile('tests/data/recorddict/objects/b8258ff2aff6a4da31fc1e65c7505340d9dda2162d049a1897be32e9ee8f88cd.bin'));
SELECT object_id, flower_object_type(content), flower_object_children(content) FROM objects ORDER BY object_id;
WITH RECURSIVE tree(id) AS (SELECT 'e52aa147bbc9bb3e9b75cd757bad710f98fbaf7325e83253bf54d161a053852a' UNION SELECT c.value FROM tree JOIN objects o ON o.object_id = tree.id, json_each(flower_object_children(o.content)) c)
SELECT rd_inflate(o.object_id, o.content) = readfile('tests/data/recorddict/objects/reply.content.pb') FROM tree JOIN objects o ON o.object_id = tree.id;
SELECT rd_inflate(object_id, content) IS NULL FROM objects WHERE object_id LIKE 'b8258ff2%';
SELECT rd_inflate(object_id, content) FROM objects WHERE object_id LIKE 'b8258ff2%' OR object_id LIKE 'e52aa%';
SELECT rd_inflate(object_id, content) FROM objects WHERE object_id <> 'b8258ff2aff6a4da31fc1e65c7505340d9dda2162d049a1897be32e9ee8f88cd';
SELECT rd_inflate(object_id, content) FROM objects WHERE flower_object_type(content) <> 'Message' AND flower_object_type(content) <> 'MetricRecord';
SELECT rd_inflate(object_id, content) FROM objects WHERE flower_object_type(content) NOT IN ('Message', 'RecordDict');
SELECT rd_inflate(NULL, NULL), rd_inflate(object_id, content) FROM objects WHERE 0;

-- Errors.
SELECT rd_object_id(x'0a01');
SELECT rd_object_id(x'0a060a016112010a');
SELECT rd_object_id('text');
SELECT * FROM rd_objects(x'0a01');
SELECT * FROM rd_objects();
SELECT rd_inflate('xyz', x'00');
SELECT rd_inflate(object_id, CAST(content || x'00' AS BLOB)) FROM objects;
SELECT rd_inflate(sha256, c) FROM (SELECT c, ar_object_id(x'') AS sha256 FROM (SELECT x'' AS c));
SELECT flower_object_type(x'41727261792033');
SELECT flower_object_type(x'54656e736f722020300000');
SELECT flower_object_children(x'4172726179202033007b7d');
SELECT flower_object_children(x'4d65747269635265636f726420616161203000');
SELECT flower_object_type(NULL), flower_object_children(NULL), flower_object_type(CAST(x'4d657373616765202030' || x'00' AS BLOB));
SELECT flower_object_type(1);
