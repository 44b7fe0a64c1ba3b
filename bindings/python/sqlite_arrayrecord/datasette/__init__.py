# SPDX-License-Identifier: Apache-2.0
"""The Datasette plugin of sqlite-arrayrecord (docs/datasette.md).

Datasette finds it by its entry point (``[project.entry-points.datasette]``
in pyproject.toml) once the package is installed with its ``datasette``
extra::

    pip install "./bindings/python[datasette]"
    datasette runs.db

Its hooks (Datasette's, not called directly): ``prepare_connection`` loads
the extension into every connection Datasette opens; ``render_cell`` shows
ArrayRecord, RecordDict and .npy cells from their headers, linked to their
pages; ``register_routes`` adds the read-only pages under /-/arrayrecord
(record, array, downloads, compare, the runs table, a run, runs compared); ``database_actions`` links a
database that holds logged runs to its runs page; ``extra_css_urls`` adds
the cells' style sheet. The module ``svg`` draws the charts.
"""

from datasette import hookimpl
from datasette.utils import tilde_encode
from datasette.utils.asgi import Response

from .._extension import load
from . import _cells, _compare, _record, _runs, _runs_compare, _runs_table, _web

_CELL = r"(?P<database>[^/]+)/(?P<table>[^/]+)/(?P<pks>[^/]+)/(?P<column>[^/.]+)"


@hookimpl
def prepare_connection(conn):
    load(conn)


@hookimpl
def render_cell(row, value, column, table, database, datasette):
    return _cells.render(row, value, column, table, database, datasette)


@_web.get_only
async def _index(datasette, request):
    await datasette.ensure_permissions(request.actor, ["view-instance"])
    dbs = []
    for name, db in datasette.databases.items():
        if name == "_internal" or not await _web.allowed_table(datasette, request.actor, db, "runs"):
            continue
        dbs.append(
            {
                "name": name,
                "url": datasette.urls.database(name),
                "runs_url": datasette.urls.path(f"{_web.PREFIX}/{tilde_encode(db.route)}/runs")
                if await _runs.has_runs(db)
                else None,
            }
        )
    return Response.html(await datasette.render_template("arrayrecord_index.html", {"databases": dbs}, request=request))


@hookimpl
def register_routes(datasette):
    p = "^" + _web.PREFIX
    return [
        (p + r"/?$", _index),
        (p + r"/(?P<database>[^/]+)/runs$", _runs_table.runs_page),
        (p + r"/(?P<database>[^/]+)/runs/compare$", _runs_compare.compare_page),
        (p + r"/(?P<database>[^/]+)/runs/(?P<run>[^/]+)$", _runs.run_page),
        (p + r"/(?P<database>[^/]+)/compare$", _compare.compare_page),
        (p + "/" + _CELL + r"$", _record.record_page),
        (p + "/" + _CELL + r"/array$", _record.array_page),
        (p + "/" + _CELL + r"/array\.npy$", _record.array_download),
        (p + "/" + _CELL + r"\.(?P<format>npz|safetensors)$", _record.record_download),
    ]


@hookimpl
def database_actions(datasette, actor, database, request):
    async def inner():
        db = datasette.get_database(database)
        if not await _runs.has_runs(db) or not await _web.allowed_table(datasette, actor, db, "runs"):
            return []
        return [
            {
                "href": datasette.urls.path(f"{_web.PREFIX}/{tilde_encode(db.route)}/runs"),
                "label": "Logged runs (metrics, client updates, Krum scores)",
            }
        ]

    return inner


@hookimpl
def extra_css_urls(datasette):
    return [datasette.urls.static_plugins(_web.PLUGIN, "arrayrecord.css")]
