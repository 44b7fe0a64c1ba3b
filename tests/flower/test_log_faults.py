# SPDX-License-Identifier: Apache-2.0
"""A log under faults (LoggingStrategy over tests/flower/logging_app.py):

- a tampered log: changed bytes in the last global model or in the strategy
  state, a round deleted from the middle, a round without its global model,
  another run's state, a broken digest chain — each refused at resume with
  a message naming the row, nothing written, and check_log (and `python -m
  sqlite_arrayrecord check`) finds the same;
- checking a log: PRAGMA integrity_check in a plain sqlite3 shell fails on
  the schema's CHECK constraints (they call the extension), passes with
  ignore_check_constraints or with the extension loaded;
- two writers: a second ServerApp logging the same run while the first runs
  is refused, naming the first; once the first is killed, it resumes;
- the disk full: the database on a small filesystem (tmpfs mounted here, or
  PRAGMA max_page_count where mounting is not allowed): the ServerApp stops
  with a LogWriteError naming the database and the cause, the log keeps its
  complete rounds, and once space is freed resume=True ends bit for bit as
  an uninterrupted run.
"""

import contextlib
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import logging_app
import numpy as np
from flwr.app import Array, ArrayRecord

import sqlite_arrayrecord as sar
from sqlite_arrayrecord import check_log
from sqlite_arrayrecord.flower import LogWriteError, ResumeError, read_result
from sqlite_arrayrecord.flower._wire import ar_bytes, ar_from_bytes, rd_bytes, rd_from_bytes

HERE = os.path.dirname(os.path.abspath(__file__))
APP = os.path.join(HERE, "logging_app.py")


def _flip(arrays_blob):
    """An ArrayRecord's bytes with one bit of its first array's data flipped
    (a valid record: only a value changed)."""
    rec = ar_from_bytes(arrays_blob)
    key = next(iter(rec))
    x = rec[key].numpy().copy()
    x.view(np.uint8).reshape(-1)[0] ^= 1
    out = ArrayRecord({k: Array(x) if k == key else a for k, a in rec.items()})
    return ar_bytes(out)


def _flip_state(state_blob):
    """The strategy state's bytes with one bit of an array attribute flipped."""
    rd = rd_from_bytes(state_blob)
    key = next(k for k in rd if k.startswith("attr:"))
    rd[key] = ar_from_bytes(_flip(ar_bytes(rd[key])))
    return rd_bytes(rd)


def _tamper_cases():
    """(name, SQL-or-function on the connection, words the refusal holds)."""

    def model(con):
        (blob,) = con.execute("SELECT rec FROM global_models WHERE run = 1 AND round = 3").fetchone()
        con.execute("UPDATE global_models SET rec = ? WHERE run = 1 AND round = 3", (_flip(blob),))

    def state(con):
        (blob,) = con.execute("SELECT state FROM strategy_state WHERE run = 1").fetchone()
        con.execute("UPDATE strategy_state SET state = ? WHERE run = 1", (_flip_state(blob),))

    return [
        ("changed bytes in the last global model", model, "the global_models row of round 3 is not the model logged"),
        ("changed bytes in the strategy state", state, "the strategy_state row is not the state logged with round 3"),
        ("a round row deleted", "DELETE FROM rounds WHERE run = 1 AND round = 1", "round 1 is missing from rounds"),
        (
            "a round without its global model",
            "DELETE FROM global_models WHERE run = 1 AND round = 2",
            "round 2 has no global model (no global_models row)",
        ),
        (
            "the strategy state of another run",
            "UPDATE strategy_state SET state = (SELECT state FROM strategy_state WHERE run = 2) WHERE run = 1",
            "the strategy_state row is not the state logged with round 3",
        ),
        (
            "a digest changed",
            "UPDATE round_digests SET model = substr(model, 2) || '0' WHERE run = 1 AND round = 2",
            "round_digests row of round 2 does not chain from round 1's",
        ),
    ]


def _check_command(db):
    """python -m sqlite_arrayrecord check DB."""
    return subprocess.run(
        [sys.executable, "-m", "sqlite_arrayrecord", "check", db], capture_output=True, text=True, timeout=120
    )


