# SPDX-License-Identifier: Apache-2.0
"""The two stores of an experiment-tracking database (sql/schema.sql), and
converting a database from one to the other, bit for bit.

- packed (sql/schema.sql as it is, LoggingStrategy's default): replies and
  global models packed in reply_store and model_store, read and written
  through the views replies and global_models;
- raw (sql/schema_raw.sql in place of schema.sql's packed section; every log
  made before packing, LoggingStrategy(packed=False)): replies and
  global_models are tables holding Flower's bytes as they are.

Both present the same rows under the same names: only the file's size and
the speed of reading differ (docs/flower-logging.md, "What a run costs on
disk").

    >>> from sqlite_arrayrecord.store import pack_database, unpack_database
    >>> pack_database("runs.db")        # raw -> packed, then VACUUM
    >>> unpack_database("runs.db")      # packed -> raw, then VACUUM

or `python -m sqlite_arrayrecord pack DB` / `unpack DB`.
"""

import json
import os
import re
import sqlite3

from ._extension import connect

__all__ = ["pack_database", "unpack_database", "store_of", "schema_script"]

PACKED, RAW = "packed", "raw"
# The packed store's views and the tables whose rows they present (same
# primary key).
STORE_TABLES = {"replies": "reply_store", "global_models": "model_store"}
LOSSY = ("float16", "bfloat16")

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_SQL_DIRS = (os.path.join(_PKG_DIR, "sql"), os.path.join(_PKG_DIR, "..", "..", "..", "sql"))
_PACKED_SECTION = re.compile(r"^-- >>> packed store.*?^-- <<< packed store\n", re.S | re.M)
# The packed store's own objects, dropped when a database is unpacked.
_PACKED_OBJECTS = (
    ("TRIGGER", "replies_insert"),
    ("TRIGGER", "replies_delete"),
    ("TRIGGER", "replies_update"),
    ("TRIGGER", "global_models_insert"),
    ("TRIGGER", "global_models_delete"),
    ("TRIGGER", "global_models_update"),
    ("TRIGGER", "model_store_detach"),
    ("VIEW", "client_updates"),
    ("VIEW", "replies"),
    ("VIEW", "global_models"),
    ("TABLE", "reply_store"),
    ("TABLE", "model_store"),
)
_REPLY_COLUMNS = "run, round, phase, pos, client, node_id, message_id, reply_to, content, error_code, error_reason"


def sql_text(name):
    """The text of sql/<name>: the package's copy, else the checkout's."""
    for d in _SQL_DIRS:
        p = os.path.join(d, name)
        if os.path.isfile(p):
            with open(p, encoding="utf-8") as f:
                return f.read()
    raise FileNotFoundError(f"sqlite_arrayrecord: {name} not found in {', '.join(map(os.path.abspath, _SQL_DIRS))}")


def schema_script(store=PACKED):
    """sql/schema.sql for a database of the given store ("packed" or "raw")."""
    text = sql_text("schema.sql")
    if store == RAW:
        raw = sql_text("schema_raw.sql")
        text = _PACKED_SECTION.sub(lambda _m: raw, text, count=1)
    elif store != PACKED:
        raise ValueError(f"store must be 'packed' or 'raw', got {store!r}")
    return text


def store_of(con):
    """ "packed" or "raw": the store of the database on connection con (None
    when it has neither: not an experiment-tracking database yet)."""
    row = con.execute("SELECT type FROM sqlite_master WHERE name = 'replies'").fetchone()
    if row is None:
        return None
    return PACKED if row[0] == "view" else RAW


def _check_lossy(lossy):
    if lossy is not None and lossy not in LOSSY:
        raise ValueError(f"lossy must be None, 'float16' or 'bfloat16', got {lossy!r}")


def _views_sql():
    return sql_text("views.sql")


def _open(path, fn):
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{fn}: no database {path}")
    con = connect(path, isolation_level=None)
    store = store_of(con)
    if store is None:
        con.close()
        raise ValueError(f"{fn}: {path} is not an experiment-tracking database (it has no replies)")
    return con, store


def _dependent_views(con):
    """The views other than the store's own, with their SQL, in creation
    order: they name replies or global_models and are made again after the
    store changes under them (SQLite checks a view's tables when it is used,
    so they could stay; made again, they are checked at once)."""
    return con.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'view' AND name NOT IN ('replies', 'global_models') "
        "ORDER BY rowid"
    ).fetchall()


