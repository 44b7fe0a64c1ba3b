# SPDX-License-Identifier: Apache-2.0
"""What a packed record's header says, for the readers' messages: the
extension's packed_hint and packed_misread (src/codec/packed.c), word for
word, so that from_record, from_recorddict and from_npy name a packed BLOB
and the function that unpacks it as ar_error, rd_error and npy_error do.
Unpacking itself is the extension's (ar_unpack, rd_unpack).
"""

import math
import struct

MAGIC = b"\x07ARPACK"
_HEAD = struct.Struct("<7sBBBBBIQQdQQQQ32s")
RECORD, RECORDDICT = 1, 2


def is_packed(b):
    """Does b start with the packed-record magic?"""
    return len(b) >= len(MAGIC) and bytes(b[: len(MAGIC)]) == MAGIC


def _head(b):
    """The header's fields when it reads (packed_head_parse), else None."""
    if len(b) < _HEAD.size:
        return None
    (
        _,
        version,
        kind,
        flags,
        lossy,
        chunk_log2,
        _count,
        size,
        _hash,
        max_error,
        meta_raw,
        meta_stored,
        base_size,
        base_hash,
        base_id,
    ) = _HEAD.unpack_from(bytes(b[: _HEAD.size]))
    based, is_lossy = flags & 1, flags & 2
    if version != 1 or kind not in (RECORD, RECORDDICT) or flags & ~3:
        return None
    if lossy > 2 or (not is_lossy) != (not lossy) or (lossy and not based):
        return None
    if not 10 <= chunk_log2 <= 22:
        return None
    if not (max_error >= 0 and math.isfinite(max_error)) or (not lossy and max_error != 0):
        return None
    if meta_stored > len(b) - _HEAD.size or meta_stored > meta_raw:
        return None
    if not based and (base_size or base_hash or any(base_id)):
        return None
    return kind, size, based, base_id


def hint(b):
    """(packed_hint's text, kind): "a packed record (20480 bytes packed into
    9876, against base 3f2a9c01b2d4e5f6...)"."""
    head = _head(b)
    if head is None:
        return "a damaged packed record", RECORD
    kind, size, based, base_id = head
    where = f"against base {base_id.hex()[:16]}..." if based else "no base"
    what = "record" if kind == RECORD else "record dict"
    return f"a packed {what} ({size} bytes packed into {len(b)}, {where})", kind


def misread(b, reader):
    """The message of a reader of records (RECORD), record dicts
    (RECORDDICT) or .npy files (0) given the packed BLOB b."""
    text, kind = hint(b)
    based = "against base" in text
    fn = "ar_unpack" if kind == RECORD else "rd_unpack"
    unpack = f"{fn}(packed, base)" if based else f"{fn}(packed)"
    if reader == kind:
        return f"got {text}: unpack it with {unpack} first"
    if reader == RECORD:
        return f"got {text}, not a record: unpack it with {unpack}, then take its record with rd_array_record(rd)"
    if reader == RECORDDICT:
        return f"got {text}, not a record dict: unpack it with {unpack}, then wrap it with rd(name, 'array', rec)"
    take = "ar_get(rec, key)" if kind == RECORD else "ar_get(rd_array_record(rd), key)"
    return f"got {text}, not a .npy file: unpack it with {unpack}, then take an array out with {take}"
