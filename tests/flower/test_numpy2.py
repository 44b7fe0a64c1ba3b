# SPDX-License-Identifier: Apache-2.0
"""NumPy 2 (the one flwr 1.42 installs) judges our .npy files and reprs.

Writing: every .npy the package's to_npy and the SQL builders (npy,
npy_from_json, npy_reshape, npy_cast, ar_get of a legacy raw item) write
equals numpy.save's bytes for the same array — every dtype, shapes with ()
and 0-length axes, C/Fortran/non-contiguous, both byte orders.

Reading: every .npy NumPy 2 writes (np.save, format versions 1.0, 2.0 and
3.0, .npz archives) reads back in SQL (npy_* readers, ar(), ar_from_npz) and
in Python (from_npy) as the same array, bit for bit.

Printing: npy_repr / ar_repr with numpy_version '2.4' equal NumPy 2.4's
repr; by default (NumPy 1.24's printing) they differ from NumPy 2.4 in
exactly the documented ways (docs/reference.md, npy_repr).
"""

import io
import json
import math
import zipfile

import flowergen as fg
import numpy as np
from test_bytes import con, one

import sqlite_arrayrecord as sar

SEED = 2024


def arrays(seed=SEED, n=300):
    g = fg.Gen(seed)
    out = []
    for t in fg.TYPES:
        for order in "<>":
            for shape in fg.SHAPES:
                out.append(g.array(np.dtype(order + t), shape))
    out += [g.array() for _ in range(n)]
    base = g.array(np.dtype(">f8"), (4, 6, 2))
    out += [base[::2], base[:, ::-1], base.transpose(2, 0, 1), base[..., 1], np.asfortranarray(base)]
    return out


def native(arr):
    return arr.dtype.isnative


# --- writing ---


def test_to_npy_is_np_save():
    for arr in arrays():
        assert sar.to_npy(arr) == fg.npy_save(arr), (arr.dtype, arr.shape, arr.flags.f_contiguous)


def test_npy_builder_is_np_save():
    """npy(raw, dtype, shape): the C-order buffer of any dtype string, either byte order."""
    for arr in arrays(SEED + 1, 100):
        c = arr.copy(order="C")
        want = fg.npy_save(c)
        assert one("SELECT npy(?, ?, ?)", arr.tobytes(), arr.dtype.str, json.dumps(list(arr.shape))) == want
        if native(arr):
            assert one("SELECT npy(?, ?, ?)", arr.tobytes(), str(arr.dtype), json.dumps(list(arr.shape))) == want


def json_values(arr):
    """arr.tolist() with NaN/inf as npy_from_json's strings and complex as [re, im]."""

    def spell(x):
        if isinstance(x, list):
            return [spell(v) for v in x]
        if isinstance(x, complex):
            return [spell(x.real), spell(x.imag)]
        if isinstance(x, float) and not math.isfinite(x):
            return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
        return x

    return json.dumps(spell(arr.tolist()))


def test_npy_from_json_is_np_save():
    """npy_from_json of arr.tolist() at arr's dtype: np.save of NumPy's
    np.array(arr.tolist(), dtype) (NaNs excepted: JSON has one NaN, so their
    arrays are compared as values)."""
    n = 0
    for arr in arrays(SEED + 2, 100):
        got = one("SELECT npy_from_json(?, ?)", json_values(arr), arr.dtype.str)
        c = np.array(arr.tolist(), dtype=arr.dtype)  # [[], [], []] is (3, 0) to NumPy too
        if arr.dtype.kind in "fc" and np.isnan(arr).any():
            back = np.load(io.BytesIO(got))
            assert back.dtype == arr.dtype and np.array_equal(back, c, equal_nan=True)
            continue
        n += 1
        assert got == fg.npy_save(c), (arr.dtype, arr.shape)
    assert n > 200, n


def test_npy_reshape_and_cast_are_np_save():
    """npy_reshape / npy_cast of a file: np.save of a.reshape(shape) /
    a.astype(dtype) for a = np.load(file) (whose memory order they keep)."""
    g = fg.Gen(SEED + 3)
    for arr in arrays(SEED + 3, 60):
        npy = fg.npy_save(arr)
        a = np.load(io.BytesIO(npy))
        shapes = [[a.size] if a.ndim != 1 else [1, a.size], list(a.shape) + [1], [1] + list(a.shape)]
        if a.ndim >= 2:
            shapes.append([-1] + list(a.shape[2:]))
        for shape in shapes:
            want = fg.npy_save(a.reshape(shape))
            assert one("SELECT npy_reshape(?, ?)", npy, json.dumps(shape)) == want, (a.dtype, a.shape, shape)
        # casts NumPy defines for every value: to the float of at least the same size, to complex128, to bool
        targets = ["c16", "b1"]
        if a.dtype.kind in "biu" and a.dtype.itemsize <= 4:
            targets.append("f8")
        if a.dtype.kind == "f":
            targets += ["f8", g.r.choice(["<f8", ">f8"])]
        if a.dtype.kind in "fc":
            targets.append("c8" if a.dtype.itemsize <= 4 else "c16")
        for t in targets:
            want = fg.npy_save(a.astype(t))
            assert one("SELECT npy_cast(?, ?)", npy, t) == want, (a.dtype, a.shape, t)


