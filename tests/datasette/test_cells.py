# SPDX-License-Identifier: Apache-2.0
"""Table cells: each detection rule (.npy, ArrayRecord, RecordDict in an
undeclared column), columns declared ARRAYRECORD / RECORDDICT / NPY and a
column named by the plugin's configuration (a BLOB that fails shows the
reader's error text), x'' and short random BLOBs left to Datasette, cells
linked to their record pages by Datasette's row paths, query results
rendered without a link, packed records and record dicts shown from their
headers (sizes, base, modes; no link), and hostile keys, metric names and
config strings shown as text."""

import html
import json
import re

from dsenv import datasette, fixture, get, sql, table_cells
from fixture import HOSTILE, SCRIPT

import sqlite_arrayrecord as sar

DEFAULT = "&lt;Binary:"  # Datasette's own display of a BLOB


def text_of(cell):
    return html.unescape(re.sub(r"<br>", "\n", re.sub(r"</?a[^>]*>|</?span[^>]*>", "", cell)))


def test_plugin_registered_with_its_hooks():
    r = get("/-/plugins.json")
    assert r.status_code == 200
    (plugin,) = [p for p in r.json() if p["name"] == "sqlite-arrayrecord"]
    assert {"prepare_connection", "render_cell", "register_routes", "database_actions"} <= set(plugin["hooks"])
    assert plugin["templates"] is True
    # prepare_connection: ar_* functions answer in Datasette's own SQL pages
    r = get("/fixture.json?sql=select+ar_len(rec)+from+records+where+id=1&_shape=array")
    assert r.json() == [{"ar_len(rec)": 4}], r.text


def test_undeclared_column_detected_by_content():
    cells = table_cells(get("/fixture/blobs?_size=100").text, "data")
    con = sql()
    notes = [n for (n,) in con.execute("SELECT note FROM blobs ORDER BY id")]
    by = dict(zip(notes, cells))
    assert text_of(by["npy"]) == ".npy float32 [3,4]\n12 elements · 48 B"
    assert text_of(by["record"]).splitlines() == [
        "ArrayRecord · 4 arrays · 127 elements · 508 B",
        "conv1.weight float32 [4,2,3,3]",
        "conv1.bias float32 [4]",
        "fc.weight float32 [3,16]",
        "… 1 more",
    ]
    assert text_of(by["recorddict"]).splitlines() == [
        "RecordDict · 3 items",
        "arrays: 2 arrays · 24 B",
        "metrics: num-examples 120 · loss 0.25",
        "config: lr 0.1 · optimizer sgd",
    ]
    # x'', short random BLOBs, text and numbers keep Datasette's display
    for note in ("random 1", "random 7", "random 33", "empty"):
        assert DEFAULT in by[note] and "ar-cell" not in by[note], (note, by[note])
    assert by["text"].strip() == "just text" and by["number"].strip() == "42"
    # the numbers shown are the arrays' own
    (blob,) = con.execute("SELECT data FROM blobs WHERE note = 'record'").fetchone()
    arrays = sar.from_record(blob)
    assert (sum(a.size for a in arrays.values()), sum(a.nbytes for a in arrays.values())) == (127, 508)


def test_packed_cells_say_what_they_hold():
    cells = table_cells(get("/fixture/blobs?_size=100").text, "data")
    con = sql()
    by = dict(zip([n for (n,) in con.execute("SELECT note FROM blobs ORDER BY id")], cells))
    (blob, described, base_id) = con.execute(
        "SELECT data, ar_describe(data), ar_pack_base(data) FROM blobs WHERE note = 'packed record'"
    ).fetchone()
    d = json.loads(described)
    lines = text_of(by["packed record"]).splitlines()
    size, packed = d["size"], len(blob)
    assert re.fullmatch(r"Packed ArrayRecord · 4 arrays · 1\.2 KB packed into \d+ B \(0\.\d\d\)", lines[0]), lines[0]
    assert lines[0].endswith(f"({packed / size:.2f})") and size == len(blob_of(con))
    assert lines[1] == f"against base {base_id[:16]}…"
    assert [x.split(" ")[0] for x in lines[2:5]] == ["conv1.weight", "conv1.bias", "fc.weight"] and lines[
        5
    ] == "… 1 more"
    assert all(x.split(" ")[1] in ("raw", "planes", "diff", "xor", "same") for x in lines[2:5])
    assert "<a " not in by["packed record"]  # no record page: its arrays need the base
    lossy = text_of(by["packed lossy"]).splitlines()
    assert lossy[1].startswith(f"against base {base_id[:16]}… · lossy float16, max error ")
    rd = text_of(by["packed recorddict"]).splitlines()
    assert rd[0].startswith("Packed RecordDict · 2 arrays · ") and rd[1] == "no base"


