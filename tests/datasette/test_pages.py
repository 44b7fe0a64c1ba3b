# SPDX-License-Identifier: Apache-2.0
"""The run pages, the compare page, permissions and the absence of writes.

Runs: both logged runs listed; the run page's numbers (update norms,
cosines to the aggregate update, Krum scores, bytes) equal SQL's
(client_update_stats of sql/views.sql, ar_krum_scores, the rounds table);
the poisoned client stands out in every round; f comes from the Krum run's
settings, else the page's parameter. Compare: every per-layer number equals
ar_compare's. Every plugin route answers 403 for a table the metadata
forbids, and no route accepts a write."""

import json
import math
import os
import re

from dsenv import close, data_cells, datasette, get, num, request, rows_with, sql, svgs
from fixture import HOSTILE, KRUM_F, POISONED, ROOT, STRAGGLER


def test_runs_list_and_database_link():
    page = get("/-/arrayrecord/fixture/runs").text
    assert 'href="/-/arrayrecord/fixture/runs/1"' in page and 'href="/-/arrayrecord/fixture/runs/2"' in page
    assert "krum-conv" in page and "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    # the database page links to it (database_actions), and so does the plugin's index
    assert 'href="/-/arrayrecord/fixture/runs"' in get("/fixture").text
    assert 'href="/-/arrayrecord/fixture/runs"' in get("/-/arrayrecord").text


def test_run_page_numbers_equal_sql():
    r = get("/-/arrayrecord/fixture/runs/1")
    assert r.status_code == 200
    page = r.text
    con = sql()
    con.executescript(open(sql_views()).read())
    expected = {
        (rnd, client): (norm, cos)
        for rnd, client, norm, cos in con.execute(
            "SELECT round, client, update_norm, cosine_to_global_update FROM client_update_stats WHERE run = 1"
        )
    }
    shown = {}
    for m in re.finditer(r'<tr data-round="(\d+)" data-client="([^"]+)">(.*?)</tr>', page, re.S):
        cells = dict(re.findall(r'data-col="([^"]+)" data-value="([^"]*)"', m.group(3)))
        shown[(int(m.group(1)), m.group(2))] = cells
    assert set(shown) == set(expected) and len(shown) == 4 * 5 - 2  # the straggler's two error rounds
    for key, (norm, cos) in expected.items():
        assert close(num(shown[key]["update_norm"]), norm), (key, shown[key], norm)
        assert close(num(shown[key]["cosine"]), cos, 1e-9), (key, shown[key], cos)
    # Krum scores: ar_krum_scores over each round's updates in arrival order, f from the settings
    assert f"f = {KRUM_F} from num_malicious_nodes of the run" in page
    for rnd in range(1, 5):
        clients = [
            c
            for (c,) in con.execute(
                "SELECT client FROM client_updates WHERE run = 1 AND round = ? ORDER BY pos", (rnd,)
            )
        ]
        (scores,) = con.execute(
            "SELECT ar_krum_scores(rec, ?) FROM (SELECT rec FROM client_updates WHERE run = 1 AND round = ? ORDER BY pos)",
            (KRUM_F, rnd),
        ).fetchone()
        for c, s in zip(clients, json.loads(scores)):
            assert close(num(shown[(rnd, c)]["score"]), s), (rnd, c)
        # the poisoned client: the largest update, pulling the other way, the worst Krum score
        by = {c: shown[(rnd, c)] for c in clients}
        p = str(POISONED)
        assert num(by[p]["update_norm"]) == max(num(v["update_norm"]) for v in by.values())
        assert num(by[p]["cosine"]) < 0 < min(num(v["cosine"]) for c, v in by.items() if c != p)
        assert num(by[p]["score"]) == max(num(v["score"]) for v in by.values())
        assert (str(STRAGGLER) in clients) == (rnd not in (2, 3))
    # bytes per round
    rounds = rows_with(page, "data-round")
    for rnd, sent, received in con.execute("SELECT round, bytes_sent, bytes_received FROM rounds WHERE run = 1"):
        assert num(rounds[str(rnd)]["bytes_sent"]) == sent and num(rounds[str(rnd)]["bytes_received"]) == received
    # charts: metrics, three heatmaps, bytes; all well-formed and drawn
    charts = svgs(page)
    titles = [c.find("{http://www.w3.org/2000/svg}title").text for c in charts]
    assert "update norm |u − p| per client and round" in titles
    assert any(t.startswith("Krum score per client and round (f = 1") for t in titles)
    assert any(t.startswith("train_loss") for t in titles) and any(t.startswith("server_loss") for t in titles)
    assert all(len(list(c.iter())) > 10 for c in charts)
    # every round's global model record page is linked (and answers once ar_inspect can read it)
    links = re.findall(r'href="(/-/arrayrecord/fixture/global_models/1,\d+/rec)"', page)
    assert sorted(set(links)) == [f"/-/arrayrecord/fixture/global_models/1,{r}/rec" for r in range(5)]
    # error replies listed
    assert "node 104: timed out in round 2" in page


