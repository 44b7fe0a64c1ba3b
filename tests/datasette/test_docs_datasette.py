# SPDX-License-Identifier: Apache-2.0
"""The ```python datasette blocks of README.md, docs/*.md and the package's
README run as written with Datasette 0.65 (tests/python/test_readme.py runs
the plain ones with Debian's python3, which has no Datasette), and what a
`print(...)  # expected` line says it prints, it prints. Code that imports
the plugin is fenced ```python datasette, never norun."""

import re
import tempfile

from test_readme import FLOWER_DOCS, python_blocks, run_block_in  # tests/python, on the runner's path


def blocks():
    return [(doc, line, code) for doc, line, kind, code in python_blocks(FLOWER_DOCS) if kind == "datasette"]


def test_datasette_blocks_run():
    found = blocks()
    assert found, "no ```python datasette block in the docs"
    for doc, line, code in found:
        with tempfile.TemporaryDirectory() as tmp:
            run_block_in(doc, line, code, tmp)


def test_plugin_code_is_fenced_python_datasette():
    hidden = [
        f"{doc} line {line}: ```python {kind} uses the plugin: fence it ```python datasette"
        for doc, line, kind, code in python_blocks(FLOWER_DOCS)
        if kind != "datasette"
        and re.search(r"^\s*(from|import)\s+(datasette\b|sqlite_arrayrecord\.datasette)", code, re.M)
    ]
    assert not hidden, "\n".join(hidden)
