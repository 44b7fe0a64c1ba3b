# SPDX-License-Identifier: Apache-2.0
"""dtype names: whatever np.dtype(s) makes a supported numeric dtype of, we
read as the same dtype (npy_dtype == str(dtype), npy_descr == dtype.str);
whatever NumPy rejects, or makes a non-numeric or long double dtype of, we
reject with a reason."""

import numpy as np
from arlib import connect, error_of, npy_bytes, one

SPELLINGS = [
    "bool",
    "bool_",
    "bool8",
    "?",
    "b1",
    "|b1",
    "<?",
    ">?",
    "int8",
    "byte",
    "b",
    "i1",
    "|i1",
    "<i1",
    ">i1",
    "|b",
    "uint8",
    "ubyte",
    "B",
    "u1",
    "|u1",
    ">u1",
    "<B",
    "int16",
    "short",
    "h",
    "i2",
    "<i2",
    ">i2",
    "=i2",
    "|i2",
    "uint16",
    "ushort",
    "H",
    "u2",
    "<u2",
    ">u2",
    "int32",
    "intc",
    "i",
    "i4",
    "<i4",
    ">i4",
    ">i",
    "uint32",
    "uintc",
    "I",
    "u4",
    "<u4",
    ">u4",
    "int64",
    "int",
    "int_",
    "intp",
    "long",
    "longlong",
    "int0",
    "l",
    "q",
    "p",
    "i8",
    "<i8",
    ">i8",
    "i08",
    "uint64",
    "uint",
    "uintp",
    "ulong",
    "ulonglong",
    "uint0",
    "L",
    "Q",
    "P",
    "u8",
    "<u8",
    ">u8",
    "float16",
    "half",
    "e",
    "f2",
    "<f2",
    ">f2",
    "float32",
    "single",
    "f",
    "f4",
    "<f4",
    ">f4",
    "|f4",
    "=f4",
    "<f",
    "float64",
    "float",
    "float_",
    "double",
    "d",
    "f8",
    "<f8",
    ">f8",
    ">d",
    "f08",
    "complex64",
    "csingle",
    "F",
    "c8",
    "<c8",
    ">c8",
    "complex128",
    "complex",
    "complex_",
    "cdouble",
    "D",
    "c16",
    "<c16",
    ">c16",
    "=c16",
    "|c16",
]
NOT_NUMERIC = [
    "O",
    "|O",
    "object",
    "U",
    "<U3",
    "str",
    "unicode",
    "S",
    "|S5",
    "a",
    "bytes",
    "V",
    "|V8",
    "M8",
    "<M8[ns]",
    "datetime64",
    "m8",
    "timedelta64",
    "g",
    "G",
    "longdouble",
    "clongdouble",
    "f16",
    "<f16",
    "c32",
    "float128",
    "complex256",
    "longfloat",
]
NOT_DTYPES = ["", "u", "Float32", " f4", "f4 ", "f3", "i0", "b2", "?1", "<", "f4444", "banana", "int 8", "i-4"]


def test_every_numpy_spelling_reads_as_numpy_does():
    con = connect()
    for s in SPELLINGS:
        d = np.dtype(s)
        text = "[[1, 0], [0, 0]]" if d.kind == "c" else "[1, 0]"  # complex values are [re, im] pairs
        blob = one(con, "select npy_from_json(?, ?)", text, s)
        assert (one(con, "select npy_dtype(?)", blob), one(con, "select npy_descr(?)", blob)) == (str(d), d.str), s
        assert blob == npy_bytes(np.array([1, 0], dtype=d)), s
        assert one(con, "select npy(?, ?, '[2]')", np.array([1, 0], dtype=d).tobytes(), s) == blob


def test_non_numeric_and_unknown_dtypes_rejected():
    con = connect()
    for s in NOT_NUMERIC:
        np.dtype(s)  # NumPy knows it ...
        msg = error_of(con, "select npy_from_json('[1]', ?)", s)  # ... we refuse it, saying why
        assert msg.startswith(f"npy_from_json: unsupported dtype '{s}' ("), msg
        assert "not a NumPy numeric dtype" not in msg, msg
    for s in NOT_DTYPES:
        try:
            np.dtype(s)
        except TypeError:
            pass
        else:
            raise AssertionError(f"NumPy accepts {s!r}")
        assert (
            error_of(con, "select npy(x'00', ?, '[1]')", s)
            == f"npy: unsupported dtype '{s}' (not a NumPy numeric dtype)"
        )


def test_descr_and_name_of_every_dtype_parse_back():
    con = connect()
    for t in ["b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16"]:
        for order in "<>":
            d = np.dtype(order + t)
            for s in (d.str, str(d), d.name if d.isnative else d.str):
                blob = one(con, "select npy_from_json('[]', ?)", s)
                assert one(con, "select npy_descr(?)", blob) == d.str, s


def test_double_to_half_matches_numpy():
    """Half rounding from float64 (one rounding, ties to even), checked on
    every tie between neighbouring halves and on values a hair either side."""
    con = connect()
    halves = np.arange(0, 0x7C00, dtype=np.uint16).view(np.float16).astype(np.float64)
    mids = (halves[:-1] + halves[1:]) / 2
    probes = np.concatenate([mids, np.nextafter(mids, 0), np.nextafter(mids, np.inf), -mids, [65520.0, 65519.99]])
    text = "[" + ",".join(repr(float(x)) for x in probes) + "]"
    got = one(con, "select npy_from_json(?, 'float16')", text)
    with np.errstate(over="ignore"):
        want = probes.astype(np.float16)
    assert got == npy_bytes(want)
