# SPDX-License-Identifier: Apache-2.0
"""The plugin's pages in a real browser: Debian's chromium, headless, driven
by selenium through Debian's chromedriver, against a real `datasette serve`
over the fixture database (tests/datasette/serve.py).

One walk, as a user clicks: a table of records, a record cell's link, an
array of that record, the compare page and the run page. On every page:
each chart (SVG) is there with a non-zero rendered size, the numbers shown
are SQL's (computed here with sqlite3 and the extension), the browser's
console has no error, and hostile strings from the database are shown as
text and never run (an alert trap installed before any page script; no
alert, no <img src="x"> in the DOM, the literal text visible). Screenshots
of each page go to build/datasette-shots/ (docs/img/datasette-*.png are
made from them).
"""

import json
import math
import os
import re
import time

import runner
from serve import MISSING, ROOT, Server

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SHOTS = os.path.join(ROOT, "build", "datasette-shots")
HOSTILE = ("<img src=x onerror=alert(1)>", "<script>alert(1)</script>")

# Runs in every page before its own scripts: alerts and uncaught errors are
# recorded (alert is still called, so a real one also shows as an open dialog).
TRAP = """
window.__alerts = []; window.__errors = [];
const alert0 = window.alert.bind(window);
window.alert = function (m) { window.__alerts.push(String(m)); return alert0(m); };
window.addEventListener("error", function (e) { window.__errors.push(String(e.message)); });
"""


def browser():
    """Headless chromium (root needs --no-sandbox), 1280 x 900, with the
    console log kept; never fetched by selenium: Debian's binaries only."""
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        raise runner.Skip(f"{CHROMIUM} or {CHROMEDRIVER} missing: apt-get install chromium chromium-driver")
    from selenium import webdriver

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-proxy-server"):
        opts.add_argument(arg)
    opts.add_argument("--window-size=1280,900")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    driver.set_page_load_timeout(30)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": TRAP})
    # the page's own size: 1280 x 900 CSS pixels, whatever the window's frame takes
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False}
    )
    return driver


class Page:
    """The page the browser is on, and the checks every page gets."""

    def __init__(self, driver, name):
        self.driver, self.name = driver, name

    def text(self):
        from selenium.webdriver.common.by import By

        return self.driver.find_element(By.TAG_NAME, "body").text

    def charts(self, selector="svg"):
        """Every chart matching selector, each checked to be rendered with a
        non-zero size; returns their count."""
        sizes = self.driver.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0]), e => {"
            " const r = e.getBoundingClientRect(); return [r.width, r.height]; });",
            selector,
        )
        for i, (w, h) in enumerate(sizes):
            assert w > 0 and h > 0, f"{self.name}: chart {i} ({selector}) rendered {w} x {h}"
        return len(sizes)

    def clean(self):
        """No alert open or recorded, no uncaught error, no SEVERE console entry,
        no element a hostile string would have made."""
        from selenium.common.exceptions import NoAlertPresentException
        from selenium.webdriver.common.by import By

        try:
            alert = self.driver.switch_to.alert
            raise AssertionError(f"{self.name}: an alert is open: {alert.text!r}")
        except NoAlertPresentException:
            pass
        alerts, errors = self.driver.execute_script("return [window.__alerts, window.__errors]")
        assert alerts == [] and errors == [], f"{self.name}: alerts {alerts}, errors {errors}"
        severe = [e for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]
        assert severe == [], f"{self.name}: console errors {severe}"
        assert self.driver.find_elements(By.CSS_SELECTOR, 'img[src="x"]') == [], f"{self.name}: <img src=x> in the DOM"
        scripts = self.driver.execute_script(
            "return Array.from(document.scripts, s => s.textContent).filter(t => t.includes('alert(1)'))"
        )
        assert scripts == [], f"{self.name}: a hostile <script> is in the DOM: {scripts}"

    def shot(self):
        os.makedirs(SHOTS, exist_ok=True)
        self.driver.save_screenshot(os.path.join(SHOTS, f"datasette-{self.name}.png"))


