# SPDX-License-Identifier: Apache-2.0
"""The Flower environment is the one the tests claim: flwr 1.42.0 on NumPy 2,
our package imported from this checkout, the extension from build/."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_versions():
    import flwr
    import numpy

    assert flwr.__version__ == "1.42.0", flwr.__version__
    assert int(numpy.__version__.split(".")[0]) >= 2, numpy.__version__


def test_package_is_the_checkout():
    import sqlite_arrayrecord as sar

    assert os.path.dirname(sar.__file__) == os.path.join(ROOT, "bindings", "python", "sqlite_arrayrecord")
    con = sar.connect()
    assert con.execute("SELECT ar_keys(?)", (sar.to_record({"w": [1.0]}),)).fetchone()[0] == '["w"]'
