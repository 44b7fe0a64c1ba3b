# SPDX-License-Identifier: Apache-2.0
"""Flower RecordDicts as bytes: to_recorddict(records) -> bytes, from_recorddict(bytes) -> dict.

MetricRecord and ConfigRecord are dicts that say which kind of record a dict
of values is. The message, as Flower's serde writes it:

    RecordDict { repeated Item items = 1; }
    Item { string key = 1; oneof { ArrayRecord array_record = 2;
                                   MetricRecord metric_record = 3; ConfigRecord config_record = 4; } }
    MetricRecord / ConfigRecord { repeated Item { string key = 1; Value value = 2; } items = 1; }

with a MetricRecordValue / ConfigRecordValue oneof of double = 1, sint64 = 2,
uint64 = 3, bool = 4, string = 5, bytes = 6 and their lists 21 to 26 (a
MetricRecord holds the numbers only).
"""

import struct

import numpy as np

from ._protobuf import fields, len_field, read_varint, repeated_items, text, varint
from .npy import _MAGIC, _byte_view
from .record import NUMPY_STYPE, _build_pieces, _item_array, _items_of, _record_items

__all__ = ["to_recorddict", "from_recorddict", "MetricRecord", "ConfigRecord"]


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
        return varint(_zigzag(v))
    if kind in ("uint64", "bool"):
        return varint(int(v))
    return bytes(v.encode("utf-8") if kind == "string" else v)


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
            body = b"".join(len_field(1, _scalar_bytes(kind, x)) for x in items)
        else:
            packed = b"".join(_scalar_bytes(kind, x) for x in items)
            body = len_field(1, packed) if packed else b""
        return len_field(_LIST_FIELD[kind], body)
    kind = _kind(v, metric)
    if kind is None:
        raise TypeError(f"{fname}: {what} must be {allowed}, not {type(v).__name__}")
    if kind == "int":
        kind = _int_kind([v], fname, what)
    num = _SCALAR_FIELD[kind]
    if kind in ("string", "bytes"):
        return len_field(num, _scalar_bytes(kind, v))
    return varint(num << 3 | (1 if kind == "double" else 0)) + _scalar_bytes(kind, v)


def _values_record(values, metric, fname, name):
    """MetricRecord / ConfigRecord { repeated Item { string key = 1; Value value = 2; } items = 1; }"""
    out = []
    label = f"{'metric' if metric else 'config'} record {name!r}"
    for key, v in values.items():
        if not isinstance(key, str):
            raise TypeError(f"{fname}: {label} has a key of type {type(key).__name__}; keys must be str")
        k = key.encode("utf-8")
        item = (len_field(1, k) if k else b"") + len_field(2, _value_bytes(v, metric, fname, f"{label}, key {key!r},"))
        out.append(len_field(1, item))
    return b"".join(out)


def _check_record_blob(blob, fname, name):
    """ArrayRecord bytes given as they are: checked as rd() checks them (every
    NumPy item's .npy, and its dtype and shape fields against the header)."""
    label = f"{fname}: array record {name!r}"
    try:
        mv, items = _record_items(blob, label)
        for item in items:
            if item[4] == NUMPY_STYPE:
                _item_array(mv, item, label, False)
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
        head = (len_field(1, k) if k else b"") + varint(num << 3 | 2) + varint(size)
        pieces += [b"\x0a" + varint(len(head) + size) + head] + body
    return b"".join(pieces)


def _rd_describe(mv):
    """What a BLOB that is not a RecordDict looks like, for error messages."""
    if mv[:6] == _MAGIC:
        return "it is a .npy file: use from_npy"
    try:
        m, items = _record_items(mv, "")
        if items and all(it[4] for it in items):
            for it in items:
                _item_array(m, it, "", False)
            return "it looks like an ArrayRecord: use from_record"
    except ValueError:
        pass
    return f"it starts with {bytes(mv[:8])!r}"


def _values_from(mv, spans, metric, fname, label):
    """The record of the occurrences `spans` of an item's record (merged as
    protobuf merges them: their items together)."""
    out = MetricRecord() if metric else ConfigRecord()
    index = 0
    for span in spans:
        for _, where, ispan in repeated_items(mv, span[0], span[1], fname, label, label):
            where = f" ({label}, item {index})"
            key, values = "", []
            for inum, iwt, vspan in fields(mv, ispan[0], ispan[1], fname, where):
                if inum in (1, 2) and iwt != 2:
                    raise ValueError(f"{fname}: {label} item field {inum} has wire type {iwt}, not 2{where}")
                if inum == 1:
                    key = text(mv, vspan, fname, "key", where)
                elif inum == 2:
                    values.append(vspan)  # a message written again: merged
            where = f" ({label}, item {index}, key {key!r})"
            if key in out:
                raise ValueError(f"{fname}: {label} has duplicate key{where}")
            if not values:
                raise ValueError(f"{fname}: {label} has an item without a value{where}")
            out[key] = _value_from(mv, values, metric, fname, where)
            index += 1
    return out


def _scalar_from(kind, mv, wt, span, fname, where):
    want = 1 if kind == "double" else 2 if kind in ("string", "bytes") else 0
    if wt != want:
        raise ValueError(f"{fname}: wrong wire type {wt} for {kind}{where}")
    if kind == "double":
        return _DOUBLE.unpack_from(mv, span[0])[0]
    if kind == "string":
        return text(mv, span, fname, "string value", where)
    if kind == "bytes":
        return bytes(mv[span[0] : span[1]])
    v = span & _UINT64_MAX
    if kind == "sint64":
        return (v >> 1) ^ -(v & 1)
    return bool(v) if kind == "bool" else v


