# SPDX-License-Identifier: Apache-2.0
"""Packed records (ar_pack / rd_pack, ar_unpack / rd_unpack) against NumPy
and against a second reader of the format written here from
docs/formats.md (NumPy for the planes, libzstd through ctypes for the
frames): round trips bit for bit over every dtype, both byte orders, C and
Fortran order, shapes () and 0-length, NaN payloads, -0.0, subnormals and
infinities; keys only in the record or only in the base, dtypes and shapes
changed between them; every record of tests/data against every other; the
lossy updates as NumPy computes them, and their stated error; RecordDicts;
damaged BLOBs (an error, never another record).
"""

import ctypes
import ctypes.util
import json
import os
import random
import struct

import numpy as np
from arlib import DATA, ROOT, connect, npy_bytes, record_bytes

HEAD = struct.Struct("<7sBBBBBIQQdQQQQ32s")
ENTRY = struct.Struct("<QQQdBBBBI")
MODES = ["raw", "planes", "diff", "xor", "same", "lossy"]

_zstd = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
_zstd.ZSTD_decompress.restype = ctypes.c_size_t
_zstd.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t]
_zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]


def zstd_frame(frame, size):
    out = ctypes.create_string_buffer(max(size, 1))
    got = _zstd.ZSTD_decompress(out, size, frame, len(frame))
    assert not _zstd.ZSTD_isError(got) and got == size, (got, size)
    return out.raw[:size]


# --- a second reader of the format (docs/formats.md) --------------------------------


def _payloads(rec):
    """{key: (payload bytes)} of an ArrayRecord, as packing cuts them: the
    items of a .npy after its header, or a raw item's data."""
    con = connect()
    out = {}
    for key, stype, data in con.execute("SELECT key, stype, ar_data(?1, key) FROM array_record(?1)", (rec,)):
        if stype == "numpy.ndarray" and data[:6] == b"\x93NUMPY":
            arr = np.load(__import__("io").BytesIO(data), allow_pickle=False)
            hlen = len(data) - arr.nbytes
            # trailing bytes after the payload stay in the skeleton: find the header length
            major = data[6]
            hlen = (
                10 + struct.unpack_from("<H", data, 8)[0] if major == 1 else 12 + struct.unpack_from("<I", data, 8)[0]
            )
            out[key] = data[hlen : hlen + arr.nbytes]
        else:
            out[key] = data
    return out


def py_unpack(blob, base=None):
    """Unpack a packed ArrayRecord or RecordDict as docs/formats.md says."""
    h = HEAD.unpack_from(blob, 0)
    magic, version, kind, flags, lossy, chunk_log2, count, size = h[:8]
    meta_raw, meta_stored = h[10], h[11]
    assert magic == b"\x07ARPACK" and version == 1
    meta = blob[len(blob) - meta_stored :]
    if meta_stored < meta_raw:
        meta = zstd_frame(meta, meta_raw)
    entries, at = [], 0
    for _ in range(count):
        e = ENTRY.unpack_from(meta, at)
        key = meta[at + ENTRY.size : at + ENTRY.size + e[8]].decode()
        entries.append(e[:8] + (key,))
        at += ENTRY.size + e[8]
    skeleton = meta[at:]
    bases = _payloads(base) if base is not None else {}
    out, pos, skel, data = bytearray(), 0, 0, HEAD.size
    for offset, length, stored, _err, mode, width, eflags, _r, key in entries:
        out += skeleton[skel : skel + offset - pos]
        skel += offset - pos
        raw = blob[data : data + stored]
        data += stored
        if MODES[mode] == "raw":
            out += raw
        elif MODES[mode] == "same":
            out += bases[key]
        else:
            out += _planes(raw, length, width, eflags & 1, MODES[mode], lossy, 1 << chunk_log2, bases.get(key))
        pos = offset + length
    out += skeleton[skel:]
    assert len(out) == size
    return bytes(out)


