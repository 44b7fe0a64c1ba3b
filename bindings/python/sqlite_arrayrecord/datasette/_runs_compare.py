# SPDX-License-Identifier: Apache-2.0
"""The comparison of logged runs, /-/arrayrecord/DB/runs/compare?runs=1,4,7
(2 to 8 runs by runs.run; repeated runs=N parameters, as the runs table's
form sends them, work too): every metric as one chart with a line per run,
the settings and run config that differ (the equal ones folded away), and
each run's final global model against the others' layer by layer
(ar_compare: cosine and relative change, heatmaps of run pairs x layers).
Each final model is read from the database once; the pairs are compared
from those bytes."""

import re

from datasette.utils import tilde_encode
from datasette.utils.asgi import BadRequest, Response
from markupsafe import Markup

from .. import tracking
from . import _runs, _web, svg
from ._compare import totals
from ._runs_table import METRIC_PREFIXES, ended_text, short_class, value_text

MIN_RUNS, MAX_RUNS = 2, 8
PAIR_COLUMNS = ("key", "match", "norm_a", "norm_b", "dot", "cosine", "norm_diff", "rel_change")
USAGE = f"compare takes runs=: {MIN_RUNS} to {MAX_RUNS} run numbers (runs.run), e.g. runs=1,4,7"


def parse_runs(request):
    """The run numbers asked for, in order, each once; BadRequest with a
    message for anything else."""
    raw = request.args.getlist("runs")
    parts = [p.strip() for value in raw for p in value.split(",")]
    parts = [p for p in parts if p]
    if not parts:
        raise BadRequest(USAGE)
    ids = []
    for p in parts:
        if not re.fullmatch(r"[0-9]{1,18}", p):
            raise BadRequest(f"runs: {p[:60]!r} is not a run number; {USAGE}")
        if int(p) not in ids:
            ids.append(int(p))
    if not MIN_RUNS <= len(ids) <= MAX_RUNS:
        raise BadRequest(f"{USAGE} (got {len(ids)})")
    return ids


def read(conn, ids):
    """What the page shows of the runs (fn for _web.call): their rows of
    tracking.runs, each one's rounds, and each one's final global model's
    (round, bytes), read once."""
    by_id = {r["run"]: r for r in tracking.runs(conn)}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise LookupError(", ".join(str(i) for i in missing))
    rounds = {i: tracking.rounds(conn, i) for i in ids}
    models = {}
    for i in ids:
        row = conn.execute(
            "SELECT round, rec FROM global_models WHERE run = ? ORDER BY round DESC LIMIT 1", (i,)
        ).fetchone()
        if row is not None:
            models[i] = row
    pairs = {}
    for n, a in enumerate(ids):
        for b in ids[n + 1 :]:
            if a in models and b in models:
                pairs[(a, b)] = compare_models(conn, models[b][1], models[a][1])
    return [by_id[i] for i in ids], rounds, {i: m[0] for i, m in models.items()}, pairs


def compare_models(conn, later, earlier):
    """ar_compare of two final models' bytes, per layer (a: the later run's
    model, b: the earlier's, so rel_change is |a - b| / |b|), or the
    function's error text."""
    sql = f"SELECT {', '.join('c.' + c for c in PAIR_COLUMNS)} FROM ar_compare(?, ?) AS c"
    try:
        return [dict(zip(PAIR_COLUMNS, r)) for r in conn.execute(sql, (later, earlier))]
    except Exception as e:  # a broken record: shown for its pair, not a failed page
        return str(e)


def _metric_charts(runs, rounds):
    """One line chart per metric, a line per run (every run in every chart,
    so each keeps its colour and legend entry), numbers as data attributes."""
    keys = []
    for r in runs:
        for row in rounds[r["run"]][:1]:
            keys += [k for k in row if k.startswith(METRIC_PREFIXES) and k not in keys]
    keys.sort(key=lambda k: [p for p in METRIC_PREFIXES].index(k.split("/", 1)[0] + "/"))
    names = {r["run"]: r["name"] for r in runs}
    charts = []
    for key in keys:
        series = {
            names[r["run"]]: [(x["round"], x.get(key)) for x in rounds[r["run"]] if x.get(key) is not None]
            for r in runs
        }
        attrs = {names[r["run"]]: {"data-run": r["run"]} for r in runs}
        chart = svg.line_chart(
            series, title=key, x_label="round", y_label=key.split("/", 1)[1], width=600, height=320, series_attrs=attrs
        )
        charts.append({"key": key, "svg": Markup(chart)})
    return charts


