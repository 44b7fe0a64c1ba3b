-- SPDX-License-Identifier: Apache-2.0
-- Flower's content-addressed objects: ar_object_id, npy_object_id,
-- ar_objects, ar_inflate. Ids are those Flower itself computed for the
-- vectors (tests/data/MANIFEST.json); contents are compared with the object
-- files Flower wrote (tests/data/objects).

SELECT f, ar_object_id(readfile('tests/data/records/' || f)) FROM (SELECT 'empty.pb' f UNION ALL SELECT 'list_3.pb' UNION ALL SELECT 'mlp_dict.pb' UNION ALL SELECT 'unicode_keys.pb' UNION ALL SELECT 'legacy_raw.pb');

-- Every row is one of Flower's objects, byte for byte, in Flower's order.
SELECT object_id, type, children FROM ar_objects(readfile('tests/data/records/legacy_raw.pb'));
SELECT rowid, type, length(content) FROM ar_objects(readfile('tests/data/records/unicode_keys.pb'));
SELECT d, count(*), sum(content = readfile('tests/data/objects/' || d || '/' || object_id || '.bin')) FROM (SELECT 'empty' d UNION ALL SELECT 'list_3' UNION ALL SELECT 'mlp_dict' UNION ALL SELECT 'unicode_keys' UNION ALL SELECT 'legacy_raw') v, ar_objects(readfile('tests/data/records/' || d || '.pb')) GROUP BY d ORDER BY d;
SELECT CAST(substr(content, 1, instr(content, x'00') - 1) AS TEXT), CAST(substr(content, instr(content, x'00') + 1) AS TEXT) FROM ar_objects(readfile('tests/data/records/unicode_keys.pb')) WHERE type = 'ArrayRecord';
SELECT CAST(substr(content, 1, instr(content, x'00') - 1) AS TEXT), CAST(substr(content, instr(content, x'00') + 1) AS TEXT) FROM ar_objects(readfile('tests/data/records/empty.pb'));
SELECT object_id FROM ar_objects(NULL);

-- The Array of one .npy, as ar() stores it: same id as in the record.
SELECT npy_object_id(ar_get(readfile('tests/data/records/mlp_dict.pb'), 'fc1.bias')) IN (SELECT object_id FROM ar_objects(readfile('tests/data/records/mlp_dict.pb')) WHERE type = 'Array');
SELECT npy_object_id(NULL), ar_object_id(NULL);
-- Bytes after the .npy payload are not part of the Array ar() stores, nor of its id.
SELECT npy_object_id(x) = (SELECT object_id FROM ar_objects(ar('k', x)) WHERE type = 'Array'), npy_object_id(x) = npy_object_id(npy_from_json('[1.5, 2]', 'float32')) FROM (SELECT CAST(npy_from_json('[1.5, 2]', 'float32') || x'00ff' AS BLOB) AS x);

-- Identical arrays share one Array object; its chunk is listed once.
SELECT type, count(*) FROM ar_objects(ar('a', npy_from_json('[1,2,3]'), 'b', npy_from_json('[1,2,3]'), 'c', npy_from_json('[4]'))) GROUP BY type ORDER BY type;
SELECT CAST(substr(content, 1, instr(content, x'00') - 1) AS TEXT), CAST(substr(content, instr(content, x'00') + 1) AS TEXT) FROM ar_objects(ar('a', npy_from_json('[1,2,3]'), 'b', npy_from_json('[1,2,3]'))) WHERE type = 'ArrayRecord';
SELECT CAST(substr(content, 1, instr(content, x'00') - 1) AS TEXT), CAST(substr(content, instr(content, x'00') + 1) AS TEXT) FROM ar_objects(ar('a', npy_from_json('[1,2,3]'))) WHERE type = 'Array';

-- Inflate in any order gives back the record's bytes.
SELECT d, hex(ar_inflate(object_id, content)) = hex(readfile('tests/data/records/' || d || '.pb')) FROM (SELECT d, o.* FROM (SELECT 'empty' d UNION ALL SELECT 'list_3' UNION ALL SELECT 'mlp_dict' UNION ALL SELECT 'unicode_keys' UNION ALL SELECT 'legacy_raw') v, ar_objects(readfile('tests/data/records/' || d || '.pb')) o ORDER BY random()) GROUP BY d ORDER BY d;
SELECT length(ar_inflate(object_id, content)) FROM ar_objects(readfile('tests/data/records/empty.pb'));