def open_page(driver, url, name):
    driver.get(url)
    page = Page(driver, name)
    page.clean()
    return page


# Every row of the plugin's tables that carry data-col cells: the row's
# attribute (data-position, data-key, ...), and per column its data-value
# (the exact number) and the text a reader sees.
ROWS_JS = """
return Array.from(document.querySelectorAll(arguments[0]), tr => {
  const cells = {};
  tr.querySelectorAll('[data-col]').forEach(td => { cells[td.dataset.col] = [td.dataset.value, td.innerText.trim()]; });
  const text = sel => { const e = tr.querySelector(sel); return e ? e.innerText.trim() : null; };
  return {attr: tr.getAttribute(arguments[1]), cells: cells, key: text('.key'), dtype: text('.dtype'), shape: text('.shape')};
});
"""


def digits(text):
    """Significant digits of a number as printed ('0.02842' -> 4, '12,345' -> 5)."""
    mantissa = re.split("[eE]", text.replace(",", "").lstrip("-"))[0].replace(".", "").lstrip("0")
    return max(len(mantissa), 1)


def same_number(where, value_attr, text, expected):
    """A number shown: its data-value is SQL's exactly (repr of a REAL, an
    INTEGER's digits, '' for NULL), and the text a reader sees is SQL's
    value rounded to the digits it shows."""
    if expected is None:
        assert value_attr == "" and text in ("—", ""), f"{where}: {value_attr!r} / {text!r}, SQL NULL"
        return
    got = float(value_attr) if isinstance(expected, float) else int(value_attr)
    assert got == expected, f"{where}: data-value {value_attr!r}, SQL {expected!r}"
    if isinstance(expected, float) and not math.isfinite(expected):
        assert text == str(expected), f"{where}: shown {text!r}, SQL {expected!r}"
        return
    shown = float(text.replace(",", "").replace("\u2212", "-"))
    assert shown == float(f"{expected:.{digits(text)}g}"), f"{where}: shown {text!r}, SQL {expected!r}"


def fixture():
    """The fixture database (written once per process by dsenv), its metadata
    as a file for datasette serve, and our own connection to it."""
    import dsenv

    path, metadata = dsenv.fixture_db()
    md = os.path.join(os.path.dirname(path), "metadata.json")
    with open(md, "w") as fh:
        json.dump(metadata, fh)
    return path, md, dsenv.sql()


def click(driver, href_end, name):
    """Follows the page's first link whose href ends with href_end, as a user
    clicks it, and checks the new page."""
    from selenium.webdriver.common.by import By

    links = [a for a in driver.find_elements(By.CSS_SELECTOR, "a[href]") if a.get_attribute("href").endswith(href_end)]
    assert links, f"no link to ...{href_end} on {driver.current_url}"
    links[0].click()
    page = Page(driver, name)
    assert driver.current_url.endswith(href_end), (driver.current_url, href_end)
    assert not driver.title.startswith("Error"), f"{name}: {driver.title}: {page.text()[:500]}"
    page.clean()
    return page


def check_cells(page, con):
    """The table page of records: every readable cell is a link to its record
    page that says what ar_describe says (count, elements, first keys)."""
    from selenium.webdriver.common.by import By

    for rid, desc in con.execute("SELECT id, ar_describe(rec) FROM records ORDER BY id"):
        desc = json.loads(desc) if desc else None
        cell = page.driver.find_elements(By.CSS_SELECTOR, f'a.ar-cell[href$="/fixture/records/{rid}/rec"]')
        if desc is None:  # malformed, truncated, empty: the reader's error or Datasette's own display
            continue
        assert len(cell) == 1, f"cells: record {rid} has no link to its page"
        lines = cell[0].text.split("\n")
        head = f"ArrayRecord · {desc['count']:,} arrays · {desc['numel']:,} elements · "
        assert lines[0].startswith(head), (rid, lines[0], head)
        for line, item in zip(lines[1:], desc["items"]):
            assert line == f"{item['key']} {item['dtype']} {json.dumps(item['shape'], separators=(',', ':'))}", line


