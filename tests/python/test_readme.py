# SPDX-License-Identifier: Apache-2.0
"""Every example in README.md and docs/*.md runs and prints what the text
says (a page added to docs/ is read by itself: the list is a glob).

An example is a ```sql block; each statement is followed by the lines it
prints, written as comments:

    SELECT npy_shape(npy_from_json('[[1,2],[3,4]]'));
    -- [2,2]

Several rows are several comment lines; an error is "-- error: message".
A block whose fence says ```sql norun is not run. Statements of one block
share one database, in order. The statements run in build/sqlrun (the
golden-test host), so the formatting is the one tests/sql uses.

A ```python block runs here, with Debian's python3 (no Flower). Its fence
names its kind: ```python norun is not run; ```python flower is Flower code,
run against flwr 1.42 by tests/flower/test_readme_flower.py; ```python
datasette is code of the Datasette plugin, run with Datasette 0.65 by
tests/datasette/test_docs_datasette.py; ```python tracking is notebook and
exporter code, run with pandas, matplotlib, MLflow and TensorBoard by
tests/tracking/test_docs_tracking.py. Code that
imports flwr must be ```python flower, in README.md, docs/*.md and
bindings/python/README.md alike: Flower code never hides behind norun.
"""

import ast
import glob
import os
import re
import subprocess
import sys
import tempfile
import textwrap

from arlib import EXT, ROOT
from runner import Skip

# The blocks import the package from this checkout, installed or not.
if os.path.join(ROOT, "bindings", "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))

SQLRUN = os.path.join(ROOT, "build", "sqlrun")


def doc_files():
    """README.md and every docs/*.md page, as paths relative to the root."""
    pages = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
    return ["README.md"] + pages


DOCS = doc_files()
# These must have ```sql examples; a page added later is run if it has any.
SQL_DOCS = ["README.md", os.path.join("docs", "reference.md")]
# Where Flower code may appear: the documents above and the package's README.
FLOWER_DOCS = DOCS + [os.path.join("bindings", "python", "README.md")]
PYTHON_KINDS = ("", "norun", "flower", "datasette", "tracking")


def python_blocks(docs):
    """(doc, line, kind, code) for every ```python block of docs; kind is the
    rest of the fence line ('', 'norun', 'flower', ...)."""
    for doc in docs:
        with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
            text = f.read()
        for m in re.finditer(r"^([ \t]*)```python([^\n]*)\n(.*?)^[ \t]*```", text, re.S | re.M):
            line = text.count("\n", 0, m.start()) + 1
            yield doc, line, m.group(2).strip(), textwrap.dedent(m.group(3))


def run_block_in(doc, line, code, folder):
    """Runs a ```python block of doc (at line) in folder, its output captured,
    and checks that what each `print(...)  # expected` line says it prints,
    it prints."""
    import contextlib
    import io

    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile("\n" * line + code, os.path.join(ROOT, doc), "exec"), {"__name__": "docs"})
    finally:
        os.chdir(cwd)
    printed = out.getvalue().splitlines()
    for want in (m.group(1).strip() for m in re.finditer(r"^print\(.*\)  # (.*)$", code, re.M)):
        assert want in printed, (doc, line, want, printed)


def imports_flwr(code):
    """True if code imports flwr (any spelling); code that does not parse
    counts if it names flwr at all."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return re.search(r"\bflwr\b", code) is not None
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "flwr" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "flwr" and not node.level:
            return True
    return False


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
        assert found or doc not in SQL_DOCS, f"no ```sql examples in {doc}"


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
    per_doc = dict.fromkeys(SQL_DOCS, 0)
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
            per_doc[doc] = per_doc.get(doc, 0) + 1
            if not expect and any(o.startswith("error:") for o in out):
                failures.append(f"{doc} line {line}: {stmt!r} failed: {out}")
            if expect and out != expect:
                failures.append(f"{doc} line {line}: {stmt!r}\n    expected {expect}\n    got      {out}")
    assert not failures, "\n".join(failures)
    assert checked > 0, "no examples found"
    assert all(per_doc[d] for d in SQL_DOCS), f"examples run per file: {per_doc}"


def test_readme_python_examples_run():
    """The ```python blocks run as written (database in a temporary folder);
    ```python norun, flower and datasette blocks are not run here."""

    blocks, unknown = [], []
    for doc, line, kind, code in python_blocks(DOCS):
        if kind not in PYTHON_KINDS:
            unknown.append(f"{doc} line {line}: ```python {kind}")
        elif kind == "":
            blocks.append((doc, line, code))
    assert not unknown, (
        "unknown kinds of ```python block (known: " + ", ".join(map(repr, PYTHON_KINDS)) + "):\n" + "\n".join(unknown)
    )
    assert blocks, "no python examples in README"
    # tests/run names the library relative to the root; the blocks run elsewhere
    ext = os.environ["AR_EXTENSION"] = os.path.join(ROOT, EXT)
    for doc, line, code in blocks:
        code = code.replace('"./build/arrayrecord"', repr(ext))
        with tempfile.TemporaryDirectory() as tmp:
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                exec(compile("\n" * line + code, doc, "exec"), {"__name__": "readme"})
            finally:
                os.chdir(cwd)


def test_package_readme_python_examples_run():
    """The plain ```python blocks of bindings/python/README.md run as written
    (in a temporary folder); one that imports torch is a loud skip where
    torch is missing."""
    import contextlib
    import io

    doc = os.path.join("bindings", "python", "README.md")
    blocks = [(line, code) for _, line, kind, code in python_blocks([doc]) if kind == ""]
    assert blocks, "no python examples in " + doc
    ext = os.environ["AR_EXTENSION"] = os.path.join(ROOT, EXT)
    missing = []
    for line, code in blocks:
        if re.search(r"^import torch|^from torch", code, re.M):
            try:
                import torch  # noqa: F401
            except ImportError:
                missing.append(line)
                continue
        code = code.replace('"./build/arrayrecord"', repr(ext))
        with tempfile.TemporaryDirectory() as tmp:
            cwd = os.getcwd()
            os.chdir(tmp)
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    exec(compile("\n" * line + code, doc, "exec"), {"__name__": "readme"})
            finally:
                os.chdir(cwd)
        # what a `print(...)  # expected` line says it prints, it prints
        said = [m.group(1).strip() for m in re.finditer(r"^print\(.*\)  # (.*)$", code, re.M)]
        printed = out.getvalue().splitlines()
        for want in said:
            if not want.startswith("converted"):
                assert any(want in p for p in printed), (doc, line, want, printed)
    if missing:
        raise Skip(f"{doc}: the PyTorch example(s) at line(s) {missing} need torch: apt-get install -y python3-torch")


def test_flower_code_is_fenced_python_flower():
    """A ```python block that imports flwr is ```python flower (run against
    Flower by the flower group), never norun nor plain."""
    hidden = [
        f"{doc} line {line}: ```{' '.join(['python', kind]).strip()} imports flwr: fence it ```python flower"
        for doc, line, kind, code in python_blocks(FLOWER_DOCS)
        if kind != "flower" and imports_flwr(code)
    ]
    assert not hidden, "\n".join(hidden)
    # the detector itself: each spelling of a Flower import is seen
    for code in ("from flwr.app import ArrayRecord\n", "import flwr\n", "import numpy, flwr.common\n", "x = (\nflwr"):
        assert imports_flwr(code), code
    assert not imports_flwr("import flwrx\nfrom .flwr import y\n# flwr\n")
