# SPDX-License-Identifier: Apache-2.0
"""What every page of the plugin shares: finding the database, table, row
and column a URL names (Datasette's tilde-encoded row paths), Datasette's
permission checks, queries with the plugin's own time limit, the declared
kind of a column, and GET-only views."""

import functools
import sqlite3

from datasette.utils import escape_sqlite, sqlite_timelimit, tilde_decode, tilde_encode, urlsafe_components
from datasette.utils.asgi import BadRequest, Forbidden, NotFound, Response

from .. import tracking
from ..store import STORE_TABLES

PLUGIN = "sqlite-arrayrecord"
PREFIX = "/-/arrayrecord"
# The plugin's own queries read whole records (ar_inspect, ar_compare,
# ar_to_npz): Datasette's default limit (1 s, sql_time_limit_ms) is for
# users' queries; these get 60 s.
TIME_LIMIT_MS = 60_000
KINDS = ("arrayrecord", "recorddict", "npy")
DECLARED = {"ARRAYRECORD": "arrayrecord", "RECORDDICT": "recorddict", "NPY": "npy"}


class MethodNotAllowed(Exception):
    pass


def get_only(view):
    """A view that answers GET (and HEAD) only: the plugin never writes."""

    @functools.wraps(view)
    async def wrapper(datasette, request):
        if request.method not in ("GET", "HEAD"):
            return Response.text("405: the arrayrecord pages are read-only (GET)", status=405, headers={"Allow": "GET"})
        return await view(datasette, request)

    return wrapper


def q(name):
    """An SQL identifier, quoted as Datasette quotes them."""
    return escape_sqlite(name)


def database(datasette, route):
    try:
        return datasette.get_database(route=tilde_decode(route))
    except KeyError:
        raise NotFound("Database not found") from None


async def check_database(datasette, request, db):
    await datasette.ensure_permissions(request.actor, [("view-database", db.name), "view-instance"])


async def check_table(datasette, request, db, table):
    await datasette.ensure_permissions(
        request.actor, [("view-table", (db.name, table)), ("view-database", db.name), "view-instance"]
    )


async def allowed_table(datasette, actor, db, table):
    """Whether actor may see db.table (as check_table, without raising)."""
    try:
        await datasette.ensure_permissions(
            actor, [("view-table", (db.name, table)), ("view-database", db.name), "view-instance"]
        )
    except Forbidden:
        return False
    return True


async def call(db, fn, limit_ms=TIME_LIMIT_MS):
    """Runs fn(conn) on Datasette's read connection (the extension loaded by
    prepare_connection) with the plugin's time limit, and returns what it
    returns. A failure of SQLite or of an ar_* function is a 400 with its
    text."""

    def run(conn):
        with sqlite_timelimit(conn, limit_ms):
            return fn(conn)

    try:
        return await db.execute_fn(run)
    except sqlite3.OperationalError as e:
        if str(e) == "interrupted":
            raise BadRequest(f"the query took longer than {limit_ms // 1000} s and was stopped") from None
        raise BadRequest(str(e)) from None
    except sqlite3.DatabaseError as e:
        raise BadRequest(str(e)) from None


async def query(db, sql, params=None, limit_ms=TIME_LIMIT_MS):
    """Runs a fixed query of the plugin (call): (column names, rows as tuples)."""

    def run(conn):
        cur = conn.execute(sql, params or {})
        return [d[0] for d in cur.description or ()], [tuple(r) for r in cur.fetchall()]

    return await call(db, run, limit_ms)


async def table_info(db, table):
    """(columns [(name, declared type)], primary keys) of a table or view;
    NotFound when there is none. Rowid tables have pks ["rowid"]; views have
    none, but for the packed store's replies and global_models, whose rows
    are their store table's (sqlite_arrayrecord.store.STORE_TABLES): they
    have its primary key, so their cells have pages as the raw store's do."""
    _, rows = await query(
        db, "SELECT type FROM sqlite_master WHERE name = :t AND type IN ('table', 'view')", {"t": table}
    )
    if not rows:
        raise NotFound(f"Table not found: {table}")
    _, cols = await query(db, "SELECT name, type, pk FROM pragma_table_info(:t) ORDER BY cid", {"t": table})
    pks = [name for name, _, pk in sorted(cols, key=lambda c: c[2]) if pk]
    if not pks and rows[0][0] == "table":
        pks = ["rowid"]
    elif not pks and table in STORE_TABLES:
        _, keys = await query(db, "SELECT name, pk FROM pragma_table_info(:t)", {"t": STORE_TABLES[table]})
        pks = [name for name, pk in sorted(keys, key=lambda c: c[1]) if pk]
    return [(name, typ or "") for name, typ, _ in cols], pks