STATS = ("numel", "nbytes", "min", "max", "mean", "std", "l2", "nan", "posinf", "neginf")


def check_record(page, con, blob):
    """The record page: one row per array whose key, dtype, shape and numbers
    are ar_inspect's; one histogram per array and a heatmap per array of 2 or
    more dimensions, each drawn."""
    expected = con.execute(
        f"SELECT position, key, dtype, shape, {', '.join(STATS)}, heatmap IS NOT NULL FROM ar_inspect(?)", (blob,)
    ).fetchall()
    rows = page.driver.execute_script(ROWS_JS, "tr[data-position]", "data-position")
    assert len(rows) == len(expected) > 0, (len(rows), len(expected))
    for row, (pos, key, dtype, shape, *numbers) in zip(rows, expected):
        shown_key = key if key is not None else "(the array)"  # a .npy
        assert (int(row["attr"]), row["key"], row["dtype"], row["shape"]) == (pos, shown_key, dtype, shape), row
        for col, value in zip(STATS, numbers):
            same_number(f"record, {key}, {col}", *row["cells"][col], value)
    heatmaps = sum(e[-1] for e in expected)
    assert page.charts("svg.ar-chart") == len(expected) + heatmaps


def check_array(page, con, blob, pos):
    """The array page (64 bins, a 64 x 64 grid): its statistics are
    ar_inspect's, the histogram's bars are its counts, both charts drawn."""
    from selenium.webdriver.common.by import By

    (row,) = con.execute(
        "SELECT min, max, mean, std, l2, nan, posinf, neginf, histogram FROM ar_inspect(?, 64, 64) WHERE position = ?",
        (blob, pos),
    ).fetchall()
    for col, value in zip(STATS[2:], row):
        td = page.driver.find_element(By.CSS_SELECTOR, f'table.ar-stats td[data-col="{col}"]')
        same_number(f"array, {col}", td.get_attribute("data-value"), td.text, value)
    counts = [c for c in json.loads(row[-1])["counts"] if c]
    bars = page.driver.execute_script(
        "const svg = Array.from(document.querySelectorAll('svg.ar-chart'))"
        ".find(s => s.querySelector('title').textContent.endsWith(': values'));"
        "return Array.from(svg.querySelectorAll('rect > title'), t => t.textContent);"
    )
    assert [int(b.rsplit(": ", 1)[1].replace(",", "")) for b in bars] == counts, (bars, counts)
    assert page.charts("svg.ar-chart") == 2


def check_run(page, con):
    """The run page of the Krum run: every client update's norm and cosine
    are client_update_stats', every chart drawn."""
    expected = {
        f"{rnd}/{client}": (norm, cos)
        for rnd, client, norm, cos in con.execute(
            "SELECT round, client, update_norm, cosine_to_global_update FROM client_update_stats WHERE run = 1"
        )
    }
    rows = page.driver.execute_script(
        "return Array.from(document.querySelectorAll('tr[data-client]'), tr => {"
        " const c = {}; tr.querySelectorAll('[data-col]').forEach(td => { c[td.dataset.col] = [td.dataset.value, td.innerText.trim()]; });"
        " return [tr.dataset.round + '/' + tr.dataset.client, c]; });"
    )
    assert sorted(k for k, _ in rows) == sorted(expected) and len(rows) == 18, [k for k, _ in rows]
    for key, cells in rows:
        norm, cos = expected[key]
        same_number(f"run, {key}, update norm", *cells["update_norm"], norm)
        # the page's cosine is computed from three ar_compare norms, the view's another way
        assert math.isclose(float(cells["cosine"][0]), cos, rel_tol=1e-9), (key, cells["cosine"], cos)
    assert page.charts("svg.ar-chart") >= 10


