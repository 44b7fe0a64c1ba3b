# SPDX-License-Identifier: Apache-2.0
"""A logged run's identity (its runs row and name) and the Flower runs
that wrote to it (flower_runs: one segment per `flwr run`)."""

import json
import re

from ._database import now
from ._wire import int64


def default_name(con, strategy_class, flower_run_id):
    """A name no run of the database has: the strategy's class and Flower's
    run id ("FedAdam-8231440012"), or the UTC time without a Context
    ("FedAdam-20261129T101500Z"), "-2", "-3", ... appended while taken."""
    short = strategy_class.rsplit(".", 1)[-1]
    stamp = re.sub(r"[-:]|\.\d+", "", now())  # 20261129T101500Z
    stem = f"{short}-{flower_run_id if flower_run_id is not None else stamp}"
    name, n = stem, 1
    while con.execute("SELECT 1 FROM runs WHERE name = ?", (name,)).fetchone():
        n += 1
        name = f"{stem}-{n}"
    return name


def create_run(con, name, context, notes, strategy_class, settings, num_rounds, options):
    """Inserts the runs row of a new run; its id."""
    run_config = dict(context.run_config) if context is not None else {}
    return con.execute(
        "INSERT INTO runs(name, config, notes, flower_run_id, strategy, settings, num_rounds, options) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            name,
            json.dumps(run_config),
            notes,
            int64(context.run_id) if context is not None else None,
            strategy_class,
            settings,
            num_rounds,
            json.dumps(options),
        ),
    ).lastrowid


def begin_segment(con, run, context):
    """A flower_runs row for the Flower run now writing to `run` (the next
    segment); earlier segments that never ended ('running': their process
    died; 'unknown': back-filled, unfinished) become 'interrupted'. Its
    segment number."""
    con.execute(
        "UPDATE flower_runs SET ended = 'interrupted' WHERE run = ? AND ended IN ('running', 'unknown')", (run,)
    )
    (segment,) = con.execute("SELECT coalesce(max(segment), 0) + 1 FROM flower_runs WHERE run = ?", (run,)).fetchone()
    con.execute(
        "INSERT INTO flower_runs(run, segment, flower_run_id, started_at) VALUES (?, ?, ?, ?)",
        (run, segment, int64(context.run_id) if context is not None else None, now()),
    )
    return segment


def end_segment(con, run, segment, error=None):
    """Marks the segment 'finished', or 'failed' with the exception `error`."""
    con.execute(
        "UPDATE flower_runs SET finished_at = ?, ended = ?, error = ? WHERE run = ? AND segment = ?",
        (
            now(),
            "finished" if error is None else "failed",
            None if error is None else f"{type(error).__name__}: {error}",
            run,
            segment,
        ),
    )
