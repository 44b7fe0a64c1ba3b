-- SPDX-License-Identifier: Apache-2.0
-- sql/superlink.sql — read views over the database of a Flower SuperLink
-- started with `--database state.db`, for Flower >= 1.23 (object store
-- tables objects, object_children, run_objects; each run's Context in
-- `context`) and Flower 1.42 (Alembic schema: the Context of each run
-- series in `series_context`, run status in `task`):
--
--   sqlite3 state.db            (or, read-only: sqlite3 'file:state.db?mode=ro')
--   .load ./build/arrayrecord
--   .read sql/superlink.sql
--   SELECT run_id, message_id, rd_keys(content) FROM ar_message_contents;
--
-- What each view shows:
--   ar_message_contents  every Message whose objects are all available, with
--                        its run and content RecordDict (all versions)
--   ar_run_state         each run's ServerApp state, from the persisted
--                        Context: `context` (>= 1.23) or `series_context`
--                        through `series_runs` (1.42), whichever the file has
--   ar_messages          the routing rows of message_ins (instructions) and
--                        message_res (replies) with their content, error
--                        code and reason
--   ar_runs, ar_nodes    runs with their status, FAB and times; SuperNodes
--                        (Flower 1.42: the run's status is in `task`)
--
-- Ids: Flower's run and node ids are unsigned 64-bit; the SuperLink stores
-- the signed 64-bit integer of the same bits, negative for ids >= 2^63.
-- run_id, node_id, src_node_id, dst_node_id and series_id here are
-- Flower's ids as `flwr ls` prints them: the integer when below 2^63, else
-- its decimal text ('13835058055282163719'); run_id_int64 and node_id_int64
-- are the stored integers, for joins with the SuperLink's own tables.
--
-- Nothing is written to the SuperLink's file: the views are TEMP, their ar_
-- names stay clear of its tables, and the tables one schema lacks (context
-- in 1.42; series_runs and series_context before; message_ins and
-- message_res in a bare object store) are empty stand-ins in an in-memory
-- database attached as `ar_superlink`. SQLite looks a view's unqualified
-- table names up in temp, then main, then the attached databases, so a
-- table the SuperLink's file has is always its own. Read this script once
-- per connection: again, the ATTACH fails ("database ar_superlink is
-- already in use") and nothing else changes. `sqlite3 -readonly` makes the
-- attached database read-only too, so its stand-ins cannot be made: open
-- the file read-only with the URI above instead.
--
-- What the SuperLink keeps (Flower 1.42): an instruction's Message object
-- is deleted once its SuperNode pulled it, and the objects several
-- instructions share (the same arrays sent to every node) once every
-- destination pulled them; when the ServerApp pulls a reply, the reply's
-- message_res row and its instruction's message_ins row are deleted, and
-- the reply's objects once the ServerApp has them. After a run no message
-- or object is left; the run, task, node, fab, series_runs and
-- series_context rows remain. The state of the stored series Context is
-- empty: the ServerApp process clears context.state before it pushes the
-- Context back (flwr 1.42, "temporarily").

ATTACH DATABASE ':memory:' AS ar_superlink;
CREATE TABLE IF NOT EXISTS ar_superlink.context(run_id INTEGER, context BLOB);
CREATE TABLE IF NOT EXISTS ar_superlink.series_runs(run_id INTEGER, series_id INTEGER);
CREATE TABLE IF NOT EXISTS ar_superlink.series_context(series_id INTEGER, context BLOB);
CREATE TABLE IF NOT EXISTS ar_superlink.message_ins(
  message_id TEXT, group_id TEXT, run_id INTEGER, src_node_id INTEGER, dst_node_id INTEGER,
  reply_to_message_id TEXT, created_at REAL, delivered_at TEXT, ttl REAL, message_type TEXT,
  content BLOB, error BLOB);
CREATE TABLE IF NOT EXISTS ar_superlink.message_res(
  message_id TEXT, group_id TEXT, run_id INTEGER, src_node_id INTEGER, dst_node_id INTEGER,
  reply_to_message_id TEXT, created_at REAL, delivered_at TEXT, ttl REAL, message_type TEXT,
  content BLOB, error BLOB);

-- Every available Message object, with its run and its content RecordDict
-- (NULL for a reply without content, an error reply). A Message whose
-- tree is not all available yet (an upload under way: Flower 1.42 stores
-- announced objects as x'' with is_available 0) is left out.
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
    HAVING sum(o.object_id IS NULL OR NOT o.is_available OR o.content IS NULL) = 0),
  runs(message_id, run_id) AS (
    SELECT c.message_id, (SELECT min(r.run_id) FROM main.run_objects r WHERE r.object_id = c.message_id) FROM complete c)
SELECT CASE WHEN r.run_id < 0 THEN printf('%u', r.run_id) ELSE r.run_id END AS run_id,
       r.run_id AS run_id_int64,
       t.message_id AS message_id,
       rd_inflate(o.object_id, o.content) AS content
FROM tree t JOIN runs r USING (message_id) JOIN main.objects o ON o.object_id = t.object_id
GROUP BY t.message_id;

-- Each run's ServerApp state: the RecordDict of its persisted Context.
-- Flower 1.42 keeps one Context per run series (series_id; NULL before).
CREATE TEMP VIEW IF NOT EXISTS ar_run_state AS
SELECT CASE WHEN run_id < 0 THEN printf('%u', run_id) ELSE run_id END AS run_id,
       run_id AS run_id_int64,
       CASE WHEN series_id < 0 THEN printf('%u', series_id) ELSE series_id END AS series_id, state
FROM (SELECT run_id, NULL AS series_id, rd_from_context(context) AS state FROM context
      UNION ALL
      SELECT r.run_id, r.series_id, rd_from_context(c.context)
      FROM series_runs r JOIN series_context c ON c.series_id = r.series_id);

-- Instructions (message_ins) and replies (message_res) as the SuperLink
-- routes them; content from ar_message_contents (NULL once the objects are
-- deleted, while they upload, and for an error reply). round is group_id
-- as an integer when it is one (Flower's strategies set it to the server
-- round). created_at is Unix seconds; delivered_at is NULL until the
-- destination (the SuperNode, or the ServerApp for a reply) pulled it.
-- error_code and error_reason are a reply's Error (NULL without one).
CREATE TEMP VIEW IF NOT EXISTS ar_messages AS
WITH
  bytes(b) AS (SELECT x'000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff'),
  m AS (
    SELECT 'instruction' AS direction, message_id, group_id, run_id, src_node_id, dst_node_id, reply_to_message_id, created_at, delivered_at, ttl, message_type, error FROM message_ins
    UNION ALL
    SELECT 'reply', message_id, group_id, run_id, src_node_id, dst_node_id, reply_to_message_id, created_at, delivered_at, ttl, message_type, error FROM message_res),
  e AS (
    -- The Error as a Message holding it alone (field 3, length-delimited:
    -- the protobuf varint of its length, up to 2^21 - 1 bytes), for
    -- flower_message_metadata to read.
    SELECT m.*, CASE WHEN m.error IS NOT NULL AND length(m.error) < 2097152 THEN flower_message_metadata(CAST(
             x'1a' || CASE
               WHEN length(m.error) < 128 THEN substr(b, length(m.error) + 1, 1)
               WHEN length(m.error) < 16384 THEN substr(b, 129 + length(m.error) % 128, 1) || substr(b, length(m.error) / 128 + 1, 1)
               ELSE substr(b, 129 + length(m.error) % 128, 1) || substr(b, 129 + length(m.error) / 128 % 128, 1) || substr(b, length(m.error) / 16384 + 1, 1)
             END || m.error AS BLOB)) END AS meta
    FROM m, bytes)
SELECT e.direction, e.message_id,
       CASE WHEN e.run_id < 0 THEN printf('%u', e.run_id) ELSE e.run_id END AS run_id,
       e.run_id AS run_id_int64,
       e.group_id,
       CASE WHEN e.group_id <> '' AND e.group_id NOT GLOB '*[^0-9]*' AND length(e.group_id) < 19 THEN CAST(e.group_id AS INTEGER) END AS round,
       e.message_type,
       CASE WHEN e.src_node_id < 0 THEN printf('%u', e.src_node_id) ELSE e.src_node_id END AS src_node_id,
       CASE WHEN e.dst_node_id < 0 THEN printf('%u', e.dst_node_id) ELSE e.dst_node_id END AS dst_node_id,
       nullif(e.reply_to_message_id, '') AS reply_to_message_id,
       e.created_at, nullif(e.delivered_at, '') AS delivered_at, e.ttl,
       json_extract(e.meta, '$.error.code') AS error_code,
       json_extract(e.meta, '$.error.reason') AS error_reason,
       c.content
FROM e LEFT JOIN ar_message_contents c ON c.message_id = e.message_id;

-- Runs (Flower 1.42): status as `flwr ls` prints it ('pending', 'starting',
-- 'running', 'finished:completed', 'finished:failed', 'finished:stopped'),
-- from the run's primary task, with its times (UTC, as stored), the FAB and
-- the run series.
CREATE TEMP VIEW IF NOT EXISTS ar_runs AS
SELECT CASE WHEN r.run_id < 0 THEN printf('%u', r.run_id) ELSE r.run_id END AS run_id,
       r.run_id AS run_id_int64,
       CASE WHEN t.finished_at IS NOT NULL THEN 'finished:' || t.sub_status
            WHEN t.running_at IS NOT NULL THEN 'running'
            WHEN t.starting_at IS NOT NULL THEN 'starting'
            ELSE 'pending' END AS status,
       t.details, r.fab_id, r.fab_version, r.fab_hash, r.override_config, r.federation_id,
       t.pending_at, t.starting_at, t.running_at, t.finished_at,
       CASE WHEN r.series_id < 0 THEN printf('%u', r.series_id) ELSE r.series_id END AS series_id,
       r.bytes_sent, r.bytes_recv
FROM run r LEFT JOIN task t ON t.task_id = r.primary_task_id;

-- SuperNodes (Flower 1.42): status 'online', 'offline',
-- 'registered' or 'unregistered', and their times (ISO text, NULL for none
-- yet; online_until in Unix seconds).
CREATE TEMP VIEW IF NOT EXISTS ar_nodes AS
SELECT CASE WHEN node_id < 0 THEN printf('%u', node_id) ELSE node_id END AS node_id,
       node_id AS node_id_int64, owner_name, status, nullif(registered_at, '') AS registered_at,
       nullif(last_activated_at, '') AS last_activated_at, nullif(last_deactivated_at, '') AS last_deactivated_at,
       nullif(unregistered_at, '') AS unregistered_at, online_until, heartbeat_interval
FROM node;
