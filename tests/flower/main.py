# SPDX-License-Identifier: Apache-2.0
"""Runs the tests of real Flower: every test_* function in tests/flower/test_*.py,
with the interpreter of the Flower environment (build/flwr/bin/python, made by
`make flower-env`: flwr 1.42.0 and NumPy 2 from PyPI, this package editable).

Prints the flwr and NumPy versions it runs against, then one line per test
for tests/run to count, as tests/python/runner.py does (its
main_in_environment(); tests here may import tests/python's helpers such as
arlib).
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "python"))

import runner  # noqa: E402  (tests/python/runner.py)


def versions():
    import flwr
    import numpy

    return f"flwr {flwr.__version__}, NumPy {numpy.__version__}, Python {sys.version.split()[0]}"


if __name__ == "__main__":
    sys.exit(runner.main_in_environment(HERE, "flower", versions, "flower-env"))
