# SPDX-License-Identifier: Apache-2.0
"""The run page of a database written by LoggingStrategy (sql/schema.sql):
one run's metrics per round, each client's update norm and cosine to the
aggregate update, Krum scores, bytes per round and the global model of
every round; and what the runs pages share (the logged-run tables present,
their permission checks). The runs table is _runs_table's, the comparison
of runs _runs_compare's."""

from datasette.utils import tilde_encode
from datasette.utils.asgi import BadRequest, NotFound, Response
from markupsafe import Markup

from ..tracking import _ROUND_COLUMNS, _SEGMENT_COLUMNS, _flower_id, _update_stats
from . import _clients, _web, svg

REQUIRED = ("runs", "rounds", "global_models")
RUN_COLUMNS = (
    "run",
    "name",
    "started_at",
    "config",
    "notes",
    "strategy",
    "settings",
    "num_rounds",
    "finished_at",
    "flower_run_id",
)
FLOWER_RUN_COLUMNS = _SEGMENT_COLUMNS
ROUND_COLUMNS = _ROUND_COLUMNS
ROBUST = ("Krum", "MultiKrum", "Bulyan")
DEFAULT_F = 1


async def schema(db):
    """{table: [columns]} of the logged-run tables present (views too:
    client_updates is one)."""
    _, rows = await _web.query(
        db,
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name IN "
        "('runs', 'rounds', 'global_models', 'replies', 'client_updates', 'flower_runs', 'clients')",
    )
    out = {}
    for (name,) in rows:
        _, cols = await _web.query(db, "SELECT name FROM pragma_table_info(:t)", {"t": name})
        out[name] = [c for (c,) in cols]
    return out


async def has_runs(db):
    s = await schema(db)
    return all(t in s for t in REQUIRED) and "run" in s["runs"]


async def checked_schema(datasette, request, db):
    await _web.check_database(datasette, request, db)
    s = await schema(db)
    missing = [t for t in REQUIRED if t not in s]
    if missing:
        raise NotFound(f"{db.name} holds no logged runs (sql/schema.sql): no table {', '.join(missing)}")
    for t in ("runs", "rounds", "global_models", "replies", "flower_runs", "clients"):
        if t in s:
            await _web.check_table(datasette, request, db, t)
    return s


def _select(columns, present, alias=""):
    return ", ".join(f"{alias}{_web.q(c)}" if c in present else "NULL" for c in columns)


def _metric_series(rounds, column):
    """{metric: [(round, value)]} of the numeric values of a JSON column."""
    series = {}
    for r in rounds:
        values = _web.loads(r[column])
        if not isinstance(values, dict):
            continue
        for k, v in values.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                series.setdefault(k, []).append((r["round"], float(v)))
    return series


def _krum_f(run, request):
    strategy = (run.get("strategy") or "").rsplit(".", 1)[-1]
    settings = _web.loads(run.get("settings")) or {}
    from_settings = None
    if strategy in ROBUST and isinstance(settings.get("num_malicious_nodes"), int):
        from_settings = settings["num_malicious_nodes"]
    if request.args.get("f"):
        return _web.int_param(request, "f", DEFAULT_F, 0, 10_000), "the page's f parameter"
    if from_settings is not None:
        return from_settings, f"num_malicious_nodes of the run's {strategy} settings"
    return DEFAULT_F, f"the default (f = {DEFAULT_F}; the run's strategy is no Krum or Bulyan: set ?f=)"


def _order(columns):
    """ORDER BY key of client_updates: the arrival position of the view of
    sql/schema.sql, else (an older client_updates table) the insertion order."""
    return "pos" if "pos" in columns else "rowid"


async def update_stats(db, run, columns):
    """Per train reply of the run: its update norm and cosine to the
    aggregate update (tracking's _update_stats, shared with the exporters)."""
    return await _web.call(db, lambda conn: _update_stats(conn, run))


