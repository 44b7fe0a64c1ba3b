# SPDX-License-Identifier: Apache-2.0
"""The record and array pages and the downloads.

Record pages of an ArrayRecord, a RecordDict and .npy arrays: one row per
array whose numbers equal SQL's (ar_stats' statistics bit for bit, NumPy's
counts of elements, bytes, NaN and infinities), a histogram of every array
whose bars add up to its finite elements, a heatmap of every array of 2 or
more dimensions (a grid of kernels for the 4-D conv weight); a RecordDict's
metrics and config as tables. The array page takes finer bins and grid and
refuses bad ones (400). Downloads are the bytes of ar_get, ar_to_npz and
ar_to_safetensors and NumPy reads them. Malformed, truncated and non-record
cells give a 4xx page with the reader's error, never a 500."""

import html
import io
import math
import re
import zipfile

import numpy as np
from dsenv import data_cells, get, num, rows_with, sql, svgs

import sqlite_arrayrecord as sar

NS = "{http://www.w3.org/2000/svg}"
STATS = ("min", "max", "mean", "std", "l2")


def _expect_rows(blob):
    """{key: (array, ar_stats row)} of an ArrayRecord."""
    con = sql()
    stats = {
        r[0]: dict(zip(STATS, r[1:]))
        for r in con.execute("SELECT key, min, max, mean, std, l2 FROM ar_stats(?)", (blob,))
    }
    return {k: (a, stats[k]) for k, a in sar.from_record(blob).items()}


def _check_rows(page, expected):
    shown = rows_with(page, "data-position")
    assert len(shown) == len(expected)
    keys = re.findall(r'<td class="key"><a href="[^"]*">(.*?)</a></td>', page)
    assert [html.unescape(k) for k in keys] == list(expected)
    for cells, (key, (arr, stats)) in zip(shown.values(), expected.items()):
        assert num(cells["numel"]) == arr.size and num(cells["nbytes"]) == arr.nbytes, key
        for k in STATS:
            assert num(cells[k]) == stats[k], (key, k, cells[k], stats[k])
        if arr.dtype.kind in "biuf":
            f = arr.astype(np.float64)
            counts = (int(np.isnan(f).sum()), int(np.isposinf(f).sum()), int(np.isneginf(f).sum()))
            assert (num(cells["nan"]), num(cells["posinf"]), num(cells["neginf"])) == counts, key


def _hist_total(chart):
    return sum(
        int(t.text.rsplit(": ", 1)[1].replace(",", "")) for t in chart.iter(NS + "title") if t.text.startswith("[")
    )


def test_arrayrecord_page():
    con = sql()
    (blob,) = con.execute("SELECT rec FROM records WHERE id = 1").fetchone()
    r = get("/-/arrayrecord/fixture/records/1/rec")
    assert r.status_code == 200, r.text[-2000:]
    expected = _expect_rows(blob)
    _check_rows(r.text, expected)
    charts = svgs(r.text)
    hists = [c for c in charts if c.find(NS + "title").text.endswith(": values")]
    heats = [c for c in charts if "×" in c.find(NS + "title").text]
    assert len(hists) == 4  # one per array
    for chart, (arr, _) in zip(hists, expected.values()):
        assert _hist_total(chart) == int(np.isfinite(arr).sum())
    # heatmaps for the 4-D conv weight (a grid of kernels: 4*3 rows, 2*3 columns) and the 2-D dense weight
    titles = [c.find(NS + "title").text for c in heats]
    assert titles == ["conv1.weight: kernels 12 × 6", "fc.weight: matrix 3 × 16"], titles
    # the conv weight's kernels (3 x 3) are outlined: lines after rows 3, 6, 9 and column 3
    (lines,) = [p.get("d") for p in heats[0].iter(NS + "path") if p.get("stroke") == "#ffffff"]
    assert lines.count("M") == 4, lines
    assert [p for p in heats[1].iter(NS + "path") if p.get("stroke") == "#ffffff"] == []
    assert 'href="/-/arrayrecord/fixture/records/1/rec.npz"' in r.text
    assert 'href="/-/arrayrecord/fixture/records/1/rec.safetensors"' in r.text


def test_recorddict_page_shows_metrics_and_config():
    con = sql()
    (blob,) = con.execute("SELECT rd FROM dicts WHERE id = 1").fetchone()
    r = get("/-/arrayrecord/fixture/dicts/1/rd")
    assert r.status_code == 200, r.text[-2000:]
    _check_rows(r.text, _expect_rows(con.execute("SELECT rd_array_record(?)", (blob,)).fetchone()[0]))
    for name, values in (
        ("metrics", {"num-examples": "120", "loss": "0.25"}),
        ("config", {"lr": "0.1", "optimizer": "sgd"}),
    ):
        table = re.search(rf'<table class="ar-table ar-kv" data-record="{name}">(.*?)</table>', r.text, re.S).group(1)
        assert dict(re.findall(r'<tr><td>(.*?)</td><td class="num" data-value="([^"]*)"', table)) == values
    assert 'href="/-/arrayrecord/fixture/dicts/1/rd.npz?record=arrays"' in r.text
    # a logged reply links to comparisons with the global models around it
    r = get("/-/arrayrecord/fixture/replies/1,2,train,0/content")
    assert r.status_code == 200
    assert "compare?a=replies/1,2,train,0/content&amp;b=global_models/1,1/rec" in r.text


