# SPDX-License-Identifier: Apache-2.0
"""sqlite_arrayrecord.runs(db) and rounds(db, run), the notebook's rows,
over a database of sql/schema.sql written here row by row (the tracking
group checks them on runs LoggingStrategy logged): the final metric is the
last round's that has it, non-numbers left out; how a run ended from its
Flower runs (finished, failed and resumed, killed and resumed, running,
unknown) and its duration (time in Flower runs); every row has every key;
runs by number or name; a path is opened read-only, a connection used as
it is; a database of another writer (no logger columns, no flower_runs)
reads with None; frame=True is a pandas DataFrame of the same rows; the
command line's usage errors exit with 2 and a missing tool is named with
the extra that installs it."""

import os
import sqlite3
import subprocess
import sys
import tempfile

from arlib import ROOT
from runner import Skip

sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
import sqlite_arrayrecord as sar  # noqa: E402

T0 = "2026-01-05T10:00:00.000Z"


def at(seconds):
    """T0 plus some seconds, as the logger writes times."""
    m, s = divmod(seconds, 60)
    return f"2026-01-05T10:{int(m):02d}:{s:06.3f}Z"


def logged(folder):
    """Three runs: 1 finished in one Flower run; 2 failed in round 2, resumed,
    finished; 3 killed after round 1, resumed, still running; plus 4, with
    no Flower runs (a log of before flower_runs) and no finish."""
    path = os.path.join(folder, "runs.db")
    con = sar.connect(path, detect_types=0)
    with open(os.path.join(ROOT, "sql", "schema.sql")) as fh:
        con.executescript(fh.read())
    runs = [
        (1, "fedavg", '{"lr": 0.1}', "flwr.serverapp.strategy.fedavg.FedAvg", '{"fraction_train": 1.0}', 3, at(40)),
        (
            2,
            "fedadam",
            '{"lr": 0.1}',
            "flwr.serverapp.strategy.fedadam.FedAdam",
            '{"eta": 0.05, "fraction_train": 0.5}',
            3,
            at(95),
        ),
        (
            3,
            "dp",
            '{"lr": 0.2}',
            "flwr.serverapp.strategy.x.DP",
            '{"strategy": {"class": "a.FedAvg", "settings": {"fraction_train": 1.0}}, "clip": 2}',
            3,
            None,
        ),
        (4, "old", "{}", None, None, None, None),
    ]
    for run, name, config, strategy, settings, n, finished in runs:
        con.execute(
            "INSERT INTO runs(run, name, started_at, config, notes, strategy, settings, num_rounds, finished_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (run, name, T0, config, f"note {run}", strategy, settings, n, finished),
        )
    rounds = {
        1: [
            (0, '{"loss": 2.5}', None, None, None, None),
            (1, '{"loss": 1.5}', '{"train_loss": 1.25, "tag": "x"}', '{"acc": 0.5}', 100, 50),
            (2, '{"loss": 1.0}', '{"train_loss": 0.75, "flag": true}', "{}", 100, 50),
            (3, "{}", '{"train_loss": 0.5}', '{"acc": 0.75, "list": [1, 2]}', 100, 60),
        ],
        2: [
            (0, "{}", None, None, None, None),
            (1, '{"loss": 1.0}', None, None, 10, 5),
            (2, '{"loss": 0.5}', None, None, 10, 5),
            (3, '{"loss": 0.25}', None, None, 10, 5),
        ],
        3: [
            (0, "{}", None, None, None, None),
            (1, '{"loss": 3.0}', None, None, 7, None),
            (2, '{"loss": 2.0}', None, None, 7, None),
        ],
        4: [(0, "{}", None, None, None, None), (1, '{"loss": 9.0}', None, None, None, None)],
    }
    for run, rows in rounds.items():
        for rnd, metrics, train, evaluate, sent, received in rows:
            con.execute(
                "INSERT INTO rounds(run, round, started_at, finished_at, metrics, train_metrics, evaluate_metrics, "
                "bytes_sent, bytes_received, timings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run, rnd, at(10 * rnd), at(10 * rnd + 4), metrics, train, evaluate, sent, received, '{"round": 4.0}'),
            )
    segments = [
        (1, 1, 11, 0, 3, T0, at(40), "finished", None),
        (2, 1, -5, 0, 1, T0, at(15), "failed", "RuntimeError: lost"),
        (2, 2, 12, 2, 3, at(60), at(95), "finished", None),
        (3, 1, 13, 0, 1, T0, None, "interrupted", None),
        (3, 2, 14, 2, 2, at(50), None, "running", None),
    ]
    con.executemany(
        "INSERT INTO flower_runs(run, segment, flower_run_id, first_round, last_round, started_at, finished_at, "
        "ended, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        segments,
    )
    con.commit()
    con.close()
    return path


