#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Line and branch coverage of src/ from a --coverage build (make coverage).

Every test host is built from the sources directly, so each has its own
.gcno/.gcda per source file; this runs gcov on all of them under the build
directory and merges the counts per source line (a line or branch counts as
covered when any host covered it). Needs only gcc's gcov.

Usage: tests/coverage.py BUILD_DIR [--min-lines P] [--min-branches P]
Prints a table per file, the total, and every uncovered line and branch
("src/codec/npy.c:123 line" / "src/codec/npy.c:130 branch 2 of 4") to BUILD_DIR/uncovered.txt.
Exits 1 when a --min threshold is not met.
"""

import collections
import glob
import os
import subprocess
import sys


def gcov_text(gcno):
    res = subprocess.run(["gcov", "-b", "-c", "-t", gcno], capture_output=True, text=True)
    return res.stdout


def merge(build):
    lines = collections.defaultdict(dict)  # file -> line -> max count (or None: not code)
    branches = collections.defaultdict(dict)  # file -> (line, index) -> taken?
    for gcno in sorted(glob.glob(os.path.join(build, "**", "*.gcno"), recursive=True)):
        source, line, index = None, 0, 0
        for raw in gcov_text(gcno).splitlines():
            if raw.startswith("branch "):
                if source:
                    parts = raw.split()
                    taken = len(parts) >= 4 and parts[2] == "taken" and int(parts[3]) > 0
                    key = (line, index)
                    branches[source][key] = branches[source].get(key, False) or taken
                    index += 1
                continue
            if raw.startswith(("call ", "function ")):
                continue
            fields = raw.split(":", 2)
            if len(fields) < 3:
                continue
            count, num = fields[0].strip(), fields[1].strip()
            if num == "0":
                if fields[2].startswith("Source:"):
                    path = os.path.normpath(fields[2][len("Source:") :])
                    source = path if path.startswith("src" + os.sep) else None
                continue
            if not source:
                continue
            line, index = int(num), 0
            if count == "-":
                continue
            hits = 0 if count.startswith(("#", "=")) else int(count.rstrip("*"))
            lines[source][line] = max(lines[source].get(line, 0), hits)
    return lines, branches


def pct(a, b):
    return 100.0 * a / b if b else 100.0


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    build = args[0]
    min_lines = float(args[args.index("--min-lines") + 1]) if "--min-lines" in args else 0
    min_branches = float(args[args.index("--min-branches") + 1]) if "--min-branches" in args else 0
    lines, branches = merge(build)
    if not lines:
        print("coverage: no .gcno files under %s (build with --coverage first)" % build)
        return 2
    total = [0, 0, 0, 0]
    uncovered = []
    print("%-28s %8s %7s %10s %7s" % ("file", "lines", "%", "branches", "%"))
    for src in sorted(lines):
        l_all = len(lines[src])
        l_hit = sum(1 for c in lines[src].values() if c > 0)
        b_all = len(branches[src])
        b_hit = sum(1 for t in branches[src].values() if t)
        total = [total[0] + l_hit, total[1] + l_all, total[2] + b_hit, total[3] + b_all]
        print(
            "%-34s %4d/%-4d %6.1f%% %5d/%-5d %6.1f%%"
            % (src, l_hit, l_all, pct(l_hit, l_all), b_hit, b_all, pct(b_hit, b_all))
        )
        for ln in sorted(n for n, c in lines[src].items() if c == 0):
            uncovered.append("%s:%d line" % (src, ln))
        per_line = collections.Counter(ln for ln, _ in branches[src])
        for (ln, idx), taken in sorted(branches[src].items()):
            if not taken:
                uncovered.append("%s:%d branch %d of %d" % (src, ln, idx + 1, per_line[ln]))
    lp, bp = pct(total[0], total[1]), pct(total[2], total[3])
    print("%-34s %4d/%-4d %6.1f%% %5d/%-5d %6.1f%%" % ("TOTAL", total[0], total[1], lp, total[2], total[3], bp))
    out = os.path.join(build, "uncovered.txt")
    with open(out, "w") as f:
        f.write("\n".join(uncovered) + "\n")
    print("uncovered lines and branches: %s" % out)
    if lp < min_lines or bp < min_branches:
        print(
            "coverage below the minimum (lines %.1f%% < %.1f%% or branches %.1f%% < %.1f%%)"
            % (lp, min_lines, bp, min_branches)
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