async def krum_scores(db, run, rounds, f, columns):
    """{round: {client: score}} from ar_krum_scores over each round's
    updates in arrival order, and {round: error text} where it failed."""
    order = _order(columns)
    scores, errors = {}, {}
    for rnd in rounds:
        _, clients = await _web.query(
            db,
            f"SELECT client FROM client_updates WHERE run = :run AND round = :r ORDER BY {order}",
            {"run": run, "r": rnd},
        )
        if not clients:
            continue
        try:
            _, rows = await _web.query(
                db,
                "SELECT ar_krum_scores(rec, :f) FROM "
                f"(SELECT rec FROM client_updates WHERE run = :run AND round = :r ORDER BY {order})",
                {"run": run, "r": rnd, "f": f},
            )
        except BadRequest as e:
            errors[rnd] = e.args[0]
            continue
        values = _web.loads(rows[0][0]) or []
        scores[rnd] = {c: v for (c,), v in zip(clients, values)}
    return scores, errors


async def _flower_runs(db, run_id, run, s):
    """The Flower runs that wrote to the run, in order (flower_runs); for a
    database of before that table, the one runs.flower_run_id names."""
    if "flower_runs" in s:
        _, rows = await _web.query(
            db,
            f"SELECT {_select(FLOWER_RUN_COLUMNS, s['flower_runs'])} FROM flower_runs WHERE run = :run ORDER BY segment",
            {"run": run_id},
        )
        out = [dict(zip(FLOWER_RUN_COLUMNS, r)) for r in rows]
    elif run.get("flower_run_id") is not None:
        out = [dict.fromkeys(FLOWER_RUN_COLUMNS) | {"segment": 1, "flower_run_id": run["flower_run_id"]}]
    else:
        out = []
    for f in out:
        f["flower_run_id"] = _flower_id(f["flower_run_id"])
    return out


def database_context(datasette, db):
    """What the runs list's and a run's templates both take of the database."""
    return {"database": db.name, "crumb_database": db.name, "database_url": datasette.urls.database(db.name)}


def _grid(stats_by, clients, rounds):
    return [[stats_by.get((c, r)) for r in rounds] for c in clients]


def _client_heatmap(stats_by, clients, rounds, title, value_label, axis, **scale):
    """A heatmap of one number per (client, round): a row per client (its
    short label, the full id in the label's tooltip: axis), a column per
    round, each cell titled with its value."""
    labels, tips = axis
    return Markup(
        svg.heatmap(
            _grid(stats_by, clients, rounds),
            title=title,
            x_label="round",
            y_label="client",
            value_label=value_label,
            row_labels=[labels[c] for c in clients],
            row_titles=[tips[c] for c in clients],
            row_height=26,
            col_labels=[str(r) for r in rounds],
            cell_titles=[
                [f"client {labels[c]} (node {c}), round {r}: {svg.format_number(stats_by.get((c, r)))}" for r in rounds]
                for c in clients
            ],
            **scale,
        )
    )