def sql_views():
    return os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "sql", "views.sql"
    )


def test_run_page_f_parameter():
    page = get("/-/arrayrecord/fixture/runs/2").text
    assert "the default (f = 1" in page and "<script>alert" not in page and "<img src=x" not in page
    page = get("/-/arrayrecord/fixture/runs/2?f=2").text
    assert "f = 2 from the page" in page
    # f too large for the round: the error text, no 500
    r = get("/-/arrayrecord/fixture/runs/1?f=5")
    assert r.status_code == 200 and "ar_krum_scores: f = 5" in r.text, r.text[-2000:]
    assert get("/-/arrayrecord/fixture/runs/1?f=-1").status_code == 400
    assert get("/-/arrayrecord/fixture/runs/1?f=x").status_code == 400
    assert get("/-/arrayrecord/fixture/runs/99").status_code == 404
    assert get("/-/arrayrecord/fixture/runs/abc").status_code == 404


def test_compare_numbers_equal_ar_compare():
    url = "/-/arrayrecord/fixture/compare?a=global_models/1,2/rec&b=global_models/1,1/rec"
    r = get(url)
    assert r.status_code == 200, r.text[-2000:]
    shown = rows_with(r.text, "data-key")
    con = sql()
    rows = con.execute(
        "SELECT c.key, c.norm_diff, c.cosine, c.rel_change, c.max_abs_diff, c.mean_diff, c.norm_a, c.norm_b, c.changed "
        "FROM ar_compare((SELECT rec FROM global_models WHERE run = 1 AND round = 2), "
        "(SELECT rec FROM global_models WHERE run = 1 AND round = 1)) AS c"
    ).fetchall()
    assert [r[0] for r in rows] == list(shown)
    names = ("norm_diff", "cosine", "rel_change", "max_abs_diff", "mean_diff", "norm_a", "norm_b", "changed")
    for key, *values in rows:
        for name, v in zip(names, values):
            assert num(shown[key][name]) == v, (key, name, shown[key][name], v)
    total = math.sqrt(sum(r[1] ** 2 for r in rows))
    totals = data_cells(r.text)[0]  # the first table: the whole records
    assert close(num(totals["norm_diff"]), total)
    assert len(svgs(r.text)) == 2
    # a reply (RecordDict) against the global model it started from, and a .npy against a .npy
    r = get("/-/arrayrecord/fixture/compare?a=replies/1,2,train,0/content&b=global_models/1,1/rec")
    assert r.status_code == 200
    (up,) = con.execute(
        "SELECT sum(c.norm_diff * c.norm_diff) FROM ar_compare((SELECT rd_array_record(content) FROM replies "
        "WHERE run = 1 AND round = 2 AND phase = 'train' AND pos = 0), (SELECT rec FROM global_models WHERE run = 1 AND round = 1)) AS c"
    ).fetchone()
    assert close(num(data_cells(r.text)[0]["norm_diff"]), math.sqrt(up))
    assert get("/-/arrayrecord/fixture/compare?a=npy_cells/1/arr&b=npy_cells/8/arr").status_code == 200
    # bad references: 400 with the reason, never 500
    for q, status in (
        ("a=records/1/rec", 400),
        ("a=records/1/rec&b=nope", 400),
        ("a=records/1/rec&b=records/5/rec", 400),
        ("a=records/1/rec&b=records/99/rec", 404),
        ("a=records/1/rec&b=records/1/nope", 404),
        ("a=records/1/rec&b=blobs/1/data", 400),
        ("a=records/1/rec&b=npy_cells/9/arr", 400),
        ("a=records/1/rec&b=blobs/10/data", 404),
    ):
        r = get("/-/arrayrecord/fixture/compare?" + q)
        assert r.status_code == status, (q, r.status_code, r.text[-1500:])
    r = get("/-/arrayrecord/fixture/compare?a=records/1/rec&b=records/5/rec")
    assert "record blob truncated at byte 607 (item 1, key &#39;conv1.bias&#39;)" in r.text


