# SPDX-License-Identifier: Apache-2.0
"""`python -m sqlite_arrayrecord export mlflow` against a real `mlflow
server` with a SQLite backend store on 127.0.0.1, read back through
MlflowClient: one MLflow run per logged run, named as it, every parameter
and every metric point (key, step, value to the bit, timestamp) the
database's and none twice, the tags and the status; exporting again adds
nothing; a run that grew (a resumed run's new rounds) gets only its new
points; a value that differs from MLflow's is an error, not a second point.
Usage errors exit with 2, a missing database or run with 1."""

import os
import shutil
import tempfile

import expected
from trackenv import MlflowServer, logged_db, run_cli

import sqlite_arrayrecord as sar

PREFIX = "sqlite_arrayrecord."


def read_back(client):
    """{run name: (run, {key: [(step, value, timestamp)]})} of every active MLflow run."""
    out = {}
    for exp in client.search_experiments():
        for r in client.search_runs([exp.experiment_id]):
            history = {
                k: sorted((m.step, m.value, m.timestamp) for m in client.get_metric_history(r.info.run_id, k))
                for k in r.data.metrics
            }
            assert r.info.run_name not in out, f"two MLflow runs named {r.info.run_name!r}"
            out[r.info.run_name] = (r, history)
    return out


def check(client, db, runs):
    got = read_back(client)
    assert sorted(got) == sorted(r["name"] for r in runs), sorted(got)
    for want in runs:
        r, history = got[want["name"]]
        assert r.data.params == want["params"], (want["name"], r.data.params, want["params"])
        assert sorted(history) == sorted(want["points"]), (sorted(history), sorted(want["points"]))
        for k, points in want["points"].items():
            assert history[k] == points, (want["name"], k, history[k], points)  # exact values, one a step
        tags = r.data.tags
        assert tags[PREFIX + "database"] == os.path.abspath(db)
        assert tags[PREFIX + "run_id"] == str(want["run"]) and tags[PREFIX + "run_name"] == want["name"]
        assert tags[PREFIX + "strategy"] == want["strategy"]
        assert tags[PREFIX + "flower_run_ids"] == ",".join(str(i) for i in want["flower_run_ids"])
        assert r.info.status == "FINISHED" and r.info.start_time == expected.millis(want["started_at"])
        assert r.info.end_time == expected.millis(want["finished_at"])
    return got


def test_mlflow_round_trip():
    from mlflow.tracking import MlflowClient

    from sqlite_arrayrecord.export import to_mlflow

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "runs.db")
        shutil.copy(logged_db(), db)
        full = os.path.join(tmp, "full.db")
        shutil.copy(db, full)
        # the first export sees run 1 one round short (a run not finished yet)
        con = sar.connect(db, detect_types=0)  # deleting a round of a packed log runs its triggers
        con.execute("PRAGMA foreign_keys = ON")
        con.execute("DELETE FROM rounds WHERE run = 1 AND round = 4")
        con.commit()
        con.close()
        with MlflowServer(tmp) as server:
            client = MlflowClient(tracking_uri=server.uri)
            status, out, err = run_cli("export", "mlflow", db, "--tracking-uri", server.uri)
            assert status == 0, (out, err)
            assert out.count("(new;") == len(expected.runs()), out
            short = expected.runs()
            for r in short:
                if r["run"] == 1:
                    r["points"] = {k: [p for p in v if p[0] != 4] for k, v in r["points"].items()}
                    r["points"] = {k: v for k, v in r["points"].items() if v}
            got = check(client, db, short)
            ids = {name: r.info.run_id for name, (r, _) in got.items()}
            # the run grew: the same database file now holds round 4
            shutil.copy(full, db)
            done = to_mlflow(db, tracking_uri=server.uri)
            assert not any(d["created"] for d in done), done
            sent = {d["name"]: d["metrics"] for d in done}
            round4 = sum(1 for v in expected.runs()[0]["points"].values() for p in v if p[0] == 4)
            assert sent == {r["name"]: round4 if r["run"] == 1 else 0 for r in expected.runs()}, sent
            got = check(client, db, expected.runs())
            assert {name: r.info.run_id for name, (r, _) in got.items()} == ids
            # again: nothing new, nothing twice
            status, out, err = run_cli("export", "mlflow", db, "--tracking-uri", server.uri, "--run", "krum-conv")
            assert status == 0 and "(updated; 0 parameters, 0 metric points sent)" in out, (out, err)
            check(client, db, expected.runs())
            # a value MLflow has that the database now says otherwise: an error, no second point
            con = sar.connect(db, detect_types=0)
            con.execute("UPDATE rounds SET bytes_sent = bytes_sent + 1 WHERE run = 1 AND round = 2")
            con.commit()
            con.close()
            status, out, err = run_cli("export", "mlflow", db, "--tracking-uri", server.uri, "--run", "krum-conv")
            assert status == 1 and "MLflow has bytes/sent" in err and "at step 2" in err, (status, out, err)
            shutil.copy(full, db)
            check(client, db, expected.runs())
            # an experiment of its own: other MLflow runs (the key is found in any experiment: none made)
            done = to_mlflow(db, tracking_uri=server.uri, experiment="flower")
            assert not any(d["created"] for d in done)


def test_cli_usage_and_errors():
    db = logged_db()
    status, out, err = run_cli("export")
    assert status == 2 and "usage:" in err and out == "", (status, err)
    status, out, err = run_cli("export", "mlflow")
    assert status == 2 and "DB" in err, err
    status, out, err = run_cli("export", "mlflow", db, "--bogus")
    assert status == 2 and "--bogus" in err, err
    status, out, err = run_cli("export", "tensorboard", db)
    assert status == 2 and "--logdir" in err, err
    status, out, err = run_cli("nope")
    assert status == 2 and "invalid choice" in err, err
    with tempfile.TemporaryDirectory() as tmp:
        status, out, err = run_cli("export", "tensorboard", os.path.join(tmp, "none.db"), "--logdir", tmp)
        assert status == 1 and "no database" in err and out == "", err
        status, out, err = run_cli("export", "tensorboard", db, "--logdir", tmp, "--run", "nope")
        assert status == 1 and "no run named 'nope'" in err and "krum-conv" in err, err
        assert os.listdir(tmp) == [], os.listdir(tmp)