@_web.get_only
async def run_page(datasette, request):
    db = _web.database(datasette, request.url_vars["database"])
    s = await checked_schema(datasette, request, db)
    try:
        run_id = int(request.url_vars["run"])
    except ValueError:
        raise NotFound("a run is named by its number (runs.run)") from None
    _, rows = await _web.query(
        db, f"SELECT {_select(RUN_COLUMNS, s['runs'])} FROM runs WHERE run = :run", {"run": run_id}
    )
    if not rows:
        raise NotFound(f"no run {run_id}")
    run = dict(zip(RUN_COLUMNS, rows[0]))
    _, rows = await _web.query(
        db, f"SELECT {_select(ROUND_COLUMNS, s['rounds'])} FROM rounds WHERE run = :run ORDER BY round", {"run": run_id}
    )
    rounds = [dict(zip(ROUND_COLUMNS, r)) for r in rows]
    flower_runs = await _flower_runs(db, run_id, run, s)
    route = tilde_encode(db.route)
    base = f"{_web.PREFIX}/{route}"

    charts = []
    for column, label in (
        ("train_metrics", "train (clients, aggregated)"),
        ("evaluate_metrics", "evaluate (clients, aggregated)"),
        ("metrics", "server side (evaluate_fn)"),
    ):
        for key, points in _metric_series(rounds, column).items():
            charts.append(
                Markup(
                    svg.line_chart(
                        {key: points}, title=f"{key} — {label}", x_label="round", y_label=key, width=380, height=230
                    )
                )
            )

    stats = await update_stats(db, run_id, s["client_updates"]) if "client_updates" in s else []
    clients = sorted({u["client"] for u in stats}, key=lambda c: (len(str(c)), str(c)))
    train_rounds = sorted({u["round"] for u in stats})
    infos = await _web.call(db, lambda conn: _clients.read_infos(conn, clients))
    labels = _clients.short_labels(clients, infos)
    tips = {c: _clients.describe(c, labels[c], infos.get(c)) for c in clients}
    axis = (labels, tips)
    client_rows = [
        {"client": c, "label": labels[c], "info": infos.get(c) if isinstance(infos.get(c), dict) else {}}
        for c in clients
    ]
    heatmaps = []
    if stats:
        norms = {(u["client"], u["round"]): u["update_norm"] for u in stats}
        coss = {(u["client"], u["round"]): u["cosine"] for u in stats}
        heatmaps.append(
            _client_heatmap(norms, clients, train_rounds, "update norm |u − p| per client and round", "L2 norm", axis)
        )
        heatmaps.append(
            _client_heatmap(
                coss,
                clients,
                train_rounds,
                "cosine of each update to the aggregate update",
                "cosine",
                axis,
                diverging=True,
                lo=-1.0,
                hi=1.0,
            )
        )
    f, f_source = _krum_f(run, request)
    scores, score_errors = (
        (await krum_scores(db, run_id, train_rounds, f, s["client_updates"])) if "client_updates" in s else ({}, {})
    )
    if scores:
        by = {(c, r): v for r, d in scores.items() for c, v in d.items()}
        heatmaps.append(
            _client_heatmap(
                by,
                clients,
                train_rounds,
                f"Krum score per client and round (f = {f}; low = central)",
                "Krum score",
                axis,
            )
        )
    bytes_chart = None
    if rounds:
        bytes_chart = Markup(
            svg.bar_chart(
                [r["round"] for r in rounds],
                {"sent": [r["bytes_sent"] for r in rounds], "received": [r["bytes_received"] for r in rounds]},
                title="bytes per round",
                x_label="round",
                y_label="bytes",
            )
        )
    _, models = await _web.query(
        db, "SELECT round, length(rec) FROM global_models WHERE run = :run ORDER BY round", {"run": run_id}
    )
    model_links = []
    for rnd, size in models:
        pk = f"{tilde_encode(str(run_id))},{tilde_encode(str(rnd))}"
        link = {"round": rnd, "bytes": size, "url": datasette.urls.path(f"{base}/global_models/{pk}/rec")}
        if rnd > 0:
            prev = f"global_models/{tilde_encode(str(run_id))},{tilde_encode(str(rnd - 1))}/rec"
            link["compare_url"] = datasette.urls.path(f"{base}/compare?a=global_models/{pk}/rec&b={prev}")
        model_links.append(link)
    errors = []
    if "replies" in s and "error_code" in s["replies"]:
        _, errors = await _web.query(
            db,
            "SELECT round, phase, client, error_code, error_reason FROM replies WHERE run = :run AND error_code IS NOT NULL ORDER BY round, phase, pos",
            {"run": run_id},
        )
    for u in stats:
        u["url"] = u["compare_url"] = None
        if u["pos"] is not None and "replies" in s:
            pk = ",".join(tilde_encode(str(x)) for x in (run_id, u["round"], "train", u["pos"]))
            u["url"] = datasette.urls.path(f"{base}/replies/{pk}/content")
            prev = f"global_models/{tilde_encode(str(run_id))},{tilde_encode(str(u['round'] - 1))}/rec"
            u["compare_url"] = datasette.urls.path(f"{base}/compare?a=replies/{pk}/content&b={prev}")
        u["score"] = scores.get(u["round"], {}).get(u["client"])
        u["label"] = labels.get(u["client"], u["client"])
        u["fmt"] = {
            k: (svg.format_number(u[k]), repr(u[k]) if u[k] is not None else "")
            for k in ("update_norm", "cosine", "score")
        }
    return Response.html(
        await datasette.render_template(
            "arrayrecord_run.html",
            {
                **database_context(datasette, db),
                "runs_url": datasette.urls.path(f"{base}/runs"),
                "run": run,
                "flower_runs": flower_runs,
                "rounds": rounds,
                "charts": charts,
                "heatmaps": heatmaps,
                "bytes_chart": bytes_chart,
                "models": model_links,
                "updates": stats,
                "clients": client_rows,
                "f": f,
                "f_source": f_source,
                "score_errors": sorted(score_errors.items()),
                "errors": errors,
            },
            request=request,
        )
    )
