# SPDX-License-Identifier: Apache-2.0
"""Table cells: a BLOB that is an ArrayRecord, a RecordDict or a .npy is
shown as what it is, from its headers only (one ar_describe call per cell on
a private in-memory connection; no Datasette query per cell), linked to its
record page. A packed record or record dict (ar_pack, rd_pack) is shown from
its header and meta section: its size packed and unpacked, its base, each
array's mode; it has no record page (its arrays need its base to read). In
a column declared ARRAYRECORD, RECORDDICT or NPY (or named by the plugin's
configuration) a BLOB that fails shows the error text of ar_error /
rd_error / npy_error; any other value keeps Datasette's display.
"""

import json
import sqlite3
import threading

from datasette.utils import path_from_row_pks, tilde_encode
from markupsafe import Markup, escape

from .._extension import load
from . import _web
from .svg import format_number

ERROR_FUNCTION = {"arrayrecord": "ar_error", "recorddict": "rd_error", "npy": "npy_error"}
ITEMS_SHOWN = 3


class Describer:
    """One private in-memory connection with the extension loaded, shared by
    every thread under a lock (ar_describe reads headers: microseconds)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._conn = None

    def _connection(self):
        if self._conn is None:
            conn = sqlite3.connect(":memory:", check_same_thread=False)
            load(conn)
            self._conn = conn
        return self._conn

    def describe(self, blob, max_items=ITEMS_SHOWN):
        """ar_describe's JSON as a dict, or None."""
        with self._lock:
            (text,) = self._connection().execute("SELECT ar_describe(?, ?)", (blob, max_items)).fetchone()
        return json.loads(text) if text is not None else None

    def error(self, kind, blob):
        """The error text of the reader of `kind` for blob, or None when it reads."""
        with self._lock:
            (text,) = self._connection().execute(f"SELECT {ERROR_FUNCTION[kind]}(?)", (blob,)).fetchone()
        return text


DESCRIBER = Describer()


class TableCache:
    """Per (database, table): primary keys, and the kind each column is
    declared or configured as. Read once per table, again when the file
    changes (its modification time)."""

    def __init__(self):
        self._cache = {}

    async def get(self, datasette, database, table):
        db = datasette.get_database(database)
        stamp = db.mtime_ns
        key = (id(datasette), database, table)
        hit = self._cache.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        try:
            cols, pks = await _web.table_info(db, table)
        except Exception:
            cols, pks = [], []
        kinds = {name: _web.declared_kind(typ) for name, typ in cols if _web.declared_kind(typ)}
        kinds.update(_web.configured_kinds(datasette, database, table))
        info = (pks, kinds)
        self._cache[key] = (stamp, info)
        return info


TABLES = TableCache()


def _size(n):
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:,} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"  # pragma: no cover


def _n(count, word):
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _shape(shape):
    return "[" + ",".join(str(d) for d in shape) + "]"


def _value(v):
    if isinstance(v, float):
        return format_number(v)
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _values(values):
    return " · ".join(f"{k} {_value(v)}" for k, v in values.items())


def _more(d, shown):
    return [f"… {d['count'] - shown:,} more"] if d["count"] > shown else []


def _packed(d):
    """A packed record's lines: what it holds, its sizes, its base, its arrays' modes."""
    what = "ArrayRecord" if d["of"] == "arrayrecord" else "RecordDict"
    ratio = d["packed"] / d["size"] if d["size"] else 0
    lines = [
        f"Packed {what} · {_n(d['count'], 'array')} · {_size(d['size'])} packed into {_size(d['packed'])} ({ratio:.2f})",
        f"against base {d['base'][:16]}…" if d.get("base") else "no base",
    ]
    if d.get("lossy"):
        lines[-1] += f" · lossy {d['lossy']}, max error {format_number(d['max_error'])}"
    items = d.get("items", [])
    lines += [f"{it['key']} {it['mode']} · {_size(it['nbytes'])} → {_size(it['stored'])}" for it in items]
    return lines + _more(d, len(items))


def summary(d):
    """The text lines of a cell from ar_describe's JSON (escaped on output)."""
    kind = d.get("kind")
    if kind == "packed":
        return _packed(d)
    if kind == "npy":
        return [f".npy {d['dtype']} {_shape(d['shape'])}", f"{_n(d['numel'], 'element')} · {_size(d['nbytes'])}"]
    if kind == "arrayrecord":
        lines = [f"ArrayRecord · {_n(d['count'], 'array')} · {_n(d['numel'], 'element')} · {_size(d['nbytes'])}"]
        lines += [f"{it['key']} {it['dtype']} {_shape(it['shape'])}" for it in d.get("items", [])]
        return lines + _more(d, len(d.get("items", [])))
    if kind == "recorddict":
        lines = [f"RecordDict · {_n(d['count'], 'item')}"]
        for it in d.get("items", []):
            if it["kind"] == "array_record":
                lines.append(f"{it['name']}: {_n(it['count'], 'array')} · {_size(it['nbytes'])}")
            else:
                lines.append(f"{it['name']}: {_values(it.get('values') or {})}")
        return lines + _more(d, len(d.get("items", [])))
    return []


def _html(lines, href, css):
    body = Markup("<br>").join(escape(x) for x in lines)
    if href:
        return Markup('<a class="{}" href="{}">{}</a>').format(css, href, body)
    return Markup('<span class="{}">{}</span>').format(css, body)


async def render(row, value, column, table, database, datasette):
    """render_cell's work; None leaves the cell to Datasette."""
    if not isinstance(value, bytes) or not value:
        return None
    kind = None
    pks = []
    if table is not None:
        pks, kinds = await TABLES.get(datasette, database, table)
        kind = kinds.get(column)
    d = DESCRIBER.describe(value)
    if d is None and kind is None:
        return None
    href = None
    if table is not None and pks and (d is None or d.get("kind") != "packed"):
        keys = row.keys() if hasattr(row, "keys") else []
        if all(pk in keys for pk in pks):
            pk_path = path_from_row_pks(row, [] if pks == ["rowid"] else pks, pks == ["rowid"])
            db = datasette.get_database(database)
            href = datasette.urls.path(
                f"{_web.PREFIX}/{tilde_encode(db.route)}/{tilde_encode(table)}/{pk_path}/{tilde_encode(column)}"
            )
    if d is not None:
        return _html(summary(d), href, "ar-cell")
    error = DESCRIBER.error(kind, value)
    if error is None:
        return None
    return _html([f"{ERROR_FUNCTION[kind]}: {error}"], href, "ar-cell ar-error")
