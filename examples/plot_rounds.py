# SPDX-License-Identifier: Apache-2.0
"""Plot how far each layer moved per round, from a tracking database made
with sql/schema.sql (for instance by examples/flower_log.py).

For every round, the mean over clients of the L2 norm of each layer's
update (client model minus the global model it started from — the
layer_update_norms view), one line per layer, plus the mean over clients
of the whole-model update norm. Writes a PNG.

    /usr/bin/python3 examples/plot_rounds.py --db runs.db --out rounds.png [--run 1]
"""

import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display needed
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

try:
    import sqlite_arrayrecord as sar
except ImportError:  # not installed: the package's source in this checkout, with build/arrayrecord.so from make
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
    import sqlite_arrayrecord as sar

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sql")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default="flower_runs.db")
    ap.add_argument("--out", default="rounds.png")
    ap.add_argument("--run", type=int, help="run id (default: the latest run)")
    args = ap.parse_args(argv)

    con = sar.connect(args.db)
    with open(os.path.join(SQL_DIR, "views.sql"), encoding="utf-8") as f:
        con.executescript(f.read())  # CREATE VIEW IF NOT EXISTS: harmless if present
    run = args.run or con.execute("SELECT max(run) FROM runs").fetchone()[0]
    if run is None:
        print(f"{args.db} has no runs", file=sys.stderr)
        return 1
    name = con.execute("SELECT name FROM runs WHERE run = ?", (run,)).fetchone()[0]

    layers = {}
    for key, rnd, norm in con.execute(
        """
            SELECT key, round, avg(update_norm) FROM layer_update_norms
            WHERE run = ? GROUP BY key, round ORDER BY key, round""",
        (run,),
    ):
        layers.setdefault(key, ([], []))
        layers[key][0].append(rnd)
        layers[key][1].append(norm)
    whole = con.execute(
        """SELECT round, avg(update_norm) FROM client_update_stats
                           WHERE run = ? GROUP BY round ORDER BY round""",
        (run,),
    ).fetchall()

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
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}: {len(layers)} layers over {len(whole)} rounds of run {run}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
