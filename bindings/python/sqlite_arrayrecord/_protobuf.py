# SPDX-License-Identifier: Apache-2.0
"""Protobuf wire format, the little the record and RecordDict codecs need.

Writing: varint(v), len_field(num, body). Reading (as protobuf reads:
tags of at most 5 bytes, field numbers 1 to 2^29 - 1): fields(mv, start, end,
...) yields each field of a message (groups in unknown fields skipped as
protobuf skips them), repeated_items the entries of a message's repeated
field 1, read_varint a varint (of a packed run), text a UTF-8 string.
Readers raise ValueError("fname: ... at byte N" + where); fname and where
are the caller's (the function, and the item being read).
"""


def varint(v):
    """The varint bytes of an unsigned integer."""
    if v < 0x80:
        return bytes((v,))
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def len_field(num, body):
    """A length-delimited field (wire type 2): tag, length, body."""
    return varint(num << 3 | 2) + varint(len(body)) + body


def read_varint(mv, pos, end, fname, where):
    """(value, position after it) of the varint at mv[pos:end]."""
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


def read_tag(mv, pos, end, fname, where):
    """(field number, wire type, position after) of the tag at mv[pos:end], as
    protobuf reads tags: at most 5 bytes, field numbers 1 to 2^29 - 1."""
    at, tag = pos, 0
    for k in range(5):
        if pos >= end:
            raise ValueError(f"{fname}: record blob truncated at byte {pos}{where}")
        b = mv[pos]
        pos += 1
        tag |= (b & 0x7F) << (7 * k)
        if b < 0x80:
            num = tag >> 3
            if num == 0 or num > 536870911:  # no protobuf message has a field 0
                raise ValueError(f"{fname}: invalid field number {num} at byte {at}{where}")
            return num, tag & 7, pos
    raise ValueError(f"{fname}: tag longer than 5 bytes at byte {at}{where}")


def fields(mv, pos, end, fname, where, fixed=False):
    """(field number, wire type, value or (start, end) of the bytes) of each field;
    fixed-width fields are skipped unless fixed=True (then their (start, end))."""
    while pos < end:
        num, wt, pos = read_tag(mv, pos, end, fname, where)
        if wt == 2:
            n, pos = read_varint(mv, pos, end, fname, where)
            if n > end - pos:
                raise ValueError(
                    f"{fname}: record blob truncated at byte {end} (a field of {n} bytes at byte {pos}){where}"
                )
            yield num, wt, (pos, pos + n)
            pos += n
        elif wt == 0:
            v, pos = read_varint(mv, pos, end, fname, where)
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


def repeated_items(mv, start, end, fname, what, label=""):
    """(index, where, (start, end)) of each entry of the message's
    `repeated Item items = 1` (every message here has one); where is
    " (label, item N)". Other fields are skipped; what names the message."""
    index = 0
    for num, wt, span in fields(mv, start, end, fname, f" ({label})" if label else ""):
        if num != 1:
            continue
        where = f" ({label + ', ' if label else ''}item {index})"
        if wt != 2:
            raise ValueError(f"{fname}: {what} field 1 has wire type {wt}, not 2{where}")
        yield index, where, span
        index += 1


def _skip_group(mv, pos, end, num, fname, where):
    """The end of a (deprecated) group that starts at pos: protobuf parsers skip
    one in an unknown field, so the readers here do too."""
    open_groups = [num]
    while open_groups:
        if pos >= end:
            raise ValueError(f"{fname}: record blob truncated inside a group at byte {end}{where}")
        at = pos
        n, wt, pos = read_tag(mv, pos, end, fname, where)
        if wt == 4:
            if n != open_groups.pop():
                raise ValueError(f"{fname}: group ended with the wrong field number at byte {at}{where}")
        elif wt == 3:
            open_groups.append(n)
            if len(open_groups) > 100:
                raise ValueError(f"{fname}: groups nested too deep at byte {at}{where}")
        elif wt == 0:
            _, pos = read_varint(mv, pos, end, fname, where)
        elif wt in (1, 2, 5):
            size = 8 if wt == 1 else 4 if wt == 5 else None
            if size is None:
                size, pos = read_varint(mv, pos, end, fname, where)
            if size > end - pos:
                raise ValueError(f"{fname}: record blob truncated at byte {end}{where}")
            pos += size
        else:
            raise ValueError(f"{fname}: invalid protobuf wire type {wt} at byte {at}{where}")
    return pos


def text(mv, span, fname, what, where):
    """The UTF-8 string in mv[span[0]:span[1]]."""
    try:
        return bytes(mv[span[0] : span[1]]).decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{fname}: {what} is not valid UTF-8{where}") from None
