"""Every SQL function and table the extension registers is documented in
docs/reference.md, and every documented one exists.

Run by make test (tests/python/test_docs.py) and `make doccheck`. For each
registered name (functions from pragma_function_list, tables from
pragma_module_list, minus what SQLite itself has) docs/reference.md must hold
an entry: a "#### " heading, under one of its "### " groups, naming
"`name(...)`" (one heading may name several), whose text has an example (a
```sql block, which tests/python/test_readme.py runs) and says which errors
it raises (the word "Error"/"error" in the entry). Headings naming nothing
registered are reported too. Needs no NumPy.
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
    ref = text[start.start():]
    entries = {}
    heads = list(re.finditer(r"^#### .*$", ref, re.M))
    for i, m in enumerate(heads):
        body = ref[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(ref)]
        body = re.split(r"^#{2,3} ", body, flags=re.M)[0]
        # one heading may document several functions: "#### `a(x)`, `b(x)`"
        for name in re.findall(r"`([A-Za-z_][A-Za-z0-9_]*)\(", m.group(0)):
            entries.setdefault(name, []).append(body)
    return entries


def main():
    fns, mods = registered()
    names = sorted({n for n, *_ in fns} | set(mods))
    entries = reference_entries()
    problems = []
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
    print("%s docs: %d of %d registered functions and tables documented, %d problem(s)"
          % ("ok" if not problems else "FAIL", documented, len(names), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