def configured_kinds(datasette, database_name, table):
    """{column: kind} named by the plugin's configuration for this table
    (metadata: databases.DB.tables.TABLE.plugins["sqlite-arrayrecord"].columns)."""
    config = datasette.plugin_config(PLUGIN, database=database_name, table=table, fallback=False) or {}
    cols = config.get("columns") or {}
    if not isinstance(cols, dict):
        return {}
    return {str(c): str(k).lower() for c, k in cols.items() if str(k).lower() in KINDS}


def declared_kind(decltype):
    return DECLARED.get((decltype or "").strip().upper())


class Ref:
    """One cell of one row: database, table, primary key values, column."""

    def __init__(self, db, table, pk_path, column, pks, kind):
        self.db, self.table, self.pk_path, self.column, self.pks, self.kind = db, table, pk_path, column, pks, kind
        self.pk_values = urlsafe_components(pk_path)
        if len(self.pk_values) != len(pks):
            raise NotFound(f"Row not found: {len(pks)} primary key value(s) expected, got {len(self.pk_values)}")

    def where(self, prefix="p"):
        """(SQL condition, params) selecting the row."""
        conds = [f"{q(pk)} = :{prefix}{i}" for i, pk in enumerate(self.pks)]
        return " AND ".join(conds), {f"{prefix}{i}": v for i, v in enumerate(self.pk_values)}

    def path(self):
        """The tail of the plugin's URLs: table/pks/column, tilde-encoded."""
        return f"{tilde_encode(self.table)}/{self.pk_path}/{tilde_encode(self.column)}"

    def label(self):
        return f"{self.table} / {','.join(self.pk_values)} / {self.column}"


async def resolve(datasette, request, db, table_enc, pks_enc, column_enc):
    """The cell a URL names, after the permission checks: 403 when the actor
    may not see the table, 404 when table, column or row do not exist."""
    table = tilde_decode(table_enc)
    column = tilde_decode(column_enc)
    await check_table(datasette, request, db, table)
    cols, pks = await table_info(db, table)
    types = dict(cols)
    if column not in types:
        raise NotFound(f"Column not found: {column}")
    if not pks:
        raise NotFound(f"{table} is a view: its rows have no address")
    kind = configured_kinds(datasette, db.name, table).get(column) or declared_kind(types[column])
    ref = Ref(db, table, pks_enc, column, pks, kind)
    where, params = ref.where()
    # typeof() and length() of a BLOB read no payload.
    _, rows = await query(db, f"SELECT typeof({q(column)}), length({q(column)}) FROM {q(table)} WHERE {where}", params)
    if not rows:
        raise NotFound("Row not found")
    ref.typeof, ref.length = rows[0]
    if ref.typeof == "null":
        raise NotFound(f"{ref.label()} is NULL")
    if ref.typeof != "blob":
        raise BadRequest(f"{ref.label()} is {ref.typeof}, not a BLOB")
    return ref


def parse_ref(text):
    """'table/pks/column' (each part tilde-encoded, as in the record page's
    URL) -> the three encoded parts; BadRequest otherwise."""
    parts = (text or "").strip().strip("/").split("/")
    if len(parts) != 3 or not all(parts):
        raise BadRequest(f"a record is named table/pks/column (tilde-encoded, as in its page's URL), got {text!r}")
    return parts


def int_param(request, name, default, lo, hi):
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        v = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be an integer from {lo} to {hi}, got {raw!r}") from None
    if not lo <= v <= hi:
        raise BadRequest(f"{name} must be an integer from {lo} to {hi}, got {v}")
    return v


# JSON text from the database, or None when it is not JSON (the notebook's reader's).
loads = tracking._loads
