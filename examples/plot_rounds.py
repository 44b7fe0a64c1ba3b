# SPDX-License-Identifier: Apache-2.0
"""Plot how far each layer moved per round, from a tracking database made
with sql/schema.sql (for instance by examples/flower_log.py).

For every round, the mean over clients of the L2 norm of each layer's
update (client model minus the global model it started from — the
layer_update_norms view), one line per layer, plus the mean over clients
of the whole-model update norm. Trained parameters only: PyTorch buffers
(BatchNorm's running statistics and counters, is_buffer in the view) are
left out unless --buffers is given. Writes a PNG.

One query reads each client update once, in the tables' own order (one
ar_compare pass per update against the model it started from), and the
means are taken here in Python: no GROUP BY or ORDER BY makes SQLite sort
rows carrying the models, so a run of large models (a resnet18 record is
45 MB) needs no temporary disk space. The whole-model norm of an update is
the root of the sum of its layers' squared norms, buffers included, as
client_update_stats' update_norm is: taken from the same rows rather than
from a second pass over every update.

    /usr/bin/python3 examples/plot_rounds.py --db runs.db --out rounds.png [--run 1] [--buffers]
"""

import argparse
import math
import os
import sys

try:
    import sqlite_arrayrecord as sar
except ImportError:  # not installed: the package's source in this checkout, with build/arrayrecord.so from make
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
    import sqlite_arrayrecord as sar

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sql")

# Per client update and layer: its update norm, rows in index order (no sort).
LAYER_NORMS = "SELECT key, round, client, update_norm, is_buffer FROM layer_update_norms WHERE run = ?"
QUERIES = (LAYER_NORMS,)


def install_views(con):
    """This checkout's sql/views.sql as TEMP views: they shadow views of the
    same names that the database may hold from an older views.sql, and
    nothing is written to it."""
    with open(os.path.join(SQL_DIR, "views.sql"), encoding="utf-8") as f:
        con.executescript(f.read().replace("CREATE VIEW IF NOT EXISTS", "CREATE TEMP VIEW IF NOT EXISTS"))


def means(rows):
    """{group: mean of values} from (group, value) pairs, groups in first-seen order."""
    acc = {}
    for group, value in rows:
        if value is not None:
            s, n = acc.get(group, (0.0, 0))
            acc[group] = (s + value, n + 1)
    return {g: s / n for g, (s, n) in acc.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default="flower_runs.db")
    ap.add_argument("--out", default="rounds.png")
    ap.add_argument("--run", type=int, help="run id (default: the latest run)")
    ap.add_argument("--buffers", action="store_true", help="plot PyTorch buffers (running_mean, ...) too")
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    con = sar.connect(args.db)
    install_views(con)
    run = args.run or con.execute("SELECT max(run) FROM runs").fetchone()[0]
    if run is None:
        print(f"{args.db} has no runs", file=sys.stderr)
        return 1
    name = con.execute("SELECT name FROM runs WHERE run = ?", (run,)).fetchone()[0]

    rows = con.execute(LAYER_NORMS, (run,)).fetchall()
    per_key = means(((key, rnd), norm) for key, rnd, _, norm, is_buffer in rows if args.buffers or not is_buffer)
    squares = {}  # (round, client): the update's squared norm, every layer
    layers = {}
    for (key, rnd), norm in per_key.items():
        layers.setdefault(key, ([], []))
        layers[key][0].append(rnd)
        layers[key][1].append(norm)
    for rounds, norms in layers.values():  # rows come round by round; sort each line anyway
        order = sorted(range(len(rounds)), key=rounds.__getitem__)
        rounds[:], norms[:] = [rounds[i] for i in order], [norms[i] for i in order]
    for _, rnd, client, norm, _ in rows:
        if norm is not None:
            squares[(rnd, client)] = squares.get((rnd, client), 0.0) + norm * norm
    whole = sorted(means((rnd, math.sqrt(sq)) for (rnd, _), sq in squares.items()).items())

    fig, ax = plt.subplots(figsize=(7, 4), dpi=100)
    for key, (rounds, norms) in layers.items():
        ax.plot(rounds, norms, marker="o", label=key)
    if whole:
        ax.plot([r for r, _ in whole], [n for _, n in whole], color="black", linestyle="--", label="whole model")
    ax.set_xlabel("round")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("mean L2 norm of client updates")
    ax.set_title(f"Per-layer update norms — run {run} ({name})")
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    if len(layers) <= 20:  # a resnet has 60 or more: the lines alone, then
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}: {len(layers)} layers over {len(whole)} rounds of run {run}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
