# SPDX-License-Identifier: Apache-2.0
"""The record page (every array of an ArrayRecord, RecordDict or .npy with
its statistics, histogram and heatmap, from one ar_inspect query), the array
page (one array, finer bins and grid), and the downloads (.npy of an array,
.npz and .safetensors of a record)."""

import json

from datasette.utils import tilde_encode
from datasette.utils.asgi import BadRequest, NotFound, Response
from markupsafe import Markup

from . import _web, svg
from ._cells import summary

COLUMNS = (
    "position",
    "record",
    "key",
    "dtype",
    "shape",
    "numel",
    "nbytes",
    "min",
    "max",
    "mean",
    "std",
    "l2",
    "nan",
    "posinf",
    "neginf",
    "histogram",
    "heatmap",
)
STATS = ("min", "max", "mean", "std", "l2")


def base_url(datasette, ref):
    return datasette.urls.path(f"{_web.PREFIX}/{tilde_encode(ref.db.route)}/{ref.path()}")


async def inspect(ref, bins, grid, position=None):
    """The rows of ar_inspect over the cell, as dicts: the blob is read once.
    The reading is the column's declared kind when it has one, else
    ar_inspect's detection."""
    where, params = ref.where()
    params.update({"bins": bins, "grid": grid})
    kind = ""
    if ref.kind:
        kind = ", :kind"
        params["kind"] = ref.kind
    cond = ""
    if position is not None:
        cond = " AND i.position = :pos"
        params["pos"] = position
    sql = (
        f"SELECT {', '.join('i.' + c for c in COLUMNS)} FROM {_web.q(ref.table)} AS t, "
        f"ar_inspect(t.{_web.q(ref.column)}, :bins, :grid{kind}) AS i WHERE {where}{cond} ORDER BY i.position"
    )
    _, rows = await _web.query(ref.db, sql, params)
    return [dict(zip(COLUMNS, r)) for r in rows]


async def describe(ref, max_items=1000):
    """ar_describe of the cell (a second read of the blob: the record page
    calls it for RecordDicts and empty records only)."""
    where, params = ref.where()
    params["n"] = max_items
    _, rows = await _web.query(
        ref.db, f"SELECT ar_describe({_web.q(ref.column)}, :n) FROM {_web.q(ref.table)} WHERE {where}", params
    )
    return _web.loads(rows[0][0]) if rows and rows[0][0] is not None else None


async def error_text(ref):
    """Why the cell reads as none of the kinds: the error of each reader."""
    where, params = ref.where()
    c = _web.q(ref.column)
    kinds = [ref.kind] if ref.kind else list(_web.KINDS)
    fn = {"arrayrecord": "ar_error", "recorddict": "rd_error", "npy": "npy_error"}
    cols = ", ".join(f"{fn[k]}({c})" for k in kinds)
    _, rows = await _web.query(ref.db, f"SELECT {cols} FROM {_web.q(ref.table)} WHERE {where}", params)
    return "; ".join(f"{fn[k]}: {e}" for k, e in zip(kinds, rows[0]) if e) or "not an ArrayRecord, RecordDict or .npy"


def kind_of(rows, described):
    if rows:
        if rows[0]["record"] is not None:
            return "recorddict"
        if rows[0]["key"] is None:
            return "npy"
        return "arrayrecord"
    return (described or {}).get("kind")


def _num(v):
    """(short text, exact text) of a statistic: REAL exactly as SQLite gives it."""
    if v is None:
        return ("—", "")
    if isinstance(v, float):
        return (svg.format_number(v), repr(v))
    return (svg.format_number(v) if isinstance(v, int) else str(v), str(v))


def _matrix_labels(h, shape):
    if h["layout"] == "kernels":
        return "in × kw (columns)", "out × kh (rows)"
    return f"columns ({h['cols']:,})", f"rows ({h['rows']:,})"


def charts(row, big=False):
    """The histogram and heatmap SVGs of a row (Markup), or None each."""
    title = row["key"] if row["key"] is not None else "array"
    w = 720 if big else 300
    hist = heat = None
    h = _web.loads(row["histogram"])
    if h is not None:
        hist = Markup(
            svg.histogram(
                h["lo"],
                h["hi"],
                h["counts"],
                title=f"{title}: values",
                x_label=f"value ({row['dtype']})",
                width=w,
                height=300 if big else 170,
            )
        )
    m = _web.loads(row["heatmap"])
    if m is not None:
        x_label, y_label = _matrix_labels(m, row["shape"])
        shape = _web.loads(row["shape"]) or []
        blocks = None
        if m["layout"] == "kernels" and m["cell_rows"] == m["rows"] and m["cell_cols"] == m["cols"] and len(shape) == 4:
            blocks = (shape[2], shape[3])
        heat = Markup(
            svg.heatmap(
                m["values"],
                title=f"{title}: {'kernels' if m['layout'] == 'kernels' else 'matrix'} {m['rows']:,} × {m['cols']:,}",
                x_label=x_label,
                y_label=y_label,
                value_label="cell mean",
                width=w,
                height=None if big else 200,
                blocks=blocks,
            )
        )
    return hist, heat