def test_npy_pages():
    con = sql()
    for (i,) in con.execute("SELECT id FROM npy_cells WHERE npy_valid(arr) ORDER BY id").fetchall():
        (blob,) = con.execute("SELECT arr FROM npy_cells WHERE id = ?", (i,)).fetchone()
        r = get(f"/-/arrayrecord/fixture/npy_cells/{i}/arr")
        assert r.status_code == 200, (i, r.text[-1500:])
        arr = sar.from_npy(blob)
        (cells,) = rows_with(r.text, "data-position").values()
        stats = con.execute("SELECT min, max, mean, std, l2 FROM ar_stats(ar('a', ?))", (blob,)).fetchone()
        for k, v in zip(STATS, stats):
            assert num(cells[k]) == v, (i, k)
        assert num(cells["numel"]) == arr.size
        if arr.dtype.kind == "f":
            assert (num(cells["nan"]), num(cells["posinf"]), num(cells["neginf"])) == (
                int(np.isnan(arr).sum()),
                int(np.isposinf(arr).sum()),
                int(np.isneginf(arr).sum()),
            )
    r = get("/-/arrayrecord/fixture/npy_cells/6/arr")  # [1, nan, inf, -inf, 3]
    (cells,) = rows_with(r.text, "data-position").values()
    # NaN makes ar_stats' statistics NULL; the counts say why
    assert (cells["nan"], cells["posinf"], cells["neginf"], cells["min"], cells["max"]) == ("1", "1", "1", "", "")


def test_array_page_bins_and_grid():
    r = get("/-/arrayrecord/fixture/records/1/rec/array?pos=2&bins=7&grid=2")
    assert r.status_code == 200, r.text[-1500:]
    charts = svgs(r.text)
    (hist,) = [c for c in charts if c.find(NS + "title").text.endswith(": values")]
    assert len([t for t in hist.iter(NS + "title") if t.text.startswith("[")]) <= 7
    assert _hist_total(hist) == 48
    (heat,) = [c for c in charts if "×" in c.find(NS + "title").text]
    cells = [t for t in heat.iter(NS + "title") if ", " in t.text and ":" in t.text]
    assert len(cells) == 2 * 2  # 3 x 16 in at most 2 x 2 cells
    assert data_cells(r.text)[0]["min"]
    for q in ("pos=0&bins=0", "pos=0&bins=1025", "pos=0&grid=0", "pos=0&grid=257", "pos=0&bins=x", "pos=-1", "pos=x"):
        assert get(f"/-/arrayrecord/fixture/records/1/rec/array?{q}").status_code == 400, q
    assert get("/-/arrayrecord/fixture/records/1/rec/array?pos=4").status_code == 404
    assert get("/-/arrayrecord/fixture/records/1/rec?bins=2000").status_code == 400


def test_downloads_equal_sql_and_numpy_reads_them():
    con = sql()
    (blob,) = con.execute("SELECT rec FROM records WHERE id = 1").fetchone()
    arrays = sar.from_record(blob)
    r = get("/-/arrayrecord/fixture/records/1/rec.npz")
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    assert r.content == con.execute("SELECT ar_to_npz(?)", (blob,)).fetchone()[0]
    with np.load(io.BytesIO(r.content)) as z:
        assert sorted(z.files) == sorted(arrays)
        for k, a in arrays.items():
            assert z[k].dtype == a.dtype and np.array_equal(z[k], a)
    r = get("/-/arrayrecord/fixture/records/1/rec.safetensors")
    assert r.status_code == 200 and r.content == con.execute("SELECT ar_to_safetensors(?)", (blob,)).fetchone()[0]
    for pos, (k, a) in enumerate(arrays.items()):
        r = get(f"/-/arrayrecord/fixture/records/1/rec/array.npy?pos={pos}")
        assert r.status_code == 200 and r.content == con.execute("SELECT ar_get(?, ?)", (blob, k)).fetchone()[0]
        got = np.load(io.BytesIO(r.content))
        assert got.dtype == a.dtype and np.array_equal(got, a)
    # a RecordDict: its ArrayRecord by name; a .npy: the BLOB itself, and as a one-array .npz
    (rd,) = con.execute("SELECT rd FROM dicts WHERE id = 1").fetchone()
    r = get("/-/arrayrecord/fixture/dicts/1/rd.npz?record=arrays")
    assert r.content == con.execute("SELECT ar_to_npz(rd_array_record(?, 'arrays'))", (rd,)).fetchone()[0]
    r = get("/-/arrayrecord/fixture/dicts/1/rd/array.npy?pos=1")
    assert r.content == con.execute("SELECT ar_get(rd_array_record(?, 'arrays'), 'b')", (rd,)).fetchone()[0]
    assert get("/-/arrayrecord/fixture/dicts/1/rd.npz?record=nope").status_code == 404
    (npy,) = con.execute("SELECT arr FROM npy_cells WHERE id = 1").fetchone()
    assert get("/-/arrayrecord/fixture/npy_cells/1/arr/array.npy?pos=0").content == npy
    with zipfile.ZipFile(io.BytesIO(get("/-/arrayrecord/fixture/npy_cells/1/arr.npz").content)) as z:
        assert z.namelist() == ["array.npy"]
    assert get("/-/arrayrecord/fixture/records/1/rec/array.npy?pos=9").status_code == 404
    assert get("/-/arrayrecord/fixture/records/1/rec.npz?record=x").status_code == 400


