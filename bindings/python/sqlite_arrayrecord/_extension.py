# SPDX-License-Identifier: Apache-2.0
"""Loading the extension: loadable_path(), load(conn), connect(path), and
register() for the sqlite3 adapters and converters of NumPy values.
"""

import os
import sqlite3

import numpy as np

from .npy import from_npy, to_npy
from .record import from_record

__all__ = ["loadable_path", "load", "connect", "register", "ExtensionLoadingUnavailable"]

_HERE = os.path.dirname(os.path.abspath(__file__))


class ExtensionLoadingUnavailable(RuntimeError):
    """This Python's sqlite3 module cannot load SQLite extensions."""


def loadable_path():
    """Path of the extension library (arrayrecord.so), for conn.load_extension(),
    `sqlite-utils --load-extension=`, Node's db.loadExtension() or the sqlite3
    shell's `.load`.

    The AR_EXTENSION environment variable, when set, names another build (the
    tests use it). Otherwise the library installed inside this package; when
    the package runs from a checkout's bindings/python without being installed,
    the checkout's build/arrayrecord.so (from `make`)."""
    env = os.environ.get("AR_EXTENSION")
    if env:
        return env
    for path in (
        os.path.join(_HERE, "arrayrecord.so"),
        os.path.normpath(os.path.join(_HERE, "..", "..", "..", "build", "arrayrecord.so")),
    ):
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        "sqlite_arrayrecord: the extension library is missing: install the package "
        "(pip install ./bindings/python) or run `make` in the repository to build build/arrayrecord.so"
    )


def load(conn):
    """Load the extension into an open connection (sqlite3, or any module with
    the same API such as pysqlite3). Extension loading is switched on for the
    call only. Raises ExtensionLoadingUnavailable when this Python's sqlite3
    was built without extension loading."""
    if not hasattr(conn, "enable_load_extension"):
        raise ExtensionLoadingUnavailable(
            "sqlite_arrayrecord.load: this Python's sqlite3 module was built without extension loading "
            "(its Connection has no enable_load_extension; pyenv and the macOS system Python build it that "
            "way), so no SQLite extension can be loaded into it. Use a Python whose sqlite3 can: Debian's "
            "/usr/bin/python3, python.org or conda builds, or a pyenv Python rebuilt with "
            "PYTHON_CONFIGURE_OPTS='--enable-loadable-sqlite-extensions' pyenv install <version>; or the "
            "pysqlite3 module (connect with pysqlite3.dbapi2 and pass the connection to load()). "
            "to_record, from_record, to_npy and from_npy work without the extension."
        )
    conn.enable_load_extension(True)
    try:
        conn.load_extension(loadable_path())
    finally:
        conn.enable_load_extension(False)


def connect(path=":memory:", **kw):
    """sqlite3.connect(path, **kw) with the extension loaded and the NumPy
    adapters registered (see register()). detect_types defaults to
    sqlite3.PARSE_DECLTYPES, so columns declared NPY come back as ndarrays
    and columns declared ARRAYRECORD as {key: ndarray} dicts."""
    kw.setdefault("detect_types", sqlite3.PARSE_DECLTYPES)
    register()
    conn = sqlite3.connect(path, **kw)
    try:
        load(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def register():
    """Register sqlite3 adapters and converters (process-wide, as sqlite3's are):
    an ndarray binds as its .npy BLOB (to_npy), NumPy integer and float
    scalars bind as INTEGER and REAL; with detect_types=PARSE_DECLTYPES a
    column declared NPY reads back through from_npy and one declared
    ARRAYRECORD through from_record."""
    sqlite3.register_adapter(np.ndarray, to_npy)
    for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_):
        sqlite3.register_adapter(t, int)
    for t in (np.float16, np.float32, np.float64):
        sqlite3.register_adapter(t, float)
    sqlite3.register_converter("NPY", from_npy)
    sqlite3.register_converter("ARRAYRECORD", from_record)
