# SPDX-License-Identifier: Apache-2.0
"""NumPy .npy arrays as bytes: to_npy(ndarray) -> bytes, from_npy(bytes) -> ndarray.

The bytes are exactly what numpy.save writes; reading parses the header as
the extension does (src/codec/npy.c: the Python literal subset NumPy
writes, never evaluated, never unpickled), accepts the numeric dtypes it
accepts and refuses the rest in its words (npy_error's). The header writer,
parser and array view here serve the record codecs too.
"""

import io
import sys

import numpy as np

from . import _packed
from ._protobuf import _U64, Corrupt, fail, quote, sniff

__all__ = ["to_npy", "from_npy"]

_MAGIC = b"\x93NUMPY"

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


# --- reading, as the extension reads (src/codec/npy.c, dtype.c) -------------------

_DT = {  # name -> (kind, size), the extension's dtype table
    "bool": ("b", 1), "int8": ("i", 1), "int16": ("i", 2), "int32": ("i", 4), "int64": ("i", 8),
    "uint8": ("u", 1), "uint16": ("u", 2), "uint32": ("u", 4), "uint64": ("u", 8),
    "float16": ("f", 2), "float32": ("f", 4), "float64": ("f", 8), "complex64": ("c", 8), "complex128": ("c", 16),
}  # fmt: skip
_DT_ALIASES = dict(
    {name: name for name in _DT},
    bool_="bool", byte="int8", ubyte="uint8", short="int16", ushort="uint16", intc="int32", uintc="uint32",
    int="int64", uint="uint64", longlong="int64", ulonglong="uint64", half="float16", single="float32",
    double="float64", float="float64", csingle="complex64", cdouble="complex128", complex="complex128",
    float_="float64", int_="int64", complex_="complex128", intp="int64", uintp="uint64", long="int64",
    ulong="uint64", bool8="bool", int0="int64", uint0="uint64",
)  # fmt: skip
_DT_CHARS = dict(zip("?bBhHiIlLqQpPefdFD", (
    "bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "int64", "uint64",
    "int64", "uint64", "float16", "float32", "float64", "complex64", "complex128",
)))  # fmt: skip
_LONG_NAMES = {
    "longdouble",
    "clongdouble",
    "longfloat",
    "clongfloat",
    "float96",
    "float128",
    "complex192",
    "complex256",
}
_HOST_BIG = sys.byteorder == "big"


def _unsupported_why(p):
    kind = p[:1]
    long_double = len(p) == 3 and ((kind == "f" and p[1] == "1" and p[2] in "26") or (kind == "c" and p[1] in "23"))
    if long_double or p in _LONG_NAMES or p in ("g", "G"):
        return "long double has no portable layout"
    if p == "object":
        kind = "O"
    if p in ("str", "unicode", "str_"):
        kind = "U"
    if p in ("bytes", "bytes_"):
        kind = "S"
    if p in ("datetime64", "timedelta64"):
        kind = "M"
    if p == "void":
        kind = "V"
    return {
        "U": "unicode strings are not numeric",
        "S": "byte strings are not numeric",
        "a": "byte strings are not numeric",
        "O": "object arrays hold pickled Python objects, which are never loaded",
        "V": "void/structured data is not numeric",
        "M": "datetimes are not supported",
        "m": "datetimes are not supported",
    }.get(kind, "not a NumPy numeric dtype")


def _dt_parse(raw):
    """(type name, big-endian) of a dtype string's bytes, as the extension
    parses it (dt_parse); Corrupt with its message when unsupported."""
    name = _DT_ALIASES.get(raw.decode("latin1"))
    if name is not None:
        return name, _HOST_BIG and _DT[name][1] > 1
    p, order = raw.decode("latin1"), "="
    if p[:1] and p[0] in "<>=|":
        order, p = p[0], p[1:]
    t = None
    if len(p) == 1:
        t = _DT_CHARS.get(p)
    elif 2 <= len(p) <= 3 and all("0" <= ch <= "9" for ch in p[1:]):
        size = int(p[1:])
        if p[0] == "b" and size == 1:
            t = "bool"
        else:
            t = next((n for n, ks in _DT.items() if n != "bool" and ks == (p[0], size)), None)
    if t is None:
        raise fail(f"unsupported dtype '{quote(raw)}' ({_unsupported_why(p)})")
    big = _HOST_BIG and _DT[t][1] > 1
    if _DT[t][1] > 1 and order in "<>":
        big = order == ">"
    return t, big


def _dt_name(t, big):
    """str(np.dtype) of a parsed dtype: the name in native order, else the descr (dt_name)."""
    size = _DT[t][1]
    if size > 1 and big != _HOST_BIG:
        return (">" if big else "<") + _DT[t][0] + str(size)
    return t


def _np_dtype(t, big):
    dt = np.dtype(t)
    return dt.newbyteorder(">" if big else "<") if dt.itemsize > 1 else dt


def _shape_numel(shape):
    """Element count of a shape (npy_shape_numel); Corrupt when negative or past 2^64."""
    for d in shape:
        if d < 0:
            raise fail(f"negative dimension {d} in shape")
    if 0 in shape:
        return 0
    n = 1
    for d in shape:
        n *= d
    if n > _U64:
        raise fail("shape has more than 2^64 elements")
    return n