def _differences(runs):
    """(keys whose values differ, keys equal in every run), each as
    (key, [value text per run])."""
    keys = ["strategy", "num_rounds"]
    for r in runs:
        keys += [k for k in r if k.startswith(("settings.", "config.")) and k not in keys]
    differ, same = [], []
    for k in keys:
        values = [value_text(r.get(k)) for r in runs]
        (same if len(set(values)) == 1 else differ).append((k, values))
    return differ, same


def _layers(pairs):
    keys = []
    for rows in pairs.values():
        if isinstance(rows, list):
            keys += [r["key"] for r in rows if r["key"] not in keys]
    return keys


def _model_heatmaps(runs, pairs):
    """Heatmaps of run pairs x layers (cosine, relative change), the layer
    table, the pairs' whole-model numbers and every (pair, layer) number."""
    layers = _layers(pairs)
    names = {r["run"]: r["name"] for r in runs}
    pair_keys = [p for p in pairs if isinstance(pairs[p], list)]
    if not layers or not pair_keys:
        return None
    by = {p: {row["key"]: row for row in pairs[p]} for p in pair_keys}
    labels = [f"{a} → {b}" for a, b in pair_keys]
    tips = [f"run {a} ({names[a]}) → run {b} ({names[b]})" for a, b in pair_keys]

    def grid(col):
        return [[by[p].get(k, {}).get(col) for k in layers] for p in pair_keys]

    def cell_titles(col, what):
        return [
            [f"{label}, {k}: {what} {svg.format_number(by[p].get(k, {}).get(col))}" for k in layers]
            for p, label in zip(pair_keys, labels)
        ]

    common = dict(
        x_label="layer (position; its key in the tooltip and the table)",
        y_label="run pair",
        row_labels=labels,
        row_titles=tips,
        col_labels=[str(i) for i in range(len(layers))],
        col_titles=[f"{i}: {k}" for i, k in enumerate(layers)],
        row_height=22,
        width=900,
    )
    maps = [
        svg.heatmap(
            grid("cosine"),
            title="cosine of the final models, per layer",
            value_label="cosine",
            diverging=True,
            lo=-1.0,
            hi=1.0,
            cell_titles=cell_titles("cosine", "cosine"),
            **common,
        ),
        svg.heatmap(
            grid("rel_change"),
            title="relative change |a − b| / |b| of the final models, per layer",
            value_label="|a − b| / |b|",
            lo=0.0,
            cell_titles=cell_titles("rel_change", "relative change"),
            **common,
        ),
    ]
    whole = [{"pair": p, "label": label, **(totals(pairs[p]) or {})} for p, label in zip(pair_keys, labels)]
    cells = [
        {"pair": p, "label": label, "layer": i, "key": k, "row": by[p].get(k, {})}
        for p, label in zip(pair_keys, labels)
        for i, k in enumerate(layers)
    ]
    return {"maps": [Markup(m) for m in maps], "layers": layers, "whole": whole, "cells": cells}


def _number(v):
    return {"text": "—" if v is None else svg.format_number(v), "value": "" if v is None else repr(v)}


@_web.get_only
async def compare_page(datasette, request):
    db = _web.database(datasette, request.url_vars["database"])
    await _runs.checked_schema(datasette, request, db)
    ids = parse_runs(request)
    try:
        runs, rounds, model_rounds, pairs = await _web.call(db, lambda conn: read(conn, ids))
    except LookupError as e:
        raise BadRequest(f"runs: no run {e.args[0]} in {db.name}; {USAGE}") from None
    route = tilde_encode(db.route)
    base = f"{_web.PREFIX}/{route}"
    models = _model_heatmaps(runs, pairs)
    if models:
        for w in models["whole"]:
            w["fmt"] = {k: _number(w.get(k)) for k in ("cosine", "rel_change", "norm_diff")}
        for c in models["cells"]:
            c["fmt"] = {k: _number(c["row"].get(k)) for k in ("cosine", "rel_change", "norm_diff")}
    differ, same = _differences(runs)
    shown = [
        {
            "run": r,
            "color": svg.PALETTE[i % len(svg.PALETTE)],
            "url": datasette.urls.path(f"{base}/runs/{r['run']}"),
            "strategy": short_class(r["strategy"]),
            "ended": ended_text(r),
            "model_round": model_rounds.get(r["run"]),
        }
        for i, r in enumerate(runs)
    ]
    return Response.html(
        await datasette.render_template(
            "arrayrecord_runs_compare.html",
            {
                **_runs.database_context(datasette, db),
                "runs_url": datasette.urls.path(f"{base}/runs"),
                "runs": shown,
                "charts": _metric_charts(runs, rounds),
                "differ": differ,
                "same": same,
                "models": models,
                "pair_errors": [(a, b, e) for (a, b), e in pairs.items() if isinstance(e, str)],
            },
            request=request,
        )
    )
