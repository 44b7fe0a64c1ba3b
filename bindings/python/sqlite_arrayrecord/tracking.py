# SPDX-License-Identifier: Apache-2.0
"""The logged runs of an experiment-tracking database (sql/schema.sql, as
LoggingStrategy writes it) as tidy rows, for a notebook, the Datasette runs
pages and the exporters alike:

    >>> import sqlite_arrayrecord as sar
    >>> for r in sar.runs("runs.db"):                       # doctest: +SKIP
    ...     print(r["name"], r["ended"], r["evaluate/eval_loss"])
    >>> sar.rounds("runs.db", "cifar-fedadam", frame=True)  # doctest: +SKIP

runs(db) gives one row per run: its name, strategy and settings, run
config, rounds logged of planned, duration, bytes sent and received, how it
ended (from flower_runs) and its final metrics; rounds(db, run) one row per
round of a run: every metric, the bytes and the timings. Every row of a
result has the same keys (None where a run or round has no value), in a
stable order, so a list of them is a table (frame=True: a pandas
DataFrame). Only the documented tables are read (runs, rounds, flower_runs),
through plain SQL: the extension is not needed, and a database of another
writer (fewer columns, no flower_runs) reads with None where it has nothing.
"""

import datetime
import json
import math
import os
import sqlite3

__all__ = ["runs", "rounds"]

# The metric families and the rounds column each is read from: the clients'
# train and evaluate metrics as the strategy aggregated them, and the
# server-side ones (evaluate_fn). A metric is keyed "<family>/<name>".
FAMILIES = (("train", "train_metrics"), ("evaluate", "evaluate_metrics"), ("server", "metrics"))
_RUN_COLUMNS = ("run", "name", "started_at", "config", "notes", "strategy", "settings", "num_rounds", "finished_at")
_ROUND_COLUMNS = (
    "round",
    "started_at",
    "finished_at",
    "metrics",
    "train_metrics",
    "evaluate_metrics",
    "replies",
    "errors",
    "bytes_sent",
    "bytes_received",
    "timings",
)
_SEGMENT_COLUMNS = (
    "segment",
    "flower_run_id",
    "first_round",
    "last_round",
    "started_at",
    "finished_at",
    "ended",
    "error",
)


def runs(db, *, frame=False):
    """One row per logged run, in the order of runs.run: a list of dicts
    (frame=True: a pandas DataFrame). ``db`` is a path (opened read-only)
    or an open sqlite3 connection. Keys, in order:

    run, name, strategy (module.Class), num_rounds (planned), rounds
    (complete rounds logged after round 0), started_at, finished_at,
    duration (seconds in Flower runs), ended (the last Flower run's end:
    finished, running, failed, interrupted, unknown), resumed (Flower runs
    after the first), killed and failed (how many earlier Flower runs died
    or raised before one resumed the run), flower_run_ids, error (of a failed last Flower run), bytes_sent,
    bytes_received (totals), notes, then config.KEY (the run config),
    settings.NAME (the strategy's settings; a wrapped strategy's as
    settings.strategy.NAME) and the final metrics train/NAME,
    evaluate/NAME, server/NAME (each metric's value in the last round that
    has it)."""
    with _open(db) as con:
        rows = _run_rows(con)
    return _frame(rows) if frame else rows


def rounds(db, run, *, frame=False):
    """One row per logged round of a run (round 0 included: the initial
    model, and evaluate_fn's metrics of it), in order: a list of dicts
    (frame=True: a pandas DataFrame). ``run`` is the run's number
    (runs.run) or its name. Keys, in order: run, round, started_at,
    finished_at, duration (seconds), replies, errors, bytes_sent,
    bytes_received, train/NAME, evaluate/NAME, server/NAME (the round's
    metrics), time/STEP (the logger's timings, seconds). ValueError when
    the database has no such run."""
    with _open(db) as con:
        run_id = _run_id(con, run)
        rows = _round_rows(con, run_id)
    return _frame(rows) if frame else rows