_WS = b" \t\n\r\f"
_IDENT = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789")
_DIGITS = frozenset(b"0123456789")
_INT64_MAX = (1 << 63) - 1


class _Hdr:
    """The header literal parser (npy.c's hdr_*): values are ('str', bytes),
    ('int', value or None when past int64), ('bool', b), ('none',),
    ('tuple', items), ('list',), ('dict',), ('other',)."""

    def __init__(self, text, base, version):
        self.t, self.p, self.end, self.base, self.version = text, 0, len(text), base, version

    def syntax(self):
        what = "character" if self.p < self.end else "end"
        return fail(f"cannot parse header: unexpected {what} at byte {self.base + self.p}")

    def space(self):
        t, p, end = self.t, self.p, self.end
        while p < end and t[p] in _WS:
            p += 1
        self.p = p

    def peek(self, ch):
        return self.p < self.end and self.t[self.p] == ch

    def sequence(self, close, is_dict, depth):
        items, first, saw_comma, item = [], True, False, ("other",)
        while True:
            self.space()
            if self.peek(close):
                self.p += 1
                break
            if not first:
                if not self.peek(0x2C):
                    raise self.syntax()
                self.p += 1
                saw_comma = True
                self.space()
                if self.peek(close):
                    self.p += 1
                    break
            first = False
            item = self.value(depth + 1)
            if is_dict:
                self.space()
                if not self.peek(0x3A):
                    raise self.syntax()
                self.p += 1
                item = self.value(depth + 1)
            items.append(item)
        if close == 0x29 and len(items) == 1 and not saw_comma:
            return item  # "(x)" is x
        return ("dict",) if is_dict else ("tuple", items) if close == 0x29 else ("list",)

    def integer(self, negative):
        t, end, mag, digits = self.t, self.end, 0, 0
        while self.p < end and (t[self.p] in _DIGITS or (t[self.p] == 0x5F and digits)):
            if t[self.p] != 0x5F:
                mag = mag * 10 + t[self.p] - 48
                digits += 1
            self.p += 1
        if self.p < end and t[self.p] in b".eEj":
            while self.p < end and (
                t[self.p] in _IDENT or t[self.p] == 0x2E or (t[self.p] in b"+-" and t[self.p - 1] in b"eE")
            ):
                self.p += 1
            return ("other",)
        if self.version <= 2 and self.peek(0x4C):
            self.p += 1
        if self.p < end and t[self.p] in _IDENT:
            raise self.syntax()
        if mag > _INT64_MAX + (1 if negative else 0):
            return ("int", None)
        return ("int", -mag if negative else mag)

    def value(self, depth):
        if depth > 32:
            raise fail(f"cannot parse header: nested too deeply at byte {self.base + self.p}")
        self.space()
        if self.p >= self.end:
            raise self.syntax()
        t, ch = self.t, self.t[self.p]
        if ch in b"{([":
            self.p += 1
            return self.sequence({0x7B: 0x7D, 0x28: 0x29, 0x5B: 0x5D}[ch], ch == 0x7B, depth)
        if ch in b"'\"":
            self.p += 1
            start = self.p
            while self.p < self.end and t[self.p] != ch and t[self.p] != 0x0A:
                if t[self.p] == 0x5C and self.p + 1 < self.end:
                    self.p += 1
                self.p += 1
            if not self.peek(ch):
                raise self.syntax()
            self.p += 1
            return ("str", t[start : self.p - 1])
        if ch in b"-+":
            self.p += 1
            self.space()
            if self.p >= self.end or t[self.p] not in _DIGITS:
                raise self.syntax()
            return self.integer(ch == 0x2D)
        if ch in _DIGITS:
            return self.integer(False)
        if ch in _IDENT:
            start = self.p
            while self.p < self.end and t[self.p] in _IDENT:
                self.p += 1
            word = t[start : self.p]
            if word in (b"True", b"False"):
                return ("bool", word == b"True")
            if word == b"None":
                return ("none",)
            self.p = start
            raise self.syntax()
        raise self.syntax()

    def header(self):
        """(dtype type, big, fortran, shape) of the top-level dict (hdr_parse_dict)."""
        self.space()
        if not self.peek(0x7B):
            raise fail(f"header is not a dictionary (byte {self.base + self.p})")
        self.p += 1
        first, descr, fortran, shape = True, None, None, None
        while True:
            self.space()
            if self.peek(0x7D):
                break
            if not first:
                if not self.peek(0x2C):
                    raise self.syntax()
                self.p += 1
                self.space()
                if self.peek(0x7D):
                    break
            first = False
            key = self.value(1)
            self.space()
            if not self.peek(0x3A):
                raise self.syntax()
            self.p += 1
            val = self.value(1)
            if key[0] != "str":
                raise fail("header has a key that is not a string")
            if key[1] == b"descr":
                descr = val
            elif key[1] == b"fortran_order":
                if val[0] != "bool":
                    raise fail("header: fortran_order is not True or False")
                fortran = val[1]
            elif key[1] == b"shape":
                shape = val
            else:
                raise fail(f"header has unexpected key '{quote(key[1])}'")
        self.p += 1
        self.space()
        if self.p != self.end:
            raise fail(f"cannot parse header: text after the dictionary at byte {self.base + self.p}")
        for name, v in (("descr", descr), ("fortran_order", fortran), ("shape", shape)):
            if v is None:
                raise fail(f"header has no '{name}' key")
        if descr[0] == "list":
            raise fail("unsupported dtype: structured (record) dtypes are not numeric arrays")
        if descr[0] != "str":
            raise fail("unsupported dtype: descr is not a type string")
        t, big = _dt_parse(descr[1])
        if shape[0] != "tuple" or any(x[0] != "int" for x in shape[1]):
            raise fail("header: shape is not a tuple of integers")
        dims = [x[1] for x in shape[1]]
        if len(dims) > NPY_MAX_DIMS:
            raise fail(f"shape has {len(dims)} dimensions (at most {NPY_MAX_DIMS})")
        if None in dims:
            raise fail("shape dimension does not fit in 64 bits")
        return t, big, fortran, tuple(dims)


