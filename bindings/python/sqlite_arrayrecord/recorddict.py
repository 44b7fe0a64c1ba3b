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

from . import _packed
from ._protobuf import Corrupt, Ctx, Reader, fail, len_field, quote, sniff, utf8_valid, varint, wrong_type
from .npy import _byte_view, _view
from .record import NUMPY_STYPE, _build_pieces, _item_array, _items_of, _parse, _record_items, _validate

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


# --- reading, as the extension reads (src/codec/recorddict.c, valrec.c) ------------

_RD_BLOB = "record dict"
_TYPE_NAME = {
    1: "double", 2: "sint64", 3: "uint64", 4: "bool", 5: "string", 6: "bytes", 21: "double_list",
    22: "sint_list", 23: "uint_list", 24: "bool_list", 25: "string_list", 26: "bytes_list",
}  # fmt: skip
_KIND_NAME = {2: "array", 3: "metric", 4: "config"}
_RD_FIELD = {1: "Item.key", 2: "Item.array_record", 3: "Item.metric_record", 4: "Item.config_record"}


def _rd_item(mv, start, end, ctx):
    """One RecordDict item (recorddict.c's parse_item): [name span, kind,
    non-empty occurrences of its record after the last other member, offset
    of the record]. A oneof: the same member again merges, another replaces."""
    r = Reader(mv, start, end)
    name, kind, spans, record_at = (0, 0), 0, [], 0
    ctx.key = None
    while r.pos < r.end:
        at = r.pos
        field, wt = r.tag(ctx)
        if 1 <= field <= 4:
            if wt != 2:
                raise wrong_type(ctx, _RD_FIELD[field], wt, at)
            s, n = r.length(ctx)
            if field == 1:
                name = (s, s + n)
                if utf8_valid(mv[s : s + n]):
                    ctx.key = mv[s : s + n]
            elif kind != field:
                kind, spans, record_at = field, [(s, s + n)] if n else [], s
            elif n:
                if not spans:
                    record_at = s  # the first non-empty occurrence
                spans.append((s, s + n))
        else:
            r.skip(ctx, field, wt, 0, at)
    if not utf8_valid(mv[name[0] : name[1]]):
        ctx.key = None
        raise ctx.blob_error("has a name that is not valid UTF-8", start)
    ctx.key = mv[name[0] : name[1]]
    if not kind:
        raise ctx.blob_error("has an item without a record", start)
    return name, kind, spans, record_at


def _rd_parse(mv):
    """The items of a RecordDict (recorddict_parse), names unique."""
    n = len(mv)
    r, ctx, items = Reader(mv, 0, n), Ctx(_RD_BLOB), []
    try:
        while True:
            nxt = r.next_item(ctx, "RecordDict.items", len(items))
            if nxt is None:
                break
            items.append(_rd_item(mv, nxt[1], nxt[1] + nxt[2], ctx))
    except Corrupt:
        kind = sniff(mv)
        if kind is None:
            raise
        if kind == "packed":
            raise Corrupt(_packed.misread(mv, _packed.RECORDDICT)) from None
        hint, conv = {
            "npy": ("a .npy file", "ar('key', npy)"),
            "npz": ("a .npz archive", "ar_from_npz(blob)"),
            "safetensors": ("a safetensors file", "ar_from_safetensors(blob)"),
        }[kind]
        raise Corrupt(
            f"got {hint}, not a record dict: make a record with {conv}, then wrap it with rd(name, 'array', rec)"
        ) from None
    seen = {}
    for i, it in enumerate(items):
        name = bytes(mv[it[0][0] : it[0][1]])
        if name in seen:
            raise fail(f"record dict has duplicate name '{quote(name)}' (items {seen[name]} and {i})")
        seen[name] = i
    return items


def _f64(mv, p):
    return _DOUBLE.unpack_from(mv, p)[0]


def _zigzag_decode(u):
    return (u >> 1) ^ -(u & 1)