def _value_from(mv, spans, metric, fname, where):
    """The value of an item's value messages `spans`, merged as protobuf
    merges a oneof: a scalar member sets the value, a list member of the list
    type held appends to it, of another type starts a new list; an empty
    message changes nothing."""
    result, member = None, None
    for span in spans:
        for num, wt, vspan in fields(mv, span[0], span[1], fname, where, fixed=True):
            if metric and num not in _METRIC_FIELDS:
                continue  # unknown to MetricRecordValue: skipped, as protobuf does
            if num in _FIELD_KIND:
                result = _scalar_from(_FIELD_KIND[num], mv, wt, vspan, fname, where)
            elif num in _LIST_KIND:
                kind = _LIST_KIND[num]
                if wt != 2:
                    raise ValueError(f"{fname}: wrong wire type {wt} for {kind} list{where}")
                if member != num:
                    result = []
                result += _list_from(kind, mv, vspan, fname, where)
            else:
                continue
            member = num
    if member is None:
        raise ValueError(f"{fname}: value without a {'metric' if metric else 'config'} value type{where}")
    return result


def _list_from(kind, mv, span, fname, where):
    out = []
    for lnum, lwt, lspan in fields(mv, span[0], span[1], fname, where, fixed=True):
        if lnum != 1:
            continue
        if lwt == 2 and kind not in ("string", "bytes"):  # packed
            if kind == "double":
                n = lspan[1] - lspan[0]
                if n % 8:
                    raise ValueError(f"{fname}: packed double list of {n} bytes{where}")
                out += [_DOUBLE.unpack_from(mv, p)[0] for p in range(lspan[0], lspan[1], 8)]
            else:
                p = lspan[0]
                while p < lspan[1]:
                    raw, p = read_varint(mv, p, lspan[1], fname, where)
                    out.append(_scalar_from(kind, mv, 0, raw, fname, where))
        else:
            out.append(_scalar_from(kind, mv, lwt, lspan, fname, where))
    return out


def from_recorddict(blob, copy=True):
    """Flower RecordDict bytes -> {name: record}, in order (None -> None):
    an ArrayRecord as {key: ndarray} (from_record's dict; copy=False gives
    read-only views of the BLOB), a MetricRecord or ConfigRecord as those dict
    subclasses of Python values (sint64 and uint64 -> int, double -> float,
    bool, str, bytes, lists). to_recorddict of the result gives the same
    bytes. Reading is as lenient as protobuf, and reads what it reads (any
    field order, unknown fields skipped, lists packed or not, a record or
    value written more than once merged as protobuf merges it, tags of at most
    5 bytes); names and keys must be unique and every
    item must hold a record, and an ArrayRecord's NumPy items must agree with
    their .npy headers (as from_record). Anything else gets an error saying
    what it looks like; a blob that is not bytes is a TypeError."""
    if blob is None:
        return None
    fname = "from_recorddict"
    mv = _byte_view(blob, fname)
    try:
        return _recorddict_items(mv, fname, copy)
    except ValueError as e:
        what = _rd_describe(mv)
        if what.startswith("it starts with"):
            if mv[:1] == b"\x0a":
                raise  # a RecordDict's first byte: most likely a damaged one
            raise ValueError(f"{e}: not a RecordDict? ({what})") from None
        detail = str(e).split(": ", 1)[-1]
        raise ValueError(f"{fname}: this BLOB is not a RecordDict ({what}; read as one: {detail})") from None


def _recorddict_items(mv, fname, copy):
    if mv[:6] == _MAGIC:
        raise ValueError(f"{fname}: this BLOB is a .npy file")
    out = {}
    for index, where, span in repeated_items(mv, 0, len(mv), fname, "record dict"):
        name, kind, spans = "", None, []
        for inum, iwt, ispan in fields(mv, span[0], span[1], fname, where):
            if inum in (1, 2, 3, 4) and iwt != 2:
                raise ValueError(f"{fname}: record dict item field {inum} has wire type {iwt}, not 2{where}")
            if inum == 1:
                name = text(mv, ispan, fname, "name", where)
            elif inum in (2, 3, 4):  # a oneof: the same member again merges, another replaces
                if inum != kind:
                    kind, spans = inum, []
                spans.append(ispan)
        where = f" (item {index}, name {name!r})"
        if name in out:
            raise ValueError(f"{fname}: duplicate name{where}")
        if kind is None:
            raise ValueError(f"{fname}: an item without a record{where}")
        if kind == 2:
            label = f"{fname}: array record {name!r}"
            if len(spans) == 1:
                rec_mv = mv[spans[0][0] : spans[0][1]]
            else:  # ArrayRecords merged: their items together
                rec_mv = memoryview(b"".join(mv[a:b] for a, b in spans))
            sub, items = _record_items(rec_mv, label)
            out[name] = {it[1]: _item_array(sub, it, label, copy) for it in items}
        else:
            label = f"{'metric' if kind == 3 else 'config'} record {name!r}"
            out[name] = _values_from(mv, spans, kind == 3, fname, label)
    return out
