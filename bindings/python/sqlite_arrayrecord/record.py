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

from ._protobuf import fields, len_field, read_varint, repeated_items, text, varint
from .npy import _MAGIC, _byte_view, _npy_parts, _numeric_dtype, _parse_npy, _view

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


def _array_fields(mv, span, fname, where, item):
    """Merge one occurrence of an Array message into item = [dtype, shape, stype, data]:
    protobuf's merge, as the extension reads it (the last dtype, stype and data win,
    shapes add up)."""
    for num, wt, fspan in fields(mv, span[0], span[1], fname, where):
        if num == 1 and wt == 2:
            item[0] = text(mv, fspan, fname, "dtype", where)
        elif num == 2 and wt == 2:
            p = fspan[0]
            while p < fspan[1]:
                d, p = read_varint(mv, p, fspan[1], fname, where)
                item[1].append(d)
        elif num == 2 and wt == 0:
            item[1].append(fspan)
        elif num == 3 and wt == 2:
            item[2] = text(mv, fspan, fname, "stype", where)
        elif num == 4 and wt == 2:
            item[3] = fspan
        elif num in (1, 2, 3, 4):
            raise ValueError(f"{fname}: array field {num} has wire type {wt}{where}")


def _record_items(blob, fname):
    """Each item of a record as (index, key, dtype, shape, stype, (data start, end), where),
    read as proto3 allows: any field order, unknown fields skipped, shape packed or not."""
    mv = _byte_view(blob, fname)
    end = len(mv)
    if end and mv[:6] == _MAGIC:
        raise ValueError(f"{fname}: this BLOB is a .npy file, not an ArrayRecord: use from_npy")
    out, seen = [], set()
    for index, where, span in repeated_items(mv, 0, end, fname, "record"):
        key, values = "", []
        for inum, iwt, ispan in fields(mv, span[0], span[1], fname, where):
            if inum == 1 and iwt == 2:
                key = text(mv, ispan, fname, "key", where)
            elif inum == 2 and iwt == 2:
                values.append(ispan)
            elif inum in (1, 2):
                raise ValueError(f"{fname}: item field {inum} has wire type {iwt}, not 2{where}")
        where = f" (item {index}, key {key!r})"
        if key in seen:
            raise ValueError(f"{fname}: duplicate key{where}")
        seen.add(key)
        item = ["", [], "", (0, 0)]
        for value in values:
            _array_fields(mv, value, fname, where, item)
        dtype, shape, stype, data = item
        # int32 on the wire: a negative dimension arrives as a 64-bit two's complement varint.
        if any(d >= 0x80000000 for d in shape):
            raise ValueError(f"{fname}: negative or oversized dimension in shape {shape}{where}")
        out.append((index, key, dtype, shape, stype, data, where))
    return mv, out


def _item_array(mv, item, fname, copy):
    """An item's ndarray (read-only view of mv when not copy)."""
    index, key, dtype, shape, stype, (start, end), where = item
    if stype == NUMPY_STYPE:
        dt, shp, fortran, offset = _parse_npy(mv, start, end, fname, where)
        arr = _view(mv, dt, shp, fortran, offset, end, fname, where, copy)
        # Flower writes dtype = str(arr.dtype) and shape = list(arr.shape): the
        # extension's ar_valid refuses an item whose fields say otherwise.
        if dtype != str(dt):
            raise ValueError(f"{fname}: dtype {dtype!r} does not match the .npy dtype {str(dt)!r}{where}")
        if tuple(shape) != shp:
            raise ValueError(f"{fname}: shape does not match the .npy shape{where}")
        return arr
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
    error; to_state_dict reads those. A NumPy item whose dtype or shape field
    disagrees with its .npy header is refused, as ar_valid refuses it; a
    blob that is not bytes is a TypeError."""
    if blob is None:
        return None
    mv, items = _record_items(blob, "from_record")
    return {item[1]: _item_array(mv, item, "from_record", copy) for item in items}
