# SPDX-License-Identifier: Apache-2.0
"""Protobuf wire format, the little the record and RecordDict codecs need.

Writing: varint(v), len_field(num, body). Reading, as the extension reads
(src/codec/pb.c) and in its words: Reader (varint, tag, length, skip,
next_item) with a Ctx naming the blob, item and key, raising Corrupt with
the extension's message (no function name; the public readers prefix
theirs), so that from_record says what ar_error says; quote, cut and sniff
as codec.c has them.
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


# --- the extension's reader (src/codec/pb.c), message for message -----------------
#
# The readers of record, recorddict and npy raise Corrupt(message) with the
# extension's message text (codec_err: no function name), so that Python and
# SQL say the same thing about the same bytes; the public functions prefix
# their name. Offsets are absolute in the blob, as the extension counts them.

_MSG_MAX = 239  # codec_err.msg holds 240 bytes with its NUL
_QUOTE_LIMIT = 48  # codec_quote into CODEC_QUOTE_MAX (64) bytes
_U64 = (1 << 64) - 1


class Corrupt(ValueError):
    """A reader's problem, in the extension's words (no function name)."""


def cut(msg):
    """msg as codec_fail stores it: at most 239 bytes, a split character dropped."""
    b = msg.encode("utf-8")
    if len(b) <= _MSG_MAX:
        return msg
    return b[:_MSG_MAX].decode("utf-8", "ignore")


def fail(msg):
    return Corrupt(cut(msg))


def utf8_valid(b):
    try:
        bytes(b).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _utf8_seq(s, i, n):
    """Length of the valid UTF-8 sequence at s[i:n], 0 when invalid (codec_utf8_seq)."""
    c = s[i]
    if c < 0x80:
        return 1
    if 0xC2 <= c <= 0xDF:
        ln, cp = 2, c & 0x1F
    elif 0xE0 <= c <= 0xEF:
        ln, cp = 3, c & 0x0F
    elif 0xF0 <= c <= 0xF4:
        ln, cp = 4, c & 0x07
    else:
        return 0
    if ln > n - i:
        return 0
    for k in range(1, ln):
        if s[i + k] & 0xC0 != 0x80:
            return 0
        cp = (cp << 6) | (s[i + k] & 0x3F)
    if (ln == 3 and cp < 0x800) or (ln == 4 and (cp < 0x10000 or cp > 0x10FFFF)) or 0xD800 <= cp <= 0xDFFF:
        return 0
    return ln


def quote(s):
    """Untrusted bytes for a message (codec_quote): control characters and
    invalid UTF-8 as '?', cut with '...' past 48 bytes."""
    s = bytes(s)
    out, o, i, n = [], 0, 0, len(s)
    while i < n:
        ln = _utf8_seq(s, i, n)
        bad = ln == 0 or (ln == 1 and (s[i] < 0x20 or s[i] == 0x7F))
        if o + (1 if bad else ln) > _QUOTE_LIMIT:
            out.append(b"...")
            break
        if bad:
            out.append(b"?")
            o += 1
            i += 1
        else:
            out.append(s[i : i + ln])
            o += ln
            i += ln
    return b"".join(out).decode("utf-8")


class Ctx:
    """Where a reader is (pb_ctx): the blob's name, the item (-1 outside
    items) and its key (None while unknown or not printable)."""

    __slots__ = ("blob", "item", "key")

    def __init__(self, blob):
        self.blob, self.item, self.key = blob, -1, None

    def error(self, what, at):
        where = ""
        if self.item >= 0:
            where = f" (item {self.item}, key '{quote(self.key)}')" if self.key is not None else f" (item {self.item})"
        return fail(f"{what} at byte {at}{where}")

    def blob_error(self, problem, at):
        return self.error(f"{self.blob} {problem}", at)


class Reader:
    """A bounded reader over blob[pos:end] (pb_reader)."""

    __slots__ = ("blob", "pos", "end")

    def __init__(self, blob, pos, end):
        self.blob, self.pos, self.end = blob, pos, end

    def varint(self, ctx):
        """The next varint; a truncated or overlong one is ctx's error."""
        at, v, blob = self.pos, 0, self.blob
        if at < self.end and blob[at] < 0x80:  # one byte: most lengths and values
            self.pos = at + 1
            return blob[at]
        for shift in range(0, 70, 7):
            if self.pos >= self.end:
                raise ctx.blob_error("truncated", self.end)
            b = blob[self.pos]
            self.pos += 1
            if shift < 64:
                v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v & _U64
        raise ctx.blob_error("has a varint longer than 10 bytes", at)

    def tag(self, ctx):
        """(field, wire type), as protobuf reads tags (pb_tag)."""
        start, tag, blob = self.pos, 0, self.blob
        if start < self.end:
            b = blob[start]
            if 8 <= b < 0x80 and b & 7 <= 5:  # one byte, a valid field and wire type: every tag here
                self.pos = start + 1
                return b >> 3, b & 7
        k = 0
        while True:
            if k == 5:
                raise ctx.blob_error("has a tag longer than 5 bytes", start)
            if self.pos >= self.end:
                raise ctx.blob_error("truncated", self.end)
            b = blob[self.pos]
            self.pos += 1
            tag |= (b & 0x7F) << (7 * k)
            if not b & 0x80:
                break
            k += 1
        field, wt = tag >> 3, tag & 7
        if field == 0 or field > 536870911:
            raise ctx.blob_error("has an invalid field number", start)
        if wt > 5:
            raise ctx.blob_error(f"has invalid wire type {wt}", start)
        return field, wt

    def length(self, ctx):
        """(start, length) of a length-delimited payload (pb_len)."""
        n = self.varint(ctx)
        if n > self.end - self.pos:
            raise ctx.blob_error("truncated", self.end)
        s = self.pos
        self.pos += n
        return s, n

    def skip(self, ctx, field, wt, depth, tag_at):
        """Skip one field whose tag was at tag_at (pb_skip)."""
        if wt == 0:
            self.varint(ctx)
        elif wt in (1, 5):
            size = 8 if wt == 1 else 4
            if size > self.end - self.pos:
                raise ctx.blob_error("truncated", self.end)
            self.pos += size
        elif wt == 2:
            self.length(ctx)
        elif wt == 3:
            if depth >= 64:
                raise ctx.blob_error("nests groups too deeply", tag_at)
            while True:
                inner_at = self.pos
                if self.pos >= self.end:
                    raise ctx.blob_error("truncated inside a group", self.end)
                f, w = self.tag(ctx)
                if w == 4:
                    if f != field:
                        raise ctx.blob_error("has a mismatched end-group", inner_at)
                    return
                self.skip(ctx, f, w, depth + 1, inner_at)
        else:
            raise ctx.blob_error("has an unexpected end-group", tag_at)

    def next_item(self, ctx, field_name, item):
        """(tag offset, start, length) of the next entry of the message's
        repeated field 1, other fields skipped; None at the end (pb_next_item)."""
        while self.pos < self.end:
            at = self.pos
            ctx.item, ctx.key = -1, None
            f, wt = self.tag(ctx)
            if f == 1:
                ctx.item = item
                if wt != 2:
                    raise wrong_type(ctx, field_name, wt, at)
                s, n = self.length(ctx)
                return at, s, n
            self.skip(ctx, f, wt, 0, at)
        return None


def wrong_type(ctx, field, wt, at):
    return ctx.blob_error(f"has wrong wire type {wt} for {field}", at)


def sniff(b):
    """What another format's magic says a blob is (codec_sniff): 'npy', 'npz', 'safetensors', 'packed' or None."""
    n = len(b)
    if n >= 7 and bytes(b[:7]) == b"\x07ARPACK":
        return "packed"
    if n >= 6 and bytes(b[:6]) == b"\x93NUMPY":
        return "npy"
    if n >= 4 and bytes(b[:4]) in (b"PK\x03\x04", b"PK\x05\x06"):
        return "npz"
    if n < 10:
        return None
    hlen = int.from_bytes(bytes(b[:8]), "little")
    return "safetensors" if 2 <= hlen <= n - 8 and b[8] == 0x7B else None
