# SPDX-License-Identifier: Apache-2.0
"""NumPy .npy arrays as bytes: to_npy(ndarray) -> bytes, from_npy(bytes) -> ndarray.

The bytes are exactly what numpy.save writes; reading parses the header as a
literal (never unpickles) and accepts numeric dtypes only. The header
writer, parser and array view here serve the record codecs too.
"""

import ast
import io

import numpy as np

__all__ = ["to_npy", "from_npy"]

_MAGIC = b"\x93NUMPY"
_NUMERIC_KINDS = "biufc"
_MAX_HEADER = 100_000  # NumPy itself refuses longer .npy headers by default

# Models repeat a few shapes many times: .npy headers are made and parsed once each.
_NPY_HEADER_CACHE, _HEADER_CACHE = {}, {}


def _cache(cache, key, value):
    if len(cache) >= 4096:
        cache.clear()
    cache[key] = value


def _byte_view(blob, fname):
    """blob (bytes, bytearray, memoryview or another bytes-like object) as a
    flat memoryview of bytes; a TypeError naming fname for anything else."""
    try:
        mv = memoryview(blob)
    except TypeError:
        raise TypeError(
            f"{fname}: expected bytes, bytearray or memoryview (a bytes-like object), not {type(blob).__name__}"
        ) from None
    if not mv.c_contiguous:
        raise TypeError(f"{fname}: expected contiguous bytes; this {type(blob).__name__} is a strided view")
    return mv.cast("B")


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
    other BLOB gets an error saying what it looks like, anything but bytes
    a TypeError."""
    if blob is None:
        return None
    mv = _byte_view(blob, "from_npy")
    dtype, shape, fortran, offset = _parse_npy(mv, 0, len(mv), "from_npy")
    return _view(mv, dtype, shape, fortran, offset, len(mv), "from_npy", "", True)
