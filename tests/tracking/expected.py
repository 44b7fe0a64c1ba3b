# SPDX-License-Identifier: Apache-2.0
"""What an export must hold, read from the logged database here with plain
SQL and json.loads (a helper, not a test module), independently of the
exporters' code: per run its parameters and, per key, the (step, value,
wall time in ms) of every round, keys and names as docs/experiment-tracking.md
gives them."""

import datetime
import json
import re

from trackenv import sql

FAMILIES = (("train", "train_metrics"), ("evaluate", "evaluate_metrics"), ("server", "metrics"))


def clean(name):
    """MLflow's characters: any other becomes _, part by part of a / path."""
    return "/".join(re.sub(r"[^\w.\- :]", "_", p) for p in name.split("/"))


def millis(text):
    t = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
    return int(round(t.timestamp() * 1000))


def text(v):
    return v if isinstance(v, str) else json.dumps(v)


def runs():
    """[{run, name, started_at, finished_at, strategy, params, points, flower_run_ids}]"""
    con = sql()
    out = []
    for run, name, started, finished, strategy, settings, config, num_rounds in con.execute(
        "SELECT run, name, started_at, finished_at, strategy, settings, config, num_rounds FROM runs ORDER BY run"
    ):
        params = {"strategy": strategy, "num_rounds": text(num_rounds)}
        params.update({f"config.{k}": text(v) for k, v in json.loads(config).items()})
        params.update({f"settings.{k}": text(v) for k, v in json.loads(settings).items() if v is not None})
        points = {}
        for rnd, done, *cols in con.execute(
            "SELECT round, finished_at, train_metrics, evaluate_metrics, metrics, bytes_sent, bytes_received, timings "
            "FROM rounds WHERE run = ? ORDER BY round",
            (run,),
        ):
            named = dict(zip(("train", "evaluate", "server"), cols[:3]))
            named["time"] = cols[5]
            for family, js in named.items():
                for k, v in (json.loads(js) if js else {}).items():
                    if isinstance(v, (int, float)) and not isinstance(v, bool):
                        points.setdefault(f"{family}/{clean(k)}", []).append((rnd, float(v), millis(done)))
            for k, v in (("bytes/sent", cols[3]), ("bytes/received", cols[4])):
                if v is not None:
                    points.setdefault(k, []).append((rnd, float(v), millis(done)))
        segments = con.execute("SELECT flower_run_id FROM flower_runs WHERE run = ? ORDER BY segment", (run,))
        ids = [i + 2**64 if i < 0 else i for (i,) in segments]  # Flower's unsigned ids
        out.append(
            {
                "run": run,
                "name": name,
                "started_at": started,
                "finished_at": finished,
                "strategy": strategy,
                "params": params,
                "points": points,
                "flower_run_ids": ids,
            }
        )
    con.close()
    return out
