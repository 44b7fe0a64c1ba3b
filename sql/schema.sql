-- SPDX-License-Identifier: Apache-2.0
-- sql/schema.sql — a federated-learning experiment-tracking database.
--
-- Load the extension first (CHECK constraints and triggers call ar_check
-- and rd_check, replies and global_models unpack their stored rows, and
-- client_updates reads the replies' RecordDicts, so writes and those three
-- need it; runs, rounds, clients, flower_runs, instructions and
-- strategy_state read without it):
--   .load ./build/arrayrecord
--   .read sql/schema.sql
--
-- Every model is a Flower ArrayRecord BLOB (the bytes of
-- array_record_to_proto(record).SerializeToString()), one per row. A row
-- holds one whole model; SQLite caps a BLOB at 1 GB by default (see README,
-- "Running at scale", for bigger models).
--
-- Records are checked with ar_check / rd_check, which fail with the reason
-- (ar_error's text: "ar_check: record blob truncated at byte 812 (item 3,
-- key 'fc.weight')") rather than SQLite's bare "CHECK constraint failed";
-- a global model or a client update must hold at least one array
-- ('nonempty': an empty record x'' is a valid ArrayRecord, and would break
-- that round's FedAvg later), while a reply may carry an error instead of
-- a content.
--
-- Replies and global models are stored packed, bit for bit (the section
-- "packed store" below; sql/schema_raw.sql is the raw store that takes its
-- place in a database made raw, see docs/experiment-tracking.md).
--
-- Array bytes are stored once. A reply of a client is one row of replies
-- holding the reply's whole content as a RecordDict BLOB (the bytes of
-- Flower's recorddict_to_proto(content).SerializeToString()), or its error;
-- client_updates is a view over the train replies (rec =
-- rd_array_record(content), num_examples and metrics from its MetricRecord),
-- and an INSTEAD OF INSERT trigger turns a client_updates row into a reply
-- whose content rd() builds ('arrays': rec, 'metrics': metrics plus
-- num-examples), so writers of (run, round, client, num_examples, metrics,
-- rec) rows keep working. The global model each instruction carried is not
-- stored again with it: instructions.content leaves it out and
-- instructions.global_arrays names the key it was sent under.
-- sqlite_arrayrecord.flower.LoggingStrategy fills every table (see
-- docs/flower-logging.md); the columns after the first ones of runs and
-- rounds are its, NULL for other writers.

PRAGMA foreign_keys = ON;

-- One training run: a strategy, a model, a config.
CREATE TABLE IF NOT EXISTS runs (
  run        INTEGER PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  config     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config)),  -- strategy, lr, epochs, ... (Flower: the run config)
  notes      TEXT,
  flower_run_id INTEGER,                                 -- Flower's Context.run_id (the first; every one: flower_runs)
  strategy      TEXT,                                    -- the wrapped strategy's class, module.Class
  settings      TEXT CHECK (settings IS NULL OR json_valid(settings)),  -- its attributes, as JSON
  num_rounds    INTEGER,                                 -- the run's total (num_rounds of start)
  options       TEXT CHECK (options IS NULL OR json_valid(options)),    -- what the logger keeps
  finished_at   TEXT                                     -- set when start() returns
);

-- Every Flower run (`flwr run`, a ServerApp's Context.run_id) that wrote to
-- a logged run, in order: segment 1 started the run, each resumption adds
-- one. first_round .. last_round are the complete rounds it logged (NULL:
-- none); ended is 'running' while it runs, 'finished' when start() returned,
-- 'failed' when it raised (error: the exception), 'interrupted' when its
-- process died (set by the next resumption, which finds it still 'running'
-- and its process gone), 'unknown' for a run logged before this table
-- existed (back-filled from runs.flower_run_id, the first Flower run only).
-- host, pid and process_start name the process writing a 'running' segment:
-- the run's lease (a second ServerApp logging the same run is refused while
-- that process lives).
CREATE TABLE IF NOT EXISTS flower_runs (
  run           INTEGER NOT NULL REFERENCES runs(run) ON DELETE CASCADE,
  segment       INTEGER NOT NULL CHECK (segment >= 1),
  flower_run_id INTEGER,                                 -- Context.run_id; NULL without a Context
  first_round   INTEGER,
  last_round    INTEGER,
  started_at    TEXT NOT NULL,
  finished_at   TEXT,
  ended         TEXT NOT NULL DEFAULT 'running'
                CHECK (ended IN ('running', 'finished', 'failed', 'interrupted', 'unknown')),
  error         TEXT,
  host          TEXT,                                    -- the writing process: its host name,
  pid           INTEGER,                                 -- its process id,
  process_start TEXT,                                    -- and its start time (pids are reused)
  PRIMARY KEY (run, segment)
);

