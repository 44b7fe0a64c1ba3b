# SPDX-License-Identifier: Apache-2.0
"""Checking a log that sqlite_arrayrecord.flower.LoggingStrategy wrote:
check_log, and the digests of what resuming a run relies on (round_digests)
that it and the logger share. Needs neither flwr nor anything but SQLite,
so a log can be checked where Flower is not installed.

Each round, as it commits, gets the SHA-256 of its global model and of the
strategy state written with it (Flower's bytes, as the views present them),
and a chain: SHA-256 of the previous round's chain and its own digests. A
resumption checks that every round up to the last complete one is there with
its global model, that the chain holds, and that the last model and state
are the ones digested; check_log checks every round's model too.
Rounds logged before digests existed have none and are not checked.
"""

import hashlib
import os

from ._extension import connect

__all__ = ["check_log"]


def sha256(blob):
    return hashlib.sha256(blob).hexdigest()


def chain(previous, run, rnd, model, state):
    """The chain digest of a round: SHA-256 of the previous round's chain
    ('' for the first digested round) and this round's digests."""
    return sha256(f"{previous}|{run}|{rnd}|{model}|{state}".encode())


def last_chain(con, run):
    """The chain of the run's last digested round ('' when none)."""
    row = con.execute("SELECT chain FROM round_digests WHERE run = ? ORDER BY round DESC LIMIT 1", (run,)).fetchone()
    return row[0] if row else ""


def problems(con, run, name, done, full=False):
    """What is wrong with run `run` (named `name`) up to its round `done`,
    as messages naming the row: rounds or global models missing, the chain
    of digests broken, the last round's model or the strategy state not the
    ones digested (with full, every round's model). Empty when all is well."""
    where = f"run {name!r}"
    out = []
    rounds = dict(con.execute("SELECT round, finished_at IS NOT NULL FROM rounds WHERE run = ?", (run,)))
    models = {r for (r,) in con.execute("SELECT round FROM global_models WHERE run = ?", (run,))}
    for r in range(done + 1):
        if r not in rounds:
            out.append(f"{where}: round {r} is missing from rounds (rounds 0-{done} are complete)")
        elif not rounds[r]:
            out.append(f"{where}: round {r} in rounds never finished (finished_at is NULL)")
        elif r not in models:
            out.append(f"{where}: round {r} has no global model (no global_models row)")
    digests = con.execute(
        "SELECT round, model, state, chain FROM round_digests WHERE run = ? ORDER BY round", (run,)
    ).fetchall()
    previous, expected = "", None
    for rnd, model, state, link in digests:
        if expected is not None and rnd != expected:
            out.append(f"{where}: round_digests has no row for round {expected} (round {rnd} chains from it)")
        if link != chain(previous, run, rnd, model, state):
            out.append(f"{where}: round_digests row of round {rnd} does not chain from round {rnd - 1}'s")
        previous, expected = link, rnd + 1
    digested = {rnd: (model, state) for rnd, model, state, _ in digests}
    if digests and digests[-1][0] != done:
        out.append(f"{where}: round_digests ends at round {digests[-1][0]}, the log at round {done}")
    checked = [r for r in digested if full or r == done]
    for r in checked:
        row = con.execute("SELECT rec FROM global_models WHERE run = ? AND round = ?", (run, r)).fetchone()
        if row is not None and sha256(row[0]) != digested[r][0]:
            out.append(f"{where}: the global_models row of round {r} is not the model logged (its SHA-256 differs)")
    row = con.execute("SELECT round, state FROM strategy_state WHERE run = ?", (run,)).fetchone()
    if row is None:
        out.append(f"{where}: no strategy_state row (the state written with round {done})")
    elif row[0] != done:
        out.append(f"{where}: the strategy_state row is of round {row[0]}, the last complete round is {done}")
    elif done in digested and sha256(row[1]) != digested[done][1]:
        out.append(f"{where}: the strategy_state row is not the state logged with round {done} (its SHA-256 differs)")
    return out


def check_log(db):
    """Checks a log as a whole: SQLite's integrity_check (the schema's CHECK
    constraints included) and foreign_key_check, then for every logged run
    its rounds, global models and digests, every round's model read. Returns
    the problems found, each a message naming the row; [] for a sound log.
    Opens the database read-only; needs nothing but this package (not
    flwr). `python -m sqlite_arrayrecord check DB` runs it.

        >>> check_log("runs.db")
        []
    """
    con = connect(f"file:{os.path.abspath(os.fspath(db))}?mode=ro", uri=True, detect_types=0)
    try:
        out = [f"integrity_check: {m}" for (m,) in con.execute("PRAGMA integrity_check") if m != "ok"]
        out += [
            f"foreign_key_check: {table} row {rowid} has no {parent} row"
            for table, rowid, parent, _ in con.execute("PRAGMA foreign_key_check")
        ]
        has_digests = con.execute("SELECT 1 FROM sqlite_master WHERE name = 'round_digests'").fetchone()
        for run, name in con.execute("SELECT run, name FROM runs WHERE strategy IS NOT NULL ORDER BY run").fetchall():
            (done,) = con.execute(
                "SELECT max(round) FROM rounds WHERE run = ? AND finished_at IS NOT NULL", (run,)
            ).fetchone()
            if done is not None and has_digests:
                out += problems(con, run, name, done, full=True)
        return out
    finally:
        con.close()
