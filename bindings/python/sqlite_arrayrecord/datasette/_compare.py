# SPDX-License-Identifier: Apache-2.0
"""The compare page: two records side by side (a client's update against
the global model, two rounds), per layer and overall, from ar_compare (one
pass over each pair of arrays)."""

import math

from datasette.utils import tilde_encode
from datasette.utils.asgi import BadRequest, Response
from markupsafe import Markup

from . import _web, svg
from ._record import error_text

COLUMNS = (
    "position",
    "b_position",
    "key",
    "dtype",
    "shape",
    "b_dtype",
    "b_shape",
    "match",
    "note",
    "norm_a",
    "norm_b",
    "dot",
    "cosine",
    "norm_diff",
    "max_abs_diff",
    "mean_diff",
    "rel_change",
    "changed",
)


async def _side(datasette, request, db, text, record, side):
    """(Ref, SQL expression of its ArrayRecord, params) for one side ("a" or "b")."""
    table, pks, column = _web.parse_ref(text)
    ref = await _web.resolve(datasette, request, db, table, pks, column)
    kind = ref.kind
    c = _web.q(ref.column)
    where, params = ref.where(prefix=f"{side}p")
    if kind is None:
        _, rows = await _web.query(
            db, f"SELECT json_extract(ar_describe({c}, 0), '$.kind') FROM {_web.q(ref.table)} WHERE {where}", params
        )
        kind = rows[0][0]
        if kind is None:
            raise BadRequest(f"{ref.label()}: {await error_text(ref)}")
    if kind == "recorddict":
        expr = f"rd_array_record({c}, :{side}rec)" if record else f"rd_array_record({c})"
        params[f"{side}rec"] = record
    elif kind == "npy":
        expr = f"ar('array', {c})"
    else:
        expr = c
    ref.kind_read = kind
    return ref, f"(SELECT {expr} FROM {_web.q(ref.table)} WHERE {where})", params


def totals(rows):
    """Whole-record numbers from the per-key rows (keys on both sides with
    numbers only): difference norm, cosine, relative change."""
    both = [r for r in rows if r["norm_diff"] is not None]
    if not both:
        return None
    diff = math.sqrt(sum(r["norm_diff"] ** 2 for r in both))
    na = math.sqrt(sum(r["norm_a"] ** 2 for r in both))
    nb = math.sqrt(sum(r["norm_b"] ** 2 for r in both))
    dots = [r["dot"] for r in both]
    cos = sum(dots) / (na * nb) if None not in dots and na and nb else None
    return {"norm_diff": diff, "norm_a": na, "norm_b": nb, "cosine": cos, "rel_change": diff / nb if nb else None}


@_web.get_only
async def compare_page(datasette, request):
    db = _web.database(datasette, request.url_vars["database"])
    await _web.check_database(datasette, request, db)
    a_text, b_text = request.args.get("a"), request.args.get("b")
    if not a_text or not b_text:
        raise BadRequest("compare takes a=table/pks/column and b=table/pks/column (as in the record pages' URLs)")
    a_rec, b_rec = request.args.get("a_record"), request.args.get("b_record")
    a, a_sql, a_params = await _side(datasette, request, db, a_text, a_rec, "a")
    b, b_sql, b_params = await _side(datasette, request, db, b_text, b_rec, "b")
    sql = f"SELECT {', '.join('c.' + c for c in COLUMNS)} FROM ar_compare({a_sql}, {b_sql}) AS c"
    try:
        _, rows = await _web.query(db, sql, {**a_params, **b_params})
    except BadRequest as e:
        raise BadRequest(f"comparing {a.label()} with {b.label()}: {e.args[0]}") from None
    rows = [dict(zip(COLUMNS, r)) for r in rows]
    keyed = [r for r in rows if r["rel_change"] is not None or r["cosine"] is not None]
    labels = [r["key"] for r in keyed]
    chart_rel = chart_cos = None
    if keyed:
        chart_rel = Markup(
            svg.bar_chart(
                labels,
                {"|a - b| / |b|": [r["rel_change"] for r in keyed]},
                title="relative change per layer",
                x_label="layer",
                y_label="|a - b| / |b| (ratio)",
                width=720,
            )
        )
        chart_cos = Markup(
            svg.bar_chart(
                labels,
                {"cosine": [r["cosine"] for r in keyed]},
                title="cosine similarity per layer",
                x_label="layer",
                y_label="cos(a, b)",
                y_range=(-1.0, 1.0),
                width=720,
            )
        )

    def fmt(v):
        if v is None:
            return ("—", "")
        if isinstance(v, float):
            return (svg.format_number(v), repr(v))
        return (str(v), str(v))

    route = tilde_encode(db.route)
    return Response.html(
        await datasette.render_template(
            "arrayrecord_compare.html",
            {
                "a": a,
                "crumb_database": db.name,
                "b": b,
                "a_url": datasette.urls.path(f"{_web.PREFIX}/{route}/{a.path()}"),
                "b_url": datasette.urls.path(f"{_web.PREFIX}/{route}/{b.path()}"),
                "swap_url": datasette.urls.path(f"{_web.PREFIX}/{route}/compare?a={b.path()}&b={a.path()}"),
                "rows": [dict(r, fmt={k: fmt(r[k]) for k in COLUMNS}) for r in rows],
                "totals": {k: fmt(v) for k, v in (totals(rows) or {}).items()},
                "chart_rel": chart_rel,
                "chart_cos": chart_cos,
            },
            request=request,
        )
    )