def test_a_tampered_log_is_refused_naming_the_row():
    with tempfile.TemporaryDirectory() as tmp:
        good = os.path.join(tmp, "good.db")
        logging_app.main(good, "a", "FedAdam", 3)
        logging_app.main(good, "b", "FedAdam", 2, run_id=78)  # another run, another state
        assert check_log(good) == [], check_log(good)
        for i, (what, change, words) in enumerate(_tamper_cases()):
            db = os.path.join(tmp, f"t{i}.db")
            shutil.copy(good, db)
            con = sar.connect(db, detect_types=0)
            con.execute("PRAGMA foreign_keys = ON")
            if callable(change):
                change(con)
            else:
                con.execute(change)
            con.commit()
            before = con.execute("SELECT count(*) FROM rounds").fetchone()[0]
            con.close()
            try:
                logging_app.main(db, "a", "FedAdam", 5, resume=True)
                raise AssertionError(f"{what}: resumed")
            except ResumeError as e:
                msg = str(e)
                assert "cannot resume run 'a'" in msg and words in msg, (what, msg)
            found = check_log(db)
            assert any(words in p for p in found), (what, found)
            cli = _check_command(db)
            assert cli.returncode == 1 and cli.stdout.splitlines() == found, (what, cli)
            con = sar.connect(db, detect_types=0)
            assert con.execute("SELECT count(*) FROM rounds").fetchone()[0] == before, what  # nothing written
            assert con.execute("SELECT count(*) FROM flower_runs WHERE run = 1").fetchone()[0] == 1, what
            con.close()
        ok = _check_command(good)
        assert (ok.returncode, ok.stdout) == (0, "ok\n"), ok
        missing = _check_command(os.path.join(tmp, "nothing.db"))
        assert missing.returncode == 1 and "check: no database" in missing.stderr, missing
        usage = subprocess.run([sys.executable, "-m", "sqlite_arrayrecord", "check"], capture_output=True, text=True)
        assert usage.returncode == 2 and "the following arguments are required: DB" in usage.stderr, usage
        # the untouched log resumes, and its digests chain on
        logging_app.main(good, "a", "FedAdam", 5, resume=True, run_id=79)
        assert check_log(good) == []
        (n,) = sar.connect(good).execute("SELECT count(*) FROM round_digests WHERE run = 1").fetchone()
        assert n == 6, n


def test_a_log_checked_without_the_extension():
    """The schema's CHECK constraints call the extension's functions: a plain
    sqlite3 shell's integrity_check stops at them (this is what a user sees),
    with ignore_check_constraints it checks the rest, and with the extension
    loaded everything."""
    shell = shutil.which("sqlite3")
    if shell is None:
        from runner import Skip

        raise Skip("the sqlite3 shell is missing: apt-get install -y sqlite3")
    ext = os.path.abspath(os.environ.get("AR_EXTENSION", "build/arrayrecord"))
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "log.db")
        logging_app.main(db, "a", "FedAvg", 2)

        def run(*sql, load=False):
            args = [shell, "-bail", "-batch"] + (["-cmd", f".load {ext}"] if load else []) + [db, *sql]
            return subprocess.run(args, capture_output=True, text=True, timeout=60)

        bare = run("PRAGMA integrity_check")
        assert bare.returncode != 0 and re.search(r"unknown function: (ar|rd)_check\(\)", bare.stderr), bare
        ignoring = run("PRAGMA ignore_check_constraints = ON", "PRAGMA integrity_check")
        assert ignoring.returncode == 0 and ignoring.stdout.strip() == "ok", ignoring
        loaded = run("PRAGMA integrity_check", load=True)
        assert loaded.returncode == 0 and loaded.stdout.strip() == "ok", loaded


def _wait_for(path, proc, what, timeout=120):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, f"{what}: the ServerApp ended ({proc.returncode})"
        assert time.time() < deadline, f"{what}: never happened"
        time.sleep(0.05)


