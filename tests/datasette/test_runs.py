# SPDX-License-Identifier: Apache-2.0
"""The runs table and the comparison of runs.

Runs table: a row per run with sqlite_arrayrecord.runs(db)'s numbers exactly
(rounds, bytes, every final metric as a column of its own, how the run
ended: run 3 failed and was resumed); sorted by any column both ways, runs
without a value last; filtered by strategy, by how a run ended and by any
setting or run-config key; an unknown sort column is a 400; the compare
form. Compare page: every metric's chart has one line per run whose points
are the rounds' values to the bit (data attributes), in every chart the
same colour and legend entry for a run; the settings and run config that
differ, the equal ones folded; every (pair, layer) number and every pair's
whole-model numbers equal ar_compare of the two final models in SQL; links
to each run; a malformed or unknown run list is a 400 with a message,
never a 500, markup in it shown as text. Client axes: short labels that
fit, unique, full ids in tooltips and a table, for 2 and 100 clients."""

import html
import math
import re
import xml.etree.ElementTree as ET

from dsenv import fixture_db, get, metric_points, request, sql, svgs
from fixture import FLEET, HOSTILE, PAIR, SCRIPT

import sqlite_arrayrecord as sar
from sqlite_arrayrecord.datasette import _clients, svg

RUNS = "/-/arrayrecord/fixture/runs"


def table_rows(page):
    """[(run, {data-col: data-value})] of the runs table, in order."""
    out = []
    for run, tr in re.findall(r'<tr data-run="(\d+)"[^>]*>(.*?)</tr>', page, re.S):
        cells = {
            html.unescape(k): html.unescape(v) for k, v in re.findall(r'data-col="([^"]+)" data-value="([^"]*)"', tr)
        }
        out.append((int(run), cells))
    return out


def value(cell):
    return None if cell == "" else float(cell)


def test_runs_table_numbers_are_the_notebooks():
    path, _ = fixture_db()
    want = {r["run"]: r for r in sar.runs(path)}
    page = get(RUNS).text
    rows = table_rows(page)
    assert [r for r, _ in rows] == [1, 2, 3, 4, 5]
    metric_keys = [k for k in want[1] if k.split("/")[0] in ("train", "evaluate", "server") and "/" in k]
    assert len(metric_keys) >= 7 and f"server/{HOSTILE}" in metric_keys
    for run, cells in rows:
        w = want[run]
        assert int(cells["rounds"]) == w["rounds"] and int(cells["bytes_sent"]) == w["bytes_sent"]
        assert int(cells["bytes_received"]) == w["bytes_received"] and float(cells["duration"]) == w["duration"]
        for k in metric_keys:
            assert value(cells[k]) == w[k], (run, k, cells[k], w[k])  # repr: to the bit
        assert cells["ended"] == w["ended"]
    # run 3: its first Flower run failed, a second resumed it to the end
    assert re.search(r'data-col="ended" data-value="finished">finished · failed and resumed<', page)
    # hostile run names, metric names, settings and run config are text
    assert "<img src=x" not in page and "<script>alert" not in page
    assert html.escape(HOSTILE) in page and html.escape(SCRIPT) in page
    # each run ticks into the compare form (GET, to /runs/compare)
    assert re.search(r'<form method="get" action="/-/arrayrecord/fixture/runs/compare">', page)
    assert page.count('type="checkbox" name="runs"') == 5


def test_runs_table_sorts_and_filters():
    path, _ = fixture_db()
    want = {r["run"]: r for r in sar.runs(path)}
    for key in ("evaluate/eval_loss", "server/fc_norm", "bytes_sent", "name", "duration", f"server/{HOSTILE}"):
        for desc in (False, True):
            q = {"_sort_desc" if desc else "_sort": key}
            r = get(RUNS, params=q)
            assert r.status_code == 200, (key, r.text[-300:])
            order = [run for run, _ in table_rows(r.text)]
            have = sorted((w for w in want.values() if w[key] is not None), key=lambda w: w[key], reverse=desc)
            assert order == [w["run"] for w in have] + [w["run"] for w in want.values() if w[key] is None], (key, order)
    assert get(RUNS, params={"_sort": "nope"}).status_code == 400
    assert get(RUNS, params={"_sort": "<b>x</b>"}).text.count("<b>x</b>") == 0
    # by strategy (its class or module.Class), how it ended, a setting, a run-config key; together
    assert [r for r, _ in table_rows(get(RUNS, params={"strategy": "FedAvg"}).text)] == [2, 4, 5]
    full = want[1]["strategy"]
    assert [r for r, _ in table_rows(get(RUNS, params={"strategy": full}).text)] == [1]
    assert [r for r, _ in table_rows(get(RUNS, params={"settings.eta": "0.05"}).text)] == [3]
    assert [r for r, _ in table_rows(get(RUNS, params={"config.lr": "0.1"}).text)] == [2, 4, 5]
    assert [r for r, _ in table_rows(get(RUNS, params={"config.lr": "0.1", "strategy": "Krum"}).text)] == []
    assert [r for r, _ in table_rows(get(RUNS, params=[("strategy", "Krum"), ("strategy", "FedAvg")]).text)] == [
        1,
        2,
        4,
        5,
    ]
    assert [r for r, _ in table_rows(get(RUNS, params={"settings.label": SCRIPT}).text)] == [3]
    assert [r for r, _ in table_rows(get(RUNS, params={"strategy": ""}).text)] == [1, 2, 3, 4, 5]
    page = get(RUNS, params={"strategy": "FedAvg", "_sort_desc": "run"}).text
    assert [r for r, _ in table_rows(page)] == [5, 4, 2] and "show all" in page
    # the filter form offers each strategy and each setting that differs
    assert '<select name="strategy">' in page and '<select name="settings.eta">' in page