class _open:
    """A connection to db: the caller's own (left open), or a path opened
    read-only (closed on exit)."""

    def __init__(self, db):
        self.db, self.con, self.owned = db, None, False

    def __enter__(self):
        if isinstance(self.db, sqlite3.Connection):
            self.con = self.db
        else:
            path = os.fspath(self.db)
            if not os.path.exists(path):
                raise FileNotFoundError(f"no database {path!r}")
            uri = "file:" + _uri_path(os.path.abspath(path)) + "?mode=ro"
            self.con, self.owned = sqlite3.connect(uri, uri=True), True
        return self.con

    def __exit__(self, *exc):
        if self.owned:
            self.con.close()


def _uri_path(path):
    """A path for a file: URI (%, ? and # escaped)."""
    return path.replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def _columns(con, table):
    return [r[1] for r in con.execute("SELECT * FROM pragma_table_info(?)", (table,))]


def _select(con, table, wanted):
    """SELECT of the wanted columns of a table, NULL for those it lacks."""
    have = set(_columns(con, table))
    return ", ".join(f'"{c}"' if c in have else "NULL" for c in wanted)


def _loads(text):
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _text(v):
    """A setting's value as the runs pages and the exporters write it: a
    string as it is, anything else as JSON (0.05, true, [1, 2]), "" for none."""
    if v is None:
        return ""
    return v if isinstance(v, str) else json.dumps(v)


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _time(text):
    """A logged UTC time (2026-11-29T10:15:00.123Z) as a datetime, or None."""
    if not text:
        return None
    try:
        return datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _seconds(start, end):
    a, b = _time(start), _time(end)
    return (b - a).total_seconds() if a and b else None


def _flower_id(n):
    """Flower's unsigned 64-bit id of a stored (signed) one, as Flower prints it."""
    return None if n is None else n + (1 << 64) if n < 0 else n


def _flatten(value, prefix):
    """{prefix.key: value} of a JSON object, nested objects joined by dots
    (a wrapped strategy: {"strategy": {"class": ..., "settings": {...}}}
    becomes prefix.strategy and prefix.strategy.NAME)."""
    out = {}
    if not isinstance(value, dict):
        return out
    for k, v in value.items():
        key = f"{prefix}.{k}"
        if isinstance(v, dict) and set(v) == {"class", "settings"} and isinstance(v["settings"], dict):
            out[key] = v["class"]
            out.update(_flatten(v["settings"], key))
        elif isinstance(v, dict):
            out.update(_flatten(v, key))
        else:
            out[key] = v
    return out


def _tables(con):
    return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}


def _run_id(con, run):
    """runs.run of a run given by number or name; ValueError when none."""
    if isinstance(run, bool) or not isinstance(run, (int, str)):
        raise TypeError(f"rounds: run must be a run's number (runs.run) or name, not {type(run).__name__}")
    col = "run" if isinstance(run, int) else "name"
    row = con.execute(f"SELECT run FROM runs WHERE {col} = ?", (run,)).fetchone()
    if row is None:
        raise ValueError(f"rounds: the database has no run {run!r}")
    return row[0]


def _segments(con, tables):
    """{run: [segment dicts in order]} from flower_runs (empty without it)."""
    if "flower_runs" not in tables:
        return {}
    out = {}
    sql = f"SELECT run, {_select(con, 'flower_runs', _SEGMENT_COLUMNS)} FROM flower_runs ORDER BY run, segment"
    for run, *values in con.execute(sql):
        out.setdefault(run, []).append(dict(zip(_SEGMENT_COLUMNS, values)))
    return out