def _planes(raw, length, width, big, mode, lossy, chunk, base):
    items = length // width
    nplanes = 2 if mode == "lossy" else width
    chunks = -(-items // chunk)
    sizes = struct.unpack_from("<%dI" % (chunks * nplanes), raw, 0)
    at, k, planes = 4 * chunks * nplanes, 0, [bytearray() for _ in range(nplanes)]
    for c in range(chunks):
        m = min(chunk, items - c * chunk)
        for p in range(nplanes):
            planes[p] += zstd_frame(raw[at : at + sizes[k]], m)
            at += sizes[k]
            k += 1
    # residuals as unsigned integers, most significant plane first
    order = ">" if big else "<"
    if mode == "lossy":
        h = (np.frombuffer(bytes(planes[0]), np.uint8).astype(np.uint16) << 8) | np.frombuffer(
            bytes(planes[1]), np.uint8
        )
        ftype = np.dtype(order + ("f4" if width == 4 else "f8"))
        b = np.frombuffer(base, ftype).astype(np.float64)
        u = (
            h.view(np.float16).astype(np.float64)
            if lossy == 1
            else (h.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        )
        return (b + u).astype(ftype).tobytes()
    utype = np.dtype("u%d" % width)
    r = np.zeros(items, utype)
    for p in range(width):
        r |= np.frombuffer(bytes(planes[p]), np.uint8).astype(utype) << utype.type(8 * (width - 1 - p))
    if mode == "planes":
        x = r
    else:
        b = np.frombuffer(base, utype.newbyteorder(order)).astype(utype)
        if mode == "xor":
            x = r ^ b
        else:  # zigzag back: d = (r >> 1) ^ -(r & 1), then x = b + d (mod 2^bits)
            d = (r >> utype.type(1)) ^ (utype.type(0) - (r & utype.type(1)))
            x = b + d
    return x.astype(utype.newbyteorder(order)).tobytes()


# --- records ----------------------------------------------------------------------------


def record(arrays):
    """An ArrayRecord of numpy.ndarray items (np.save bytes), in order."""
    return record_bytes([(k, (str(a.dtype), list(a.shape), "numpy.ndarray", npy_bytes(a))) for k, a in arrays.items()])


SPECIAL32 = np.array([0x7FC00123, 0x80000000, 0x00000001, 0x7F800000, 0xFF800000, 0x7FFFFFFF, 0xFFC00000], np.uint32)
SPECIAL64 = np.array([0x7FF8000000000001, 0x8000000000000000, 1, 0x7FF0000000000000, 0xFFF0000000000000], np.uint64)


def arrays_of_every_kind(rng, scale=1.0):
    out = {}
    for dt in [
        "bool",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "float16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    ]:
        for order in "<>":
            d = np.dtype(dt).newbyteorder(order) if np.dtype(dt).itemsize > 1 else np.dtype(dt)
            a = rng.standard_normal((3, 70)) * scale
            if d.kind == "c":
                a = a + 1j * rng.standard_normal((3, 70))
            out[f"{dt}{order}"] = a.astype(d)
    out["fortran"] = np.asfortranarray(rng.standard_normal((40, 30)).astype(np.float32))
    out["scalar"] = np.array(2.5, np.float64)
    out["empty"] = np.zeros((0, 3), np.float32)
    f32 = rng.standard_normal(700).astype(np.float32)
    f32.view(np.uint32)[: len(SPECIAL32) * 50] = np.tile(SPECIAL32, 50)
    out["special32"] = f32
    f64 = rng.standard_normal(500)
    f64.view(np.uint64)[: len(SPECIAL64) * 40] = np.tile(SPECIAL64, 40)
    out["special64"] = f64
    return out


def round_trip(con, rec, base=None, options=None):
    (p,) = con.execute("SELECT ar_pack(?, ?, ?)", (rec, base, options)).fetchone()
    (back,) = con.execute("SELECT ar_unpack(?, ?)", (p, base)).fetchone()
    return p, back


def modes(con, p):
    (info,) = con.execute("SELECT ar_pack_info(?)", (p,)).fetchone()
    return {a["key"]: a["mode"] for a in json.loads(info)["arrays"]}


def test_every_kind_of_array_round_trips_and_the_second_reader_agrees():
    rng = np.random.default_rng(1)
    con = connect()
    base_arrays = arrays_of_every_kind(rng)
    rec_arrays = {k: v.copy() for k, v in base_arrays.items()}
    for k, v in rec_arrays.items():  # a small update of every float array
        if v.dtype.kind in "fc" and v.size and k != "special32":
            rec_arrays[k] = (v + (v * 1e-3).astype(v.dtype)).astype(v.dtype)
    rec_arrays["only_in_record"] = np.arange(5, dtype=np.int32)
    del rec_arrays["uint8<"]  # only in the base
    base, rec = record(base_arrays), record(rec_arrays)
    for b in (None, base, rec, b""):
        p, back = round_trip(con, rec, b)
        assert back == rec
        assert py_unpack(p, b) == rec
    p, _ = round_trip(con, rec, base)
    m = modes(con, p)
    assert m["only_in_record"] in ("raw", "planes") and m["int8<"] == "same" and m["float32<"] in ("diff", "xor")
    assert m["float32>"] in ("diff", "xor")  # big-endian arrays meet their base too


def test_dtype_or_shape_changed_against_the_base():
    con = connect()
    x = np.linspace(0, 1, 300, dtype=np.float32)
    base = record(
        {
            "retyped": x,
            "reshaped": x.reshape(20, 15),
            "resized": x[:100],
            "fortran": np.asfortranarray(x.reshape(20, 15)),
        }
    )
    rec = record(
        {"retyped": x.astype(np.float64), "reshaped": x.reshape(15, 20), "resized": x, "fortran": x.reshape(20, 15)}
    )
    p, back = round_trip(con, rec, base)
    assert back == rec and py_unpack(p, base) == rec
    m = modes(con, p)
    assert m["reshaped"] == "same" and m["retyped"] != "same" and m["resized"] != "same"


def test_every_record_of_the_test_data_against_every_other():
    con = connect()
    recs = [b""]
    for d in ("records", "fedavg"):
        folder = os.path.join(DATA, d)
        for f in sorted(os.listdir(folder)):
            if f.endswith(".pb"):
                with open(os.path.join(folder, f), "rb") as fh:
                    recs.append(fh.read())
    assert len(recs) > 8
    for a in recs:
        for b in recs:
            for options in (None, '{"chunk": 1024, "level": 1}'):
                p, back = round_trip(con, a, b, options)
                assert back == a
        assert py_unpack(round_trip(con, a)[0]) == a


def test_lossy_is_numpys_update_rounded_once():
    rng = np.random.default_rng(2)
    con = connect()
    for lossy, htype in (("float16", np.float16), ("bfloat16", None)):
        for dt in (np.float32, np.float64, np.dtype(">f4")):
            b = (rng.standard_normal(5000) * 0.1).astype(dt)
            x = (b + rng.standard_normal(5000) * 1e-3).astype(dt)
            base, rec = record({"w": b, "n": np.array(7)}), record({"w": x, "n": np.array(8)})
            p, back = round_trip(con, rec, base, json.dumps({"lossy": lossy}))
            info = json.loads(con.execute("SELECT ar_pack_info(?)", (p,)).fetchone()[0])
            assert info["lossy"] == lossy and info["arrays"][0]["mode"] == "lossy"
            u = x.astype(np.float64) - b.astype(np.float64)
            if htype is not None:
                h = u.astype(np.float16).astype(np.float64)
            else:  # round to nearest even at the top 16 bits of the float32
                bits = u.astype(np.float32).view(np.uint32).astype(np.uint64)
                h = (
                    (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16)
                    .astype(np.uint32)
                    .view(np.float32)
                    .astype(np.float64)
                )
            want = (b.astype(np.float64) + h).astype(dt)
            (got,) = con.execute("SELECT ar_get(?, 'w')", (back,)).fetchone()
            got = np.load(__import__("io").BytesIO(got))
            assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
            err = np.max(np.abs(got.astype(np.float64) - x.astype(np.float64)))
            assert info["max_error"] == err == info["arrays"][0]["max_error"]
            assert err < (2e-6 if htype else 2e-5)
            assert con.execute("SELECT ar_get(?, 'n') = ar_get(?, 'n')", (back, rec)).fetchone() == (1,)
            assert py_unpack(p, base) == back


def test_lossy_keeps_what_it_cannot_carry_exact():
    con = connect()
    b = np.ones(100, np.float32)
    x = b.copy()
    x[3] = np.nan
    x[4] = 1e6  # an update past float16's range
    rec, base = record({"nan": x, "big": np.full(100, 1e6, np.float32)}), record({"nan": b, "big": b})
    p, back = round_trip(con, rec, base, '{"lossy": "float16"}')
    assert back == rec and set(modes(con, p).values()) <= {"raw", "planes", "diff", "xor"}


def test_record_dicts():
    con = connect()
    rng = np.random.default_rng(3)
    w = rng.standard_normal((50, 40)).astype(np.float32)
    base = record({"w": w, "b": np.zeros(40, np.float32)})
    reply = record({"w": w + np.float32(1e-3), "b": np.zeros(40, np.float32)})
    (rd,) = con.execute(
        "SELECT rd('arrays', 'array', ?1, 'metrics', 'metric', '{\"num-examples\": 12}', 'config', 'config', '{\"x\": \"y\"}')",
        (reply,),
    ).fetchone()
    for b in (None, base):
        (p,) = con.execute("SELECT rd_pack(?, ?)", (rd, b)).fetchone()
        assert con.execute("SELECT rd_unpack(?, ?) = ?", (p, b, rd)).fetchone() == (1,)
        assert py_unpack(p, b) == rd
    with open(os.path.join(DATA, "recorddict", "full.pb"), "rb") as f:
        full = f.read()
    (p,) = con.execute("SELECT rd_pack(?, ?)", (full, base)).fetchone()
    assert con.execute("SELECT rd_unpack(?, ?) = ?", (p, base, full)).fetchone() == (1,)


def test_damaged_blobs_give_an_error_never_another_record():
    con = connect()
    rng = random.Random(4)
    x = np.linspace(-1, 1, 3000, dtype=np.float32)
    base, rec = record({"w": x, "v": x[:10]}), record({"w": x + np.float32(1e-4), "v": x[:10]})
    (p,) = con.execute("SELECT ar_pack(?, ?, '{\"chunk\": 1024}')", (rec, base)).fetchone()
    for _ in range(400):
        q = bytearray(p)
        for _ in range(rng.randint(1, 3)):
            q[rng.randrange(len(q))] ^= 1 << rng.randrange(8)
        if rng.random() < 0.2:
            q = q[: rng.randrange(len(q))]
        try:
            (got,) = con.execute("SELECT ar_unpack(?, ?)", (bytes(q), base)).fetchone()
        except Exception as e:  # an error naming the function, or a size past SQLITE_LIMIT_LENGTH
            assert str(e).startswith("ar_unpack: ") or str(e) == "string or blob too big", e
        else:
            assert got == rec


def test_the_header_and_the_docs_agree():
    """The sizes and ids the header holds, read here by the documented layout."""
    con = connect()
    base = record({"w": np.arange(2000, dtype=np.float32)})
    rec = record({"w": np.arange(2000, dtype=np.float32) + 1})
    (p, oid) = con.execute("SELECT ar_pack(?1, ?2), ar_object_id(?2)", (rec, base)).fetchone()
    h = HEAD.unpack_from(p, 0)
    assert h[:6] == (b"\x07ARPACK", 1, 1, 1, 0, 16)
    assert h[6] == 1 and h[7] == len(rec) and h[12] == len(base) and h[14].hex() == oid
    assert con.execute("SELECT ar_pack_base(?)", (p,)).fetchone() == (oid,)
    # the README's size claim is about real runs; here just that a close update packs small
    assert len(p) < 0.5 * len(rec)
    assert os.path.isfile(os.path.join(ROOT, "docs", "formats.md"))


def test_unpacking_on_one_thread_and_two_gives_the_same_bytes_and_errors():
    """Chunks are packed and unpacked among the pool's threads: the packed
    bytes, the record, and the error of a damaged BLOB (the first damaged
    chunk's), do not depend on how many there are."""
    con = connect()
    rng = np.random.default_rng(8)
    x = rng.standard_normal(300_000).astype(np.float32)
    base = record({"a": x, "b": x[:70_000].astype(np.float64), "c": np.arange(5, dtype=np.int64)})
    rec = record({"a": x + np.float32(1e-3), "b": x[:70_000].astype(np.float64) * 2, "c": np.arange(5)})
    (p,) = con.execute("SELECT ar_pack(?, ?, '{\"chunk\": 1024}')", (rec, base)).fetchone()
    modes = [a["mode"] for a in json.loads(con.execute("SELECT ar_pack_info(?)", (p,)).fetchone()[0])["arrays"]]
    assert modes[0] in ("diff", "xor") and modes[1] in ("diff", "xor", "planes"), modes
    damaged = bytearray(p)
    for at in (len(p) // 3, len(p) // 2):  # two damaged chunks: the error names the first
        damaged[at] ^= 0x55
    got = {}
    for n in (1, 2):
        before = con.execute("SELECT ar_threads(?, 1)", (n,)).fetchone()[0]
        try:
            con = connect()  # a connection of its own: its cache of unpacked records is empty
            outs = [con.execute("SELECT ar_unpack(?, ?)", (p, base)).fetchone()[0]]
            # packing too: the chunks are compressed among the threads, each alone
            packs = [
                con.execute("SELECT ar_pack(?, ?, ?)", (rec, b, o)).fetchone()[0]
                for b, o in ((base, '{"chunk": 1024}'), (None, '{"chunk": 1024}'), (base, None))
            ]
            assert packs[0] == p, n
            try:
                con.execute("SELECT ar_unpack(?, ?)", (bytes(damaged), base)).fetchone()
                outs.append(None)
            except Exception as e:
                outs.append(str(e))
            got[n] = outs + packs
        finally:
            con.execute("SELECT ar_threads(?, 262144)", (before,))
    assert got[1][0] == got[2][0] == rec
    assert got[1][2:] == got[2][2:]
    assert got[1][1] == got[2][1] and got[1][1].startswith("ar_unpack: packed record corrupt"), got[1][1]
