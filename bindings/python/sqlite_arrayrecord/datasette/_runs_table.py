# SPDX-License-Identifier: Apache-2.0
"""The runs table, /-/arrayrecord/DB/runs: one row per logged run, as
sqlite_arrayrecord.runs(db) reads it (the notebook's rows are this page's):
name, strategy and the settings and run config that differ between runs,
rounds logged of planned, duration, bytes, every final metric as a column
of its own, how the run ended, notes. Sorted by any column (?_sort=COLUMN,
?_sort_desc=COLUMN, Datasette's words), filtered by strategy, by how the run
ended and by any setting or run-config key (?strategy=FedAdam&settings.eta=0.05),
and a GET form of ticked runs leading to the comparison of 2 to 8 of them."""

from urllib.parse import urlencode

from datasette.utils import tilde_encode
from datasette.utils.asgi import BadRequest, Response

from .. import tracking
from . import _runs, _web, svg

METRIC_PREFIXES = tuple(f"{family}/" for family, _ in tracking.FAMILIES)
FILTER_PREFIXES = ("settings.", "config.")
# Columns a header can sort by, besides the metrics (key: the row's key).
SORTABLE = ("run", "name", "strategy", "rounds", "duration", "bytes_sent", "bytes_received", "ended", "started_at")
ENDED = {
    "finished": "finished",
    "running": "running",
    "failed": "failed",
    "interrupted": "interrupted (its process died)",
    "unknown": "unknown",
}


def short_class(strategy):
    """Krum of flwr.serverapp.strategy.krum.Krum."""
    return (strategy or "").rsplit(".", 1)[-1]


value_text = tracking._text  # a setting's value as the page shows and filters it


def ended_text(row):
    """How the run ended, in words: the last Flower run's end, and the
    earlier ones killed (or failed) and resumed."""
    text = ENDED.get(row["ended"], row["ended"] or "")
    if row["ended"] == "failed" and row["error"]:
        text += f": {row['error']}"
    times = lambda n: "" if n == 1 else f" ×{n}"  # noqa: E731
    after = [
        f"{what} and resumed{times(row[key])}" for key, what in (("killed", "killed"), ("failed", "failed")) if row[key]
    ]
    if not after and row["resumed"]:
        after = [f"resumed{times(row['resumed'])}"]
    return " · ".join([text] + after)