def _verify(con, what, left, right, keys):
    on = " AND ".join(f"a.{k} = b.{k}" for k in keys)
    (n,) = con.execute(f"SELECT count(*) FROM {left} AS a LEFT JOIN {right} AS b ON {on} WHERE {what}").fetchone()
    return n


def pack_database(path, lossy=None):
    """Converts the database at path to the packed store: every global model
    and reply packed as sql/schema.sql packs them (train replies against the
    global model of the round before, global models on their own), every row checked
    to unpack to the bytes it had, in one transaction; then VACUUM, so that
    the file shrinks. lossy ("float16" or "bfloat16") packs train replies'
    updates to that float (not bit for bit: only those are not checked). A
    database already packed is packed again (with lossy, its train replies
    become lossy). Returns the file's size before and after, in bytes."""
    _check_lossy(lossy)
    return _convert(path, "pack_database", PACKED, lossy)


def unpack_database(path):
    """Converts the database at path to the raw store (replies and
    global_models tables of Flower's bytes, sql/schema_raw.sql), every row
    checked to be what the packed store unpacked, in one transaction; then
    VACUUM. Returns the file's size before and after, in bytes."""
    return _convert(path, "unpack_database", RAW, None)


def _convert(path, fn, target, lossy):
    con, store = _open(path, fn)
    before = os.path.getsize(path)
    try:
        con.execute("PRAGMA foreign_keys = OFF")  # rows move between tables of the same keys
        con.execute("BEGIN IMMEDIATE")
        try:
            _move(con, store, target, lossy)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("VACUUM")
    finally:
        con.close()
    return before, os.path.getsize(path)


def _move(con, store, target, lossy):
    """Copies replies and global_models aside (as Flower's bytes), replaces
    the store with target's, writes the rows back through it, checks them
    and drops the copies. Runs inside the caller's transaction."""
    views = _dependent_views(con)
    for name, _sql in views:
        con.execute(f'DROP VIEW "{name}"')
    con.execute("CREATE TEMP TABLE _old_models AS SELECT run, round, rec FROM global_models")
    con.execute(f"CREATE TEMP TABLE _old_replies AS SELECT {_REPLY_COLUMNS} FROM replies")
    if store == PACKED:
        for kind, name in _PACKED_OBJECTS:
            con.execute(f'DROP {kind} IF EXISTS "{name}"')
    else:
        con.execute("DROP TABLE replies")
        con.execute("DROP TABLE global_models")
    for stmt in _statements(schema_script(target)):
        con.execute(stmt)
    if target == PACKED:
        options = {"packed": True, "lossy": lossy}
        con.execute(
            "UPDATE runs SET options = json_patch(coalesce(options, '{}'), ?)",
            (json.dumps(options),),
        )
    else:
        con.execute("UPDATE runs SET options = json_patch(coalesce(options, '{}'), '{\"packed\": false}')")
    # Global models first: the replies are packed against them.
    con.execute(
        "INSERT INTO global_models(run, round, rec) SELECT run, round, rec FROM _old_models ORDER BY run, round"
    )
    con.execute(
        f"INSERT INTO replies({_REPLY_COLUMNS}) SELECT {_REPLY_COLUMNS} FROM _old_replies ORDER BY run, round, phase, pos"
    )
    bad = _verify(con, "b.rec IS NOT a.rec", "_old_models", "global_models", ("run", "round"))
    exact = "a.content IS NOT b.content" if lossy is None else "a.phase = 'evaluate' AND a.content IS NOT b.content"
    bad += _verify(con, f"b.run IS NULL OR {exact}", "_old_replies", "replies", ("run", "round", "phase", "pos"))
    if bad:
        raise RuntimeError(f"converting to the {target} store: {bad} rows would not read back as they were")
    con.execute("DROP TABLE _old_models")
    con.execute("DROP TABLE _old_replies")
    for stmt in _statements(_views_sql()):
        con.execute(stmt)
    for name, sql in views:
        if not con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone():
            con.execute(sql)


def _statements(script):
    """script's statements one by one (sqlite3.complete_statement decides
    where one ends), for execute() inside a transaction (executescript
    would commit it)."""
    out, cur = [], ""
    for line in script.splitlines(keepends=True):
        cur += line
        if sqlite3.complete_statement(cur):
            out.append(cur)
            cur = ""
    out.append(cur)  # what follows the last ';': comments, or a statement execute() will refuse
    return [s for s in out if _has_code(s)]


def _has_code(stmt):
    return any(line.strip() and not line.strip().startswith("--") for line in stmt.splitlines())