def _ending(run, segments, rnds):
    """(ended, resumed, killed, failed, error, duration) of a run from its
    Flower runs; without any, from runs.finished_at. The duration is the
    time spent in Flower runs: each from its start to its end, or to the
    end of its last round when it never ended (killed)."""
    round_end = {r["round"]: r["finished_at"] for r in rnds}
    if not segments:
        ended = "finished" if run["finished_at"] else "unknown"
        end = run["finished_at"] or (rnds[-1]["finished_at"] if rnds else None)
        return ended, 0, 0, 0, None, _seconds(run["started_at"], end)
    last = segments[-1]
    duration = 0.0
    for s in segments:
        end = s["finished_at"] or round_end.get(s["last_round"]) or s["started_at"]
        duration += _seconds(s["started_at"], end) or 0.0
    killed = sum(1 for s in segments[:-1] if s["ended"] in ("interrupted", "running", "unknown"))
    failed = sum(1 for s in segments[:-1] if s["ended"] == "failed")
    error = last["error"] if last["ended"] == "failed" else None
    return last["ended"], len(segments) - 1, killed, failed, error, duration


def _union_keys(rows, order):
    keys = []
    seen = set()
    for r in rows:
        for k in r:
            if k not in seen:
                seen.add(k)
                keys.append(k)
    fixed = [k for k in order if k in seen]
    rest = [k for k in keys if k not in order]
    prefixes = ("config.", "settings.") + tuple(f"{f}/" for f, _ in FAMILIES) + ("time/",)
    rest.sort(key=lambda k: next((i for i, p in enumerate(prefixes) if k.startswith(p)), len(prefixes)))
    return fixed + rest


def _tidy(rows, order):
    """Every row with every key (None where absent), in one order."""
    keys = _union_keys(rows, order)
    return [{k: r.get(k) for k in keys} for r in rows]


_RUN_ORDER = (
    "run",
    "name",
    "strategy",
    "num_rounds",
    "rounds",
    "started_at",
    "finished_at",
    "duration",
    "ended",
    "resumed",
    "killed",
    "failed",
    "flower_run_ids",
    "error",
    "bytes_sent",
    "bytes_received",
    "notes",
)


def _run_rows(con):
    tables = _tables(con)
    if "runs" not in tables:
        raise ValueError("runs: the database has no runs table (sql/schema.sql)")
    segments = _segments(con, tables)
    per_run = {}
    if "rounds" in tables:
        sql = f"SELECT run, {_select(con, 'rounds', _ROUND_COLUMNS)} FROM rounds ORDER BY run, round"
        for run, *values in con.execute(sql):
            per_run.setdefault(run, []).append(dict(zip(_ROUND_COLUMNS, values)))
    rows = []
    for values in con.execute(f"SELECT {_select(con, 'runs', _RUN_COLUMNS)} FROM runs ORDER BY run"):
        run = dict(zip(_RUN_COLUMNS, values))
        rnds = per_run.get(run["run"], [])
        segs = segments.get(run["run"], [])
        ended, resumed, killed, failed, error, duration = _ending(run, segs, rnds)
        row = {
            "run": run["run"],
            "name": run["name"],
            "strategy": run["strategy"],
            "num_rounds": run["num_rounds"],
            "rounds": sum(1 for r in rnds if r["round"] > 0),
            "started_at": run["started_at"],
            "finished_at": run["finished_at"],
            "duration": duration,
            "ended": ended,
            "resumed": resumed,
            "killed": killed,
            "failed": failed,
            "flower_run_ids": [_flower_id(s["flower_run_id"]) for s in segs if s["flower_run_id"] is not None],
            "error": error,
            "bytes_sent": _total(rnds, "bytes_sent"),
            "bytes_received": _total(rnds, "bytes_received"),
            "notes": run["notes"],
        }
        row.update(_flatten(_loads(run["config"]), "config"))
        row.update(_flatten(_loads(run["settings"]), "settings"))
        for family, column in FAMILIES:
            for r in rnds:  # in round order: the last round holding a metric wins
                for k, v in _metric_items(r[column]):
                    row[f"{family}/{k}"] = v
        rows.append(row)
    return _tidy(rows, _RUN_ORDER)


def _total(rnds, column):
    values = [r[column] for r in rnds if r[column] is not None]
    return sum(values) if values else None