def check_compare(page, con, a_sql, b_sql):
    """The compare page: every layer's numbers are ar_compare's, the whole
    record's difference norm theirs combined, both bar charts drawn."""
    cols = ("norm_diff", "cosine", "rel_change", "max_abs_diff", "mean_diff", "norm_a", "norm_b", "changed")
    expected = con.execute(f"SELECT c.key, {', '.join('c.' + c for c in cols)} FROM ar_compare(({a_sql}), ({b_sql})) c")
    expected = {k: v for k, *v in expected}
    rows = page.driver.execute_script(ROWS_JS, "tr[data-key]", "data-key")
    assert [r["attr"] for r in rows] == list(expected), rows
    for row in rows:
        for col, value in zip(cols, expected[row["attr"]]):
            same_number(f"compare, {row['attr']}, {col}", *row["cells"][col], value)
    total = page.driver.execute_script(
        "const td = document.querySelector('table.ar-totals td[data-col=\"norm_diff\"]'); return [td.dataset.value, td.innerText];"
    )
    norm = math.sqrt(sum(v[0] ** 2 for v in expected.values()))
    assert math.isclose(float(total[0]), norm, rel_tol=1e-12), (total, norm)
    assert page.charts("svg.ar-chart") == 2


def check_hostile(driver, url, name, shown, reveal=None):
    """A page holding hostile strings: each shown as its literal text, none
    run (Page.clean: no alert, no error, no <img src=x>, no such script)."""
    from selenium.webdriver.common.by import By

    page = open_page(driver, url, name)
    assert not driver.title.startswith("Error"), f"{name}: {driver.title}"
    if reveal:
        driver.find_element(By.CSS_SELECTOR, reveal).click()
    text = page.text()
    for s in shown:
        assert s in text, f"{name}: {s!r} is not shown as text"
    time.sleep(0.2)  # an onerror handler would have run by now
    page.clean()


