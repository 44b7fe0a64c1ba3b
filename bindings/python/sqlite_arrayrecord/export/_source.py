# SPDX-License-Identifier: Apache-2.0
"""What the exporters write, read from a logged database: the runs to
export, and for each its parameters, tags, scalars per round (step =
round), the histograms of its global models' layers and of its clients'
update norms. The keys are the same for every tool: train/NAME,
evaluate/NAME, server/NAME (the metrics), bytes/sent, bytes/received,
time/STEP (the logger's timings); each part of a name is made of
letters, digits and _ - . : and spaces (MLflow's rule; any other
character becomes _)."""

import datetime
import hashlib
import json
import math
import os
import re

import numpy as np

from .. import _extension, tracking

PREFIX = "sqlite_arrayrecord."  # our tags
HISTOGRAM_BINS = 30


def connect(db):
    """The database read-only, the extension loaded (the histograms read
    records); FileNotFoundError when there is no such file."""
    path = os.path.abspath(os.fspath(db))
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no database {path!r}")
    uri = "file:" + path.replace("%", "%25").replace("?", "%3f").replace("#", "%23") + "?mode=ro"
    return _extension.connect(uri, uri=True, detect_types=0), path


def select(con, name):
    """The runs to export (tracking.runs rows): every run, or the one
    named; ValueError when the database has none of that name."""
    rows = tracking.runs(con)
    if name is None:
        return rows
    chosen = [r for r in rows if r["name"] == name]
    if not chosen:
        raise ValueError(f"no run named {name!r} in the database (its runs: {', '.join(r['name'] for r in rows)})")
    return chosen


def key_part(text):
    text = re.sub(r"[^\w.\- :]", "_", str(text))
    return text if text.strip(".") else text.replace(".", "_") or "_"


def key(family, name):
    """family/name with each part of name cleaned (see the module's header)."""
    return "/".join([family] + [key_part(p) for p in str(name).split("/")])


def millis(text):
    """A logged UTC time as milliseconds since the epoch (None: None)."""
    t = tracking._time(text)
    return None if t is None else int(round(t.timestamp() * 1000))


value_text = tracking._text  # as the runs table shows it


def params(run):
    """{key: text}: the strategy's class, the planned rounds, the run config
    (config.KEY) and the strategy's settings (settings.NAME), as the runs
    table shows them (strings as they are, anything else as JSON)."""
    out = {"strategy": run["strategy"] or "", "num_rounds": value_text(run["num_rounds"])}
    for k, v in run.items():
        if k.startswith(("config.", "settings.")) and v is not None:
            out[".".join(key_part(p) for p in k.split("."))] = value_text(v)
    return out


def run_key(path, run):
    """A digest naming the logged run in another tool: the database's path,
    the run's number and its start (a new database at the same path is
    another run)."""
    text = f"{path}\n{run['run']}\n{run['started_at']}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def tags(path, run):
    return {
        PREFIX + "key": run_key(path, run),
        PREFIX + "database": path,
        PREFIX + "run_id": str(run["run"]),
        PREFIX + "run_name": run["name"],
        PREFIX + "strategy": run["strategy"] or "",
        PREFIX + "flower_run_ids": ",".join(str(i) for i in run["flower_run_ids"]),
        PREFIX + "ended": run["ended"] or "",
    }


def scalars(con, run):
    """[(key, step, value, wall time in ms)] of a run, per round in order."""
    out = []
    start = millis(run["started_at"]) or 0
    for r in tracking.rounds(con, run["run"]):
        when = millis(r["finished_at"]) or start
        for k, v in r.items():
            if v is None:
                continue
            if k.startswith(tuple(f"{f}/" for f, _ in tracking.FAMILIES) + ("time/",)):
                family, name = k.split("/", 1)
                out.append((key(family, name), r["round"], v, when))
            elif k in ("bytes_sent", "bytes_received"):
                out.append((key("bytes", k[6:]), r["round"], v, when))
    return out


def layer_histograms(con, run):
    """[(round, wall time in ms, key, histogram)] of every layer of every
    round's global model (ar_inspect: np.histogram's edges and counts of
    the finite values), histogram a dict: buckets [(left, right, count)],
    min, max, num, sum, sum_squares."""
    out = []
    rows = con.execute(
        "SELECT g.round, r.finished_at, i.key, i.numel, i.min, i.max, i.mean, i.l2, i.histogram "
        "FROM global_models AS g LEFT JOIN rounds AS r ON r.run = g.run AND r.round = g.round, "
        "ar_inspect(g.rec, ?, 1, 'arrayrecord') AS i WHERE g.run = ? ORDER BY g.round, i.position",
        (HISTOGRAM_BINS, run["run"]),
    )
    for rnd, finished, k, numel, lo, hi, mean, l2, hist in rows:
        h = json.loads(hist) if hist else None
        if not h:
            continue
        edges = np.linspace(h["lo"], h["hi"], len(h["counts"]) + 1)
        buckets = [(float(a), float(b), float(c)) for a, b, c in zip(edges[:-1], edges[1:], h["counts"])]
        stats = {"min": lo, "max": hi, "num": numel, "sum": mean * numel, "sum_squares": l2 * l2}
        out.append((rnd, millis(finished), key("model", k), {"buckets": buckets, **stats}))
    return out


def norm_histograms(con, run):
    """[(round, wall time in ms, histogram)] of the clients' update norms
    |u - p| of each round (np.histogram over the round's clients)."""
    by_round = {}
    for u in tracking._update_stats(con, run["run"], cosines=False):
        if u["update_norm"] is not None and math.isfinite(u["update_norm"]):
            by_round.setdefault(u["round"], []).append(u["update_norm"])
    ends = {r["round"]: millis(r["finished_at"]) for r in tracking.rounds(con, run["run"])}
    out = []
    for rnd, norms in sorted(by_round.items()):
        counts, edges = np.histogram(norms, bins=min(HISTOGRAM_BINS, max(len(norms), 1)))
        buckets = [(float(a), float(b), float(c)) for a, b, c in zip(edges[:-1], edges[1:], counts)]
        stats = {
            "min": min(norms),
            "max": max(norms),
            "num": len(norms),
            "sum": math.fsum(norms),
            "sum_squares": math.fsum(n * n for n in norms),
        }
        out.append((rnd, ends.get(rnd), {"buckets": buckets, **stats}))
    return out


def settings_text(run):
    """The run's strategy, settings and run config as a Markdown table."""
    rows = [("strategy", run["strategy"] or ""), ("num_rounds", value_text(run["num_rounds"]))]
    rows += [(k, value_text(v)) for k, v in run.items() if k.startswith(("settings.", "config.")) and v is not None]
    cell = lambda t: str(t).replace("|", "\\|").replace("\n", " ")  # noqa: E731
    return "| key | value |\n|---|---|\n" + "\n".join(f"| {cell(k)} | `{cell(v)}` |" for k, v in rows)


def now_millis():
    return int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)
