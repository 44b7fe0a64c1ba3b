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
PyTorch:    from_state_dict(state_dict) -> bytes, to_state_dict(blob) -> dict of tensors
sqlite3:    register() makes ndarrays bind as .npy BLOBs and converts columns
            declared NPY and ARRAYRECORD (connect() calls it).

Records are built and read here in Python, byte-identical to the extension's
ar() and to Flower's serde; nothing is ever unpickled. Importing the package
imports NumPy, never torch.
"""

import ast
import io
import os
import sqlite3
import struct

import numpy as np

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
]

_HERE = os.path.dirname(os.path.abspath(__file__))
NUMPY_STYPE = "numpy.ndarray"
# Raw items for the dtypes NumPy lacks, as ar_from_safetensors stores them:
# stype "safetensors", dtype the safetensors name, little-endian bytes.
SAFETENSORS_STYPE = "safetensors"
_MAGIC = b"\x93NUMPY"
_NUMERIC_KINDS = "biufc"
_MAX_HEADER = 100_000  # NumPy itself refuses longer .npy headers by default


def _version():
    try:
        from importlib.metadata import version

        return version("sqlite-arrayrecord")
    except Exception:
        return "unknown"


__version__ = _version()


# --- loading the extension ---------------------------------------------------------


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


def _scalar_adapter(kind):
    return int if kind in "iub" else float


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


# --- .npy ---------------------------------------------------------------------------


def _npy_parts(arr, fname):
    """(.npy header bytes, payload as a flat uint8 view or copy) — what
    numpy.save writes for arr, in two pieces so records join them once."""
    arr = np.asanyarray(arr)
    if type(arr) is not np.ndarray:
        arr = np.asarray(arr)
    if arr.dtype.hasobject:
        raise ValueError(f"{fname}: object arrays would need pickling, which is never used")
    # numpy.save writes F-contiguous arrays in Fortran order, everything else in C order.
    fortran = bool(arr.flags.f_contiguous and not arr.flags.c_contiguous)
    ident = (arr.dtype, fortran, arr.shape)
    header = _NPY_HEADER_CACHE.get(ident)
    if header is None:
        d = np.lib.format.header_data_from_array_1_0(arr)
        out = io.BytesIO()
        try:
            np.lib.format.write_array_header_1_0(out, d)
        except ValueError:  # header longer than 65535 bytes: numpy.save switches to 2.0 too
            out = io.BytesIO()
            np.lib.format.write_array_header_2_0(out, d)
        header = out.getvalue()
        _cache(_NPY_HEADER_CACHE, ident, header)
    flat = arr.T if fortran else np.ascontiguousarray(arr)
    return header, flat.reshape(-1).view(np.uint8)


# Models repeat a few shapes many times: .npy headers are made and parsed once each.
_NPY_HEADER_CACHE, _HEADER_CACHE = {}, {}


def _cache(cache, key, value):
    if len(cache) >= 4096:
        cache.clear()
    cache[key] = value


def to_npy(arr):
    """ndarray (or anything np.asarray takes) -> .npy bytes, exactly what
    numpy.save writes (and Flower's Array(ndarray) stores). Object arrays are
    refused: nothing is ever pickled."""
    header, payload = _npy_parts(arr, "to_npy")
    return b"".join((header, payload))


def _describe(blob):
    """What a BLOB that is not a .npy file looks like, for error messages."""
    if len(blob) == 0:
        return "it is empty (the empty record?)"
    if blob[0] == 0x0A:
        return "it looks like an ArrayRecord (starts with protobuf field 1): use from_record"
    return f"it starts with {bytes(blob[:8])!r}"


def _parse_npy(mv, start, end, fname, where=""):
    """Parse the .npy file in mv[start:end]: (dtype, shape, fortran, payload offset)."""
    n = end - start
    if n < 10 or mv[start : start + 6] != _MAGIC:
        raise ValueError(f"{fname}: not a .npy file (no \\x93NUMPY magic; {_describe(mv[start:end])}){where}")
    major = mv[start + 6]
    if major == 1:
        hlen, hstart = int.from_bytes(mv[start + 8 : start + 10], "little"), start + 10
    elif major in (2, 3):
        if n < 12:
            raise ValueError(f"{fname}: .npy file truncated in its header{where}")
        hlen, hstart = int.from_bytes(mv[start + 8 : start + 12], "little"), start + 12
    else:
        raise ValueError(f"{fname}: unsupported .npy format version {major}.{mv[start + 7]}{where}")
    if hlen > _MAX_HEADER:
        raise ValueError(f"{fname}: .npy header of {hlen} bytes is too long{where}")
    if hstart + hlen > end:
        raise ValueError(f"{fname}: .npy file truncated in its header{where}")
    raw = (major == 3, bytes(mv[hstart : hstart + hlen]))
    parsed = _HEADER_CACHE.get(raw)
    if parsed is None:
        try:
            text = raw[1].decode("utf-8" if raw[0] else "latin1")
            d = ast.literal_eval(text)
        except Exception:
            raise ValueError(f"{fname}: .npy header is not a Python literal{where}") from None
        if (
            not isinstance(d, dict)
            or set(d) != {"descr", "fortran_order", "shape"}
            or not isinstance(d["descr"], str)
            or not isinstance(d["fortran_order"], bool)
            or not isinstance(d["shape"], tuple)
            or not all(type(x) is int and x >= 0 for x in d["shape"])
        ):
            raise ValueError(f"{fname}: malformed .npy header {text.strip()!r}{where}")
        parsed = (_numeric_dtype(d["descr"], fname, where), d["shape"], d["fortran_order"])
        _cache(_HEADER_CACHE, raw, parsed)
    return parsed + (hstart + hlen,)


def _numeric_dtype(name, fname, where):
    try:
        dtype = np.dtype(name)
    except Exception:
        dtype = None
    if dtype is None or dtype.kind not in _NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(f"{fname}: unsupported dtype {name!r} (not a NumPy numeric dtype){where}")
    return dtype


def _view(mv, dtype, shape, fortran, offset, end, fname, where, copy):
    count = 1
    for dim in shape:
        count *= dim
    if offset + count * dtype.itemsize > end:
        raise ValueError(
            f"{fname}: array data truncated: {end - offset} bytes, dtype and shape need {count * dtype.itemsize}{where}"
        )
    arr = np.frombuffer(mv, dtype, count, offset).reshape(shape, order="F" if fortran else "C")
    if copy:
        return arr.copy(order="K")
    arr.flags.writeable = False
    return arr


def from_npy(blob):
    """.npy bytes -> a new ndarray (None -> None). Object, string and
    structured dtypes are refused and nothing is unpickled; a record or any
    other BLOB gets an error saying what it looks like."""
    if blob is None:
        return None
    mv = memoryview(blob).cast("B")
    dtype, shape, fortran, offset = _parse_npy(mv, 0, len(mv), "from_npy")
    return _view(mv, dtype, shape, fortran, offset, len(mv), "from_npy", "", True)


# --- records (Flower's ArrayRecord protobuf) ----------------------------------------


def _varint(v):
    if v < 0x80:
        return bytes((v,))
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _item_parts(key, dtype, shape, stype, data_len, fname):
    """The framing of one record item up to its data bytes:
    Item { string key = 1; Array value = 2 } with
    Array { string dtype = 1; repeated int32 shape = 2 [packed]; string stype = 3; bytes data = 4 },
    fields in number order and defaults omitted, as Flower's serde writes them."""
    for dim in shape:
        if dim > 0x7FFFFFFF:
            raise ValueError(f"{fname}: dimension {dim} of {key!r} does not fit Flower's int32 shape")
    k, dt, st = key.encode("utf-8"), dtype.encode("utf-8"), stype.encode("utf-8")
    head = b""
    if dt:
        head += b"\x0a" + _varint(len(dt)) + dt
    if shape:
        packed = b"".join(_varint(d) for d in shape)
        head += b"\x12" + _varint(len(packed)) + packed
    if st:
        head += b"\x1a" + _varint(len(st)) + st
    if data_len:
        head += b"\x22" + _varint(data_len)
    value_len = len(head) + data_len
    item = (b"\x0a" + _varint(len(k)) + k if k else b"") + b"\x12" + _varint(value_len)
    item_len = len(item) + value_len
    return b"\x0a" + _varint(item_len) + item + head


def _items_of(arrays, fname):
    if isinstance(arrays, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(arrays)]
    if hasattr(arrays, "items"):
        out = list(arrays.items())
        for key, _ in out:
            if not isinstance(key, str):
                raise TypeError(f"{fname}: keys must be str, not {type(key).__name__}")
        return out
    raise TypeError(f"{fname}: expected a mapping of names to arrays or a list of arrays, not {type(arrays).__name__}")


def _build(items, fname):
    """items: (key, ndarray) or (key, (dtype, shape, stype, data bytes))."""
    # One copy of every payload, straight into the result.
    return b"".join(_build_pieces(items, fname))


def _build_pieces(items, fname):
    """The record's bytes as a list of pieces (framing, .npy headers, payload views)."""
    pieces, seen = [], set()
    for key, value in items:
        if key in seen:
            raise ValueError(f"{fname}: duplicate key {key!r}")
        seen.add(key)
        if isinstance(value, tuple):
            dtype, shape, stype, data = value
            pieces += [_item_parts(key, dtype, shape, stype, len(data), fname), data]
            continue
        arr = np.asarray(value)
        header, payload = _npy_parts(arr, fname)
        pieces += [
            _item_parts(key, str(arr.dtype), arr.shape, NUMPY_STYPE, len(header) + payload.nbytes, fname),
            header,
            payload,
        ]
    return pieces


def to_record(arrays):
    """Flower ArrayRecord bytes from a mapping of names to ndarrays (in its
    order), or from a list of arrays (keys "0", "1", ...). Any number of
    arrays. The bytes are those the extension's ar() and Flower's serde write
    for the same arrays: dtype str(arr.dtype), stype "numpy.ndarray", data the
    numpy.save bytes."""
    return _build(_items_of(arrays, "to_record"), "to_record")


def _read_varint(mv, pos, end, fname, where):
    value = shift = 0
    while True:
        if pos >= end:
            raise ValueError(f"{fname}: record blob truncated at byte {pos}{where}")
        b = mv[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift >= 64:
            raise ValueError(f"{fname}: varint too long at byte {pos}{where}")


def _fields(mv, pos, end, fname, where, fixed=False):
    """(field number, wire type, value or (start, end) of the bytes) of each field;
    fixed-width fields are skipped unless fixed=True (then their (start, end))."""
    while pos < end:
        at = pos
        tag, pos = _read_varint(mv, pos, end, fname, where)
        num, wt = tag >> 3, tag & 7
        if num == 0:  # no protobuf message has a field 0
            raise ValueError(f"{fname}: invalid field number 0 at byte {at}{where}")
        if wt == 2:
            n, pos = _read_varint(mv, pos, end, fname, where)
            if n > end - pos:
                raise ValueError(
                    f"{fname}: record blob truncated at byte {end} (a field of {n} bytes at byte {pos}){where}"
                )
            yield num, wt, (pos, pos + n)
            pos += n
        elif wt == 0:
            v, pos = _read_varint(mv, pos, end, fname, where)
            yield num, wt, v
        elif wt in (1, 5):
            size = 8 if wt == 1 else 4
            if size > end - pos:
                raise ValueError(f"{fname}: record blob truncated at byte {end}{where}")
            if fixed:
                yield num, wt, (pos, pos + size)
            pos += size
        elif wt == 3:
            start, pos = pos, _skip_group(mv, pos, end, num, fname, where)
            yield num, wt, (start, pos)  # an unknown field to every message here: callers skip it
        else:
            raise ValueError(f"{fname}: invalid protobuf wire type {wt} at byte {pos}{where}")


def _skip_group(mv, pos, end, num, fname, where):
    """The end of a (deprecated) group that starts at pos: protobuf parsers skip
    one in an unknown field, so the readers here do too."""
    open_groups = [num]
    while open_groups:
        if pos >= end:
            raise ValueError(f"{fname}: record blob truncated inside a group at byte {end}{where}")
        at = pos
        tag, pos = _read_varint(mv, pos, end, fname, where)
        n, wt = tag >> 3, tag & 7
        if n == 0:
            raise ValueError(f"{fname}: invalid field number 0 at byte {at}{where}")
        if wt == 4:
            if n != open_groups.pop():
                raise ValueError(f"{fname}: group ended with the wrong field number at byte {at}{where}")
        elif wt == 3:
            open_groups.append(n)
            if len(open_groups) > 100:
                raise ValueError(f"{fname}: groups nested too deep at byte {at}{where}")
        elif wt == 0:
            _, pos = _read_varint(mv, pos, end, fname, where)
        elif wt in (1, 2, 5):
            size = 8 if wt == 1 else 4 if wt == 5 else None
            if size is None:
                size, pos = _read_varint(mv, pos, end, fname, where)
            if size > end - pos:
                raise ValueError(f"{fname}: record blob truncated at byte {end}{where}")
            pos += size
        else:
            raise ValueError(f"{fname}: invalid protobuf wire type {wt} at byte {at}{where}")
    return pos


def _text(mv, span, fname, what, where):
    try:
        return bytes(mv[span[0] : span[1]]).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{fname}: {what} is not valid UTF-8{where}") from None


def _record_items(blob, fname):
    """Each item of a record as (index, key, dtype, shape, stype, (data start, end)),
    read as proto3 allows: any field order, unknown fields skipped, shape packed or not."""
    mv = memoryview(blob).cast("B")
    end = len(mv)
    if end and mv[:6] == _MAGIC:
        raise ValueError(f"{fname}: this BLOB is a .npy file, not an ArrayRecord: use from_npy")
    out, seen = [], set()
    for num, wt, span in _fields(mv, 0, end, fname, ""):
        if num != 1:
            continue
        index = len(out)
        where = f" (item {index})"
        if wt != 2:
            raise ValueError(f"{fname}: record field 1 has wire type {wt}, not 2{where}")
        key, value = "", None
        for inum, iwt, ispan in _fields(mv, span[0], span[1], fname, where):
            if inum == 1 and iwt == 2:
                key = _text(mv, ispan, fname, "key", where)
            elif inum == 2 and iwt == 2:
                value = ispan
            elif inum in (1, 2):
                raise ValueError(f"{fname}: item field {inum} has wire type {iwt}, not 2{where}")
        where = f" (item {index}, key {key!r})"
        if key in seen:
            raise ValueError(f"{fname}: duplicate key{where}")
        seen.add(key)
        dtype, shape, stype, data = "", [], "", (0, 0)
        if value is not None:
            for anum, awt, aspan in _fields(mv, value[0], value[1], fname, where):
                if anum == 1 and awt == 2:
                    dtype = _text(mv, aspan, fname, "dtype", where)
                elif anum == 2 and awt == 2:
                    p = aspan[0]
                    while p < aspan[1]:
                        d, p = _read_varint(mv, p, aspan[1], fname, where)
                        shape.append(d)
                elif anum == 2 and awt == 0:
                    shape.append(aspan)
                elif anum == 3 and awt == 2:
                    stype = _text(mv, aspan, fname, "stype", where)
                elif anum == 4 and awt == 2:
                    data = aspan
                elif anum in (1, 2, 3, 4):
                    raise ValueError(f"{fname}: array field {anum} has wire type {awt}{where}")
        # int32 on the wire: a negative dimension arrives as a 64-bit two's complement varint.
        if any(d >= 0x80000000 for d in shape):
            raise ValueError(f"{fname}: negative or oversized dimension in shape {shape}{where}")
        out.append((index, key, dtype, shape, stype, data, where))
    return mv, out


def _item_array(mv, item, fname, copy):
    index, key, dtype, shape, stype, (start, end), where = item
    if stype == NUMPY_STYPE:
        dt, shp, fortran, offset = _parse_npy(mv, start, end, fname, where)
        return _view(mv, dt, shp, fortran, offset, end, fname, where, copy)
    # A legacy raw buffer: dtype and shape from the message, C order, as np.frombuffer reads it.
    hint = "; to_state_dict reads it as a torch tensor" if stype == SAFETENSORS_STYPE else ""
    dt = _numeric_dtype(dtype, fname, where + hint)
    count = 1
    for d in shape:
        count *= d
    if count * dt.itemsize != end - start:
        raise ValueError(
            f"{fname}: raw array data has {end - start} bytes, dtype and shape need {count * dt.itemsize}{where}"
        )
    return _view(mv, dt, tuple(shape), False, start, end, fname, where, copy)


def from_record(blob, copy=True):
    """Flower ArrayRecord bytes -> {key: ndarray}, in record order (None -> None).

    copy=False returns read-only arrays that are views of the BLOB's bytes:
    no payload is copied (keep the arrays only as long as you need, they keep
    the whole BLOB alive). Fortran order and byte order are those of each
    .npy; legacy items of another stype are raw buffers read with the
    message's dtype and shape, as the extension reads them. Items NumPy cannot
    hold (bfloat16 and the other safetensors raw dtypes) are refused with an
    error; to_state_dict reads those."""
    if blob is None:
        return None
    mv, items = _record_items(blob, "from_record")
    return {item[1]: _item_array(mv, item, "from_record", copy) for item in items}


# --- RecordDicts (Flower's RecordDict protobuf) ----------------------------------------


class MetricRecord(dict):
    """Marks a dict as a Flower MetricRecord for to_recorddict (a plain dict
    means an ArrayRecord of ndarrays), and is what from_recorddict returns for
    one. Values: int, float, or a list of ints or of floats."""

    __slots__ = ()

    def __repr__(self):
        return f"MetricRecord({dict.__repr__(self)})"


class ConfigRecord(dict):
    """Marks a dict as a Flower ConfigRecord for to_recorddict, and is what
    from_recorddict returns for one. Values: bool, int, float, str, bytes, or
    a list of one of these."""

    __slots__ = ()

    def __repr__(self):
        return f"ConfigRecord({dict.__repr__(self)})"


_INT64_MAX, _UINT64_MAX = 2**63 - 1, 2**64 - 1
_DOUBLE = struct.Struct("<d")
# Element kind -> (scalar field, list field) of MetricRecordValue / ConfigRecordValue.
_SCALAR_FIELD = {"double": 1, "sint64": 2, "uint64": 3, "bool": 4, "string": 5, "bytes": 6}
_LIST_FIELD = {"double": 21, "sint64": 22, "uint64": 23, "bool": 24, "string": 25, "bytes": 26}
_FIELD_KIND = {v: k for k, v in _SCALAR_FIELD.items()}
_LIST_KIND = {v: k for k, v in _LIST_FIELD.items()}
_METRIC_FIELDS = {1, 2, 3, 21, 22, 23}


def _plain(v):
    """NumPy scalars as the Python scalar they hold (np.float64 already is a float)."""
    if isinstance(v, np.generic):
        if isinstance(v, np.bool_):
            return bool(v)
        if isinstance(v, np.integer):
            return int(v)
        if isinstance(v, np.floating):
            return float(v)
    return v


def _kind(v, metric):
    """The element kind of a scalar value, None when the record cannot hold it."""
    if isinstance(v, bool):
        return None if metric else "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if metric:
        return None
    if isinstance(v, str):
        return "string"
    if isinstance(v, (bytes, bytearray)):
        return "bytes"
    return None


def _zigzag(v):
    return (v << 1) if v >= 0 else ((-v) << 1) - 1


def _int_kind(values, fname, what):
    """sint64, or uint64 when a value is above 2^63-1 (Flower's typing)."""
    if any(v > _INT64_MAX for v in values):
        if any(v < 0 for v in values) or any(v > _UINT64_MAX for v in values):
            raise ValueError(f"{fname}: {what} is an integer out of range for sint64 and uint64")
        return "uint64"
    if any(v < -_INT64_MAX - 1 for v in values):
        raise ValueError(f"{fname}: {what} is an integer out of range for sint64 and uint64")
    return "sint64"


def _scalar_bytes(kind, v):
    if kind == "double":
        return _DOUBLE.pack(v)
    if kind == "sint64":
        return _varint(_zigzag(v))
    if kind in ("uint64", "bool"):
        return _varint(int(v))
    return bytes(v.encode("utf-8") if kind == "string" else v)


def _len_field(num, body):
    return _varint(num << 3 | 2) + _varint(len(body)) + body


def _value_bytes(v, metric, fname, what):
    """A MetricRecordValue / ConfigRecordValue: the oneof member written even when zero."""
    v = _plain(v)
    allowed = (
        "a number or a list of numbers in a metric record"
        if metric
        else "a bool, int, float, str, bytes or a list of one of these in a config record"
    )
    if isinstance(v, (list, tuple)):
        items = [_plain(x) for x in v]
        kinds = {_kind(x, metric) for x in items}
        if None in kinds:
            bad = next(x for x in items if _kind(x, metric) is None)
            raise TypeError(f"{fname}: {what} must be {allowed}; its list holds a {type(bad).__name__}")
        if len(kinds) > 1:
            raise TypeError(
                f"{fname}: {what} is a list that mixes element types "
                f"({', '.join(sorted(type(x).__name__ for x in {type(x): x for x in items}.values()))}; "
                f"Flower lists hold one type)"
            )
        # An empty list: the first type Flower's serde tries (float for metrics, bool for configs).
        kind = kinds.pop() if kinds else ("double" if metric else "bool")
        if kind == "int":
            kind = _int_kind(items, fname, what)
        if kind in ("string", "bytes"):
            body = b"".join(_len_field(1, _scalar_bytes(kind, x)) for x in items)
        else:
            packed = b"".join(_scalar_bytes(kind, x) for x in items)
            body = _len_field(1, packed) if packed else b""
        return _len_field(_LIST_FIELD[kind], body)
    kind = _kind(v, metric)
    if kind is None:
        raise TypeError(f"{fname}: {what} must be {allowed}, not {type(v).__name__}")
    if kind == "int":
        kind = _int_kind([v], fname, what)
    num = _SCALAR_FIELD[kind]
    if kind in ("string", "bytes"):
        return _len_field(num, _scalar_bytes(kind, v))
    return _varint(num << 3 | (1 if kind == "double" else 0)) + _scalar_bytes(kind, v)


def _values_record(values, metric, fname, name):
    """MetricRecord / ConfigRecord { repeated Item { string key = 1; Value value = 2; } items = 1; }"""
    out = []
    label = f"{'metric' if metric else 'config'} record {name!r}"
    for key, v in values.items():
        if not isinstance(key, str):
            raise TypeError(f"{fname}: {label} has a key of type {type(key).__name__}; keys must be str")
        k = key.encode("utf-8")
        item = (_len_field(1, k) if k else b"") + _len_field(
            2, _value_bytes(v, metric, fname, f"{label}, key {key!r},")
        )
        out.append(_len_field(1, item))
    return b"".join(out)


def _check_record_blob(blob, fname, name):
    try:
        mv, items = _record_items(blob, f"{fname}: array record {name!r}")
        for item in items:
            if item[4] == NUMPY_STYPE:
                _parse_npy(mv, item[5][0], item[5][1], f"{fname}: array record {name!r}", item[6])
    except ValueError as e:
        raise ValueError(f"{e} (the bytes given for array record {name!r} are not an ArrayRecord)") from None
    return bytes(blob)


def to_recorddict(records):
    """Flower RecordDict bytes from a mapping of names to records, in its order:

    - a mapping of names to ndarrays, or a list of ndarrays (as to_record
      takes them): an ArrayRecord; ArrayRecord bytes (to_record's) are taken
      as they are;
    - MetricRecord({...}): int -> sint64 (uint64 above 2^63-1), float ->
      double, lists of one of these (an empty list is a double_list);
    - ConfigRecord({...}): also bool, str, bytes and lists of them (an empty
      list is a bool_list).

    The bytes are those of Flower's recorddict_to_proto(rd).SerializeToString()
    and the extension's rd(). NumPy scalars count as the Python scalar they
    hold. A plain dict of anything but ndarrays, a value a record cannot hold
    and a list mixing types (Flower rejects those too) are errors naming the
    record and key."""
    fname = "to_recorddict"
    if not hasattr(records, "items"):
        raise TypeError(f"{fname}: expected a mapping of names to records, not {type(records).__name__}")
    pieces = []
    for name, rec in records.items():
        if not isinstance(name, str):
            raise TypeError(f"{fname}: record names must be str, not {type(name).__name__}")
        if isinstance(rec, MetricRecord):
            num, body = 3, [_values_record(rec, True, fname, name)]
        elif isinstance(rec, ConfigRecord):
            num, body = 4, [_values_record(rec, False, fname, name)]
        elif isinstance(rec, (bytes, bytearray, memoryview)):
            num, body = 2, [_check_record_blob(rec, fname, name)]
        elif isinstance(rec, (list, tuple)) or hasattr(rec, "items"):
            arrays = _items_of(rec, fname)
            for key, arr in arrays:
                if not isinstance(arr, np.ndarray):
                    raise TypeError(
                        f"{fname}: record {name!r} is a plain {type(rec).__name__}, so an ArrayRecord, but "
                        f"{key!r} holds a {type(arr).__name__}, not an ndarray: wrap metrics in "
                        f"sar.MetricRecord({{...}}) and configs in sar.ConfigRecord({{...}})"
                    )
            num, body = 2, _build_pieces(arrays, f"{fname}: array record {name!r}")
        else:
            raise TypeError(
                f"{fname}: record {name!r} is of type {type(rec).__name__}; expected a mapping of "
                f"ndarrays (ArrayRecord), a MetricRecord or a ConfigRecord"
            )
        size = sum(len(p) if isinstance(p, bytes) else p.nbytes for p in body)
        k = name.encode("utf-8")
        head = (_len_field(1, k) if k else b"") + _varint(num << 3 | 2) + _varint(size)
        pieces += [b"\x0a" + _varint(len(head) + size) + head] + body
    return b"".join(pieces)


def _rd_describe(blob):
    """What a BLOB that is not a RecordDict looks like, for error messages."""
    mv = memoryview(blob).cast("B")
    if mv[:6] == _MAGIC:
        return "it is a .npy file: use from_npy"
    try:
        m, items = _record_items(blob, "")
        if items and all(it[4] for it in items):
            for it in items:
                _item_array(m, it, "", False)
            return "it looks like an ArrayRecord: use from_record"
    except ValueError:
        pass
    return f"it starts with {bytes(mv[:8])!r}"


def _values_from(mv, span, metric, fname, label):
    out = MetricRecord() if metric else ConfigRecord()
    index = 0
    for num, wt, ispan in _fields(mv, span[0], span[1], fname, f" ({label})"):
        if num != 1:
            continue
        where = f" ({label}, item {index})"
        if wt != 2:
            raise ValueError(f"{fname}: {label} field 1 has wire type {wt}, not 2{where}")
        key, value = "", None
        for inum, iwt, vspan in _fields(mv, ispan[0], ispan[1], fname, where):
            if inum in (1, 2) and iwt != 2:
                raise ValueError(f"{fname}: {label} item field {inum} has wire type {iwt}, not 2{where}")
            if inum == 1:
                key = _text(mv, vspan, fname, "key", where)
            elif inum == 2:
                value = vspan
        where = f" ({label}, item {index}, key {key!r})"
        if key in out:
            raise ValueError(f"{fname}: {label} has duplicate key{where}")
        if value is None:
            raise ValueError(f"{fname}: {label} has an item without a value{where}")
        out[key] = _value_from(mv, value, metric, fname, where)
        index += 1
    return out


def _scalar_from(kind, mv, wt, span, fname, where):
    want = 1 if kind == "double" else 2 if kind in ("string", "bytes") else 0
    if wt != want:
        raise ValueError(f"{fname}: wrong wire type {wt} for {kind}{where}")
    if kind == "double":
        return _DOUBLE.unpack_from(mv, span[0])[0]
    if kind == "string":
        return _text(mv, span, fname, "string value", where)
    if kind == "bytes":
        return bytes(mv[span[0] : span[1]])
    v = span & _UINT64_MAX
    if kind == "sint64":
        return (v >> 1) ^ -(v & 1)
    return bool(v) if kind == "bool" else v


def _value_from(mv, span, metric, fname, where):
    result, found = None, False
    for num, wt, vspan in _fields(mv, span[0], span[1], fname, where, fixed=True):
        if metric and num not in _METRIC_FIELDS:
            continue  # unknown to MetricRecordValue: skipped, as protobuf does
        if num in _FIELD_KIND:
            result, found = _scalar_from(_FIELD_KIND[num], mv, wt, vspan, fname, where), True
        elif num in _LIST_KIND:
            kind = _LIST_KIND[num]
            if wt != 2:
                raise ValueError(f"{fname}: wrong wire type {wt} for {kind} list{where}")
            result, found = [], True
            for lnum, lwt, lspan in _fields(mv, vspan[0], vspan[1], fname, where, fixed=True):
                if lnum != 1:
                    continue
                if lwt == 2 and kind not in ("string", "bytes"):  # packed
                    if kind == "double":
                        n = lspan[1] - lspan[0]
                        if n % 8:
                            raise ValueError(f"{fname}: packed double list of {n} bytes{where}")
                        result += [_DOUBLE.unpack_from(mv, p)[0] for p in range(lspan[0], lspan[1], 8)]
                    else:
                        p = lspan[0]
                        while p < lspan[1]:
                            raw, p = _read_varint(mv, p, lspan[1], fname, where)
                            result.append(_scalar_from(kind, mv, 0, raw, fname, where))
                else:
                    result.append(_scalar_from(kind, mv, lwt, lspan, fname, where))
    if not found:
        raise ValueError(f"{fname}: value without a {'metric' if metric else 'config'} value type{where}")
    return result


def from_recorddict(blob, copy=True):
    """Flower RecordDict bytes -> {name: record}, in order (None -> None):
    an ArrayRecord as {key: ndarray} (from_record's dict; copy=False gives
    read-only views of the BLOB), a MetricRecord or ConfigRecord as those dict
    subclasses of Python values (sint64 and uint64 -> int, double -> float,
    bool, str, bytes, lists). to_recorddict of the result gives the same
    bytes. Reading is as lenient as protobuf (any field order, unknown fields
    skipped, lists packed or not); names and keys must be unique and every
    item must hold a record. Anything else gets an error saying what it looks
    like."""
    if blob is None:
        return None
    fname = "from_recorddict"
    if isinstance(blob, str):
        raise TypeError(f"{fname}: expected the RecordDict's bytes, not str")
    mv = memoryview(blob).cast("B")
    try:
        return _recorddict_items(blob, mv, fname, copy)
    except ValueError as e:
        what = _rd_describe(blob)
        if what.startswith("it starts with"):
            if mv[:1] == b"\x0a":
                raise  # a RecordDict's first byte: most likely a damaged one
            raise ValueError(f"{e}: not a RecordDict? ({what})") from None
        detail = str(e).split(": ", 1)[-1]
        raise ValueError(f"{fname}: this BLOB is not a RecordDict ({what}; read as one: {detail})") from None


def _recorddict_items(blob, mv, fname, copy):
    if mv[:6] == _MAGIC:
        raise ValueError(f"{fname}: this BLOB is a .npy file")
    out, index = {}, 0
    for num, wt, span in _fields(mv, 0, len(mv), fname, ""):
        if num != 1:
            continue
        where = f" (item {index})"
        if wt != 2:
            raise ValueError(f"{fname}: record dict field 1 has wire type {wt}, not 2{where}")
        name, rec = "", None
        for inum, iwt, ispan in _fields(mv, span[0], span[1], fname, where):
            if inum in (1, 2, 3, 4) and iwt != 2:
                raise ValueError(f"{fname}: record dict item field {inum} has wire type {iwt}, not 2{where}")
            if inum == 1:
                name = _text(mv, ispan, fname, "name", where)
            elif inum in (2, 3, 4):
                rec = (inum, ispan)  # a oneof: the last member wins
        where = f" (item {index}, name {name!r})"
        if name in out:
            raise ValueError(f"{fname}: duplicate name{where}")
        if rec is None:
            raise ValueError(f"{fname}: an item without a record{where}")
        kind, (start, end) = rec
        if kind == 2:
            label = f"{fname}: array record {name!r}"
            sub, items = _record_items(mv[start:end], label)
            out[name] = {it[1]: _item_array(sub, it, label, copy) for it in items}
        else:
            label = f"{'metric' if kind == 3 else 'config'} record {name!r}"
            out[name] = _values_from(mv, (start, end), kind == 3, fname, label)
        index += 1
    return out


# --- PyTorch ---------------------------------------------------------------------------


def _torch_raw_dtypes(torch):
    """torch dtypes without a NumPy dtype -> safetensors names (as ar_from_safetensors stores them)."""
    out = {torch.bfloat16: "BF16"}
    for attr, name in (
        ("float8_e5m2", "F8_E5M2"),
        ("float8_e4m3fn", "F8_E4M3"),
        ("float8_e5m2fnuz", "F8_E5M2FNUZ"),
        ("float8_e4m3fnuz", "F8_E4M3FNUZ"),
    ):
        if hasattr(torch, attr):
            out[getattr(torch, attr)] = name
    return out


def from_state_dict(state_dict):
    """A PyTorch state_dict (any mapping of names to tensors) -> Flower
    ArrayRecord bytes, in its order. Tensors of a NumPy dtype become
    numpy.ndarray items (as Flower's ArrayRecord(torch_state_dict=...) stores
    them); bfloat16 and float8 tensors become raw items with stype
    "safetensors" and dtype the safetensors name ("BF16"), the little-endian
    bytes unchanged, exactly as ar_from_safetensors stores them.
    to_state_dict reads them all back bit for bit."""
    import torch

    raw = _torch_raw_dtypes(torch)
    items = []
    for key, t in _items_of(state_dict, "from_state_dict"):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"from_state_dict: {key!r} is a {type(t).__name__}, not a tensor")
        t = t.detach().cpu().contiguous()
        if t.dtype in raw:
            size = t.element_size()
            ints = t.view({1: torch.uint8, 2: torch.int16}[size]).numpy()
            data = ints.astype(ints.dtype.newbyteorder("<"), copy=False).reshape(-1).view(np.uint8)
            items.append((key, (raw[t.dtype], list(t.shape), SAFETENSORS_STYPE, data)))
        else:
            items.append((key, t.numpy()))
    return _build(items, "from_state_dict")


def to_state_dict(blob):
    """Flower ArrayRecord bytes -> {key: torch.Tensor}, in record order, ready
    for module.load_state_dict(). The tensors own their memory. Reads the raw
    "safetensors" items from_state_dict and ar_from_safetensors write
    (bfloat16, float8) as well as NumPy items."""
    import torch

    if blob is None:
        return None
    by_name = {name: dt for dt, name in _torch_raw_dtypes(torch).items()}
    mv, items = _record_items(blob, "to_state_dict")
    out = {}
    for item in items:
        index, key, dtype, shape, stype, (start, end), where = item
        if stype == SAFETENSORS_STYPE and dtype in by_name:
            tdt = by_name[dtype]
            count = 1
            for d in shape:
                count *= d
            size = torch.empty((), dtype=tdt).element_size()
            if count * size != end - start:
                raise ValueError(
                    f"to_state_dict: raw array data has {end - start} bytes, dtype and shape need {count * size}{where}"
                )
            ints = np.frombuffer(mv, "<u1" if size == 1 else "<i2", count, start).astype(
                np.uint8 if size == 1 else np.int16
            )  # native order, and a copy torch may own
            out[key] = torch.from_numpy(ints).view(tdt).reshape(shape)
            continue
        arr = _item_array(mv, item, "to_state_dict", True)
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        out[key] = torch.from_numpy(arr)
    return out
