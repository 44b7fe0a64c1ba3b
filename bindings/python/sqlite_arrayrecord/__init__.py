# SPDX-License-Identifier: Apache-2.0
"""sqlite_arrayrecord — Flower ArrayRecords and NumPy .npy arrays in SQLite.

The package ships the sqlite-arrayrecord loadable extension and the glue a
NumPy or PyTorch user needs around it:

    import sqlite_arrayrecord as sar
    con = sar.connect("runs.db")            # sqlite3 connection, extension loaded
    rec = sar.to_record({"w": np.ones((3, 2), np.float32)})   # Flower's ArrayRecord bytes
    con.execute("SELECT ar_keys(?)", (rec,))
    arrays = sar.from_record(rec)           # {"w": ndarray}

Loading:    loadable_path(), load(conn), connect(path, **kw)
Arrays:     to_npy(ndarray) -> bytes, from_npy(bytes) -> ndarray
Records:    to_record(mapping or list) -> bytes, from_record(blob, copy=True) -> dict
RecordDicts: to_recorddict({name: arrays | MetricRecord | ConfigRecord}) -> bytes,
            from_recorddict(blob, copy=True) -> dict
PyTorch:    from_state_dict(state_dict) -> bytes, to_state_dict(blob) -> dict of tensors;
            to_state_dict(blob, like=model.state_dict()) checks keys and shapes
            and casts to the model's dtypes (FedAvg's float64 counts -> int64,
            rounded to nearest)
sqlite3:    register() makes ndarrays bind as .npy BLOBs and converts columns
            declared NPY and ARRAYRECORD (connect() calls it).
Runs:       runs(db) -> one row per logged run (settings, final metrics, how it
            ended), rounds(db, run) -> one row per round (metrics, bytes,
            timings): tidy rows of a database LoggingStrategy wrote, a list
            of dicts or (frame=True) a pandas DataFrame

Records are built and read here in Python, byte-identical to the extension's
ar() and to Flower's serde; nothing is ever unpickled. The readers take
bytes (anything else is a TypeError naming the function) and, as the
extension's ar_valid does, refuse a NumPy item whose dtype or shape field
disagrees with its .npy header. Importing the package imports NumPy, never
torch.

The code lives in one module a job, and every name above can be imported
from its module too: _extension (loading, register), npy, record (with
NUMPY_STYPE and SAFETENSORS_STYPE), recorddict (with MetricRecord and
ConfigRecord), torch (which imports torch only when called), tracking
(runs, rounds), logcheck (check_log: a log LoggingStrategy wrote, checked),
store (pack_database, unpack_database, store_of, schema_script: the packed
and raw stores of sql/schema.sql), and _protobuf, the wire format record
and recorddict share.
"""

from ._extension import ExtensionLoadingUnavailable, connect, load, loadable_path, register
from .logcheck import check_log
from .npy import from_npy, to_npy
from .record import NUMPY_STYPE as NUMPY_STYPE  # constants, outside __all__ as they always were
from .record import SAFETENSORS_STYPE as SAFETENSORS_STYPE
from .record import from_record, to_record
from .recorddict import ConfigRecord, MetricRecord, from_recorddict, to_recorddict
from .store import pack_database, schema_script, store_of, unpack_database
from .torch import from_state_dict, to_state_dict
from .tracking import rounds, runs

__all__ = [
    "loadable_path",
    "load",
    "connect",
    "register",
    "ExtensionLoadingUnavailable",
    "to_npy",
    "from_npy",
    "to_record",
    "from_record",
    "from_state_dict",
    "to_state_dict",
    "to_recorddict",
    "from_recorddict",
    "MetricRecord",
    "ConfigRecord",
    "runs",
    "rounds",
    "check_log",
    "pack_database",
    "unpack_database",
    "store_of",
    "schema_script",
]


def _version():
    try:
        from importlib.metadata import version

        return version("sqlite-arrayrecord")
    except Exception:
        return "unknown"


__version__ = _version()
