# SPDX-License-Identifier: Apache-2.0
"""Opening a log: the connection's settings, the schema, and what a
database made by an earlier version of the logger needs to go on.

A log is created with sql/schema.sql and sql/views.sql (shipped in the
package, or the checkout's sql/), with the packed store or, when asked, the
raw one (sqlite_arrayrecord.store). Both are idempotent, so opening an
existing log adds what a newer schema has (tables, views, indexes) to the
store it has; a database whose client_updates is a table (the schema before
replies were logged) is refused. Runs logged before flower_runs existed get one
flower_runs row each, from runs.flower_run_id and their complete rounds.
"""

import re
from datetime import datetime, timezone

from .._extension import connect
from ..store import PACKED, RAW, schema_script, sql_text, store_of
from .errors import ResumeError


def now():
    """UTC now as SQLite's strftime('%Y-%m-%dT%H:%M:%fZ') writes it."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def open_log(path, packed=True):
    """A connection to the log at path (created when new, with the packed
    store unless packed is False), in autocommit mode (the logger opens its
    transactions itself), WAL, synchronous FULL, foreign keys on, the schema
    current. A round holds SQLite's write lock
    from its start to its commit: another run logged into the same file waits
    for it (up to 10 minutes) rather than fail."""
    con = connect(path, isolation_level=None, detect_types=0, timeout=600)
    try:
        con.execute("PRAGMA journal_mode = WAL")
        con.execute("PRAGMA synchronous = FULL")
        con.execute("PRAGMA foreign_keys = ON")
        kind = con.execute("SELECT type FROM sqlite_master WHERE name = 'client_updates'").fetchone()
        if kind is not None and kind[0] != "view":
            raise ResumeError(
                f"LoggingStrategy: {path} has an older schema (client_updates is a table); log into a new database"
            )
        # Only what is missing is written: a second process opening a log
        # whose round is under way (SQLite's write lock held) reads on.
        store = store_of(con) or (PACKED if packed else RAW)
        scripts = [schema_script(store), sql_text("views.sql")]
        wanted = {n for text in scripts for n in re.findall(r"CREATE \w+ IF NOT EXISTS (\w+)", text)}
        present = {n for (n,) in con.execute("SELECT name FROM sqlite_master")}
        if wanted - present:
            for text in scripts:
                con.executescript(text)
        if con.execute(_UNFILLED).fetchone():
            backfill_flower_runs(con)
        return con
    except BaseException:
        con.close()
        raise


_UNFILLED = (
    "SELECT 1 FROM runs r WHERE r.strategy IS NOT NULL "
    "AND NOT EXISTS (SELECT 1 FROM flower_runs f WHERE f.run = r.run) LIMIT 1"
)


def backfill_flower_runs(con):
    """One flower_runs row for each logged run that has none (a run logged
    before the table existed): its first Flower run id (runs.flower_run_id,
    the only one that schema kept), its complete rounds, its start and end;
    ended 'finished' when runs.finished_at is set, else 'unknown' (a killed
    run and one still running look the same from the tables)."""
    con.execute(
        "INSERT INTO flower_runs(run, segment, flower_run_id, first_round, last_round, started_at, finished_at, ended) "
        "SELECT r.run, 1, r.flower_run_id, "
        "  (SELECT min(round) FROM rounds WHERE run = r.run AND finished_at IS NOT NULL), "
        "  (SELECT max(round) FROM rounds WHERE run = r.run AND finished_at IS NOT NULL), "
        "  r.started_at, r.finished_at, CASE WHEN r.finished_at IS NULL THEN 'unknown' ELSE 'finished' END "
        "FROM runs r WHERE r.strategy IS NOT NULL AND NOT EXISTS (SELECT 1 FROM flower_runs f WHERE f.run = r.run)"
    )