def _list_elems(mv, s, e, typ, ctx):
    """The elements of one list message occurrence (valrec.c's iter_step, every element checked)."""
    r, out = Reader(mv, s, e), []
    while r.pos < r.end:
        at = r.pos
        field, wt = r.tag(ctx)
        if field != 1:
            r.skip(ctx, field, wt, 0, at)
            continue
        if typ in (25, 26):
            if wt != 2:
                raise wrong_type(ctx, "a list element", wt, at)
            ls, ln = r.length(ctx)
            raw = bytes(mv[ls : ls + ln])
            if typ == 25:
                if not utf8_valid(raw):
                    raise ctx.blob_error("has a string that is not valid UTF-8", ls)
                out.append(raw.decode("utf-8"))
            else:
                out.append(raw)
            continue
        if wt == 2:  # a packed run
            ls, ln = r.length(ctx)
            packed = Reader(mv, ls, ls + ln)
            while packed.pos < packed.end:
                pat = packed.pos
                if typ == 21:
                    if packed.end - pat < 8:
                        raise ctx.blob_error("has a packed double list cut mid-value", pat)
                    out.append(_f64(mv, pat))
                    packed.pos += 8
                else:
                    out.append(_decode(typ, packed.varint(ctx)))
            continue
        if typ == 21:
            if wt != 1:
                raise wrong_type(ctx, "a double list element", wt, at)
            if r.end - r.pos < 8:
                raise ctx.blob_error("truncated", r.end)
            out.append(_f64(mv, r.pos))
            r.pos += 8
        else:
            if wt != 0:
                raise wrong_type(ctx, "a list element", wt, at)
            out.append(_decode(typ, r.varint(ctx)))
    return out


def _decode(typ, u):
    if typ in (2, 22):
        return _zigzag_decode(u)
    if typ in (4, 24):
        return u != 0
    return u


def _value(mv, start, end, config, ctx, held):
    """One occurrence of a value message merged into held = [type, value]
    (valrec.c's parse_value): a scalar member sets the value, a list member of
    the type held appends, of another type starts a new list."""
    r = Reader(mv, start, end)
    while r.pos < r.end:
        at = r.pos
        field, wt = r.tag(ctx)
        if not (field in (1, 2, 3, 21, 22, 23) or (config and field in (4, 5, 6, 24, 25, 26))):
            r.skip(ctx, field, wt, 0, at)
            continue
        if field == 1:
            if wt != 1:
                raise wrong_type(ctx, "a double value", wt, at)
            if r.end - r.pos < 8:
                raise ctx.blob_error("truncated", r.end)
            held[1] = _f64(mv, r.pos)
            r.pos += 8
        elif field <= 4:
            if wt != 0:
                raise wrong_type(ctx, _TYPE_NAME[field], wt, at)
            held[1] = _decode(field, r.varint(ctx))
        else:
            if wt != 2:
                raise wrong_type(ctx, _TYPE_NAME[field], wt, at)
            s, n = r.length(ctx)
            if field in (5, 6):
                raw = bytes(mv[s : s + n])
                if field == 5:
                    if not utf8_valid(raw):
                        raise ctx.blob_error("has a string that is not valid UTF-8", s)
                    raw = raw.decode("utf-8")
                held[1] = raw
            else:
                elems = _list_elems(mv, s, s + n, field, ctx)
                if held[0] != field:
                    held[1] = []
                held[1] += elems
        held[0] = field


def _values_item(mv, start, end, config, ctx):
    """(key bytes, value) of one MetricRecord / ConfigRecord item (valrec.c's parse_item)."""
    r, key = Reader(mv, start, end), (0, 0)
    ctx.key = None
    values = []
    while r.pos < r.end:
        at = r.pos
        field, wt = r.tag(ctx)
        if field in (1, 2):
            if wt != 2:
                raise wrong_type(ctx, "Item.key" if field == 1 else "Item.value", wt, at)
            s, n = r.length(ctx)
            if field == 1:
                key = (s, s + n)
                if utf8_valid(mv[s : s + n]):
                    ctx.key = mv[s : s + n]
            else:
                values.append((s, s + n))
        else:
            r.skip(ctx, field, wt, 0, at)
    kb = bytes(mv[key[0] : key[1]])
    if not utf8_valid(kb):
        ctx.key = None
        raise ctx.blob_error("has a key that is not valid UTF-8", start)
    ctx.key = kb
    held = [0, None]
    for s, e in values:
        _value(mv, s, e, config, ctx, held)
    if not held[0]:
        raise ctx.blob_error("has an item without a value", start)
    return kb, held[1]