-- Mirror of Flower's SuperLink object store.
CREATE TABLE objects(object_id TEXT PRIMARY KEY, content BLOB, is_available INTEGER DEFAULT 1, ref_count INTEGER DEFAULT 0);
CREATE TABLE object_children(parent_id TEXT, child_id TEXT);
INSERT OR IGNORE INTO objects(object_id, content) SELECT object_id, content FROM ar_objects(readfile('tests/data/records/mlp_dict.pb'));
INSERT OR IGNORE INTO objects(object_id, content) SELECT object_id, content FROM ar_objects(readfile('tests/data/records/list_3.pb'));
INSERT INTO object_children SELECT o.object_id, c.value FROM ar_objects(readfile('tests/data/records/mlp_dict.pb')) o, json_each(o.children) c;
SELECT count(*) FROM objects;
SELECT count(*) FROM object_children;
WITH RECURSIVE tree(id) AS (SELECT '5bf00ee0ea706ab9be74632bb19294dd9ca9eb5dbb5634ae23960be4733d66c0' UNION SELECT child_id FROM object_children, tree WHERE parent_id = id)
SELECT hex(ar_inflate(o.object_id, o.content)) = hex(readfile('tests/data/records/mlp_dict.pb')) FROM tree JOIN objects o ON o.object_id = tree.id;

-- NULL rows are skipped; no rows (or only NULLs) give NULL.
SELECT ar_inflate(object_id, content) FROM objects WHERE 0;
SELECT ar_inflate(NULL, NULL);
SELECT hex(ar_inflate(object_id, content)) = hex(readfile('tests/data/records/list_3.pb')) FROM (SELECT object_id, content FROM ar_objects(readfile('tests/data/records/list_3.pb')) UNION ALL SELECT NULL, x'00' UNION ALL SELECT upper(object_id), content FROM ar_objects(readfile('tests/data/records/list_3.pb')));

-- Errors.
SELECT ar_inflate(object_id, content) FROM objects;
SELECT ar_inflate(object_id, content) FROM ar_objects(readfile('tests/data/records/list_3.pb')) WHERE type <> 'ArrayChunk';
SELECT ar_inflate(object_id, content) FROM ar_objects(readfile('tests/data/records/list_3.pb')) WHERE type <> 'ArrayRecord';
SELECT ar_inflate(object_id, CAST(x'00' || content AS BLOB)) FROM ar_objects(readfile('tests/data/records/list_3.pb'));
SELECT ar_inflate(substr(object_id, 2), content) FROM ar_objects(readfile('tests/data/records/list_3.pb'));
SELECT ar_inflate(object_id, CAST(content AS TEXT)) FROM ar_objects(readfile('tests/data/records/list_3.pb'));
SELECT ar_inflate('8f373c1473d725a61442838233deff2aa2a89f72184e517b6a621a3b53abbbd6', x'41727261794368756e6b20203300616263');
SELECT ar_inflate('e003dac6774f555de4ec1bdc301d87fad9e59e5a81f00f0a1c642c23c7a7ee22', x'426c6f622020310078');
SELECT ar_inflate('b1d149bf8528ae103fe064d5941b39ed1f169ae177d0c37ea4a7ff57257625f7', x'41727261794368756e6b20203400616263');
SELECT ar_inflate('985fa2ab2d1464f09a7c901d3c08a13d03a1ea01841bddcb3e7c8f5d5f523524', x'41727261795265636f7264202032005b5d');
SELECT ar_inflate(1, x'00');
SELECT ar_inflate('3f7ab9cb9ad1a4a29dba9d7fbc41d27a0a2de5c4ff0b4fb5fd5ac47c9c2ac1d4', x'41727261794368756e6b20203300616263');
SELECT * FROM ar_objects(x'0a');
SELECT * FROM ar_objects('not a blob');
SELECT * FROM ar_objects;
SELECT ar_object_id(x'0a05');
SELECT npy_object_id(x'00');
