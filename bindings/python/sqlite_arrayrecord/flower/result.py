# SPDX-License-Identifier: Apache-2.0
"""A logged run's Result, read back from its database."""

import os

from flwr.serverapp.strategy import Result

from .._extension import connect
from ._wire import ar_from_bytes, rd_from_bytes


def read_result(db, run_name):
    """The flwr Result of the run `run_name` logged in the database at `db`
    (its complete rounds): what start() returned, equal value for value.
    ValueError when the database has no such run."""
    con = connect(os.fspath(db), detect_types=0)
    try:
        row = con.execute("SELECT run FROM runs WHERE name = ?", (run_name,)).fetchone()
        if row is None:
            raise ValueError(f"read_result: no run {run_name!r} in {os.fspath(db)}")
        return result_of(con, row[0])
    finally:
        con.close()


def result_of(con, run):
    """The Result of the logged run `run` (runs.run) on the connection."""
    result = Result()
    rows = con.execute(
        "SELECT r.round, r.result, r.aggregated, g.rec FROM rounds r JOIN global_models g USING (run, round) "
        "WHERE r.run = ? AND r.finished_at IS NOT NULL ORDER BY r.round",
        (run,),
    ).fetchall()
    for rnd, blob, aggregated, rec in rows:
        rd = rd_from_bytes(blob)
        if aggregated:
            result.arrays = ar_from_bytes(rec)
        for name, target in (
            ("train", result.train_metrics_clientapp),
            ("evaluate", result.evaluate_metrics_clientapp),
            ("server", result.evaluate_metrics_serverapp),
        ):
            if name in rd:
                target[rnd] = rd[name]
    return result