def _metric_items(text):
    """(name, number) of a metrics JSON object; other values left out."""
    values = _loads(text)
    if not isinstance(values, dict):
        return []
    return [(k, v) for k, v in values.items() if _number(v)]


_ROUND_ORDER = (
    "run",
    "round",
    "started_at",
    "finished_at",
    "duration",
    "replies",
    "errors",
    "bytes_sent",
    "bytes_received",
)


def _round_rows(con, run_id):
    if "rounds" not in _tables(con):
        return []
    sql = f"SELECT {_select(con, 'rounds', _ROUND_COLUMNS)} FROM rounds WHERE run = ? ORDER BY round"
    rows = []
    for values in con.execute(sql, (run_id,)):
        r = dict(zip(_ROUND_COLUMNS, values))
        row = {"run": run_id, "round": r["round"], "started_at": r["started_at"], "finished_at": r["finished_at"]}
        row["duration"] = _seconds(r["started_at"], r["finished_at"])
        for k in ("replies", "errors", "bytes_sent", "bytes_received"):
            row[k] = r[k]
        for family, column in FAMILIES:
            for k, v in _metric_items(r[column]):
                row[f"{family}/{k}"] = v
        for k, v in _metric_items(r["timings"]):
            row[f"time/{k}"] = v
        rows.append(row)
    return _tidy(rows, _ROUND_ORDER)


def _update_stats(con, run, cosines=True):
    """Per train reply of a run (client_updates), in round and arrival
    order: round, pos, client, num_examples, update_norm |u - p| and
    (cosines=True) cosine, cos(u - p, g - p) computed as (|u - p|^2 +
    |g - p|^2 - |u - g|^2) / (2 |u - p| |g - p|), with p the previous
    round's global model and g the round's. One ar_compare pass per reply
    and round for the norms, one more per reply for the cosines
    (client_update_stats of sql/views.sql makes five per reply). Needs the
    extension."""
    has_pos = "pos" in _columns(con, "client_updates")
    pos, order = ("u.pos", "u.pos") if has_pos else ("NULL", "u.rowid")  # an older client_updates table
    gp2 = {}
    if cosines:
        gp2 = dict(
            con.execute(
                "SELECT g.round, (SELECT sum(c.norm_diff * c.norm_diff) FROM ar_compare(g.rec, p.rec) AS c) "
                "FROM global_models AS g JOIN global_models AS p ON p.run = g.run AND p.round = g.round - 1 "
                "WHERE g.run = ?",
                (run,),
            )
        )
    ug = "(SELECT sum(c.norm_diff * c.norm_diff) FROM ar_compare(u.rec, g.rec) AS c)" if cosines else "NULL"
    rows = con.execute(
        f"SELECT u.round, {pos}, u.client, u.num_examples, "
        "(SELECT sum(c.norm_diff * c.norm_diff) FROM ar_compare(u.rec, p.rec) AS c), "
        f"{ug} FROM client_updates AS u JOIN global_models AS p ON p.run = u.run AND p.round = u.round - 1 "
        "LEFT JOIN global_models AS g ON g.run = u.run AND g.round = u.round "
        f"WHERE u.run = ? ORDER BY u.round, {order}",
        (run,),
    )
    out = []
    for rnd, p, client, n, up2, ug2 in rows:
        norm = math.sqrt(up2) if up2 is not None else None
        g2 = gp2.get(rnd)
        cos = None
        if up2 and g2 and ug2 is not None:
            cos = (up2 + g2 - ug2) / (2 * math.sqrt(up2) * math.sqrt(g2))
        out.append({"round": rnd, "pos": p, "client": client, "num_examples": n, "update_norm": norm, "cosine": cos})
    return out


def _frame(rows):
    try:
        import pandas
    except ImportError:
        raise ImportError("frame=True needs pandas: pip install pandas (or apt-get install python3-pandas)") from None
    return pandas.DataFrame(rows)
