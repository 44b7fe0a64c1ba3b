# SPDX-License-Identifier: Apache-2.0
"""Runs the tracking tests: every test_* function in tests/tracking/test_*.py
(the MLflow and TensorBoard exporters against the real tools, the notebook
rows of a real logged run, the docs' ```python tracking blocks), with the
interpreter of the tracking environment (build/tracking/bin/python, made by
`make tracking-env`: MLflow 3.17.2, TensorBoard 2.21.0 and flwr 1.42.0 from
PyPI, this package editable).

Prints the versions it runs against, then one line per test for tests/run
to count, as tests/python/runner.py does (its main_in_environment())."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import runner  # noqa: E402  (tests/python/runner.py)


def versions():
    import flwr
    import mlflow
    import tensorboard

    return (
        f"MLflow {mlflow.__version__}, TensorBoard {tensorboard.__version__}, flwr {flwr.__version__}, "
        f"Python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    sys.exit(runner.main_in_environment(HERE, "tracking", versions, "tracking-env"))