SECRET_ROUTES = (
    "/-/arrayrecord/fixture/secret/1/rec",
    "/-/arrayrecord/fixture/secret/1/rec/array?pos=0",
    "/-/arrayrecord/fixture/secret/1/rec/array.npy?pos=0",
    "/-/arrayrecord/fixture/secret/1/rec.npz",
    "/-/arrayrecord/fixture/secret/1/rec.safetensors",
    "/-/arrayrecord/fixture/compare?a=secret/1/rec&b=records/1/rec",
    "/-/arrayrecord/fixture/compare?a=records/1/rec&b=secret/1/rec",
)
ROUTES = (
    "/-/arrayrecord",
    "/-/arrayrecord/fixture/runs",
    "/-/arrayrecord/fixture/runs/1",
    "/-/arrayrecord/fixture/runs/compare?runs=1,3",
    "/-/arrayrecord/fixture/compare?a=records/1/rec&b=records/4/rec",
    "/-/arrayrecord/fixture/records/1/rec",
    "/-/arrayrecord/fixture/records/1/rec/array?pos=0",
    "/-/arrayrecord/fixture/records/1/rec/array.npy?pos=0",
    "/-/arrayrecord/fixture/records/1/rec.npz",
    "/-/arrayrecord/fixture/records/1/rec.safetensors",
)


def test_forbidden_table_is_403_on_every_route():
    assert get("/fixture/secret").status_code == 403  # Datasette's own
    for url in SECRET_ROUTES:
        r = get(url)
        assert r.status_code == 403, (url, r.status_code)
    # a cell of the forbidden table read through SQL is still shown (Datasette's rule for queries)
    # the run pages need every logged-run table
    ds = datasette({"databases": {"fixture": {"tables": {"replies": {"allow": False}}}}})
    for url in (
        "/-/arrayrecord/fixture/runs",
        "/-/arrayrecord/fixture/runs/1",
        "/-/arrayrecord/fixture/runs/compare?runs=1,3",
    ):
        assert get(url, ds=ds).status_code == 403, url
    # a forbidden database: every route of it
    ds = datasette({"databases": {"fixture": {"allow": False}}})
    for url in ROUTES[1:]:
        assert get(url, ds=ds).status_code == 403, url
    assert "fixture" not in get("/-/arrayrecord", ds=ds).text.split("<h1>", 1)[1]
    # the whole instance
    ds = datasette({"allow": False})
    for url in ROUTES:
        assert get(url, ds=ds).status_code == 403, url


def test_no_route_writes():
    con = sql()
    before = con.execute("SELECT count(*), sum(length(rec)) FROM records").fetchone()
    for url in ROUTES + SECRET_ROUTES:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            r = request(method, url, content=b"x")
            assert r.status_code in (403, 405), (method, url, r.status_code)
    assert con.execute("SELECT count(*), sum(length(rec)) FROM records").fetchone() == before
    assert request("POST", "/-/arrayrecord/fixture/records/1/rec").status_code == 405


def test_hostile_run_and_compare_pages_are_text():
    for url in (
        "/-/arrayrecord/fixture/runs",
        "/-/arrayrecord/fixture/runs/2",
        "/-/arrayrecord/fixture/compare?a=keyed/tilde~7Ekey/rec&b=records/2/rec",
    ):
        page = get(url).text
        assert "<img src=x" not in page and "<script>alert" not in page, url
    assert HOSTILE