def _read_values_record(mv, spans, config, label):
    """A MetricRecord / ConfigRecord from the occurrences spans of its item's
    record, read piece by piece so offsets count from the start of the blob
    (recorddict_item_valrec, valrec_parse_more)."""
    items = []
    for s, e in spans:
        r, ctx = Reader(mv, s, e), Ctx(label)
        while True:
            nxt = r.next_item(ctx, "items", len(items))
            if nxt is None:
                break
            items.append(_values_item(mv, nxt[1], nxt[1] + nxt[2], config, ctx))
    out, seen = ConfigRecord() if config else MetricRecord(), {}
    for i, (kb, v) in enumerate(items):
        if kb in seen:
            raise fail(f"{label} has duplicate key '{quote(kb)}' (items {seen[kb]} and {i})")
        seen[kb] = i
        out[kb.decode("utf-8")] = v
    return out


def _valid_record(mv):
    """Is mv a valid ArrayRecord of at least one item (what rd_error checks
    before saying a record was given where a RecordDict belongs)?"""
    try:
        items = _parse(mv)
        for item in _record_tuples(mv, items):
            _validate(mv, item)
    except Corrupt:
        return False
    return len(items) > 0


def _record_tuples(mv, items):
    for index, (k, d, shape, st, data) in enumerate(items):
        yield (
            index,
            bytes(mv[k[0] : k[1]]).decode("utf-8"),
            bytes(mv[d[0] : d[1]]).decode("utf-8"),
            shape,
            bytes(mv[st[0] : st[1]]).decode("utf-8"),
            data,
            f" (item {index}, key '{quote(mv[k[0] : k[1]])}')",
        )


def _rd_checked(mv):
    """Each item of a RecordDict as (name, kind, what it holds), every item's
    record checked as rd_error checks it: (record bytes, [(item, its array's
    layout)]) for an ArrayRecord, the MetricRecord or ConfigRecord else."""
    out = []
    for (ns, ne), kind, spans, record_at in _rd_parse(mv):
        name = bytes(mv[ns:ne])
        label = f"{_KIND_NAME[kind]} record '{quote(name)}'"
        if kind == 2:
            rec_mv = (
                mv[spans[0][0] : spans[0][1]] if len(spans) == 1 else memoryview(b"".join(mv[a:b] for a, b in spans))
            )
            try:
                checked = [(item, _validate(rec_mv, item)) for item in _record_tuples(rec_mv, _parse(rec_mv))]
            except Corrupt as e:
                raise fail(f"{label} (at byte {record_at}): {e}") from None
            out.append((name, label, (rec_mv, checked)))
        else:
            out.append((name, label, _read_values_record(mv, spans, kind == 4, label)))
    return out


def _rd_records(mv, copy, fname):
    """{name: record} of a RecordDict, checked as rd_error checks it."""
    try:
        checked = _rd_checked(mv)
    except Corrupt as e:
        if _valid_record(mv):
            raise ValueError(f"{fname}: got a record, not a record dict: wrap it with rd(name, 'array', rec)") from None
        raise ValueError(f"{fname}: {e}") from None
    out = {}
    for name, label, held in checked:
        if isinstance(held, dict):
            out[name.decode("utf-8")] = held
            continue
        rec_mv, items = held
        arrays = {}
        for item, got in items:
            if got is None:
                raise ValueError(
                    f"{fname}: {label}: dtype '{item[2]}' (stype 'safetensors') has no NumPy dtype; "
                    f"to_state_dict reads it as a torch tensor{item[6]}"
                )
            arrays[item[1]] = _view(rec_mv, *got, copy)
        out[name.decode("utf-8")] = arrays
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
    5 bytes); names and keys must be unique and every item must hold a
    record, and an ArrayRecord's NumPy items must agree with their .npy
    headers (as from_record). Problems are reported in rd_error's words; a
    .npy, .npz or safetensors file is named with what converts it; a blob
    that is not bytes is a TypeError."""
    if blob is None:
        return None
    fname = "from_recorddict"
    return _rd_records(_byte_view(blob, fname), copy, fname)