NPY_MAX_DIMS = 64


def _npy_parse(mv, start, end):
    """The .npy file in mv[start:end] as the extension parses it (npy_parse):
    (type, big, fortran, shape, payload offset, payload bytes); Corrupt with
    its message. Offsets in messages count from start."""
    n = end - start
    if n == 0:
        raise fail("empty blob is not a .npy file")
    head = bytes(mv[start : start + min(n, 12)])
    if n < 6 or head[:6] != _MAGIC:
        if n < 6 and _MAGIC[:n] == head:
            raise fail(f"truncated at byte {n}: no .npy version")
        raise fail("not a .npy file (bad magic)")
    if n < 8:
        raise fail(f"truncated at byte {n}: no .npy version")
    if head[6] not in (1, 2, 3) or head[7] != 0:
        raise fail(f"unsupported .npy format version {head[6]}.{head[7]}")
    version = head[6]
    len_size = 2 if version == 1 else 4
    if n < 8 + len_size:
        raise fail(f"truncated at byte {n}: no header length")
    hlen = int.from_bytes(head[8 : 8 + len_size], "little")
    hstart = 8 + len_size
    if hlen > n - hstart:
        raise fail(f"header truncated at byte {n} (header length {hlen} needs {hstart + hlen} bytes)")
    key = (version, bytes(mv[start + hstart : start + hstart + hlen]))
    parsed = _HEADER_CACHE.get(key)
    if parsed is None:
        try:
            parsed = _Hdr(key[1], hstart, version).header()
        except Corrupt as e:
            parsed = e
        _cache(_HEADER_CACHE, key, parsed)
    if isinstance(parsed, Corrupt):
        raise Corrupt(str(parsed))
    t, big, fortran, shape = parsed
    numel = _shape_numel(shape)
    nbytes = numel * _DT[t][1]
    if nbytes > _U64:
        raise fail("shape has more bytes than fit in 64 bits")
    avail = n - hstart - hlen
    if nbytes > avail:
        raise fail(f"data truncated at byte {n}: shape needs {nbytes} payload bytes, blob has {avail}")
    return t, big, fortran, shape, start + hstart + hlen, nbytes


def _npy_value(mv):
    """The .npy BLOB mv as the extension's npy functions read it
    (sql_npy_parse): a record, .npz, safetensors file or a NumPy scalar's
    bytes where a .npy belongs is named as such."""
    n = len(mv)
    try:
        return _npy_parse(mv, 0, n)
    except Corrupt:
        if n == 0 or bytes(mv[: min(n, 6)]) == _MAGIC[: min(n, 6)]:
            raise
        from .record import _record_looks_like  # record imports this module

        if _record_looks_like(mv):
            raise Corrupt("got a record, not a .npy file: take an array out with ar_get(rec, key)") from None
        kind = sniff(mv)
        if kind == "npz":
            raise Corrupt(
                "got a .npz archive, not a .npy file: convert it with ar_from_npz(blob), then take an array "
                "out with ar_get(rec, key)"
            ) from None
        if kind == "safetensors":
            raise Corrupt(
                "got a safetensors file, not a .npy file: convert it with ar_from_safetensors(blob), then "
                "take an array out with ar_get(rec, key)"
            ) from None
        if kind == "packed":
            raise Corrupt(_packed.misread(mv, 0)) from None
        if n in (4, 8):
            raise Corrupt(
                f"got {'an' if n == 8 else 'a'} {n}-byte BLOB, not a .npy file: a NumPy scalar bound as bytes? "
                "pass a number or np.save bytes"
            ) from None
        raise


def _view(mv, dtype, shape, fortran, offset, count, copy):
    """The array of count elements at mv[offset:], in the .npy's order."""
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
    try:
        t, big, fortran, shape, offset, nbytes = _npy_value(mv)
    except Corrupt as e:
        raise ValueError(f"from_npy: {e}") from None
    dtype = _np_dtype(t, big)
    return _view(mv, dtype, shape, fortran, offset, nbytes // dtype.itemsize, True)