-- What resuming a run relies on, digested as each round commits: the
-- SHA-256 of the round's global model (global_models.rec, Flower's bytes)
-- and of the strategy state written with it (strategy_state.state), and a
-- chain: SHA-256 of the previous round's chain and this round's digests, so
-- that a round missing from the middle shows. A resumption checks the chain
-- and the last round's model and state against it, and refuses a log that
-- differs, naming the row.
CREATE TABLE IF NOT EXISTS round_digests (
  run      INTEGER NOT NULL,
  round    INTEGER NOT NULL,
  model    TEXT    NOT NULL,                             -- hex SHA-256 of global_models.rec
  state    TEXT    NOT NULL,                             -- hex SHA-256 of strategy_state.state
  chain    TEXT    NOT NULL,                             -- hex SHA-256 of (previous chain, run, round, model, state)
  PRIMARY KEY (run, round),
  FOREIGN KEY (run, round) REFERENCES rounds(run, round) ON DELETE CASCADE
);

-- The logger writes info = {"node_id": ...} and adds a stable label where
-- Flower gives one: "name" (the SuperNode's registered name, NodeInfo.name)
-- and "partition_id" (a reply carrying "partition-id" in a ConfigRecord or
-- MetricRecord). Node ids change with every Flower run in simulation.
CREATE TABLE IF NOT EXISTS clients (
  client TEXT PRIMARY KEY,
  info   TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(info))        -- hardware, partition, ...
);

-- One server round of a run, with server-side metrics (e.g. centralized eval).
CREATE TABLE IF NOT EXISTS rounds (
  run         INTEGER NOT NULL REFERENCES runs(run) ON DELETE CASCADE,
  round       INTEGER NOT NULL CHECK (round >= 0),
  started_at  TEXT,
  finished_at TEXT,
  metrics     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metrics)),  -- server side (Flower: evaluate_fn's)
  train_metrics    TEXT CHECK (train_metrics IS NULL OR json_valid(train_metrics)),       -- aggregate_train's
  evaluate_metrics TEXT CHECK (evaluate_metrics IS NULL OR json_valid(evaluate_metrics)), -- aggregate_evaluate's
  result      BLOB CHECK (result IS NULL OR rd_check(result)),  -- RecordDict of the MetricRecords 'train', 'evaluate', 'server' returned
  aggregated  INTEGER,                                  -- 1 when aggregate_train returned arrays
  replies     INTEGER,                                  -- replies received (train + evaluate), errors included
  errors      INTEGER,                                  -- of which error replies
  bytes_sent     INTEGER,                               -- serde bytes of the instructions' contents, one per node
  bytes_received INTEGER,                               -- serde bytes of the replies' contents (NULL: not kept)
  timings     TEXT CHECK (timings IS NULL OR json_valid(timings)),  -- seconds per step, as JSON
  PRIMARY KEY (run, round)
);