def test_compare_bad_run_lists_are_400():
    for q in (
        "runs=1,x",
        "runs=999",
        "runs=1,999",
        "runs=",
        "",
        "runs=1",
        "runs=1,1",
        "runs=1,2,3,4,5,6,7,8,9",
        "runs=%3Cscript%3Ealert(1)%3C/script%3E",
        "runs=-1,2",
        "runs=1.0,2",
        "runs=" + "9" * 40,
    ):
        r = get(f"{RUNS}/compare?{q}")
        assert r.status_code == 400, (q, r.status_code)
        assert "runs" in r.text and "<script>alert" not in r.text, q
    assert "no run 999" in get(f"{RUNS}/compare?runs=1,999").text
    assert request("POST", f"{RUNS}/compare?runs=1,2").status_code == 405
    # the runs table's form sends runs=N once per ticked run
    assert get(f"{RUNS}/compare?runs=1&runs=3").status_code == 200


def chart_lines(page):
    """{metric: {run: [(x, y)]}} of the compare page's charts (data attributes),
    and {metric: ({run: colour of its line}, {run: colour of its legend entry}, {run: legend name})}."""
    lines, colours = {}, {}
    for key, chart in re.findall(r'<div class="ar-metric" data-metric="([^"]*)">(.*?)</div>', page, re.S):
        key = html.unescape(key)
        root = ET.fromstring(chart)
        ns = "{http://www.w3.org/2000/svg}"
        lines[key], line_colour, legend_colour, names = {}, {}, {}, {}
        for g in root.iter(ns + "g"):
            if g.get("class") == "ar-series":
                run = int(g.get("data-run"))
                dots = g.findall(ns + "circle")
                lines[key][run] = [(float(c.get("data-x")), float(c.get("data-y"))) for c in dots]
                line_colour[run] = g.find(ns + "path").get("stroke") if dots else None
            elif g.get("class") == "ar-legend":
                run = int(g.get("data-run"))
                legend_colour[run] = g.find(ns + "rect").get("fill")
                names[run] = g.find(ns + "title").text
        colours[key] = (line_colour, legend_colour, names)
    return lines, colours


def test_compare_lines_are_the_rounds_values():
    con = sql()
    runs = [1, 3, 2]
    r = get(f"{RUNS}/compare?runs=1,3,2")
    assert r.status_code == 200
    page = r.text
    lines, colours = chart_lines(page)
    names = dict(con.execute("SELECT run, name FROM runs"))
    expected = metric_points(con, runs)
    assert sorted(lines) == sorted(expected), (sorted(lines), sorted(expected))
    for key, by_run in expected.items():
        assert sorted(lines[key]) == sorted(runs), key
        for run in runs:
            assert lines[key][run] == by_run.get(run, []), (key, run)
        line_colour, legend_colour, legend_names = colours[key]
        assert [legend_colour[run] for run in runs] == list(svg.PALETTE[:3]), key  # the page's order
        for run in runs:
            assert legend_names[run] == names[run]
            assert line_colour[run] in (None, legend_colour[run]), (key, run)
    # the runs listed with their colours and links
    for i, run in enumerate(runs):
        assert f'data-run="{run}" data-color="{svg.PALETTE[i]}"' in page
        assert f'href="/-/arrayrecord/fixture/runs/{run}"' in page


def test_compare_settings_that_differ():
    page = get(f"{RUNS}/compare?runs=1,3").text
    diff = page.split('class="ar-table ar-diff"', 1)[1].split("</table>", 1)[0]
    same = page.split('class="ar-same"', 1)[1].split("</details>", 1)[0]
    differ = [html.unescape(k) for k in re.findall(r'<tr data-key="([^"]+)"', diff)]
    equal = [html.unescape(k) for k in re.findall(r'<tr data-key="([^"]+)"', same)]
    assert "strategy" in differ and "settings.num_malicious_nodes" in differ and "settings.label" in differ
    assert "config.lr" in equal and "config.model" in equal and "num_rounds" in equal
    assert html.escape(SCRIPT) in diff and SCRIPT not in page


