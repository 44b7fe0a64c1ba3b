-- SPDX-License-Identifier: Apache-2.0
-- sql/schema_raw.sql — the raw store of sql/schema.sql: replies and
-- global_models as plain tables holding Flower's bytes as they are, 1.0
-- byte on disk per byte of weights. This is the layout of every log made
-- before packing, of LoggingStrategy(packed=False) and of
-- `python -m sqlite_arrayrecord unpack DB`; it reads without the extension
-- (only client_updates and the CHECK constraints call it).
--
-- It stands in for the section of sql/schema.sql between the lines
-- "-- >>> packed store" and "-- <<< packed store" (sqlite_arrayrecord's
-- logger and converter put it there); it is not read on its own.

-- Every reply of a round, in the order it arrived (pos: its position in
-- the list the strategy aggregated): the replying client, Flower's node
-- and message ids, and its content RecordDict, or its error.
CREATE TABLE IF NOT EXISTS replies (
  run          INTEGER NOT NULL,
  round        INTEGER NOT NULL,
  phase        TEXT    NOT NULL DEFAULT 'train' CHECK (phase IN ('train', 'evaluate')),
  pos          INTEGER NOT NULL CHECK (pos >= 0),
  client       TEXT    NOT NULL REFERENCES clients(client),  -- Flower: the node id as text
  node_id      INTEGER,
  message_id   TEXT,
  reply_to     TEXT,                                          -- the instruction's message id
  content      BLOB CHECK (content IS NULL OR rd_check(content)),
  error_code   INTEGER,
  error_reason TEXT,
  CONSTRAINT content_or_error CHECK ((content IS NULL) <> (error_code IS NULL)),  -- named: the same message on every SQLite
  PRIMARY KEY (run, round, phase, pos),
  UNIQUE (run, round, phase, client),
  FOREIGN KEY (run, round) REFERENCES rounds(run, round) ON DELETE CASCADE
);

-- What each client sent back in a round: its model (or model update) as a
-- Flower ArrayRecord, the number of examples it trained on (the FedAvg
-- weight) and its other metrics — read from the train replies' contents
-- (one ArrayRecord and one MetricRecord each, as Flower's FedAvg requires).
CREATE VIEW IF NOT EXISTS client_updates AS
SELECT run, round, client,
       json_extract(rd_metrics(content), '$."num-examples"') AS num_examples,
       json_remove(rd_metrics(content), '$."num-examples"') AS metrics,
       rd_array_record(content) AS rec,
       pos, node_id
FROM replies
WHERE phase = 'train' AND content IS NOT NULL;

-- The global model the server holds after each round (round 0: the initial model).
CREATE TABLE IF NOT EXISTS global_models (
  run   INTEGER NOT NULL,
  round INTEGER NOT NULL,
  rec   BLOB    NOT NULL CHECK (ar_check(rec, 'nonempty')),
  PRIMARY KEY (run, round),
  FOREIGN KEY (run, round) REFERENCES rounds(run, round) ON DELETE CASCADE
);

-- The common questions: one client across rounds, a round's updates
-- (the primary key covers run, round), a run's global models in order.
CREATE INDEX IF NOT EXISTS client_updates_by_client ON replies(client, run, round);

-- GROUP BY over model BLOBs: without an index on the grouped columns SQLite
-- copies every row, BLOB included, through a temporary B-tree to sort it
-- (seconds per query on a large table). round_fedavg (sql/views.sql) groups
-- on (run, round), which the primary key's index serves; this one serves
-- GROUP BY round, the usual question over a single-run database.
CREATE INDEX IF NOT EXISTS client_updates_by_round ON replies(round, run);