def test_ar_get_of_raw_items_is_np_save():
    """A legacy item (stype other than numpy.ndarray, raw C-order bytes) comes
    out of ar_get as the .npy np.save writes for it."""
    from flwr.app import Array, ArrayRecord

    for arr in arrays(SEED + 4, 40):
        rec = ArrayRecord(
            {"raw": Array(dtype=arr.dtype.str, shape=arr.shape, stype="raw", data=arr.tobytes())},
        )
        blob = fg.ar_bytes(rec)
        assert one("SELECT ar_get(?, 'raw')", blob) == fg.npy_save(arr.copy(order="C")), arr.dtype


# --- reading ---


def check_read(npy, arr):
    assert fg.same_array(sar.from_npy(npy), arr)
    assert one("SELECT npy_valid(?)", npy) == 1 and one("SELECT npy_error(?)", npy) is None
    assert one("SELECT npy_dtype(?)", npy) == str(arr.dtype)
    assert one("SELECT npy_descr(?)", npy) == arr.dtype.str
    assert json.loads(one("SELECT npy_shape(?)", npy)) == list(arr.shape)
    assert one("SELECT npy_ndim(?)", npy) == arr.ndim
    assert one("SELECT npy_numel(?)", npy) == arr.size
    assert one("SELECT npy_nbytes(?)", npy) == arr.nbytes
    assert one("SELECT npy_raw(?)", npy) == arr.tobytes()
    # the id of the Array holding this very file (Flower's Array(arr) holds np.save's bytes)
    held = fg.Array(dtype=str(arr.dtype), shape=arr.shape, stype="numpy.ndarray", data=npy)
    assert one("SELECT npy_object_id(?)", npy) == held.object_id
    if arr.size:
        for i in (0, arr.size - 1):
            got, x = one("SELECT npy_item(?, ?)", npy, i), arr.reshape(-1)[i]
            if arr.dtype.kind == "b":
                assert got == int(x)
            elif arr.dtype.kind in "iu" and int(x) > fg.INT64_MAX:
                assert type(got) is float and got == float(x)  # a uint64 above 2^63-1 comes as REAL
            elif arr.dtype.kind in "iu":
                assert type(got) is int and got == int(x)
            elif arr.dtype.kind == "f":
                assert (got is None and np.isnan(x)) or got == float(x)


def test_read_np_save():
    for arr in arrays(SEED + 5):
        npy = fg.npy_save(arr)
        check_read(npy, arr)
        assert one("SELECT npy_object_id(?)", npy) == fg.Array(arr).object_id
        assert one("SELECT npy_fortran(?)", npy) == int(
            arr.ndim > 1 and arr.flags.f_contiguous and not arr.flags.c_contiguous
        )
        assert one("SELECT ar('k', ?)", npy) == fg.ar_bytes(fg.ArrayRecord({"k": fg.Array(arr)}))


def test_read_format_versions():
    """NumPy 2's writers of .npy format 2.0 and 3.0 (and 1.0 given explicitly)."""
    for arr in arrays(SEED + 6, 30):
        for version in ((1, 0), (2, 0), (3, 0)):
            out = io.BytesIO()
            np.lib.format.write_array(out, arr, version=version, allow_pickle=False)
            npy = out.getvalue()
            check_read(npy, arr)
            assert one("SELECT npy_version(?)", npy) == version[0]


def test_read_npz():
    """np.savez / np.savez_compressed archives of NumPy 2: ar_from_npz gives the
    record of their arrays, and np.load reads ar_to_npz back to the same arrays."""
    g = fg.Gen(SEED + 7)
    for i in range(12):
        d = g.arrays(g.r.randint(1, 5))
        d = {k: v for k, v in d.items() if k and "/" not in k}
        out = io.BytesIO()
        (np.savez_compressed if i % 2 else np.savez)(out, **d)
        rec = one("SELECT ar_from_npz(?)", out.getvalue())
        got = sar.from_record(rec)
        assert list(got) == list(d) and all(fg.same_array(got[k], d[k]) for k in d)
        back = one("SELECT ar_to_npz(?)", rec)
        with zipfile.ZipFile(io.BytesIO(back)) as z:
            assert z.namelist() == [k + ".npy" for k in d]
        loaded = np.load(io.BytesIO(back))
        assert list(loaded.keys()) == list(d) and all(fg.same_array(loaded[k], d[k]) for k in d)


# --- printing ---