-- >>> packed store (the raw store, sql/schema_raw.sql, takes this place in a log made raw)
--
-- Replies and global models are stored packed (ar_pack, rd_pack: each
-- array as byte planes compressed with zstd, or as its difference from a
-- base record; bit for bit, see docs/formats.md) in reply_store and
-- model_store, and read and written under their names of the raw store:
-- replies, global_models and client_updates are views that unpack each
-- row, replies and global_models with INSTEAD OF triggers that check a
-- record as the raw store's CHECK constraints do (ar_check / rd_check,
-- with the reason) and pack it.
--
-- Bases: a train reply of round r is packed against the global model of
-- round r - 1 (the model the client received: a reply's update is what
-- differs, about 0.55 of its bytes on real runs); base_round names it. A
-- global model is packed on its own (byte planes and zstd, about 0.85), so
-- that unpacking any row needs at most one other record unpacked first,
-- itself packed without a base: never a chain. An evaluate reply, and a
-- train reply whose base is not in the database, are packed on their own
-- too. Records under 1 KiB (an evaluate reply's metrics) are kept as they
-- are (packed = 0): packing would make them larger. runs.options decides
-- per run: {"packed": false} stores its rows as they are, {"lossy":
-- "float16"} (or "bfloat16") packs its train replies' updates to that
-- float (ar_pack's lossy option: never global models or the strategy
-- state; LoggingStrategy(lossy=...)).
--
-- Deleting or changing a global model that is a reply's base first
-- repacks those replies without a base (model_store_detach), so no row is
-- left that cannot be unpacked; deleting a whole run deletes its rows.
-- Write through the views: a row written into a store table directly is
-- not checked. The views read one table each (the base through a scalar
-- subquery, not a join), so that SQLite can flatten them into any query,
-- the right side of a LEFT JOIN included, rather than copy them whole.
CREATE TABLE IF NOT EXISTS reply_store (
  run          INTEGER NOT NULL,
  round        INTEGER NOT NULL,
  phase        TEXT    NOT NULL DEFAULT 'train' CHECK (phase IN ('train', 'evaluate')),
  pos          INTEGER NOT NULL CHECK (pos >= 0),
  client       TEXT    NOT NULL REFERENCES clients(client),
  node_id      INTEGER,
  message_id   TEXT,
  reply_to     TEXT,
  content      BLOB,                                          -- rd_pack(content, base) when packed = 1
  packed       INTEGER NOT NULL DEFAULT 0 CHECK (packed IN (0, 1)),
  metrics      TEXT,                                          -- rd_metrics(content) of a reply with one MetricRecord
  base_round   INTEGER CHECK (base_round IS NULL OR packed = 1 AND base_round = round - 1),
  error_code   INTEGER,
  error_reason TEXT,
  CONSTRAINT content_or_error CHECK ((content IS NULL) <> (error_code IS NULL)),  -- named: the same message on every SQLite
  PRIMARY KEY (run, round, phase, pos),
  UNIQUE (run, round, phase, client),
  FOREIGN KEY (run, round) REFERENCES rounds(run, round) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS model_store (
  run        INTEGER NOT NULL,
  round      INTEGER NOT NULL,
  rec        BLOB    NOT NULL,                                -- ar_pack(rec) when packed = 1
  packed     INTEGER NOT NULL DEFAULT 0 CHECK (packed IN (0, 1)),
  PRIMARY KEY (run, round),
  FOREIGN KEY (run, round) REFERENCES rounds(run, round) ON DELETE CASCADE
);

-- Every reply of a round, in the order it arrived (pos: its position in
-- the list the strategy aggregated): the replying client, Flower's node
-- and message ids, and its content RecordDict, or its error.
CREATE VIEW IF NOT EXISTS replies AS
SELECT s.run, s.round, s.phase, s.pos, s.client, s.node_id, s.message_id, s.reply_to,
       CASE WHEN s.packed = 0 THEN s.content
            ELSE rd_unpack(s.content, (SELECT CASE WHEN m.packed = 0 THEN m.rec ELSE ar_unpack(m.rec) END
                                       FROM model_store AS m WHERE m.run = s.run AND m.round = s.base_round)) END
         AS content,
       s.error_code, s.error_reason
FROM reply_store AS s;

-- The global model the server holds after each round (round 0: the initial model).
CREATE VIEW IF NOT EXISTS global_models AS
SELECT run, round, CASE WHEN packed = 0 THEN rec ELSE ar_unpack(rec) END AS rec
FROM model_store;

-- What each client sent back in a round: its model (or model update) as a
-- Flower ArrayRecord, the number of examples it trained on (the FedAvg
-- weight) and its other metrics — read from the train replies' contents
-- (one ArrayRecord and one MetricRecord each, as Flower's FedAvg requires).
-- The metrics come from reply_store.metrics, kept when the reply was
-- written, so that reading them unpacks nothing (a reply whose metrics
-- were not kept, having none or several MetricRecords, is read as the raw
-- store reads it).
CREATE VIEW IF NOT EXISTS client_updates AS
SELECT run, round, client,
       json_extract(coalesce(metrics, rd_metrics(content)), '$."num-examples"') AS num_examples,
       json_remove(coalesce(metrics, rd_metrics(content)), '$."num-examples"') AS metrics,
       rd_array_record(content) AS rec,
       pos, node_id
FROM (SELECT s.run, s.round, s.client, s.metrics, s.pos, s.node_id,
             CASE WHEN s.packed = 0 THEN s.content
                  ELSE rd_unpack(s.content, (SELECT CASE WHEN m.packed = 0 THEN m.rec ELSE ar_unpack(m.rec) END
                                             FROM model_store AS m WHERE m.run = s.run AND m.round = s.base_round)) END
               AS content
      FROM reply_store AS s
      WHERE s.phase = 'train' AND s.content IS NOT NULL);

CREATE TRIGGER IF NOT EXISTS replies_insert INSTEAD OF INSERT ON replies
BEGIN
  SELECT rd_check(NEW.content) WHERE NEW.content IS NOT NULL;
  INSERT INTO reply_store(run, round, phase, pos, client, node_id, message_id, reply_to,
                          content, packed, metrics, base_round, error_code, error_reason)
  SELECT NEW.run, NEW.round, p.phase, NEW.pos, NEW.client, NEW.node_id, NEW.message_id, NEW.reply_to,
         CASE WHEN p.pack THEN rd_pack(NEW.content, (SELECT rec FROM global_models WHERE run = NEW.run AND round = p.base),
                                       CASE WHEN p.base IS NOT NULL AND p.lossy IS NOT NULL THEN json_object('lossy', p.lossy) END)
              ELSE NEW.content END,
         p.pack,
         CASE WHEN NEW.content IS NOT NULL
               AND (SELECT count(*) FROM record_dict(NEW.content) WHERE kind = 'metric') = 1
              THEN rd_metrics(NEW.content) END,
         CASE WHEN p.pack THEN p.base END, NEW.error_code, NEW.error_reason
  FROM (SELECT coalesce(NEW.phase, 'train') AS phase,
               NEW.content IS NOT NULL AND length(NEW.content) >= 1024
                 AND coalesce(json_extract(r.options, '$.packed'), 1) AS pack,
               CASE WHEN coalesce(NEW.phase, 'train') = 'train'
                    THEN (SELECT round FROM model_store WHERE run = NEW.run AND round = NEW.round - 1) END AS base,
               json_extract(r.options, '$.lossy') AS lossy
        FROM (SELECT (SELECT options FROM runs WHERE run = NEW.run) AS options) AS r) AS p;
END;

CREATE TRIGGER IF NOT EXISTS replies_delete INSTEAD OF DELETE ON replies
BEGIN
  DELETE FROM reply_store WHERE run = OLD.run AND round = OLD.round AND phase = OLD.phase AND pos = OLD.pos;
END;

CREATE TRIGGER IF NOT EXISTS replies_update INSTEAD OF UPDATE ON replies
BEGIN
  DELETE FROM reply_store WHERE run = OLD.run AND round = OLD.round AND phase = OLD.phase AND pos = OLD.pos;
  INSERT INTO replies(run, round, phase, pos, client, node_id, message_id, reply_to, content, error_code, error_reason)
  VALUES (NEW.run, NEW.round, NEW.phase, NEW.pos, NEW.client, NEW.node_id, NEW.message_id, NEW.reply_to,
          NEW.content, NEW.error_code, NEW.error_reason);
END;

CREATE TRIGGER IF NOT EXISTS global_models_insert INSTEAD OF INSERT ON global_models
BEGIN
  SELECT RAISE(ABORT, 'global_models: rec must not be NULL') WHERE NEW.rec IS NULL;
  SELECT ar_check(NEW.rec, 'nonempty');
  INSERT INTO model_store(run, round, rec, packed)
  SELECT NEW.run, NEW.round, CASE WHEN p.pack THEN ar_pack(NEW.rec) ELSE NEW.rec END, p.pack
  FROM (SELECT length(NEW.rec) >= 1024
                 AND coalesce(json_extract((SELECT options FROM runs WHERE run = NEW.run), '$.packed'), 1) AS pack) AS p;
END;

CREATE TRIGGER IF NOT EXISTS global_models_delete INSTEAD OF DELETE ON global_models
BEGIN
  DELETE FROM model_store WHERE run = OLD.run AND round = OLD.round;
END;

CREATE TRIGGER IF NOT EXISTS global_models_update INSTEAD OF UPDATE ON global_models
BEGIN
  DELETE FROM model_store WHERE run = OLD.run AND round = OLD.round;
  INSERT INTO global_models(run, round, rec) VALUES (NEW.run, NEW.round, NEW.rec);
END;

-- A global model about to go that is a reply's base: those replies are
-- repacked without a base first (what they unpack to does not change).
-- Not when its run is being deleted (its rows go with it).
CREATE TRIGGER IF NOT EXISTS model_store_detach BEFORE DELETE ON model_store
WHEN EXISTS (SELECT 1 FROM runs WHERE run = OLD.run)
 AND EXISTS (SELECT 1 FROM reply_store WHERE run = OLD.run AND round = OLD.round + 1 AND base_round = OLD.round)
BEGIN
  UPDATE reply_store
  SET content = rd_pack(rd_unpack(content, (SELECT rec FROM global_models WHERE run = OLD.run AND round = OLD.round))),
      base_round = NULL
  WHERE run = OLD.run AND round = OLD.round + 1 AND base_round = OLD.round;
END;

-- The common questions: one client across rounds, a round's updates
-- (the primary key covers run, round), a run's global models in order.
CREATE INDEX IF NOT EXISTS client_updates_by_client ON reply_store(client, run, round);

-- GROUP BY over model BLOBs: without an index on the grouped columns SQLite
-- copies every row, BLOB included, through a temporary B-tree to sort it
-- (seconds per query on a large table). round_fedavg (sql/views.sql) groups
-- on (run, round), which the primary key's index serves; this one serves
-- GROUP BY round, the usual question over a single-run database.
CREATE INDEX IF NOT EXISTS client_updates_by_round ON reply_store(round, run);
-- <<< packed store

CREATE TRIGGER IF NOT EXISTS client_updates_insert INSTEAD OF INSERT ON client_updates
BEGIN
  SELECT RAISE(ABORT, 'client_updates: num_examples must be an integer >= 0')
  WHERE typeof(NEW.num_examples) <> 'integer' OR NEW.num_examples < 0;
  SELECT RAISE(ABORT, 'client_updates: metrics must be a JSON object')
  WHERE NEW.metrics IS NOT NULL AND json_type(NEW.metrics) IS NOT 'object';
  SELECT RAISE(ABORT, 'client_updates: rec must not be NULL') WHERE NEW.rec IS NULL;
  SELECT ar_check(NEW.rec, 'nonempty');
  INSERT INTO replies(run, round, phase, pos, client, content)
  VALUES (NEW.run, NEW.round, 'train',
          (SELECT coalesce(max(pos) + 1, 0) FROM replies
           WHERE run = NEW.run AND round = NEW.round AND phase = 'train'),
          NEW.client,
          rd('arrays', 'array', NEW.rec, 'metrics', 'metric',
             json_set(coalesce(NEW.metrics, '{}'), '$."num-examples"', NEW.num_examples)));
END;

-- The instructions a round sent (pos: the order configure_train /
-- configure_evaluate returned them), each content RecordDict without the
-- global model: global_arrays is the key it went under (NULL when the
-- instruction carried no global model), the model being global_models at
-- round - 1 for train instructions and at round for evaluate ones.
CREATE TABLE IF NOT EXISTS instructions (
  run           INTEGER NOT NULL,
  round         INTEGER NOT NULL,
  phase         TEXT    NOT NULL CHECK (phase IN ('train', 'evaluate')),
  pos           INTEGER NOT NULL CHECK (pos >= 0),
  node_id       INTEGER NOT NULL,
  message_id    TEXT,
  content       BLOB    NOT NULL CHECK (rd_check(content)),
  global_arrays TEXT,
  PRIMARY KEY (run, round, phase, pos),
  FOREIGN KEY (run, round) REFERENCES rounds(run, round) ON DELETE CASCADE
);

-- The wrapped strategy's state after a round (its arrays as ArrayRecords,
-- its other attributes in ConfigRecords; see docs/flower-logging.md), what
-- a resumed run restores. The logger keeps the last round's only.
CREATE TABLE IF NOT EXISTS strategy_state (
  run   INTEGER NOT NULL,
  round INTEGER NOT NULL,
  state BLOB    NOT NULL CHECK (rd_check(state)),
  PRIMARY KEY (run, round),
  FOREIGN KEY (run, round) REFERENCES rounds(run, round) ON DELETE CASCADE
);

-- A run's rounds in the order they started.
CREATE INDEX IF NOT EXISTS rounds_by_start ON rounds(run, started_at);
