# SPDX-License-Identifier: Apache-2.0
"""Every SQL function the array-math binding files register is registered in
the extension and has an entry in docs/reference.md (a #### heading naming
it)."""

import os
import re

from arlib import ROOT, connect

FILES = ["sql_math.c", "sql_record_math.c", "sql_aggregate.c"]


def registered_in_sources():
    names = set()
    for f in FILES:
        with open(os.path.join(ROOT, "src", "sql", f)) as fh:
            names |= set(re.findall(r'^\s*\{+"([a-z_0-9]+)", -?\d+,', fh.read(), re.M))
    return names


def test_math_functions_registered_and_documented():
    names = registered_in_sources()
    assert len(names) >= 30, names
    con = connect()
    listed = {r[0] for r in con.execute("SELECT name FROM pragma_function_list")}
    assert names <= listed, names - listed
    with open(os.path.join(ROOT, "docs", "reference.md"), encoding="utf-8") as fh:
        headings = [line for line in fh.read().splitlines() if line.startswith("#### ")]
    undocumented = {n for n in names if not any(f"`{n}(" in h for h in headings)}
    assert not undocumented, undocumented
    assert any("`ar_stats(rec)`" in h for h in headings)
    assert con.execute("SELECT count(*) FROM ar_stats(NULL)").fetchone() == (0,)
