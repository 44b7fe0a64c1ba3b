# SPDX-License-Identifier: Apache-2.0
"""Runs the Datasette plugin's tests: every test_* function in
tests/datasette/test_*.py, with the interpreter of the Datasette environment
(build/datasette/bin/python, made by `make datasette-env`: Datasette 0.65.5,
selenium and flwr 1.42.0 from PyPI, this package editable).

Prints the versions it runs against, then one line per test for tests/run to
count, as tests/python/runner.py does (whose main() it reuses). The tests
talk to Datasette in process (datasette.app.Datasette(...).client) over
the database tests/datasette/fixture.py writes.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import runner  # noqa: E402  (tests/python/runner.py)


def versions():
    import datasette.version
    import flwr
    import numpy

    return (
        f"Datasette {datasette.version.__version__}, flwr {flwr.__version__}, NumPy {numpy.__version__}, "
        f"Python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    try:
        print("running against " + versions())
    except ImportError as e:
        print(f"FAIL datasette/environment: {e}: run 'make datasette-env'")
        sys.exit(1)
    sys.exit(runner.main(folder=HERE, group="datasette"))
