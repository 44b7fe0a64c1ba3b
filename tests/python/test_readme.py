# SPDX-License-Identifier: Apache-2.0
"""Every example in README.md, docs/reference.md and docs/flower-strategies.md
runs and prints what the text says.

An example is a ```sql block; each statement is followed by the lines it
prints, written as comments:

    SELECT npy_shape(npy_from_json('[[1,2],[3,4]]'));
    -- [2,2]

Several rows are several comment lines; an error is "-- error: message".
A block whose fence says ```sql norun is not run. Statements of one block
share one database, in order. The statements run in build/sqlrun (the
golden-test host), so the formatting is the one tests/sql uses.
"""

import os
import re
import subprocess

from arlib import EXT, ROOT

SQLRUN = os.path.join(ROOT, "build", "sqlrun")
DOCS = ["README.md", os.path.join("docs", "reference.md"), os.path.join("docs", "flower-strategies.md")]


def examples():
    """(file, line, block) for every ```sql block of every file in DOCS."""
    for doc in DOCS:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        found = 0
        for m in re.finditer(r"```sql( norun)?\n(.*?)```", text, re.S):
            found += 1
            if m.group(1):
                continue
            line = text.count("\n", 0, m.start()) + 1
            yield doc, line, m.group(2)
        assert found, f"no ```sql examples in {doc}"


def parse_block(block):
    """[(statement, [expected lines])]"""
    out, stmt, expect = [], [], None
    for raw in block.splitlines():
        if raw.startswith("-- "):
            if expect is not None:
                expect.append(raw[3:])
            continue
        if raw.strip() == "":
            continue
        if expect is not None and stmt == []:
            pass
        stmt.append(raw)
        if raw.rstrip().endswith(";"):
            expect = []
            out.append(("\n".join(stmt), expect))
            stmt = []
    return out


def test_readme_examples_run():
    checked = 0
    failures = []
    per_doc = dict.fromkeys(DOCS, 0)
    for doc, line, block in examples():
        pairs = parse_block(block)
        script = "\n".join(s for s, _ in pairs) + "\n"
        res = subprocess.run([SQLRUN, "-e", EXT, "-"], input=script.encode(), cwd=ROOT, capture_output=True, timeout=60)
        got = res.stdout.decode("utf-8", "replace").splitlines()
        # split the host output back into statements ("> " lines start each)
        outputs = []
        for g in got:
            if g.startswith("> "):
                outputs.append([])
            elif outputs and not (g.startswith("  ") and False):
                outputs[-1].append(g)
        # continuation lines of multi-line statements are echoed too; drop them
        stmt_lines = [len(s.splitlines()) for s, _ in pairs]
        cleaned = []
        for n, out in zip(stmt_lines, outputs):
            cleaned.append(out[n - 1 :])
        if len(cleaned) != len(pairs):
            failures.append(f"{doc} line {line}: ran {len(cleaned)} statements, expected {len(pairs)}")
            continue
        for (stmt, expect), out in zip(pairs, cleaned):
            checked += 1
            per_doc[doc] += 1
            if not expect and any(o.startswith("error:") for o in out):
                failures.append(f"{doc} line {line}: {stmt!r} failed: {out}")
            if expect and out != expect:
                failures.append(f"{doc} line {line}: {stmt!r}\n    expected {expect}\n    got      {out}")
    assert not failures, "\n".join(failures)
    assert checked > 0, "no examples found"
    assert all(per_doc.values()), f"examples run per file: {per_doc}"


def test_readme_python_examples_run():
    """The ```python blocks run as written (database in a temporary folder)."""
    import tempfile

    blocks = []
    for doc in DOCS:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        blocks += [(doc, code) for code in re.findall(r"```python\n(.*?)```", text, re.S)]
    assert blocks, "no python examples in README"
    for doc, code in blocks:
        code = code.replace('"./build/arrayrecord"', repr(EXT))
        with tempfile.TemporaryDirectory() as tmp:
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                exec(compile(code, doc, "exec"), {"__name__": "readme"})
            finally:
                os.chdir(cwd)