def test_run_page_of_another_writer():
    """A database of the earlier schema (client_updates a table, runs and
    rounds with their first columns only) still gets its run page."""
    import tempfile

    import numpy as np
    from datasette.app import Datasette
    from dsenv import _LOOP

    import sqlite_arrayrecord as sar

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "old.db")
        con = sar.connect(path, detect_types=0)
        con.executescript(
            "CREATE TABLE runs(run INTEGER PRIMARY KEY, name TEXT); CREATE TABLE rounds(run, round, metrics TEXT);"
            "CREATE TABLE global_models(run, round, rec BLOB, PRIMARY KEY (run, round));"
            "CREATE TABLE client_updates(run, round, client TEXT, num_examples INTEGER, metrics TEXT, rec BLOB);"
            "INSERT INTO runs VALUES (1, 'old');"
        )
        g = [sar.to_record({"w": np.full(3, float(r), np.float32)}) for r in range(3)]
        for r in range(3):
            con.execute("INSERT INTO rounds VALUES (1, ?, ?)", (r, '{"acc": %d}' % r))
            con.execute("INSERT INTO global_models VALUES (1, ?, ?)", (r, g[r]))
        for r in (1, 2):
            for c, x in (("b", r + 1.0), ("a", r - 3.0)):
                con.execute(
                    "INSERT INTO client_updates VALUES (1, ?, ?, 10, '{}', ?)",
                    (r, c, sar.to_record({"w": np.full(3, x, np.float32)})),
                )
        con.commit()
        con.close()
        ds = Datasette([path])
        r = _LOOP.run_until_complete(ds.client.get("/-/arrayrecord/old/runs/1"))
        assert r.status_code == 200, r.text[-1500:]
        shown = {
            (m[0], m[1]): m[2]
            for m in re.findall(r'<tr data-round="(\d+)" data-client="([^"]+)">(.*?)</tr>', r.text, re.S)
        }
        assert sorted(shown) == [("1", "a"), ("1", "b"), ("2", "a"), ("2", "b")]
        norm = dict(re.findall(r'data-col="([^"]+)" data-value="([^"]*)"', shown[("1", "a")]))
        assert close(num(norm["update_norm"]), math.sqrt(3) * 2.0) and close(num(norm["cosine"]), -1.0)
        assert "Krum score per client and round (f = 1" in r.text and "the default (f = 1" in r.text
        ds.databases["old"].close()


def test_run_page_lists_the_flower_runs():
    """The run page lists the Flower runs that wrote to the run
    (flower_runs), ids as Flower prints them (unsigned); a log of version
    0.1.0 (tests/data/logs, no flower_runs), opened read-only, shows the one
    Flower run runs.flower_run_id names."""
    import shutil
    import tempfile

    from datasette.app import Datasette
    from dsenv import _LOOP

    page = get("/-/arrayrecord/fixture/runs/1").text
    rows = re.findall(r'<tr data-flower-run="([^"]*)" data-ended="([^"]*)">', page)
    assert rows == [("500", "finished")], rows
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "old.db")
        shutil.copy(os.path.join(ROOT, "tests", "data", "logs", "logged-0.1.0.db"), path)
        ds = Datasette([path])
        for run, name in ((1, "done"), (2, "cut")):
            r = _LOOP.run_until_complete(ds.client.get(f"/-/arrayrecord/old/runs/{run}"))
            assert r.status_code == 200 and f"Run {run}: {name}" in r.text, r.text[-1500:]
            assert re.findall(r'<tr data-flower-run="([^"]*)" data-ended="([^"]*)">', r.text) == [("77", "")]
        ds.databases["old"].close()
    # an id of 2**63 and above is stored negative and shown as Flower's
    from sqlite_arrayrecord.datasette._runs import _flower_id

    assert _flower_id(-5) == 2**64 - 5 and _flower_id(7) == 7 and _flower_id(None) is None
