# SPDX-License-Identifier: Apache-2.0
"""The `export` command of python -m sqlite_arrayrecord:

    export mlflow DB [--run NAME] [--tracking-uri URI] [--experiment NAME]
    export tensorboard DB --logdir DIR [--run NAME]

Prints a line per run exported; a missing tool is named with the extra
that installs it (exit status 1), as are a missing database and an
unknown run."""

import sys

INSTALL = {
    "mlflow": "pip install 'sqlite-arrayrecord[mlflow]' (mlflow-skinny)",
    "tensorboard": "pip install 'sqlite-arrayrecord[tensorboard]'",
}


def add_parser(sub):
    export = sub.add_parser(
        "export", help="hand logged runs to MLflow or TensorBoard", description="Export logged runs."
    )
    tools = export.add_subparsers(dest="tool", metavar="TOOL", required=True)
    m = tools.add_parser("mlflow", help="one MLflow run per logged run", description="Export logged runs to MLflow.")
    m.add_argument("db", metavar="DB", help="the database LoggingStrategy wrote")
    m.add_argument("--run", metavar="NAME", help="export this run only (default: every run)")
    m.add_argument(
        "--tracking-uri", metavar="URI", help="MLflow's tracking URI (default: MLFLOW_TRACKING_URI, or MLflow's own)"
    )
    m.add_argument(
        "--experiment", metavar="NAME", help="the MLflow experiment (made when missing; default: MLflow's default one)"
    )
    t = tools.add_parser(
        "tensorboard", help="one TensorBoard run per logged run", description="Export logged runs to TensorBoard."
    )
    t.add_argument("db", metavar="DB", help="the database LoggingStrategy wrote")
    t.add_argument(
        "--logdir", metavar="DIR", required=True, help="TensorBoard's log directory (runs go to DIR/<run name>)"
    )
    t.add_argument("--run", metavar="NAME", help="export this run only (default: every run)")


def run(args, parser):
    try:
        if args.tool == "mlflow":
            from .mlflow import to_mlflow

            done = to_mlflow(args.db, args.run, tracking_uri=args.tracking_uri, experiment=args.experiment)
            for d in done:
                how = "new" if d["created"] else "updated"
                print(
                    f"{d['name']}: MLflow run {d['mlflow_run_id']} ({how}; {d['params']} parameters, {d['metrics']} metric points sent)"
                )
        else:
            from .tensorboard import to_tensorboard

            done = to_tensorboard(args.db, args.logdir, args.run)
            for d in done:
                print(f"{d['name']}: {d['path']} ({d['scalars']} scalar points, {d['histograms']} histograms)")
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        if top in INSTALL:
            print(f"export {args.tool}: {top} is not installed: {INSTALL[top]}", file=sys.stderr)
            return 1
        raise
    except (FileNotFoundError, ValueError) as e:
        print(f"export {args.tool}: {e}", file=sys.stderr)
        return 1
    return 0
