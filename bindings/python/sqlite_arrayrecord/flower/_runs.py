# SPDX-License-Identifier: Apache-2.0
"""A logged run's identity (its runs row and name) and the Flower runs
that wrote to it (flower_runs: one segment per `flwr run`)."""

import json
import os
import re
import socket

from ._database import now
from ._wire import int64
from .errors import ResumeError


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


# (database, run, segment) of the segments this process is writing now: a
# 'running' segment of this very process is live only if it is among them.
_ACTIVE = set()


def this_process():
    """(host, pid, start) of this process: its lease on a run. start tells
    a process from a later one given the same pid (Linux: the boot's id and
    the process's start time in clock ticks; elsewhere None)."""
    start = None
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        with open(f"/proc/{os.getpid()}/stat") as f:
            start = f"{boot}:{f.read().rsplit(')', 1)[1].split()[19]}"
    except (OSError, IndexError):
        pass
    return socket.gethostname(), os.getpid(), start


def _alive(key, host, pid, start):
    """Is the process that took the lease `key` (database, run, segment)
    still logging? A lease of another host is not (a WAL database is only
    ever written from one host: the file was copied here); one of this
    process is while its LoggingStrategy runs."""
    me_host, me_pid, _ = this_process()
    if host != me_host or pid is None:
        return False
    if pid == me_pid:
        return key in _ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, another user's
    if start is None:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return start.endswith(":" + f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError):
        return False


def check_lease(con, run, name, db_path):
    """ResumeError when a live process is logging the run `run` (a
    'running' segment whose process lives)."""
    for segment, host, pid, start, flower_run, started in con.execute(
        "SELECT segment, host, pid, process_start, flower_run_id, started_at FROM flower_runs "
        "WHERE run = ? AND ended = 'running'",
        (run,),
    ).fetchall():
        if _alive((os.path.realpath(db_path), run, segment), host, pid, start):
            raise ResumeError(
                f"LoggingStrategy: run {name!r} in {db_path} is being logged by process {pid} on {host} "
                f"(Flower run {flower_run}, since {started}): one process logs a run at a time; stop it, "
                "or log this one under another run_name"
            )


def begin_segment(con, run, context, db_path):
    """A flower_runs row for the Flower run now writing to `run` (the next
    segment), holding this process's lease until release(); earlier segments
    that never ended ('running': their process died; 'unknown': back-filled,
    unfinished) become 'interrupted'. In the caller's write transaction,
    after check_lease. Its segment number."""
    con.execute(
        "UPDATE flower_runs SET ended = 'interrupted' WHERE run = ? AND ended IN ('running', 'unknown')", (run,)
    )
    (segment,) = con.execute("SELECT coalesce(max(segment), 0) + 1 FROM flower_runs WHERE run = ?", (run,)).fetchone()
    host, pid, start = this_process()
    con.execute(
        "INSERT INTO flower_runs(run, segment, flower_run_id, started_at, host, pid, process_start) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (run, segment, int64(context.run_id) if context is not None else None, now(), host, pid, start),
    )
    _ACTIVE.add((os.path.realpath(db_path), run, segment))
    return segment


def release(db_path, run, segment):
    """This process no longer writes the segment (whatever the table says)."""
    _ACTIVE.discard((os.path.realpath(db_path), run, segment))


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
