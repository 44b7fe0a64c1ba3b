# SPDX-License-Identifier: Apache-2.0
"""Logged runs handed to the tracking tools Flower users already keep their
metrics in, from the same database (docs/experiment-tracking.md#mlflow-and-tensorboard):

    from sqlite_arrayrecord.export import to_mlflow, to_tensorboard
    to_mlflow("runs.db", tracking_uri="http://127.0.0.1:5000")   # one MLflow run per logged run
    to_tensorboard("runs.db", "tb")                              # tb/<run name>/events.out.tfevents...

or from the shell, `python -m sqlite_arrayrecord export mlflow runs.db` and
`python -m sqlite_arrayrecord export tensorboard runs.db --logdir tb`.

One module a tool, each the only importer of it: mlflow (to_mlflow; the
[mlflow] extra, mlflow-skinny) and tensorboard (to_tensorboard; the
[tensorboard] extra); _source reads what both write, _cli is the `export`
subcommand. Importing this package imports neither tool: to_mlflow and
to_tensorboard import their module when first asked for.
"""

import importlib

__all__ = ["to_mlflow", "to_tensorboard"]
_HOME = {"to_mlflow": ".mlflow", "to_tensorboard": ".tensorboard"}


def __getattr__(name):
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