def test_browser():
    """The walk, the numbers, the charts, the hostile strings; screenshots of
    the five pages into build/datasette-shots/."""
    if not os.path.exists(os.path.join(ROOT, "build", "datasette", "bin", "datasette")):
        raise runner.Skip(MISSING)
    path, md, con = fixture()
    (blob,) = con.execute("SELECT rec FROM records WHERE id = 1").fetchone()
    with Server(path, "--metadata", md) as ds:
        driver = browser()
        try:
            # a table of records: its cells, then a cell's link
            page = open_page(driver, ds.url("/fixture/records"), "cells")
            check_cells(page, con)
            for s in HOSTILE:
                assert s in page.text(), f"cells: {s!r} not shown as text"
            page = open_page(driver, ds.url("/fixture/blobs"), "cells")
            page.shot()  # a .npy, a record and a RecordDict in one undeclared column
            driver.get(ds.url("/fixture/records"))
            page = click(driver, "/-/arrayrecord/fixture/records/1/rec", "record")
            check_record(page, con, blob)
            page.shot()
            # the first array's page, from its key's link
            page = click(driver, "/-/arrayrecord/fixture/records/1/rec/array?pos=0", "array")
            check_array(page, con, blob, 0)
            page.shot()
            # a .npy with NaN and infinities: statistics undefined (NULL, shown as such), counted apart
            (npy,) = con.execute("SELECT arr FROM npy_cells WHERE name = 'nan and inf'").fetchone()
            (nid,) = con.execute("SELECT id FROM npy_cells WHERE name = 'nan and inf'").fetchone()
            check_record(open_page(driver, ds.url(f"/-/arrayrecord/fixture/npy_cells/{nid}/arr"), "npy"), con, npy)
            # the runs, the Krum run, then the poisoned client's update in round 2 against its start
            open_page(driver, ds.url("/-/arrayrecord/fixture/runs"), "runs")
            page = click(driver, "/-/arrayrecord/fixture/runs/1", "run")
            check_run(page, con)
            # the picture: the second row of metrics, then the clients x rounds heatmaps
            driver.execute_script(
                "const h = Array.from(document.querySelectorAll('h2')).find(e => e.textContent === 'Client updates');"
                "window.scrollTo(0, h.getBoundingClientRect().top + window.scrollY - 300);"
            )
            page.shot()
            (pos,) = con.execute(
                "SELECT pos FROM replies WHERE run = 1 AND round = 2 AND phase = 'train' AND client = '105'"
            ).fetchone()
            page = click(
                driver,
                f"/-/arrayrecord/fixture/compare?a=replies/1,2,train,{pos}/content&b=global_models/1,1/rec",
                "compare",
            )
            check_compare(
                page,
                con,
                f"SELECT rd_array_record(content) FROM replies WHERE run = 1 AND round = 2 AND phase = 'train' AND pos = {pos}",
                "SELECT rec FROM global_models WHERE run = 1 AND round = 1",
            )
            page.shot()
            # hostile keys, metric names, config strings, run names and primary keys
            img, script = HOSTILE
            check_hostile(driver, ds.url("/-/arrayrecord/fixture/records/2/rec"), "hostile keys", HOSTILE)
            check_hostile(driver, ds.url("/-/arrayrecord/fixture/records/2/rec/array?pos=1"), "hostile key", [script])
            check_hostile(driver, ds.url("/-/arrayrecord/fixture/dicts/2/rd"), "hostile dict", HOSTILE)
            check_hostile(driver, ds.url("/fixture/dicts"), "hostile cells", HOSTILE)
            check_hostile(driver, ds.url("/-/arrayrecord/fixture/runs"), "hostile runs", [img])
            check_hostile(
                driver, ds.url("/-/arrayrecord/fixture/runs/2"), "hostile run", HOSTILE, reveal="details summary"
            )
            # a hostile primary key, followed from its table to its record page
            check_hostile(driver, ds.url("/fixture/keyed"), "hostile keyed", [img])
            from selenium.webdriver.common.by import By

            link = [
                a for a in driver.find_elements(By.CSS_SELECTOR, "a.ar-cell") if "onerror" in a.get_attribute("href")
            ]
            assert len(link) == 1, "keyed: no record link for the hostile primary key"
            link[0].click()
            page = Page(driver, "hostile pk")
            assert not driver.title.startswith("Error") and img in page.text(), driver.title
            page.clean()
        finally:
            driver.quit()


LINES_JS = """
return Array.from(document.querySelectorAll('div.ar-metric'), div => {
  const svg = div.querySelector('svg'); const r = svg.getBoundingClientRect();
  const series = Array.from(svg.querySelectorAll('g.ar-series'), g => {
    const path = g.querySelector('path');
    return [g.dataset.run, path ? path.getAttribute('stroke') : null,
            Array.from(g.querySelectorAll('circle'), c => [c.dataset.x, c.dataset.y])];
  });
  const legend = Array.from(svg.querySelectorAll('g.ar-legend'), g =>
    [g.dataset.run, g.querySelector('rect').getAttribute('fill'), g.querySelector('title').textContent]);
  return [div.dataset.metric, [r.width, r.height], series, legend];
});
"""


def check_runs_table(page, con, path):
    """The runs table: every final metric, the rounds and bytes of each run
    are sqlite_arrayrecord.runs(db)'s, exactly."""
    import sqlite_arrayrecord as sar

    want = {r["run"]: r for r in sar.runs(path)}
    rows = page.driver.execute_script(ROWS_JS, "tr[data-run]", "data-run")
    assert sorted(int(r["attr"]) for r in rows) == sorted(want), rows
    for row in rows:
        w = want[int(row["attr"])]
        for col, (value, _) in row["cells"].items():
            if col == "ended":
                assert value == w["ended"], (col, value)
            elif col in ("rounds", "bytes_sent", "bytes_received"):
                assert int(value) == w[col], (col, value)
            else:
                assert (float(value) if value else None) == w[col], (row["attr"], col, value, w[col])