def table_rows(rows, url, big=False):
    out = []
    for r in rows:
        hist, heat = charts(r, big)
        out.append(
            {
                "row": r,
                "stats": {k: _num(r[k]) for k in STATS},
                # NULL for an array with no NumPy dtype (a safetensors BF16 tensor), and infinities of complex ones
                "counts": {k: _num(r[k]) for k in ("numel", "nbytes", "nan", "posinf", "neginf")},
                "hist": hist,
                "heat": heat,
                "array_url": f"{url}/array?pos={r['position']}",
                "npy_url": f"{url}/array.npy?pos={r['position']}",
            }
        )
    return out


def _record_names(rows):
    names = []
    for r in rows:
        if r["record"] is not None and r["record"] not in names:
            names.append(r["record"])
    return names


async def compare_links(datasette, ref):
    """Ready-made comparisons for rows of a logged run (sql/schema.sql):
    a reply against the global model it started from and the one after; a
    global model against the round before."""
    links = []
    if ref.table == "replies" and ref.pks == ["run", "round", "phase", "pos"] and ref.column == "content":
        run, rnd = ref.pk_values[0], ref.pk_values[1]
        for r, what in ((int(rnd) - 1, "the global model it started from"), (int(rnd), "the round's aggregate")):
            links.append((f"global_models/{tilde_encode(run)},{tilde_encode(str(r))}/rec", what))
    if ref.table == "global_models" and ref.pks == ["run", "round"] and ref.column == "rec":
        run, rnd = ref.pk_values
        if rnd.lstrip("-").isdigit() and int(rnd) > 0:
            links.append(
                (f"global_models/{tilde_encode(run)},{tilde_encode(str(int(rnd) - 1))}/rec", "the previous round")
            )
    base = datasette.urls.path(f"{_web.PREFIX}/{tilde_encode(ref.db.route)}/compare")
    return [{"href": f"{base}?a={ref.path()}&b={b}", "label": label} for b, label in links]


@_web.get_only
async def record_page(datasette, request):
    v = request.url_vars
    db = _web.database(datasette, v["database"])
    ref = await _web.resolve(datasette, request, db, v["table"], v["pks"], v["column"])
    bins = _web.int_param(request, "bins", 32, 1, 1024)
    grid = _web.int_param(request, "grid", 16, 1, 256)
    try:
        rows = await inspect(ref, bins, grid)
    except BadRequest as e:
        raise BadRequest(f"{ref.label()}: {e.args[0]}") from None
    described = None
    if not rows or rows[0]["record"] is not None:
        described = await describe(ref)
        if described is None and not rows and not ref.kind:
            raise BadRequest(f"{ref.label()}: {await error_text(ref)}")
    # No rows and no description: an empty record of the column's declared kind.
    kind = kind_of(rows, described) or ref.kind
    url = base_url(datasette, ref)
    values_records = []
    if kind == "recorddict" and described:
        for it in described.get("items", []):
            if it["kind"] in ("metric_record", "config_record"):
                values_records.append(
                    {
                        "name": it["name"],
                        "kind": it["kind"],
                        "values": [
                            (k, json.dumps(val) if isinstance(val, (dict, list)) else val)
                            for k, val in (it.get("values") or {}).items()
                        ],
                    }
                )
    downloads = []
    if kind == "arrayrecord":
        downloads = [{"label": ".npz", "href": f"{url}.npz"}, {"label": ".safetensors", "href": f"{url}.safetensors"}]
    elif kind == "recorddict":
        for name in _record_names(rows):
            qs = f"?record={tilde_encode(name)}"
            downloads.append({"label": f"{name}.npz", "href": f"{url}.npz{qs}"})
            downloads.append({"label": f"{name}.safetensors", "href": f"{url}.safetensors{qs}"})
    totals = {
        "count": len(rows),
        "numel": sum(r["numel"] or 0 for r in rows),
        "nbytes": sum(r["nbytes"] or 0 for r in rows),
    }
    return Response.html(
        await datasette.render_template(
            "arrayrecord_record.html",
            {
                "ref": ref,
                "crumb_database": ref.db.name,
                "crumb_table": ref.table,
                "kind": kind,
                "rows": table_rows(rows, url),
                "totals": totals,
                "summary": summary(described) if described else [],
                "values_records": values_records,
                "downloads": downloads,
                "row_url": datasette.urls.row(ref.db.name, ref.table, ref.pk_path),
                "table_url": datasette.urls.table(ref.db.name, ref.table),
                "database_url": datasette.urls.database(ref.db.name),
                "compare_url": datasette.urls.path(f"{_web.PREFIX}/{tilde_encode(ref.db.route)}/compare"),
                "compare_links": await compare_links(datasette, ref),
                "ref_path": ref.path(),
                "bins": bins,
                "grid": grid,
            },
            request=request,
        )
    )