REPR_DTYPES = ["f2", "f4", "f8", "c8", "c16", "i1", "i4", "i8", "u1", "u8", "b1", ">f4", ">f8", ">i8", ">c16", ">u2"]
REPR_SHAPES = [(), (0,), (0, 3), (2, 0, 4), (1,), (5,), (3, 4), (2, 3, 4), (1001,), (40, 30), (3, 3, 200)]


def repr_arrays(seed=SEED + 8):
    rng = np.random.default_rng(seed)
    out = []
    for dt in REPR_DTYPES:
        dt = np.dtype(dt)
        for shape in REPR_SHAPES:
            n = int(np.prod(shape))
            if dt.kind == "b":
                flat = rng.random(n) < 0.5
            elif dt.kind in "iu":
                flat = rng.integers(0, 100, n)
            else:
                # values around the 1e3 (float16), 1e6 (float32) and 1e8 exponent cut-offs
                scale = 10.0 ** rng.choice([0, 2, 3, 5, 6, 7, 8], n if n else 1)[: max(n, 1)]
                flat = rng.standard_normal(n) * (scale[:n] if n else 1)
                if dt.kind == "c":
                    flat = flat + 1j * rng.standard_normal(n)
            with np.errstate(over="ignore"):  # float16 overflows to inf: wanted
                out.append(np.asarray(flat, dtype=dt).reshape(shape))
        for v in (999.0, 1000.0, 4092.0, 65504.0, 999999.0, 1e6, 3e7, 1e8):
            if dt.kind in "fc":
                with np.errstate(over="ignore"):
                    out.append(np.array(v, dt))
                    out.append(np.array([v, 1.5], dt))
    return out


def test_repr_numpy2():
    for arr in repr_arrays():
        got = one("SELECT npy_repr(?, 1000, '2.4')", fg.npy_save(arr))
        assert got == repr(arr), f"{arr.dtype.str} {arr.shape}:\n got: {got}\nwant: {repr(arr)}"
        for max_items in (0, 6):
            got = one("SELECT npy_repr(?, ?, '2.4')", fg.npy_save(arr), max_items)
            with np.printoptions(threshold=max_items):
                assert got == repr(arr), (arr.dtype.str, arr.shape, max_items, got, repr(arr))


def test_ar_repr_numpy2():
    g = fg.Gen(SEED + 9)
    for _ in range(20):
        d = g.arrays(g.r.randint(0, 4))
        want = "{" + ",\n ".join(f"{k!r}: {v!r}" for k, v in d.items()) + "}"
        assert one("SELECT ar_repr(?, 1000, '2.4')", sar.to_record(d)) == want


def expected_1_24(arr):
    """NumPy 1.24's text, from NumPy 2.4 with the three documented changes undone."""
    with np.printoptions(legacy="2.1"):  # no shape= suffix, the 1e8 exponent cut-off for every float
        text = repr(np.asarray(arr, arr.dtype.newbyteorder("=")))
    return text


def test_repr_default_differs_from_numpy2_only_as_documented():
    """Default npy_repr (NumPy 1.24) vs NumPy 2.4: the same text once NumPy 2's
    shape= suffix, dtype-sized exponent cut-off and byte-order naming are set
    aside; and each of those three differences does show."""
    seen = set()
    for arr in repr_arrays():
        npy = fg.npy_save(arr)
        got = one("SELECT npy_repr(?)", npy)
        assert got == expected_1_24(arr), f"{arr.dtype.str} {arr.shape}:\n got: {got}\nwant: {expected_1_24(arr)}"
        if got != repr(arr):
            if not arr.dtype.isnative:
                seen.add("byte order")
            elif arr.size > 1000:
                seen.add("shape")
            else:
                seen.add("cut-off")
    assert seen == {"byte order", "shape", "cut-off"}, seen


def test_repr_version_argument():
    npy = fg.npy_save(np.array([1.5, 2.0e6], ">f4"))
    assert one("SELECT npy_repr(?, 1000, '1.24')", npy) == one("SELECT npy_repr(?)", npy)
    assert one("SELECT npy_repr(?, 1000, NULL)", npy) is None  # a NULL argument, a NULL result
    assert one("SELECT npy_repr(?, 1000, '2')", npy) == repr(np.array([1.5, 2.0e6], ">f4"))
    assert one("SELECT npy_repr(?, 1000, '2.0')", npy) == "array([1.5e+00, 2.0e+06], dtype='>f4')"
    assert one("SELECT npy_repr(?, 1000, 2)", npy) == one("SELECT npy_repr(?, 1000, '2.4')", npy)
    for bad in ("2.x", "3", "0.9", "", "v2", "2."):
        try:
            one("SELECT npy_repr(?, 1000, ?)", npy, bad)
        except Exception as e:  # sqlite3.OperationalError
            assert "npy_repr: numpy_version must be a NumPy version such as '1.24' or '2.4'" in str(e), e
        else:
            raise AssertionError(f"npy_repr accepted numpy_version {bad!r}")
    con()  # the connection stays usable
