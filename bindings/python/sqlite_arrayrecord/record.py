# SPDX-License-Identifier: Apache-2.0
"""Flower ArrayRecords as bytes: to_record(arrays) -> bytes, from_record(bytes) -> dict.

The message, as Flower's serde writes it (fields in number order, defaults omitted):

    ArrayRecord { repeated Item items = 1; }
    Item { string key = 1; Array value = 2; }
    Array { string dtype = 1; repeated int32 shape = 2 [packed]; string stype = 3; bytes data = 4; }

A NumPy item has stype "numpy.ndarray" and the numpy.save bytes as data;
other items are raw buffers read with the message's dtype and shape. The
item reader and builder here serve the RecordDict and PyTorch codecs too.
"""

import numpy as np

from . import _packed
from ._protobuf import _U64, Corrupt, Ctx, Reader, fail, len_field, quote, sniff, utf8_valid, varint, wrong_type
from .npy import (
    _DT,
    NPY_MAX_DIMS,
    _byte_view,
    _dt_name,
    _dt_parse,
    _np_dtype,
    _npy_parse,
    _npy_parts,
    _shape_numel,
    _view,
)

__all__ = ["to_record", "from_record", "NUMPY_STYPE", "SAFETENSORS_STYPE"]

NUMPY_STYPE = "numpy.ndarray"
# Raw items for the dtypes NumPy lacks, as ar_from_safetensors stores them:
# stype "safetensors", dtype the safetensors name, little-endian bytes.
SAFETENSORS_STYPE = "safetensors"


# --- writing ------------------------------------------------------------------------


def _item_parts(key, dtype, shape, stype, data_len, fname):
    """The framing of one record item up to its data bytes."""
    for dim in shape:
        if dim > 0x7FFFFFFF:
            raise ValueError(f"{fname}: dimension {dim} of {key!r} does not fit Flower's int32 shape")
    k, dt, st = key.encode("utf-8"), dtype.encode("utf-8"), stype.encode("utf-8")
    head = b""
    if dt:
        head += len_field(1, dt)
    if shape:
        head += len_field(2, b"".join(varint(d) for d in shape))
    if st:
        head += len_field(3, st)
    if data_len:
        head += b"\x22" + varint(data_len)
    value_len = len(head) + data_len
    item = (len_field(1, k) if k else b"") + b"\x12" + varint(value_len)
    item_len = len(item) + value_len
    return b"\x0a" + varint(item_len) + item + head


def _items_of(arrays, fname):
    """(key, value) pairs of a mapping in its order, or of a list with keys "0", "1", ..."""
    if isinstance(arrays, (list, tuple)):
        return [(str(i), v) for i, v in enumerate(arrays)]
    if hasattr(arrays, "items"):
        out = list(arrays.items())
        for key, _ in out:
            if not isinstance(key, str):
                raise TypeError(f"{fname}: keys must be str, not {type(key).__name__}")
        return out
    raise TypeError(f"{fname}: expected a mapping of names to arrays or a list of arrays, not {type(arrays).__name__}")


def _build_pieces(items, fname):
    """The record's bytes as a list of pieces (framing, .npy headers, payload views).
    items: (key, ndarray) or (key, (dtype, shape, stype, data bytes))."""
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


def _build(items, fname):
    """The record's bytes: one copy of every payload, straight into the result."""
    return b"".join(_build_pieces(items, fname))


def to_record(arrays):
    """Flower ArrayRecord bytes from a mapping of names to ndarrays (in its
    order), or from a list of arrays (keys "0", "1", ...). Any number of
    arrays. The bytes are those the extension's ar() and Flower's serde write
    for the same arrays: dtype str(arr.dtype), stype "numpy.ndarray", data the
    numpy.save bytes."""
    return _build(_items_of(arrays, "to_record"), "to_record")


# --- reading ------------------------------------------------------------------------


_RECORD_BLOB = "record blob"
_EMPTY = b""
# The raw dtypes NumPy lacks, as ar_from_safetensors stores them: name -> bits.
_ST_RAW_BITS = {
    "BF16": 16, "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8, "F4": 4,
    "F6_E2M3": 6, "F6_E3M2": 6,
}  # fmt: skip


def _shape_value(raw, ctx, at, shape):
    """One shape entry: int32 on the wire, protobuf keeps the low 32 bits."""
    dim = raw & 0xFFFFFFFF
    if dim >= 0x80000000:
        raise ctx.error(f"record blob has negative dimension {dim - 0x100000000}", at)
    if len(shape) >= NPY_MAX_DIMS:
        raise ctx.error(f"record blob has a shape with more than {NPY_MAX_DIMS} dimensions", at)
    shape.append(dim)