def test_malformed_and_missing_are_4xx_with_the_reason():
    con = sql()
    cases = [
        ("records/5/rec", 400, con.execute("SELECT ar_error(rec) FROM records WHERE id = 5").fetchone()[0]),
        ("records/6/rec", 400, con.execute("SELECT ar_error(rec) FROM records WHERE id = 6").fetchone()[0]),
        ("npy_cells/9/arr", 400, con.execute("SELECT npy_error(arr) FROM npy_cells WHERE id = 9").fetchone()[0]),
        ("npy_cells/10/arr", 400, con.execute("SELECT npy_error(arr) FROM npy_cells WHERE id = 10").fetchone()[0]),
        ("dicts/3/rd", 400, None),
        ("blobs/1/data", 400, None),
        ("blobs/3/data", 400, None),
        ("blobs/4/data", 400, None),
        ("blobs/8/data", 400, "is text, not a BLOB"),
        ("blobs/9/data", 400, "is integer, not a BLOB"),
        ("blobs/10/data", 404, "is NULL"),
        ("records/99/rec", 404, "Row not found"),
        ("records/1/nope", 404, "Column not found"),
        ("nope/1/rec", 404, "Table not found"),
        ("records/1,2/rec", 404, None),
    ]
    for path, status, text in cases:
        for suffix in ("", "/array?pos=0", "/array.npy?pos=0", ".npz", ".safetensors"):
            if path.endswith("/nope") and suffix:
                continue
            r = get(f"/-/arrayrecord/fixture/{path}{suffix}")
            assert r.status_code == status, (path, suffix, r.status_code, r.text[-800:])
            if text and not suffix:
                assert text.replace("'", "&#39;") in r.text, (path, text, r.text[-1500:])
            assert "<img src=x" not in r.text
    assert get("/-/arrayrecord/nodb/records/1/rec").status_code == 404
    # x'' in a column declared ARRAYRECORD is an empty record: a page with no arrays
    r = get("/-/arrayrecord/fixture/records/7/rec")
    assert r.status_code == 200 and "No arrays." in r.text


def test_hostile_keys_on_record_pages_are_text():
    for url in (
        "/-/arrayrecord/fixture/records/2/rec",
        "/-/arrayrecord/fixture/records/2/rec/array?pos=0",
        "/-/arrayrecord/fixture/dicts/2/rd",
        "/-/arrayrecord/fixture/keyed/~3Cimg+src~3Dx+onerror~3Dalert~281~29~3E/rec",
    ):
        r = get(url)
        assert r.status_code == 200, (url, r.text[-1500:])
        assert "<img src=x" not in r.text and "<script>alert" not in r.text, url
        assert "&lt;img src=x onerror=alert(1)&gt;" in r.text
        svgs(r.text)


def test_array_without_numpy_dtype_and_complex_arrays():
    """A RecordDict holding a safetensors BF16 tensor: its row has dtype,
    shape and bytes and no numbers (ar_inspect gives NULL), no 500; a complex
    array has no infinity counts."""
    con = sql()
    (i,) = con.execute("SELECT id FROM dicts WHERE name = 'bf16'").fetchone()
    r = get(f"/-/arrayrecord/fixture/dicts/{i}/rd")
    assert r.status_code == 200, r.text[-1500:]
    rows = rows_with(r.text, "data-position")
    assert rows["0"] == {"numel": "3", "nbytes": "6", **{k: "" for k in STATS + ("nan", "posinf", "neginf")}}
    assert "BF16" in r.text and rows["1"]["l2"] == repr(math.sqrt(5.0))
    assert get(f"/-/arrayrecord/fixture/dicts/{i}/rd/array?pos=0").status_code == 200
    assert get(f"/-/arrayrecord/fixture/dicts/{i}/rd/array.npy?pos=0").status_code in (200, 400)
    (cells,) = rows_with(get("/-/arrayrecord/fixture/npy_cells/7/arr").text, "data-position").values()
    assert (cells["nan"], cells["posinf"], cells["neginf"]) == ("0", "", "")
    assert "None" not in get("/-/arrayrecord/fixture/npy_cells/7/arr/array?pos=0").text