def test_a_second_writer_of_a_run_is_refused():
    """ServerApp 1 logs run 'w' and waits in round 3; ServerApp 2 asks to
    resume 'w' in the same database: refused, naming the first process (and
    starting 'w' anew is refused as before: the name is taken); ServerApp 1
    killed, ServerApp 2 resumes and ends the run as an uninterrupted one."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "w.db")
        marker = os.path.join(tmp, "blocked")
        env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
        first = subprocess.Popen([sys.executable, APP, db, "w", "FedAdam", "5", "--block", "3", marker], env=env)
        try:
            _wait_for(marker, first, "round 3")
            second = subprocess.run(
                [sys.executable, APP, db, "w", "FedAdam", "5", "--resume", "--run-id", "78"],
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert second.returncode != 0, second
            assert f"is being logged by process {first.pid} on" in second.stderr, second.stderr[-3000:]
            assert "one process logs a run at a time" in second.stderr, second.stderr[-3000:]
            try:
                logging_app.main(db, "w", "FedAdam", 5)
                raise AssertionError("started a run whose name is taken")
            except ResumeError as e:
                assert "run 'w' exists" in str(e), str(e)
        finally:
            first.kill()
            first.wait()
        resumed, _ = logging_app.main(db, "w", "FedAdam", 5, resume=True, run_id=78)
        ref, _ = logging_app.main(os.path.join(tmp, "ref.db"), "w", "FedAdam", 5)
        for k, a in ref.arrays.items():
            assert resumed.arrays[k].numpy().tobytes() == a.numpy().tobytes(), k
        con = sar.connect(db)
        ended = [e for (e,) in con.execute("SELECT ended FROM flower_runs ORDER BY segment")]
        assert ended == ["interrupted", "finished"], ended


@contextlib.contextmanager
def small_filesystem(tmp, megabytes):
    """A folder on a filesystem of `megabytes` MB: a tmpfs mounted for the
    test (root); None where mounting is not allowed."""
    path = os.path.join(tmp, "small")
    os.makedirs(path)
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={megabytes}m", "tmpfs", path], capture_output=True
        ).returncode
        == 0
    )
    try:
        yield path if mounted else None
    finally:
        if mounted:
            subprocess.run(["umount", "-l", path], check=False)


def _big_model():
    rng = np.random.default_rng(9)
    return ArrayRecord(
        {"w": Array(rng.normal(0, 1, (512, 512)).astype(np.float32)), **dict(logging_app.initial_arrays())}
    )


def test_the_disk_full_stops_the_run_and_resume_ends_it():
    # A round of this run writes about 9 MB to the WAL and 5 MB to the file
    # (4 replies and a global model of 1 MB, FedAdam's state of 3 MB).
    with tempfile.TemporaryDirectory() as tmp, small_filesystem(tmp, 96) as small:
        if small is not None:
            db = os.path.join(small, "log.db")
            ballast = os.path.join(small, "ballast")
            with open(ballast, "wb") as f:  # leaves 32 MB: a few rounds, not six
                f.write(b"\0" * (64 << 20))
            how = "a 96 MB tmpfs, 64 MB of it taken"
            limit = None
        else:  # no mount here: SQLite's own ceiling on the file
            db, ballast = os.path.join(tmp, "log.db"), None
            limit = 6000  # pages of 4 KB
            how = f"PRAGMA max_page_count = {limit} (mounting a tmpfs is not allowed here)"
        import sqlite_arrayrecord.flower._database as database

        opened = database.connect

        def limited(path, **kw):  # the logger's connection, with the ceiling
            con = opened(path, **kw)
            if limit is not None:
                con.execute(f"PRAGMA max_page_count = {limit}")
            return con

        database.connect = limited
        try:
            try:
                logging_app.main(db, "full", "FedAdam", 6, initial=_big_model())
                raise AssertionError("the run ended on a full disk")
            except LogWriteError as e:
                msg = str(e)
                assert msg.startswith(f"LoggingStrategy: cannot write run 'full' to {db} (disk full: "), msg
                assert "database or disk is full" in msg and "resume=True" in msg, msg
                assert isinstance(e.__cause__, sqlite3.OperationalError)
            con = sar.connect(db, detect_types=0)
            done = [r for (r,) in con.execute("SELECT round FROM rounds ORDER BY round")]
            assert done and done == list(range(len(done))) and len(done) < 7, done
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            con.close()
            assert check_log(db) == [], check_log(db)
            # space freed: the run resumes and ends as one never stopped
            if ballast:
                os.remove(ballast)
            limit = None
            resumed, _ = logging_app.main(db, "full", "FedAdam", 6, resume=True, initial=_big_model(), run_id=78)
        finally:
            database.connect = opened
        ref, _ = logging_app.main(os.path.join(tmp, "ref.db"), "full", "FedAdam", 6, initial=_big_model())
        for k, a in ref.arrays.items():
            assert resumed.arrays[k].numpy().tobytes() == a.numpy().tobytes(), k
        same = read_result(db, "full")
        assert all(same.arrays[k].numpy().tobytes() == a.numpy().tobytes() for k, a in ref.arrays.items())
        print(f"disk full on {how}: stopped after round {done[-1]} with LogWriteError; resumed to round 6 bit for bit")


def test_a_killed_second_writer_leaves_no_lease():
    """A ServerApp SIGKILLed leaves its segment 'running' with its pid: the
    next one sees the process gone and takes over (the lease is the live
    process, not the row)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "k.db")
        marker = os.path.join(tmp, "blocked")
        env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
        p = subprocess.Popen([sys.executable, APP, db, "k", "FedAvgM", "4", "--block", "2", marker], env=env)
        _wait_for(marker, p, "round 2")
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        con = sar.connect(db)
        assert con.execute("SELECT ended, pid FROM flower_runs").fetchall() == [("running", p.pid)]
        logging_app.main(db, "k", "FedAvgM", 4, resume=True, run_id=78)
        assert [e for (e,) in con.execute("SELECT ended FROM flower_runs ORDER BY segment")] == [
            "interrupted",
            "finished",
        ]
