-- SPDX-License-Identifier: Apache-2.0
-- sql/superlink.sql — read views over the database of a Flower SuperLink
-- started with `--database state.db` (Flower >= 1.23: its object store
-- tables objects, object_children, run_objects, and context):
--
--   sqlite3 state.db
--   .load ./build/arrayrecord
--   .read sql/superlink.sql
--   SELECT run_id, message_id, rd_keys(content) FROM ar_message_contents;
--
-- The views are TEMP: nothing is written to the SuperLink's file, and their
-- ar_ names stay clear of its own tables. A SuperLink deletes a run's
-- objects once they are delivered or the run ends, so this shows the
-- messages of in-flight runs, and the persisted Context state of each run.

-- Every available Message object, with its run and its content RecordDict
-- (NULL for a reply without content, an error reply). A Message whose
-- tree is not all available yet (an upload under way) is left out.
CREATE TEMP VIEW IF NOT EXISTS ar_message_contents AS
WITH RECURSIVE
  msg(message_id) AS (
    SELECT object_id FROM main.objects
    WHERE is_available AND content IS NOT NULL AND length(content) > 0 AND substr(content, 1, 8) = CAST('Message ' AS BLOB)
      AND flower_object_type(content) = 'Message'),
  tree(message_id, object_id) AS (
    SELECT message_id, message_id FROM msg
    UNION
    SELECT t.message_id, c.child_id FROM tree t JOIN main.object_children c ON c.parent_id = t.object_id),
  complete(message_id) AS (
    SELECT t.message_id FROM tree t LEFT JOIN main.objects o ON o.object_id = t.object_id
    GROUP BY t.message_id
    HAVING sum(o.object_id IS NULL OR NOT o.is_available OR o.content IS NULL) = 0)
SELECT (SELECT min(r.run_id) FROM main.run_objects r WHERE r.object_id = t.message_id) AS run_id,
       t.message_id AS message_id,
       rd_inflate(o.object_id, o.content) AS content
FROM tree t JOIN complete USING (message_id) JOIN main.objects o ON o.object_id = t.object_id
GROUP BY t.message_id;

-- Each run's ServerApp state: the RecordDict of its persisted Context.
CREATE TEMP VIEW IF NOT EXISTS ar_run_state AS
SELECT run_id, rd_from_context(context) AS state FROM main.context;
