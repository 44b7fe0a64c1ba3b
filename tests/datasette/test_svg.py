# SPDX-License-Identifier: Apache-2.0
"""sqlite_arrayrecord.datasette.svg: every chart is one well-formed SVG
element (xml.etree parses it) with a title, axes and tick labels, text
escaped, no script and no external reference; the colour scale of a
heatmap spans its values; ticks are round numbers covering the range."""

import xml.etree.ElementTree as ET

from sqlite_arrayrecord.datasette import svg

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<img src=x onerror=alert(1)>"


def check(text, title):
    root = ET.fromstring(text)
    assert root.tag == NS + "svg"
    assert root.find(NS + "title").text == title
    assert "<img" not in text and "script" not in text.lower() and "href" not in text
    return root


def test_line_chart():
    text = svg.line_chart(
        {"loss": [(1, 0.9), (2, 0.5), (3, None), (4, 0.2)], HOSTILE: [(1, 0.1), (4, 0.8)]},
        title=HOSTILE,
        x_label="round",
        y_label="value",
    )
    root = check(text, HOSTILE)
    paths = root.findall(f".//{NS}path")
    assert len(paths) >= 4  # axes, two segments of loss (broken at None), the other series
    assert len(root.findall(f".//{NS}circle")) == 5
    labels = {t.text for t in root.iter(NS + "text")}
    assert {"round", "value", "loss", HOSTILE} <= labels
    empty = check(svg.line_chart({}, title="t", x_label="x", y_label="y"), "t")
    assert "no values" in {t.text for t in empty.iter(NS + "text")}


def test_histogram_bars_match_counts():
    counts = [0, 3, 10, 2]
    root = check(svg.histogram(-1.0, 3.0, counts, title="h", x_label="value"), "h")
    bars = [r for r in root.iter(NS + "rect") if r.find(NS + "title") is not None]
    assert len(bars) == 3  # empty bins draw nothing
    heights = [float(b.get("height")) for b in bars]
    assert heights[1] > heights[0] > heights[2] > 0
    assert [b.find(NS + "title").text for b in bars] == ["[0, 1): 3", "[1, 2): 10", "[2, 3): 2"]
    check(svg.histogram(None, None, [], title="n", x_label="v"), "n")


def test_heatmap_colours_and_legend():
    values = [[0.0, 1.0], [None, 0.5]]
    root = check(
        svg.heatmap(values, title="m", x_label="c", y_label="r", value_label="mean", row_labels=["a", "b"]), "m"
    )
    cells = [r for r in root.iter(NS + "rect") if r.find(NS + "title") is not None]
    assert len(cells) == 4
    fills = [c.get("fill") for c in cells]
    assert fills[0] == "#440154" and fills[1] == "#fde725"  # the scale's ends at the range's ends
    assert fills[2] == "#d9d9d9"  # None
    texts = {t.text for t in root.iter(NS + "text")}
    assert {"mean", "none", "a", "b"} <= texts
    div = check(svg.heatmap([[-0.5, 1.0]], title="d", x_label="c", y_label="r", value_label="cos", diverging=True), "d")
    cells = [r for r in div.iter(NS + "rect") if r.find(NS + "title") is not None]
    assert cells[1].get("fill") == "#b2182b"


def test_bar_chart_and_ticks():
    root = check(
        svg.bar_chart(
            [1, 2], {"sent": [100, 200], "received": [None, 50]}, title="b", x_label="round", y_label="bytes"
        ),
        "b",
    )
    bars = [r for r in root.iter(NS + "rect") if r.find(NS + "title") is not None]
    assert len(bars) == 3
    assert svg.nice_ticks(0, 1) == [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
    assert svg.nice_ticks(-3, 7, 5) == [-2, 0, 2, 4, 6]
    assert svg.nice_ticks(5, 5) == [5]
    assert [svg.format_number(v) for v in (12345, 1.5e-5, 2.0, 0.25, None)] == [
        "12,345",
        "1.5e-05",
        "2",
        "0.25",
        "null",
    ]