@_web.get_only
async def array_page(datasette, request):
    v = request.url_vars
    db = _web.database(datasette, v["database"])
    ref = await _web.resolve(datasette, request, db, v["table"], v["pks"], v["column"])
    pos = _web.int_param(request, "pos", 0, 0, 2**62)
    bins = _web.int_param(request, "bins", 64, 1, 1024)
    grid = _web.int_param(request, "grid", 64, 1, 256)
    try:
        rows = await inspect(ref, bins, grid, position=pos)
    except BadRequest as e:
        raise BadRequest(f"{ref.label()}: {e.args[0]}") from None
    if not rows:
        raise NotFound(f"{ref.label()} has no array at position {pos}")
    url = base_url(datasette, ref)
    (row,) = table_rows(rows, url, big=True)
    return Response.html(
        await datasette.render_template(
            "arrayrecord_array.html",
            {
                "ref": ref,
                "crumb_database": ref.db.name,
                "crumb_table": ref.table,
                "item": row,
                "record_url": url,
                "row_url": datasette.urls.row(ref.db.name, ref.table, ref.pk_path),
                "bins": bins,
                "grid": grid,
                "pos": pos,
            },
            request=request,
        )
    )


def _attachment(body, filename, content_type="application/octet-stream"):
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in filename)[:120] or "download"
    return Response(body, content_type=content_type, headers={"Content-Disposition": f'attachment; filename="{safe}"'})


@_web.get_only
async def array_download(datasette, request):
    """One array as .npy: ar_get on the record (rd_array_record first for a
    RecordDict), the BLOB itself for a .npy."""
    v = request.url_vars
    db = _web.database(datasette, v["database"])
    ref = await _web.resolve(datasette, request, db, v["table"], v["pks"], v["column"])
    pos = _web.int_param(request, "pos", 0, 0, 2**62)
    where, params = ref.where()
    params["pos"] = pos
    kind = ", :kind" if ref.kind else ""
    if ref.kind:
        params["kind"] = ref.kind
    # Names only: no payload column of ar_inspect is read.
    _, rows = await _web.query(
        db,
        f"SELECT i.record, i.key FROM {_web.q(ref.table)} AS t, ar_inspect(t.{_web.q(ref.column)}, 1, 1{kind}) AS i "
        f"WHERE {where} AND i.position = :pos",
        params,
    )
    if not rows:
        raise NotFound(f"{ref.label()} has no array at position {pos}")
    record, key = rows[0]
    c = _web.q(ref.column)
    if key is None:
        expr = c
    elif record is None:
        expr = f"ar_get({c}, :key)"
    else:
        expr = f"ar_get(rd_array_record({c}, :record), :key)"
    params.update({"key": key, "record": record})
    _, out = await _web.query(db, f"SELECT {expr} FROM {_web.q(ref.table)} WHERE {where}", params)
    name = key if key is not None else ref.column
    return _attachment(out[0][0], f"{name}.npy")


@_web.get_only
async def record_download(datasette, request):
    """The record as .npz (ar_to_npz) or .safetensors (ar_to_safetensors);
    for a RecordDict, its ArrayRecord ?record=NAME (default: its only one)."""
    v = request.url_vars
    db = _web.database(datasette, v["database"])
    ref = await _web.resolve(datasette, request, db, v["table"], v["pks"], v["column"])
    fmt = v["format"]
    fn = {"npz": "ar_to_npz", "safetensors": "ar_to_safetensors"}[fmt]
    where, params = ref.where()
    c = _web.q(ref.column)
    kind = ref.kind
    if kind is None:
        _, rows = await _web.query(
            db, f"SELECT json_extract(ar_describe({c}, 0), '$.kind') FROM {_web.q(ref.table)} WHERE {where}", params
        )
        kind = rows[0][0]
        if kind is None:
            raise BadRequest(f"{ref.label()}: {await error_text(ref)}")
    name = request.args.get("record")
    if kind == "recorddict":
        expr = f"rd_array_record({c}, :record)" if name else f"rd_array_record({c})"
        params["record"] = name
    elif kind == "arrayrecord":
        if name:
            raise BadRequest(f"{ref.label()} is an ArrayRecord: ?record= names an ArrayRecord inside a RecordDict")
        expr = c
    else:
        expr = f"ar('array', {c})"
    _, rows = await _web.query(db, f"SELECT {fn}({expr}) FROM {_web.q(ref.table)} WHERE {where}", params)
    body = rows[0][0]
    if body is None:
        raise NotFound(f"{ref.label()} has no array record named {name!r}")
    stem = f"{ref.table}-{'-'.join(ref.pk_values)}-{ref.column}" + (f"-{name}" if name else "")
    return _attachment(body, f"{stem}.{fmt}")