def test_compare_final_models_equal_ar_compare():
    con = sql()
    page = get(f"{RUNS}/compare?runs=1,2,3").text
    final = {
        run: rec
        for run, rec in con.execute(
            "SELECT g.run, g.rec FROM global_models AS g WHERE g.round = (SELECT max(round) FROM global_models WHERE run = g.run)"
        )
    }
    pairs = [(1, 2), (1, 3), (2, 3)]
    cells = {}
    for pair, layer, tr in re.findall(r'<tr data-pair="(\d+,\d+)" data-layer="([^"]*)">(.*?)</tr>', page, re.S):
        cells[(pair, html.unescape(layer))] = dict(re.findall(r'data-col="([^"]+)" data-value="([^"]*)"', tr))
    whole = {
        p: dict(re.findall(r'data-col="([^"]+)" data-value="([^"]*)"', tr))
        for p, tr in re.findall(r'<tr data-pair="(\d+,\d+)">(.*?)</tr>', page, re.S)
    }
    for a, b in pairs:
        rows = con.execute(
            "SELECT key, cosine, rel_change, norm_diff, norm_a, norm_b, dot FROM ar_compare(?, ?)", (final[b], final[a])
        ).fetchall()
        assert rows
        for key, cos, rel, diff, *_ in rows:
            got = cells[(f"{a},{b}", key)]
            assert (value(got["cosine"]), value(got["rel_change"]), value(got["norm_diff"])) == (cos, rel, diff), key
        diff = math.sqrt(sum(r[3] ** 2 for r in rows))
        nb = math.sqrt(sum(r[5] ** 2 for r in rows))
        cos = sum(r[6] for r in rows) / (math.sqrt(sum(r[4] ** 2 for r in rows)) * nb)
        w = whole[f"{a},{b}"]
        assert math.isclose(float(w["norm_diff"]), diff, rel_tol=1e-12) and math.isclose(
            float(w["cosine"]), cos, rel_tol=1e-12
        )
        assert math.isclose(float(w["rel_change"]), diff / nb, rel_tol=1e-12)
    heatmaps = [s for s in svgs(page) if "run pair" in ET.tostring(s, encoding="unicode")]
    assert len(heatmaps) == 2


def test_short_client_labels():
    # 2 and 100 Flower-sized ids: unique, short, the last digits
    for ids in (PAIR, FLEET):
        ids = [str(i) for i in ids]
        labels = _clients.short_labels(ids, {})
        assert len(set(labels.values())) == len(ids)
        assert all(len(v) <= 8 and v.startswith("…") and i.endswith(v[1:]) for i, v in labels.items()), labels
    # stable labels first, made unique with the id's last digits when shared
    infos = {
        "1111111111111111111": {"partition_id": 3},
        "2222222222222222222": {"partition_id": 3},
        "3333333333333333333": {"name": "supernode-eu-west-one"},
        "44": {},
    }
    labels = _clients.short_labels(list(infos), infos)
    assert labels["3333333333333333333"] == "supernode-e…" and labels["44"] == "44"
    assert labels["1111111111111111111"] == "p3 …1111" and labels["2222222222222222222"] == "p3 …2222"
    # the heatmap's left margin fits the longest label
    chart = svg.heatmap(
        [[1.0]] * 3,
        title="t",
        x_label="x",
        y_label="y",
        value_label="v",
        row_labels=["p3 …1111", "x" * 20, "…2"],
        row_titles=["a", "b", "c"],
    )
    left = float(
        re.search(r'<rect x="([0-9.]+)" y="[0-9.]+" width="[0-9.]+" height="[0-9.]+" fill="none"', chart).group(1)
    )
    assert left >= 24 + 6.3 * 20, left


def test_run_page_client_axes_for_2_and_100_clients():
    con = sql()
    for run, ids in ((5, PAIR), (4, FLEET)):
        page = get(f"{RUNS}/{run}").text
        labels = _clients.short_labels([str(i) for i in ids], {})
        maps = [s for s in svgs(page) if s.find("{http://www.w3.org/2000/svg}desc").text.startswith("heatmap of")]
        assert len(maps) == 3
        for m in maps:
            texts = [
                t
                for t in m.iter("{http://www.w3.org/2000/svg}text")
                if t.find("{http://www.w3.org/2000/svg}title") is not None
            ]
            shown = {
                t.find("{http://www.w3.org/2000/svg}title").text.split(":")[0]: "".join(t.itertext()) for t in texts
            }
            assert shown and all(v.endswith(k) for k, v in shown.items()), shown
            assert set(shown) <= set(labels.values())
            assert len(shown) >= min(len(ids), 30), len(shown)  # thinned to what fits, never cut
            tips = [t.find("{http://www.w3.org/2000/svg}title").text for t in texts]
            assert all(re.search(r"node \d{19,20}", tip) for tip in tips), tips[:3]
        # the table of clients: label and full id
        table = dict(re.findall(r'<tr data-node="(\d+)" data-label="([^"]*)">', page))
        assert {int(k) for k in table} == set(ids) and all(html.unescape(v) == labels[k] for k, v in table.items())
        (n,) = con.execute("SELECT count(DISTINCT client) FROM replies WHERE run = ?", (run,)).fetchone()
        assert n == len(ids)
