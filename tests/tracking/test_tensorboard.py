# SPDX-License-Identifier: Apache-2.0
"""`python -m sqlite_arrayrecord export tensorboard DB --logdir DIR`, read
back by TensorBoard's own event reader and by a real `tensorboard --logdir`
over HTTP on 127.0.0.1 (its data API): one run per logged run in
DIR/<run name>; every scalar (key, step, value to the bit) the database's,
one point per step after exporting twice; a histogram per layer of each
round's global model equal to np.histogram of the layer's values, and one
of the clients' update norms per round equal to np.histogram of
client_update_stats' norms; the settings as text."""

import glob
import json
import os
import tempfile
import time
import urllib.parse

import expected
import numpy as np
from trackenv import TensorBoard, fetch, fetch_json, logged_db, run_cli, sql

import sqlite_arrayrecord as sar


def read_events(folder):
    """{tag: [(step, value)]} of every event file of a run folder, read by
    TensorBoard's event reader: scalars as floats, histograms as (k, 3)
    arrays, text as str."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    out = {}
    for path in sorted(glob.glob(os.path.join(folder, "*tfevents*"))):
        for event in EventFileLoader(path).Load():
            for v in event.summary.value:
                arr = tensor_util.make_ndarray(v.tensor)
                plugin = v.metadata.plugin_data.plugin_name
                value = arr.item() if plugin == "scalars" else arr if plugin == "histograms" else arr.item().decode()
                out.setdefault(v.tag, []).append((event.step, value))
    return out


def layer_histograms(run):
    """{model/KEY: [(round, (k, 3) array)]} from the global models' arrays, with NumPy."""
    out = {}
    con = sql()
    for rnd, rec in con.execute("SELECT round, rec FROM global_models WHERE run = ? ORDER BY round", (run,)):
        for key, arr in sar.from_record(rec).items():
            x = arr.astype(np.float64).ravel()
            counts, edges = np.histogram(x[np.isfinite(x)], bins=30)
            out.setdefault(f"model/{key}", []).append((rnd, np.stack([edges[:-1], edges[1:], counts], axis=1)))
    return out


def norm_histograms(run):
    con = sql()
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "sql", "views.sql")) as fh:
        con.executescript(fh.read().replace("CREATE VIEW IF NOT EXISTS ", "CREATE TEMP VIEW IF NOT EXISTS "))
    by = {}
    for rnd, norm in con.execute(
        "SELECT round, update_norm FROM client_update_stats WHERE run = ? ORDER BY round", (run,)
    ):
        by.setdefault(rnd, []).append(norm)
    return [(rnd, np.histogram(v, bins=min(30, len(v)))) for rnd, v in sorted(by.items())]


def check_folder(folder, want):
    got = read_events(folder)
    scalars = {k: v for k, v in got.items() if k.split("/")[0] in ("train", "evaluate", "server", "time", "bytes")}
    assert sorted(scalars) == sorted(want["points"]), (sorted(scalars), sorted(want["points"]))
    for k, points in want["points"].items():
        assert scalars[k] == [(step, value) for step, value, _ in points], (k, scalars[k], points)
    hists = layer_histograms(want["run"])
    for k, points in hists.items():
        assert [s for s, _ in got[k]] == [s for s, _ in points], k
        for (_, a), (_, b) in zip(got[k], points):
            assert a.shape == b.shape and np.allclose(a[:, :2], b[:, :2], rtol=1e-12) and (a[:, 2] == b[:, 2]).all(), k
    norms = norm_histograms(want["run"])
    assert [s for s, _ in got["clients/update_norm"]] == [s for s, _ in norms]
    for (_, a), (_, (counts, edges)) in zip(got["clients/update_norm"], norms):
        assert (a[:, 2] == counts).all() and np.allclose(a[:, 0], edges[:-1], rtol=1e-9), (a, counts, edges)
    (settings,) = got["settings"]
    assert settings[0] == 0 and f"`{want['params']['strategy']}`" in settings[1], settings
    return got


def test_tensorboard_round_trip():
    from sqlite_arrayrecord.export import to_tensorboard

    runs = expected.runs()
    with tempfile.TemporaryDirectory() as tmp:
        logdir = os.path.join(tmp, "tb")
        db = logged_db()
        status, out, err = run_cli("export", "tensorboard", db, "--logdir", logdir)
        assert status == 0 and out.count("scalar points") == len(runs), (out, err)
        folders = {r["name"]: os.path.join(logdir, r["name"].replace("/", "_")) for r in runs}
        assert sorted(os.listdir(logdir)) == sorted(os.path.basename(f) for f in folders.values())
        # again: the run's file is written anew, one point a step
        done = to_tensorboard(db, logdir)
        for r in runs:
            files = glob.glob(os.path.join(folders[r["name"]], "*tfevents*"))
            assert files == [d["path"] for d in done if d["name"] == r["name"]], files
            check_folder(folders[r["name"]], r)
        # TensorBoard's HTTP data API, over the same folder
        with TensorBoard(logdir, tmp) as tb:
            served = fetch_json(tb.url + "/data/runs")
            for _ in range(100):  # its first load of the folder, read every second
                if sorted(served) == sorted(folders):
                    break
                time.sleep(0.2)
                served = fetch_json(tb.url + "/data/runs")
            assert sorted(served) == sorted(os.path.basename(f) for f in folders.values()), served
            for r in runs:
                name = os.path.basename(folders[r["name"]])
                tags = fetch_json(tb.url + "/data/plugin/scalars/tags")[name]
                assert sorted(tags) == sorted(r["points"]), (sorted(tags), sorted(r["points"]))
                for k, points in r["points"].items():
                    q = urllib.parse.urlencode({"run": name, "tag": k})
                    rows = fetch_json(tb.url + "/data/plugin/scalars/scalars?" + q)
                    assert [(step, value) for _, step, value in rows] == [(s, v) for s, v, _ in points], (k, rows)
                    assert [round(t * 1000) for t, _, _ in rows] == [t for _, _, t in points], k
                hist_tags = fetch_json(tb.url + "/data/plugin/histograms/tags")[name]
                assert "clients/update_norm" in hist_tags and all(k in hist_tags for k in layer_histograms(r["run"]))
                key = next(iter(layer_histograms(r["run"])))
                q = urllib.parse.urlencode({"run": name, "tag": key})
                rows = fetch_json(tb.url + "/data/plugin/histograms/histograms?" + q)
                want = layer_histograms(r["run"])[key]
                assert [step for _, step, _ in rows] == [s for s, _ in want]
                for (_, _, buckets), (_, arr) in zip(rows, want):
                    assert np.allclose(np.array(buckets), arr, rtol=1e-12), (buckets, arr)
                q = urllib.parse.urlencode({"run": name, "tag": "settings"})
                status, body = fetch(tb.url + "/data/plugin/text/text?" + q)
                assert status == 200 and "num_rounds" in json.loads(body)[0]["text"], body[:300]
