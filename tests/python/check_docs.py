# SPDX-License-Identifier: Apache-2.0
"""Every SQL function and table the extension registers is documented in
docs/reference.md, and every documented one exists.

Run by make test (tests/python/test_docs.py) and `make doccheck`. For each
registered name (functions from pragma_function_list, tables from
pragma_module_list, minus what SQLite itself has) docs/reference.md must hold
an entry: a "#### " heading, under one of its "### " groups, naming
"`name(...)`" (one heading may name several), whose text has an example (a
```sql block, which tests/python/test_readme.py runs) and says which errors
it raises (the word "Error"/"error" in the entry). Headings naming nothing
registered are reported too.

The documents stay navigable: the contents list of README.md (its "## "
sections) and of docs/reference.md (its "### " groups and "#### " entries)
names every heading in order, and every relative link in README.md,
every docs/*.md page, CONTRIBUTING.md, bench/README.md and
bindings/python/README.md leads to a file that
exists and, for "file.md#anchor", to a heading of that file (anchors as
GitHub makes them). Needs no NumPy.
"""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_hardening import ROOT, registered  # noqa: E402

REFERENCE = os.path.join("docs", "reference.md")


def reference_entries():
    """{name: [entry text]} from the #### entries of docs/reference.md."""
    with open(os.path.join(ROOT, REFERENCE), encoding="utf-8") as f:
        text = f.read()
    start = re.search(r"^### ", text, re.M)
    if start is None:
        return {}
    ref = text[start.start() :]
    entries = {}
    heads = list(re.finditer(r"^#### .*$", ref, re.M))
    for i, m in enumerate(heads):
        body = ref[m.end() : heads[i + 1].start() if i + 1 < len(heads) else len(ref)]
        body = re.split(r"^#{2,3} ", body, flags=re.M)[0]
        # one heading may document several functions: "#### `a(x)`, `b(x)`"
        for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)\(", m.group(0)):
            entries.setdefault(name, []).append(body)
    return entries


# Documents whose relative links are checked: every page under docs/ (found,
# not listed, so a new page is checked from its first commit) and these.
LINKED = [
    "README.md",
    "CONTRIBUTING.md",
    os.path.join("bench", "README.md"),
    os.path.join("bindings", "python", "README.md"),
]
LINKED += sorted(os.path.join("docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))


def github_anchor(title):
    """The anchor GitHub gives a heading: its text lower-cased, without
    punctuation other than '-' and '_', spaces made '-'."""
    text = title.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def prose_lines(text):
    """(line number, line) outside ``` fenced blocks."""
    fenced = False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def headings(text):
    """[(level, title, anchor)] in order; repeated anchors get -1, -2, ..."""
    out, seen = [], {}
    for _, line in prose_lines(text):
        m = re.match(r"^(#{1,6}) (.*?)\s*$", line)
        if not m:
            continue
        anchor = github_anchor(m.group(2))
        count = seen.get(anchor, 0)
        seen[anchor] = count + 1
        out.append((len(m.group(1)), m.group(2), "%s-%d" % (anchor, count) if count else anchor))
    return out


def read(doc):
    with open(os.path.join(ROOT, doc), encoding="utf-8") as f:
        return f.read()


def contents_problems():
    """The contents lists name every heading they cover, in order."""
    problems = []
    for doc, levels, first in [("README.md", (2,), 2), (REFERENCE, (3, 4), 3)]:
        before = len(problems)
        text = read(doc)
        want = [
            (level - first, anchor)
            for level, title, anchor in headings(text)
            if level in levels and title != "Contents"
        ]
        got = [
            (len(m.group(1)) // 2, m.group(2))
            for _, line in prose_lines(text)
            for m in [re.match(r"^( *)- \[.*?\]\(#([^)]*)\)", line)]
            if m
        ]
        for depth, anchor in want:
            if (depth, anchor) not in got:
                problems.append("%s: contents list has no '%s- [...](#%s)'" % (doc, "  " * depth, anchor))
        for depth, anchor in got:
            if (depth, anchor) not in want:
                problems.append("%s: contents list names '#%s', not a heading there" % (doc, anchor))
        if len(problems) == before and got != want:
            problems.append("%s: contents list is not in the order of the headings" % doc)
    return problems


def link_problems():
    """Relative links lead to files that exist and to headings in them."""
    problems = []
    for doc in LINKED:
        for n, line in prose_lines(read(doc)):
            for target in re.findall(r"\]\(([^)\s]+)\)", re.sub(r"`[^`]*`", "", line)):
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(doc), path)) if path else doc
                where = "%s line %d: link %s" % (doc, n, target)
                if not os.path.exists(os.path.join(ROOT, dest)):
                    problems.append("%s: no file %s" % (where, dest))
                elif anchor and dest.endswith(".md") and anchor not in {a for _, _, a in headings(read(dest))}:
                    problems.append("%s: no heading #%s in %s" % (where, anchor, dest))
    return problems


def main():
    fns, mods = registered()
    names = sorted({n for n, *_ in fns} | set(mods))
    entries = reference_entries()
    problems = contents_problems() + link_problems()
    for name in names:
        if name not in entries:
            problems.append("%s: no '#### `%s(...)`' entry in docs/reference.md" % (name, name))
            continue
        body = "\n".join(entries[name])
        if "```sql" not in body:
            problems.append("%s: entry has no ```sql example" % name)
        if "rror" not in body:
            problems.append("%s: entry does not say what errors it raises" % name)
    for name in sorted(set(entries) - set(names)):
        problems.append("%s: documented but not registered" % name)
    for p in problems:
        print("  " + p)
    documented = len([n for n in names if n in entries])
    print(
        "%s docs: %d of %d registered functions and tables documented, %d problem(s)"
        % ("ok" if not problems else "FAIL", documented, len(names), len(problems))
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