def _array(mv, start, end, it, ctx):
    """One occurrence of an Array message, merged into it = [key, dtype, shape, stype, data]
    (the last dtype, stype and data win, shapes add up), as record.c's pb_array."""
    r = Reader(mv, start, end)
    while r.pos < r.end:
        at = r.pos
        field, wt = r.tag(ctx)
        if field == 2:
            if wt == 0:
                vat = r.pos
                _shape_value(r.varint(ctx), ctx, vat, it[2])
            elif wt == 2:
                s, n = r.length(ctx)
                packed = Reader(mv, s, s + n)
                while packed.pos < packed.end:
                    vat = packed.pos
                    _shape_value(packed.varint(ctx), ctx, vat, it[2])
            else:
                raise wrong_type(ctx, "Array.shape", wt, at)
        elif field in (1, 3, 4):
            if wt != 2:
                raise wrong_type(
                    ctx, "Array.dtype" if field == 1 else "Array.stype" if field == 3 else "Array.data", wt, at
                )
            s, n = r.length(ctx)
            it[{1: 1, 3: 3, 4: 4}[field]] = (s, s + n)
        else:
            r.skip(ctx, field, wt, 0, at)


def _item(mv, start, end, ctx):
    """One Item message (pb_item): [key, dtype, stype spans and shape list]."""
    r = Reader(mv, start, end)
    it = [(0, 0), (0, 0), [], (0, 0), (0, 0)]
    ctx.key = None
    while r.pos < r.end:
        at = r.pos
        field, wt = r.tag(ctx)
        if field in (1, 2):
            if wt != 2:
                raise wrong_type(ctx, "Item.key" if field == 1 else "Item.value", wt, at)
            s, n = r.length(ctx)
            if field == 1:
                it[0] = (s, s + n)
                ctx.key = mv[s : s + n]
            else:
                _array(mv, s, s + n, it, ctx)
        else:
            r.skip(ctx, field, wt, 0, at)
    key = mv[it[0][0] : it[0][1]]
    if not utf8_valid(key):
        ctx.key = None
        raise ctx.error("record key is not valid UTF-8", start)
    ctx.key = key
    for span, what in ((it[1], "dtype"), (it[3], "stype")):
        if not utf8_valid(mv[span[0] : span[1]]):
            raise ctx.error(f"record {what} is not valid UTF-8", start)
    return it


def _peek_truncated_key(mv, len_at, n):
    """The key of an item whose length runs past the end: the last complete
    key field among the bytes there are (peek_truncated_key), or None."""
    quiet, r, found = Ctx(_RECORD_BLOB), Reader(mv, len_at, n), None
    try:
        r.varint(quiet)
        while r.pos < r.end:
            at = r.pos
            field, wt = r.tag(quiet)
            if field == 1 and wt == 2:
                s, ln = r.length(quiet)
                if not utf8_valid(mv[s : s + ln]):
                    break
                found = mv[s : s + ln]
            else:
                r.skip(quiet, field, wt, 0, at)
    except Corrupt:
        pass
    return found


def _parse_items(mv, n):
    """The items of a record (record_parse_items), keys unique."""
    r, ctx, items = Reader(mv, 0, n), Ctx(_RECORD_BLOB), []
    while r.pos < r.end:
        at = r.pos
        ctx.item, ctx.key = -1, None
        field, wt = r.tag(ctx)
        if field == 1:
            ctx.item = len(items)
            if wt != 2:
                raise wrong_type(ctx, "ArrayRecord.items", wt, at)
            len_at = r.pos
            try:
                s, ln = r.length(ctx)
            except Corrupt:
                key = _peek_truncated_key(mv, len_at, n)
                if key is None:
                    raise
                ctx.key = key
                raise ctx.error("record blob truncated", n) from None
            items.append(_item(mv, s, s + ln, ctx))
        else:
            r.skip(ctx, field, wt, 0, at)
    seen = {}
    for i, it in enumerate(items):
        key = bytes(mv[it[0][0] : it[0][1]])
        if key in seen:
            raise fail(f"record has duplicate key '{quote(key)}' (items {seen[key]} and {i})")
        seen[key] = i
    return items


def _parse(mv):
    """A record's items as the extension parses one (record_parse): another
    format where a record belongs is named, with what converts it."""
    try:
        return _parse_items(mv, len(mv))
    except Corrupt:
        kind = sniff(mv)
        if kind == "npy":
            raise Corrupt("got a .npy file, not a record: wrap it with ar('key', npy)") from None
        if kind == "npz":
            raise Corrupt("got a .npz archive, not a record: convert it with ar_from_npz(blob)") from None
        if kind == "safetensors":
            raise Corrupt("got a safetensors file, not a record: convert it with ar_from_safetensors(blob)") from None
        if kind == "packed":
            raise Corrupt(_packed.misread(mv, _packed.RECORD)) from None
        raise