def blob_of(con):
    return con.execute("SELECT data FROM blobs WHERE note = 'record'").fetchone()[0]


def test_declared_columns_show_the_readers_errors():
    con = sql()
    for table, column, fn in (
        ("records", "rec", "ar_error"),
        ("npy_cells", "arr", "npy_error"),
        ("dicts", "rd", "rd_error"),
    ):
        cells = table_cells(get(f"/fixture/{table}?_size=100").text, column)
        rows = con.execute(f"SELECT {column}, {fn}({column}) FROM {table} ORDER BY id").fetchall()
        assert len(cells) == len(rows)
        errors = 0
        for cell, (blob, err) in zip(cells, rows):
            if err is not None and len(blob):
                assert 'class="ar-cell ar-error"' in cell, cell
                assert text_of(cell) == f"{fn}: {err}", (text_of(cell), err)
                errors += 1
            elif len(blob) == 0:
                assert DEFAULT in cell, cell  # x'': an empty record, left to Datasette
            else:
                assert 'class="ar-cell"' in cell, cell
        assert errors >= 1, table
    # the declared column: truncated and malformed records
    recs = dict(
        zip(
            [n for (n,) in con.execute("SELECT name FROM records ORDER BY id")],
            table_cells(get("/fixture/records").text, "rec"),
        )
    )
    assert "record blob truncated at byte 607 (item 1, key &#39;conv1.bias&#39;)" in recs["truncated"]


def test_configured_column():
    cells = table_cells(get("/fixture/configured").text, "payload")
    con = sql()
    errs = [e for (e,) in con.execute("SELECT ar_error(payload) FROM configured ORDER BY id")]
    assert 'class="ar-cell"' in cells[0] and text_of(cells[0]).startswith("ArrayRecord · 4 arrays")
    for cell, err in zip(cells[1:], errs[1:]):
        assert text_of(cell) == f"ar_error: {err}", cell
    # without the configuration the same column is undeclared: failures keep Datasette's display
    plain = datasette({"databases": {"fixture": {"tables": {"secret": {"allow": False}}}}})
    cells = table_cells(get("/fixture/configured", ds=plain).text, "payload")
    assert 'class="ar-cell"' in cells[0]
    assert all(DEFAULT in c for c in cells[1:]), cells


def test_cells_link_to_their_record_pages():
    page = get("/fixture/keyed").text
    links = re.findall(r'<a class="ar-cell" href="([^"]+)"', page)
    con = sql()
    names = [n for (n,) in con.execute("SELECT name FROM keyed ORDER BY name")]
    from datasette.utils import tilde_encode

    expected = {f"/-/arrayrecord/fixture/keyed/{tilde_encode(n)}/rec" for n in names}
    assert set(links) == expected, (links, expected)
    for link in links:
        assert get(link).status_code == 200, link
    # a rowid table: rowid in the path
    links = re.findall(r'<a class="ar-cell" href="([^"]+)"', get("/fixture/loose").text)
    assert links == ["/-/arrayrecord/fixture/loose/1/rec", "/-/arrayrecord/fixture/loose/2/rec"]
    # composite primary keys (the logged run's replies)
    page = get("/fixture/replies?run=1&round=2&phase=train").text
    links = re.findall(r'<a class="ar-cell" href="([^"]+)"', page)
    assert "/-/arrayrecord/fixture/replies/1,2,train,0/content" in links, links
    assert get("/-/arrayrecord/fixture/replies/1,2,train,0/content").status_code == 200


def test_query_results_are_rendered_without_a_link():
    page = get("/fixture?sql=select+data+from+blobs+order+by+id").text
    assert '<span class="ar-cell">.npy float32 [3,4]<br>12 elements · 48 B</span>' in page, page[-3000:]
    assert 'href="/-/arrayrecord' not in page


def test_hostile_keys_and_strings_are_text():
    for url in ("/fixture/records", "/fixture/dicts", "/fixture/keyed", "/fixture/runs", "/fixture/blobs"):
        page = get(url).text
        assert "<img src=x" not in page and "<script>alert" not in page, url
    page = get("/fixture/dicts").text
    assert html.escape(HOSTILE, quote=True) in page or html.escape(HOSTILE, quote=False) in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert fixture.SCRIPT == SCRIPT
