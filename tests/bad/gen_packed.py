#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the malformed-input corpus for packed records into tests/bad/:
packed BLOBs (docs/formats.md, "Packed records") damaged in their header,
in their meta section and in their data, with the error each must give, in
three manifests: packed_header (every reader of a packed BLOB, ar_pack_base
included, refuses it), packed_meta (refused when the BLOB is opened) and
packed_data (refused only when it is unpacked, against its base).

The valid BLOBs the damage starts from are packed by the extension
(build/arrayrecord, from `make`); the damage is done here, field by field,
on a copy whose meta section is stored as is (unpacked with libzstd through
ctypes when the extension compressed it, the header's sizes set to match).
The files are committed; run this script again after changing it
(python3 tests/bad/gen_packed.py) and commit what changes. Standard library
only (and libzstd, which the extension needs anyway).
"""

import ctypes
import ctypes.util
import os
import shutil
import sqlite3
import struct

import gen_foundation as foundation
from gen_foundation import put

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXT = os.path.join(ROOT, "build", "arrayrecord")

HEAD = struct.Struct("<7sBBBBBIQQdQQQQ32s")  # the 104-byte header
ENTRY = struct.Struct("<QQQdBBBBI")  # an entry of the meta section, before its key

# The base record of the manifests' SQL (a float32 array 'w' of 256 values and
# a float64 'b'), built in SQL there exactly as here, so the BLOBs packed
# against it unpack there.
W = "[" + ", ".join("%d.25" % (i % 17 - 8) for i in range(256)) + "]"
BASE_SQL = "ar('w', npy_from_json('%s', 'float32'), 'b', npy_from_json('[1.5, -2.5, 3.5]', 'float64'))" % W


def connect():
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(EXT)
    return con


def zstd_decompress(frame, size):
    lib = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    lib.ZSTD_decompress.restype = ctypes.c_size_t
    lib.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
    out = ctypes.create_string_buffer(size)
    got = lib.ZSTD_decompress(out, size, frame, len(frame))
    assert got == size, got
    return out.raw


class Packed:
    """A packed BLOB taken apart: header fields, entries, skeleton, data."""

    def __init__(self, blob):
        self.h = list(HEAD.unpack_from(blob, 0))
        meta_raw, meta_stored = self.h[10], self.h[11]
        meta = blob[len(blob) - meta_stored :]
        if meta_stored < meta_raw:
            meta = zstd_decompress(meta, meta_raw)
        self.data = blob[HEAD.size : len(blob) - meta_stored]
        self.entries, at = [], 0
        for _ in range(self.h[6]):
            e = list(ENTRY.unpack_from(meta, at))
            key = meta[at + ENTRY.size : at + ENTRY.size + e[8]]
            self.entries.append((e, key))
            at += ENTRY.size + e[8]
        self.skeleton = meta[at:]

    def meta(self):
        return b"".join(ENTRY.pack(*e) + key for e, key in self.entries) + self.skeleton

    def bytes(self):
        """The BLOB again, its meta section stored as is."""
        meta = self.meta()
        h = list(self.h)
        h[10] = h[11] = len(meta)
        return HEAD.pack(*h) + self.data + meta

    def entry_data(self, i):
        """Where entry i's stored bytes start in the BLOB."""
        return HEAD.size + sum(e[2] for e, _ in self.entries[:i])


def patch(blob, at, data):
    return blob[:at] + data + blob[at + len(data) :]


def gen():
    con = connect()
    (base,) = con.execute("SELECT " + BASE_SQL).fetchone()
    # a record close to the base: its 'w' packs as diff (frames), 'b' as same
    (rec,) = con.execute(
        "SELECT ar_set(?1, 'w', ar_get(ar_add(ar_select(?1, 'w'), ar_scale(ar_select(?1, 'w'), 0.001)), 'w'))", (base,)
    ).fetchone()
    (based,) = con.execute("SELECT ar_pack(?1, ?2, '{\"chunk\": 1024}')", (rec, base)).fetchone()
    (alone,) = con.execute("SELECT ar_pack(?1)", (rec,)).fetchone()
    (lossy,) = con.execute('SELECT ar_pack(?1, ?2, \'{"lossy": "float16"}\')', (rec, base)).fetchone()
    p = Packed(based)
    modes = [e[4] for e, _ in p.entries]
    assert modes == [2, 4], modes  # diff, same
    good = p.bytes()
    meta_at = len(good) - p.h[10]

    # --- the header: every reader refuses it -----------------------------------------
    g = "packed_header"

    def h(name, data, want):
        put(g, "packed_header", name + ".bin", data, want)

    def field(i, value):
        fields = list(p.h)
        fields[i] = value
        return HEAD.pack(*fields) + good[HEAD.size :]

    h("magic_only", good[:7], "packed record truncated at byte 7 (header)")
    h("header_cut", good[:103], "packed record truncated at byte 103 (header)")
    h("version_2", field(1, 2), "packed record has version 2; this library reads version 1")
    h("kind_0", field(2, 0), "packed record has a bad kind at byte 8 (header)")
    h("kind_3", field(2, 3), "packed record has a bad kind at byte 8 (header)")
    h("flags_unknown", field(3, p.h[3] | 4), "packed record has bad flags at byte 9 (header)")
    h("lossy_without_flag", field(4, 1), "packed record has a bad lossy format at byte 10 (header)")
    h("lossy_format_3", field(4, 3), "packed record has a bad lossy format at byte 10 (header)")
    h("chunk_log2_9", field(5, 9), "packed record has a bad chunk size at byte 11 (header)")
    h("chunk_log2_23", field(5, 23), "packed record has a bad chunk size at byte 11 (header)")
    h("max_error_nan", field(9, float("nan")), "packed record has a bad max_error at byte 32 (header)")
    h("max_error_lossless", field(9, 0.5), "packed record has a bad max_error at byte 32 (header)")
    h("meta_past_end", field(11, len(good)), "packed record has a meta section that does not fit at byte 48 (header)")
    h("meta_stored_over_raw", field(11, p.h[10] + 1), "meta section that does not fit at byte 48 (header)")
    nobase = list(p.h)
    nobase[3] = 0
    h("base_named_without_flag", HEAD.pack(*nobase) + good[HEAD.size :], "names a base but has none at byte 56")

    # --- the meta section: refused when the BLOB is opened ---------------------------
    g = "packed_meta"

    def m(name, data, want):
        put(g, "packed_meta", name + ".bin", data, want)

    def entry(i, k, value, key=None):
        q = Packed(good)
        e, old = q.entries[i]
        e = list(e)
        if k is not None:
            e[k] = value
        if key is not None:
            e[8] = len(key)
            old = key
        q.entries[i] = (e, old)
        return q.bytes()

    m("meta_raw_too_big", patch(good, 40, struct.pack("<Q", 1 << 40)), "has a meta section larger than its record")
    m("count_too_big", patch(good, 12, struct.pack("<I", 1000)), "meta section is too short for its entries at byte")
    m("count_3", patch(good, 12, struct.pack("<I", 3)), "meta section truncated at byte")
    m("key_past_meta", entry(1, 8, 10000), "meta section truncated at byte")
    m("mode_6", entry(0, 4, 6), "meta section has a bad mode at byte")
    m("width_3", entry(0, 5, 3), "meta section has a bad width at byte")
    m("flags_2", entry(0, 6, 2), "meta section has bad flags at byte")
    m("reserved_1", entry(0, 7, 1), "meta section has bad flags at byte")
    m("key_not_utf8", entry(1, None, None, key=b"\xff"), "meta section has a key that is not UTF-8 at byte")
    m("entry_max_error", entry(0, 3, 0.25), "meta section has a bad max_error at byte")
    m(
        "entry_past_size",
        entry(1, 0, p.h[7]),
        "has an array outside the unpacked record or out of order at byte 41 (entry 1)",
    )
    m(
        "entries_overlap",
        entry(1, 0, p.entries[0][0][0]),
        "has an array outside the unpacked record or out of order at byte 41 (entry 1)",
    )
    m(
        "length_not_items",
        entry(0, 1, p.entries[0][0][1] - 1),
        "meta section has a length that is not whole items at byte",
    )
    m("same_stores_bytes", entry(1, 2, 4), "meta section has more data than the BLOB holds at byte")
    m("raw_stored_differs", entry(1, 4, 0), "meta section has a bad stored size at byte")
    m(
        "stored_past_data",
        entry(0, 2, p.entries[0][0][2] + 100),
        "meta section has more data than the BLOB holds at byte",
    )
    m(
        "data_left_over",
        entry(0, 2, p.entries[0][0][2] - 1),
        "frames that do not add up to its data at byte 16 (entry 0)",
    )
    m("frame_size_0", patch(good, HEAD.size, b"\0\0\0\0"), "meta section has an empty frame at byte")
    m(
        "frame_size_off",
        patch(good, HEAD.size, struct.pack("<I", struct.unpack_from("<I", good, HEAD.size)[0] + 1)),
        "meta section has frames that do not add up to its data at byte",
    )
    m("table_past_data", entry(0, 2, 8), "meta section has a frame table larger than its data at byte")
    short = list(p.h)
    short[10] = short[11] = p.h[10] - 1
    m(
        "skeleton_short",
        HEAD.pack(*short) + good[HEAD.size : -1],
        "meta section has a skeleton of the wrong size at byte",
    )
    m(
        "diff_without_base",
        patch(good, 9, b"\0")[:56] + bytes(48) + good[104:],
        "meta section needs a base the header does not name at byte",
    )
    zs = Packed(alone)
    assert zs.h[11] < zs.h[10], "the unbased BLOB's meta section is compressed"
    m("meta_frame_damaged", patch(alone, len(alone) - 3, b"\xff\xff\xff"), "packed record corrupt at byte")

    # --- the data: refused when unpacked -------------------------------------------
    g = "packed_data"

    def d(name, data, want):
        put(g, "packed_data", name + ".bin", data, want)

    first_frame = HEAD.size + 4 * 4  # entry 0: four planes' sizes, then frame 0
    d(
        "frame_magic",
        patch(good, first_frame, b"\0"),
        "packed record corrupt at byte 120 (array 'w', chunk 0, plane 0): zstd:",
    )
    f0 = struct.unpack_from("<I", good, HEAD.size)[0]
    d(
        "frame_cut_content",
        patch(good, first_frame + f0 - 1, bytes([good[first_frame + f0 - 1] ^ 0x40])),
        "(array 'w', chunk 0",
    )
    d("hash_off", patch(good, 24, struct.pack("<Q", p.h[8] ^ 1)), "it does not unpack to the bytes it was packed from")
    d(
        "skeleton_byte",
        patch(good, len(good) - 1, bytes([good[-1] ^ 1])),
        "it does not unpack to the bytes it was packed from",
    )
    d("base_size_off", patch(good, 56, struct.pack("<Q", p.h[12] + 1)), "wrong base: packed against object")
    d(
        "base_hash_off_and_damage",
        patch(patch(good, 64, struct.pack("<Q", p.h[13] ^ 1)), 24, struct.pack("<Q", p.h[8] ^ 1)),
        "wrong base: packed against object",
    )
    d(
        "lossy_hash_off",
        patch(lossy, 24, struct.pack("<Q", Packed(lossy).h[8] ^ 1)),
        "it does not unpack to the bytes it was packed from",
    )
    assert meta_at > 0


HEADERS = {
    "packed_header": (
        "Packed records damaged in their header: every reader of a packed BLOB refuses them.",
        "",
        "read ar_unpack SELECT ar_unpack(?1)\n"
        "read rd_unpack SELECT rd_unpack(?1)\n"
        "read ar_pack_info SELECT ar_pack_info(?1)\n"
        "read ar_pack_base SELECT ar_pack_base(?1)\n"
        "false SELECT ar_valid(?1)\n",
    ),
    "packed_meta": (
        "Packed records damaged in their meta section: refused when the BLOB is opened.",
        "",
        "read ar_unpack SELECT ar_unpack(?1, %s)\nread ar_pack_info SELECT ar_pack_info(?1)\n" % BASE_SQL,
    ),
    "packed_data": (
        "Packed records damaged in their data: refused when they are unpacked against their base.",
        "",
        "read ar_unpack SELECT ar_unpack(?1, %s)\n" % BASE_SQL,
    ),
}


def main():
    for group in HEADERS:
        shutil.rmtree(os.path.join(HERE, group), ignore_errors=True)
    foundation.GROUPS.clear()
    gen()
    foundation.write_manifests(HEADERS, "gen_packed.py")
    print("%d inputs" % sum(len(v) for v in foundation.GROUPS.values()))


if __name__ == "__main__":
    main()