def check_runs_compare(page, con, runs):
    """The compare page's lines, read from the DOM: each run's points are its
    rounds' values to the bit, each line in its legend entry's colour, the
    legend naming the run, every chart drawn."""
    names = dict(con.execute("SELECT run, name FROM runs"))
    from dsenv import metric_points

    expected = metric_points(con, runs)
    charts = page.driver.execute_script(LINES_JS)
    assert sorted(c[0] for c in charts) == sorted(expected), [c[0] for c in charts]
    for metric, (w, h), series, legend in charts:
        assert w > 0 and h > 0, metric
        assert [int(r) for r, _, _ in series] == runs and [int(r) for r, _, _ in legend] == runs, metric
        colours = {int(r): fill for r, fill, _ in legend}
        for run_text, stroke, dots in series:
            run = int(run_text)
            assert [(float(x), float(y)) for x, y in dots] == expected[metric].get(run, []), (metric, run)
            assert stroke in (None, colours[run]), (metric, run, stroke, colours[run])
        assert {int(r): name for r, _, name in legend} == {r: names[r] for r in runs}, metric


def check_client_axes(page, n):
    """Every client heatmap's row labels lie inside their chart (none cut off
    at the left edge) and show at least the rows that fit."""
    boxes = page.driver.execute_script(
        "return Array.from(document.querySelectorAll('svg.ar-chart'), svg => {"
        " if (!svg.querySelector('desc').textContent.startsWith('heatmap of')) return null;"
        " const left = svg.getBoundingClientRect().left;"
        " return Array.from(svg.querySelectorAll('text'), t => t.querySelector('title') ? [t.getBoundingClientRect().left - left, t.textContent] : null).filter(x => x);"
        "}).filter(x => x);"
    )
    assert len(boxes) == 3, len(boxes)
    for labels in boxes:
        assert len(labels) >= min(n, 30), len(labels)
        assert all(x >= 0 for x, _ in labels), [lab for lab in labels if lab[0] < 0][:3]


def test_browser_runs():
    """The runs table, two runs ticked and compared, the client axes of the
    runs of 2 and 100 clients; screenshots of the runs table and the comparison."""
    if not os.path.exists(os.path.join(ROOT, "build", "datasette", "bin", "datasette")):
        raise runner.Skip(MISSING)
    from selenium.webdriver.common.by import By

    path, md, con = fixture()
    with Server(path, "--metadata", md) as ds:
        driver = browser()
        try:
            page = open_page(driver, ds.url("/-/arrayrecord/fixture/runs"), "runs")
            check_runs_table(page, con, path)
            page.shot()
            for run in (1, 3, 2):
                driver.find_element(By.CSS_SELECTOR, f'input[name="runs"][value="{run}"]').click()
            driver.find_element(By.CSS_SELECTOR, 'form[action$="/runs/compare"] button[type="submit"]').click()
            page = Page(driver, "runs-compare")
            assert "runs=1&runs=2&runs=3" in driver.current_url, driver.current_url
            assert not driver.title.startswith("Error"), page.text()[:300]
            page.clean()
            check_runs_compare(page, con, [1, 2, 3])
            assert page.charts("svg.ar-chart") >= 9
            page.shot()
            for s in HOSTILE:
                assert s in page.text(), f"compare: {s!r} is not shown as text"
            for run, n in ((5, 2), (4, 100)):
                page = open_page(driver, ds.url(f"/-/arrayrecord/fixture/runs/{run}"), f"run-{n}-clients")
                check_client_axes(page, n)
        finally:
            driver.quit()