def duration_text(seconds):
    if seconds is None:
        return ""
    if seconds < 60:
        return f"{seconds:.3g} s"
    m, s = divmod(int(round(seconds)), 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


def bytes_text(n):
    if n is None:
        return ""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def varying(rows, prefix):
    """The keys under prefix whose values are not the same in every row."""
    keys = [k for k in (rows[0] if rows else {}) if k.startswith(prefix)]
    return [k for k in keys if len({value_text(r.get(k)) for r in rows}) > 1]


def filters(request):
    """[(key, value)] the URL filters by: strategy, ended, settings.*, config.*
    (empty values are no filter)."""
    out = []
    for key in request.args.keys():
        if key in ("strategy", "ended") or key.startswith(FILTER_PREFIXES):
            for value in request.args.getlist(key):
                if value != "":
                    out.append((key, value))
    return out


def matches(row, wanted):
    """A row passes when each filtered key has one of the values asked for."""
    by_key = {}
    for key, value in wanted:
        by_key.setdefault(key, set()).add(value)
    for key, values in by_key.items():
        if key == "strategy":
            if not {row["strategy"] or "", short_class(row["strategy"])} & values:
                return False
        elif value_text(row.get(key)) not in values:
            return False
    return True


def sort_rows(rows, key, desc):
    """Rows by one column, numbers before text, runs without a value last."""

    def order(r):
        v = r.get(key)
        return (0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, 0, value_text(v))

    present = sorted((r for r in rows if r.get(key) is not None), key=order, reverse=desc)
    return present + [r for r in rows if r.get(key) is None]


def _sort(request, sortable):
    desc = request.args.get("_sort_desc")
    key = desc or request.args.get("_sort") or "run"
    if key not in sortable:
        raise BadRequest(
            f"cannot sort by {key!r}: sort by a column of the table (run, name, a metric such as train/loss, ...)"
        )
    return key, bool(desc)


def _query(request, **change):
    """The page's query string with some parameters changed (None: dropped)."""
    pairs = [(k, v) for k in request.args.keys() for v in request.args.getlist(k) if k not in change]
    pairs += [(k, v) for k, v in change.items() if v is not None]
    return "?" + urlencode(pairs) if pairs else "?"


def _columns(request, metric_keys, sort_key, desc):
    """The table's header: (key, label, title, numeric, sort url, arrow)."""
    heads = [
        ("run", "run", "runs.run", True),
        ("name", "name", "", False),
        ("strategy", "strategy", "the wrapped strategy's class", False),
        (None, "settings", "the strategy's settings that differ between runs", False),
        (None, "run config", "the run config's keys that differ between runs", False),
        ("rounds", "rounds", "complete rounds logged (after round 0) of the rounds planned", True),
        ("duration", "duration", "time spent in Flower runs", True),
        ("bytes_sent", "sent", "bytes sent to the clients", True),
        ("bytes_received", "received", "bytes received from the clients", True),
    ]
    heads += [(k, k, f"final {k.split('/', 1)[0]} metric (the last round that has it)", True) for k in metric_keys]
    heads += [("ended", "ended", "how the run ended (its Flower runs)", False), (None, "notes", "", False)]
    out = []
    for key, label, title, numeric in heads:
        col = {"key": key, "label": label, "title": title, "numeric": numeric, "url": None, "arrow": ""}
        if key is not None:
            again = key == sort_key and not desc
            col["url"] = _query(request, _sort=None if again else key, _sort_desc=key if again else None)
            col["arrow"] = ("▼" if desc else "▲") if key == sort_key else ""
        out.append(col)
    return out


def _lines(row, keys, prefix):
    return [f"{k[len(prefix) :]} = {value_text(row.get(k))}" for k in keys if row.get(k) is not None]


def _number_cell(v, text=None):
    return {
        "text": svg.format_number(v) if text is None and v is not None else (text or ""),
        "value": "" if v is None else repr(v),
    }


def _cells(row, metric_keys, varying_settings, varying_config, settings_keys, config_keys):
    every_setting = "\n".join(_lines(row, settings_keys, "settings."))
    every_config = "\n".join(_lines(row, config_keys, "config."))
    cells = {
        "strategy": {"text": short_class(row["strategy"]), "title": row["strategy"] or ""},
        "settings": {"lines": _lines(row, varying_settings, "settings."), "title": every_setting},
        "config": {"lines": _lines(row, varying_config, "config."), "title": every_config},
        "rounds": {
            "text": f"{row['rounds']} / {row['num_rounds']}" if row["num_rounds"] is not None else str(row["rounds"]),
            "value": str(row["rounds"]),
        },
        "duration": {
            "text": duration_text(row["duration"]),
            "value": "" if row["duration"] is None else repr(row["duration"]),
        },
        "bytes_sent": {
            "text": bytes_text(row["bytes_sent"]),
            "value": "" if row["bytes_sent"] is None else str(row["bytes_sent"]),
        },
        "bytes_received": {
            "text": bytes_text(row["bytes_received"]),
            "value": "" if row["bytes_received"] is None else str(row["bytes_received"]),
        },
        "metrics": [dict(_number_cell(row.get(k)), key=k) for k in metric_keys],
        "ended": {"text": ended_text(row), "value": row["ended"] or ""},
    }
    return cells


def _filter_form(rows, wanted):
    """The filter form's selects: strategy, ended, and each setting and
    run-config key whose values differ, with the values the runs have."""
    chosen = {}
    for key, value in wanted:
        chosen.setdefault(key, set()).add(value)
    selects = [
        ("strategy", "strategy", sorted({short_class(r["strategy"]) for r in rows if r["strategy"]})),
        ("ended", "ended", sorted({r["ended"] for r in rows if r["ended"]})),
    ]
    for prefix in FILTER_PREFIXES:
        for key in varying(rows, prefix):
            selects.append((key, key, sorted({value_text(r.get(key)) for r in rows if r.get(key) is not None})))
    return [
        {"name": name, "label": label, "options": [(v, v in chosen.get(name, ())) for v in values]}
        for name, label, values in selects
        if len(values) > 1 or name in chosen or name.startswith(FILTER_PREFIXES)
    ]


@_web.get_only
async def runs_page(datasette, request):
    db = _web.database(datasette, request.url_vars["database"])
    await _runs.checked_schema(datasette, request, db)
    rows = await _web.call(db, tracking.runs)
    keys = list(rows[0]) if rows else []
    metric_keys = [k for k in keys if k.startswith(METRIC_PREFIXES)]
    settings_keys = [k for k in keys if k.startswith("settings.")]
    config_keys = [k for k in keys if k.startswith("config.")]
    sort_key, desc = _sort(request, set(SORTABLE) | set(keys) - {"flower_run_ids"})
    wanted = filters(request)
    shown = sort_rows([r for r in rows if matches(r, wanted)], sort_key, desc)
    varying_settings, varying_config = varying(rows, "settings."), varying(rows, "config.")
    route = tilde_encode(db.route)
    base = f"{_web.PREFIX}/{route}/runs"
    table = []
    for r in shown:
        cells = _cells(r, metric_keys, varying_settings, varying_config, settings_keys, config_keys)
        table.append({"row": r, "url": datasette.urls.path(f"{base}/{r['run']}"), "cells": cells})
    return Response.html(
        await datasette.render_template(
            "arrayrecord_runs.html",
            {
                **_runs.database_context(datasette, db),
                "runs": table,
                "total": len(rows),
                "columns": _columns(request, metric_keys, sort_key, desc),
                "selects": _filter_form(rows, wanted),
                "filtered": bool(wanted),
                "clear_url": datasette.urls.path(base) + _query(request, **{k: None for k, _ in wanted}),
                "sort": (sort_key, desc),
                "compare_url": datasette.urls.path(f"{base}/compare"),
            },
            request=request,
        )
    )