def test_runs_rows():
    with tempfile.TemporaryDirectory() as tmp:
        rows = sar.runs(logged(tmp))
    assert [r["run"] for r in rows] == [1, 2, 3, 4]
    keys = list(rows[0])
    assert all(list(r) == keys for r in rows), "every row has every key, in one order"
    assert keys[:3] == ["run", "name", "strategy"] and keys.index("notes") < keys.index("config.lr")
    one, two, three, four = rows
    # final metrics: the last round holding each; non-numbers left out
    assert (one["train/train_loss"], one["evaluate/acc"], one["server/loss"]) == (0.5, 0.75, 1.0)
    assert "train/tag" not in one and "train/flag" not in one and "evaluate/list" not in one
    assert one["rounds"] == 3 and one["num_rounds"] == 3 and one["bytes_sent"] == 300 and one["bytes_received"] == 160
    assert (one["ended"], one["resumed"], one["killed"], one["failed"]) == ("finished", 0, 0, 0)
    assert one["duration"] == 40.0 and one["flower_run_ids"] == [11] and one["notes"] == "note 1"
    assert one["config.lr"] == 0.1 and one["settings.fraction_train"] == 1.0 and one["settings.eta"] is None
    # failed in round 2, resumed by a second Flower run, finished; ids unsigned as Flower prints them
    assert (two["ended"], two["resumed"], two["killed"], two["failed"]) == ("finished", 1, 0, 1)
    assert two["duration"] == 15.0 + 35.0 and two["flower_run_ids"] == [2**64 - 5, 12]
    assert two["server/loss"] == 0.25 and two["train/train_loss"] is None
    # killed (its process died), resumed, running: each segment until its last round's end
    assert (three["ended"], three["resumed"], three["killed"], three["failed"]) == ("running", 1, 1, 0)
    assert three["duration"] == (14 - 0) + (24 - 50), "a running segment counts to its last round's end"
    assert three["settings.strategy"] == "a.FedAvg" and three["settings.strategy.fraction_train"] == 1.0
    assert three["settings.clip"] == 2 and three["bytes_received"] is None
    # no Flower runs, no finish: unknown, timed to its last round's end
    assert (four["ended"], four["resumed"], four["duration"], four["strategy"]) == ("unknown", 0, 14.0, None)


def test_rounds_rows_by_number_and_name():
    with tempfile.TemporaryDirectory() as tmp:
        path = logged(tmp)
        rows = sar.rounds(path, 1)
        assert rows == sar.rounds(path, "fedavg")
        assert [r["round"] for r in rows] == [0, 1, 2, 3]
        assert all(list(r) == list(rows[0]) for r in rows)
        assert rows[0]["train/train_loss"] is None and rows[1]["train/train_loss"] == 1.25
        assert rows[2]["server/loss"] == 1.0 and rows[3]["server/loss"] is None
        assert rows[1]["duration"] == 4.0 and rows[1]["time/round"] == 4.0 and rows[1]["bytes_received"] == 50
        for bad, kind in ((99, ValueError), ("nope", ValueError), (1.5, TypeError), (True, TypeError)):
            try:
                sar.rounds(path, bad)
            except kind as e:
                assert "rounds:" in str(e), e
            else:
                raise AssertionError(f"rounds(db, {bad!r}) did not raise")


def test_read_only_and_connections():
    with tempfile.TemporaryDirectory() as tmp:
        path = logged(tmp)
        before = open(path, "rb").read()
        sar.runs(path)
        sar.rounds(path, 2)
        assert open(path, "rb").read() == before
        con = sqlite3.connect(path)
        assert sar.runs(con) == sar.runs(path)
        con.execute("SELECT 1")  # still open: the caller's to close
        con.close()
        try:
            sar.runs(os.path.join(tmp, "missing.db"))
        except FileNotFoundError as e:
            assert "missing.db" in str(e)
        else:
            raise AssertionError("a missing file")
        assert not os.path.exists(os.path.join(tmp, "missing.db"))


def test_another_writers_database():
    """runs(run, name) and rounds(run, round, metrics) only: the rest None."""
    con = sqlite3.connect(":memory:")
    con.executescript(
        "CREATE TABLE runs(run INTEGER PRIMARY KEY, name TEXT); CREATE TABLE rounds(run, round, metrics TEXT);"
        "INSERT INTO runs VALUES (1, 'plain'); INSERT INTO rounds VALUES (1, 1, '{\"loss\": 0.5}');"
    )
    (row,) = sar.runs(con)
    assert (
        row["name"] == "plain" and row["server/loss"] == 0.5 and row["ended"] == "unknown" and row["duration"] is None
    )
    assert sar.rounds(con, "plain")[0]["server/loss"] == 0.5
    try:
        sar.runs(sqlite3.connect(":memory:"))
    except ValueError as e:
        assert "no runs table" in str(e)
    else:
        raise AssertionError("no runs table")


def test_frame():
    try:
        import pandas
    except ImportError:
        raise Skip("pandas missing: apt-get install -y python3-pandas") from None
    with tempfile.TemporaryDirectory() as tmp:
        path = logged(tmp)
        frame = sar.runs(path, frame=True)
        assert isinstance(frame, pandas.DataFrame) and list(frame.columns) == list(sar.runs(path)[0])
        assert frame["server/loss"].tolist()[:2] == [1.0, 0.25] and list(frame["name"]) == [
            "fedavg",
            "fedadam",
            "dp",
            "old",
        ]
        rounds = sar.rounds(path, "fedavg", frame=True)
        assert rounds["train/train_loss"].tolist()[1:] == [1.25, 0.75, 0.5]


def cli(*args):
    out = subprocess.run(
        [sys.executable, "-m", "sqlite_arrayrecord", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python")),
        timeout=120,
    )
    return out.returncode, out.stdout, out.stderr


def test_command_line_usage():
    assert cli()[0] == 2 and "usage:" in cli()[2]
    status, out, err = cli("export", "tensorboard", "x.db")
    assert status == 2 and "--logdir" in err and out == ""
    status, out, err = cli("export", "excel", "x.db")
    assert status == 2 and "invalid choice" in err
    status, out, err = cli("--help")
    assert status == 0 and "export" in out
    # a tool this Python lacks is named with the extra that installs it
    for tool, args in (
        ("mlflow", ("export", "mlflow", "x.db")),
        ("tensorboard", ("export", "tensorboard", "x.db", "--logdir", "t")),
    ):
        try:
            __import__(tool)
            continue
        except ImportError:
            pass
        status, out, err = cli(*args)
        assert status == 1 and f"{tool} is not installed" in err and f"sqlite-arrayrecord[{tool}]" in err, err
