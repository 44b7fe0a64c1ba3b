# SPDX-License-Identifier: Apache-2.0
"""Small glue between NumPy and the arrayrecord SQLite extension.

    import arsqlite
    con = arsqlite.connect("runs.db")       # sqlite3 connection, extension loaded
    con.execute("SELECT npy_shape(?)", (np.zeros((2, 3)),))   # ndarrays bind as .npy BLOBs

Registers a sqlite3 adapter so NumPy arrays bind directly as .npy BLOBs
(np.save, exactly what Flower's Array(ndarray) stores), and a converter so
columns declared NPY come back as arrays (with detect_types, which connect()
turns on). Without this module, loading the extension is two lines:

    con.enable_load_extension(True)
    con.load_extension("./build/arrayrecord")   # or "arrayrecord" after make install
"""
import io
import os
import sqlite3

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# The build in this checkout, unless AR_EXTENSION says otherwise; after
# `make install` the short name "arrayrecord" works too.
EXTENSION = os.environ.get("AR_EXTENSION", os.path.join(HERE, "..", "build", "arrayrecord"))


def to_npy(arr):
    """ndarray -> .npy bytes (numpy.save, never pickled)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(arr), allow_pickle=False)
    return buf.getvalue()


def from_npy(blob):
    """.npy bytes -> ndarray (numpy.load, never unpickles)."""
    return np.load(io.BytesIO(blob), allow_pickle=False)


sqlite3.register_adapter(np.ndarray, to_npy)
sqlite3.register_converter("NPY", from_npy)


def connect(path, extension=EXTENSION):
    con = sqlite3.connect(path, detect_types=sqlite3.PARSE_DECLTYPES)
    con.enable_load_extension(True)
    con.load_extension(extension)
    con.enable_load_extension(False)
    return con


def record_from_arrays(con, arrays):
    """A Flower ArrayRecord BLOB from {key: ndarray}, in dict order."""
    args = []
    for key, value in arrays.items():
        args += [key, np.asarray(value)]
    placeholders = ", ".join("?" for _ in args)
    return con.execute(f"SELECT ar({placeholders})", args).fetchone()[0]


def arrays_from_record(con, rec):
    """{key: ndarray} from a record BLOB, in record order."""
    rows = con.execute("SELECT key, ar_get(?1, key) FROM array_record(?1)", (rec,)).fetchall()
    return {key: from_npy(blob) for key, blob in rows}
