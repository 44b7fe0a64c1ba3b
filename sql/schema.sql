-- SPDX-License-Identifier: Apache-2.0
-- sql/schema.sql — a federated-learning experiment-tracking database.
--
-- Load the extension first (CHECK constraints call ar_valid, so writes need
-- it; reads do not):
--   .load ./build/arrayrecord
--   .read sql/schema.sql
--
-- Every model is a Flower ArrayRecord BLOB (the bytes of
-- array_record_to_proto(record).SerializeToString()), one per row. A row
-- holds one whole model; SQLite caps a BLOB at 1 GB by default (see README,
-- "Running at scale", for bigger models).

PRAGMA foreign_keys = ON;

-- One training run: a strategy, a model, a config.
CREATE TABLE IF NOT EXISTS runs (
  run        INTEGER PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  started_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  config     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config)),  -- strategy, lr, epochs, ...
  notes      TEXT
);

-- The clients (Flower nodes or data partitions) that ever took part.
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
  metrics     TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(metrics)),
  PRIMARY KEY (run, round)
);

-- What each client sent back in a round: its model (or model update) as a
-- Flower ArrayRecord, the number of examples it trained on (the FedAvg
-- weight) and its metrics.
CREATE TABLE IF NOT EXISTS client_updates (
  run          INTEGER NOT NULL,
  round        INTEGER NOT NULL,
  client       TEXT    NOT NULL REFERENCES clients(client),
  num_examples INTEGER NOT NULL CHECK (num_examples >= 0),
  metrics      TEXT    NOT NULL DEFAULT '{}' CHECK (json_valid(metrics)),
  rec          BLOB    NOT NULL CHECK (ar_valid(rec)),
  PRIMARY KEY (run, round, client),
  FOREIGN KEY (run, round) REFERENCES rounds(run, round) ON DELETE CASCADE
);

-- The global model the server holds after each round (round 0: the initial model).
CREATE TABLE IF NOT EXISTS global_models (
  run   INTEGER NOT NULL,
  round INTEGER NOT NULL,
  rec   BLOB    NOT NULL CHECK (ar_valid(rec)),
  PRIMARY KEY (run, round),
  FOREIGN KEY (run, round) REFERENCES rounds(run, round) ON DELETE CASCADE
);

-- The common questions: one client across rounds, a round's updates
-- (the primary key covers run, round), a run's global models in order.
CREATE INDEX IF NOT EXISTS client_updates_by_client ON client_updates(client, run, round);
CREATE INDEX IF NOT EXISTS rounds_by_start ON rounds(run, started_at);

-- GROUP BY over model BLOBs: without an index on the grouped columns SQLite
-- copies every row, BLOB included, through a temporary B-tree to sort it
-- (seconds per query on a large table). round_fedavg (sql/views.sql) groups
-- on (run, round), which the primary key's index serves; this one serves
-- GROUP BY round, the usual question over a single-run database.
CREATE INDEX IF NOT EXISTS client_updates_by_round ON client_updates(round, run);