def _record_looks_like(mv):
    """Does mv parse as a record of at least one item (record_looks_like)?"""
    n = len(mv)
    if n == 0 or mv[0] != 0x0A:
        return False
    r, ctx, items = Reader(mv, 0, n), Ctx(_RECORD_BLOB), 0
    try:
        while r.pos < r.end:
            at = r.pos
            field, wt = r.tag(ctx)
            if field == 1:
                if wt != 2:
                    return False
                s, ln = r.length(ctx)
                _item(mv, s, s + ln, ctx)
                items += 1
            else:
                r.skip(ctx, field, wt, 0, at)
    except Corrupt:
        return False
    return items > 0


def _record_items(blob, fname):
    """Each item of a record as (index, key, dtype, shape, stype, (data start, end), where),
    read as proto3 allows (any field order, unknown fields skipped, shape
    packed or not) and as the extension reads it: a problem is a ValueError in
    the extension's words, prefixed with fname."""
    mv = _byte_view(blob, fname)
    try:
        items = _parse(mv)
    except Corrupt as e:
        raise ValueError(f"{fname}: {e}") from None
    out = []
    for index, (k, d, shape, st, data) in enumerate(items):
        key = bytes(mv[k[0] : k[1]]).decode("utf-8")
        where = f" (item {index}, key '{quote(mv[k[0] : k[1]])}')"
        out.append(
            (
                index,
                key,
                bytes(mv[d[0] : d[1]]).decode("utf-8"),
                shape,
                bytes(mv[st[0] : st[1]]).decode("utf-8"),
                data,
                where,
            )
        )
    return mv, out


def _with_where(e, where):
    return fail(f"{e}{where}")


def _validate(mv, item):
    """Check an item as ar_valid does (array_validate); (numpy dtype, shape,
    fortran, offset, count) of its array, or None for a valid raw item of a
    dtype NumPy lacks."""
    index, key, dtype, shape, stype, (start, end), where = item
    if stype == SAFETENSORS_STYPE and dtype in _ST_RAW_BITS:
        numel = 1
        for d in shape:
            numel *= d
        bits = numel * _ST_RAW_BITS[dtype]
        if numel > _U64 or bits > _U64:
            raise fail(f"shape overflows{where}")
        if bits % 8 or bits // 8 != end - start:
            raise fail(
                f"data has {end - start} bytes, shape and dtype {dtype} need {bits // 8}"
                f"{' and a fraction' if bits % 8 else ''}{where}"
            )
        return None
    if stype == NUMPY_STYPE:
        try:
            t, big, fortran, shp, offset, nbytes = _npy_parse(mv, start, end)
        except Corrupt as e:
            raise _with_where(e, where) from None
        name = _dt_name(t, big)
        if dtype != name:
            raise fail(f"dtype '{quote(dtype.encode('utf-8'))}' does not match the .npy dtype '{name}'{where}")
        if tuple(shape) != shp:
            raise fail(f"shape does not match the .npy shape{where}")
        return _np_dtype(t, big), shp, fortran, offset, nbytes // _DT[t][1]
    # A legacy raw buffer: dtype and shape from the message, C order.
    try:
        t, big = _dt_parse(dtype.encode("utf-8"))
        numel = _shape_numel(shape)
    except Corrupt as e:
        raise _with_where(e, where) from None
    nbytes = numel * _DT[t][1]
    if nbytes > _U64:
        raise fail(f"raw array dtype and shape need more than 2^64 bytes{where}")
    if nbytes != end - start:
        raise fail(f"raw array data has {end - start} bytes, dtype and shape need {nbytes}{where}")
    return _np_dtype(t, big), tuple(shape), False, start, numel


def _item_array(mv, item, fname, copy):
    """An item's ndarray (read-only view of mv when not copy), checked as
    ar_valid checks it. A raw item of a dtype NumPy lacks (bfloat16, float8)
    is refused: to_state_dict reads those."""
    try:
        got = _validate(mv, item)
    except Corrupt as e:
        raise ValueError(f"{fname}: {e}") from None
    if got is None:
        raise ValueError(
            f"{fname}: dtype '{item[2]}' (stype 'safetensors') has no NumPy dtype; to_state_dict reads it "
            f"as a torch tensor{item[6]}"
        )
    dtype, shape, fortran, offset, count = got
    return _view(mv, dtype, shape, fortran, offset, count, copy)


def from_record(blob, copy=True):
    """Flower ArrayRecord bytes -> {key: ndarray}, in record order (None -> None).

    copy=False returns read-only arrays that are views of the BLOB's bytes:
    no payload is copied (keep the arrays only as long as you need, they keep
    the whole BLOB alive). Fortran order and byte order are those of each
    .npy; legacy items of another stype are raw buffers read with the
    message's dtype and shape, as the extension reads them. Items NumPy cannot
    hold (bfloat16 and the other safetensors raw dtypes) are refused with an
    error; to_state_dict reads those. A NumPy item whose dtype or shape field
    disagrees with its .npy header is refused, as ar_valid refuses it; a
    blob that is not bytes is a TypeError."""
    if blob is None:
        return None
    mv, items = _record_items(blob, "from_record")
    return {item[1]: _item_array(mv, item, "from_record", copy) for item in items}
