# SPDX-License-Identifier: Apache-2.0
"""What the Datasette plugin's tests share (a helper, not a test module): the
fixture database written once per process, Datasette in process over it
(datasette.app.Datasette(...).client, httpx over ASGI), a connection of our
own to compute the expected numbers in SQL, and small HTML readers."""

import asyncio
import atexit
import html
import os
import re
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fixture  # noqa: E402
from datasette.app import Datasette  # noqa: E402

import sqlite_arrayrecord as sar  # noqa: E402

_LOOP = asyncio.new_event_loop()
_STATE = {}


def fixture_db():
    """(path, metadata) of the fixture, written once per process."""
    if "db" not in _STATE:
        folder = tempfile.mkdtemp(prefix="ar-datasette-")
        atexit.register(shutil.rmtree, folder, True)
        _STATE["db"] = fixture.make(folder)
    return _STATE["db"]


def datasette(metadata=None):
    """Datasette over the fixture, with its metadata unless another is given
    (each distinct metadata gets its own instance)."""
    path, md = fixture_db()
    md = md if metadata is None else metadata
    key = repr(md)
    if key not in _STATE:
        _STATE[key] = Datasette([path], metadata=md)
    return _STATE[key]


def get(url, ds=None, **kw):
    ds = ds or datasette()
    return _LOOP.run_until_complete(ds.client.get(url, **kw))


def request(method, url, ds=None, **kw):
    ds = ds or datasette()
    return _LOOP.run_until_complete(ds.client.request(method, url, **kw))


def sql():
    """Our own connection to the fixture, extension loaded (no detect_types)."""
    path, _ = fixture_db()
    return sar.connect(path, detect_types=0)


def metric_points(con, runs):
    """{family/metric: {run: [(round, value)]}} of the rounds' metric JSON
    columns, read by Python's json (exact): what the comparison's lines hold."""
    import json

    out = {}
    for run in runs:
        for rnd, *cols in con.execute(
            "SELECT round, train_metrics, evaluate_metrics, metrics FROM rounds WHERE run = ? ORDER BY round", (run,)
        ):
            for family, text in zip(("train", "evaluate", "server"), cols):
                for k, v in (json.loads(text) if text else {}).items():
                    out.setdefault(f"{family}/{k}", {}).setdefault(run, []).append((float(rnd), float(v)))
    return out


def table_cells(page, column):
    """[inner HTML of the column's cell] of each row of a Datasette table page."""
    return re.findall(rf'<td class="col-{re.escape(column)} type-\w+">(.*?)</td>', page, re.S)


def data_cells(page):
    """[{data-col: data-value}] of each <tr> of the plugin's tables (the exact numbers)."""
    out = []
    for tr in re.findall(r"<tr[^>]*>(.*?)</tr>", page, re.S):
        cells = dict(re.findall(r'data-col="([^"]+)" data-value="([^"]*)"', tr))
        if cells:
            out.append({k: html.unescape(v) for k, v in cells.items()})
    return out


def rows_with(page, attr):
    """{attribute value: {data-col: data-value}} of the rows carrying attr (data-key, data-position, ...)."""
    out = {}
    for value, tr in re.findall(rf'<tr {attr}="([^"]*)"[^>]*>(.*?)</tr>', page, re.S):
        out[html.unescape(value)] = {
            k: html.unescape(v) for k, v in re.findall(r'data-col="([^"]+)" data-value="([^"]*)"', tr)
        }
    return out


def svgs(page):
    """Every inline <svg> of a page, parsed (xml.etree): well-formed or it raises."""
    return [ET.fromstring(s) for s in re.findall(r"<svg xmlns=.*?</svg>", page, re.S)]


def num(text):
    """A data-value back to a number ('' -> None)."""
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text  # a complex mean: ar_stats' "[re,im]" text


def close(a, b, rel=1e-12):
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


# Datasette prints a rich traceback of every 4xx page when rich is
# installed (flwr brings it): the tests ask for many on purpose.
from datasette import handle_exception as _handle_exception  # noqa: E402

_handle_exception.rich = None
