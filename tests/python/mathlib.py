# SPDX-License-Identifier: Apache-2.0
"""Inputs for the array-math cross-checks: arrays of every dtype family, in
both byte orders and both memory orders, with and without NaN/Inf, and the
comparisons the tests make against NumPy.
"""

import contextlib
import json
import warnings

import numpy as np
from arlib import load_npy

# Every dtype the extension supports, by NumPy type code.
DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16"]
FLOATS = ["f2", "f4", "f8"]
SHAPES = [(), (0,), (1,), (7,), (3, 4), (2, 3, 5), (4, 0, 2)]


def sample(dtype, shape, seed=0, order="C", byteorder="=", special=False):
    """A deterministic array of the dtype: small integers (so integer results
    are exact), random floats, optionally NaN and +-Inf sprinkled in."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    n = int(np.prod(shape)) if shape else 1
    if dt.kind == "b":
        flat = rng.integers(0, 2, n).astype(bool)
    elif dt.kind in "iu":
        lo, hi = (0, 100) if dt.kind == "u" else (-50, 50)
        flat = rng.integers(lo, hi, n).astype(dt)
    elif dt.kind == "f":
        flat = (rng.standard_normal(n) * 10).astype(dt)
    else:
        flat = (rng.standard_normal(n) * 10 + 1j * rng.standard_normal(n) * 10).astype(dt)
    if special and dt.kind in "fc" and n >= 3:
        flat[0] = np.nan
        flat[n // 2] = np.inf
        flat[-1] = -np.inf
    arr = flat.reshape(shape)
    if order == "F" and arr.ndim >= 2:  # np.asfortranarray makes 0-d arrays 1-d
        arr = np.asfortranarray(arr)
    if byteorder != "=":
        arr = arr.astype(dt.newbyteorder(byteorder))
    return arr


def variants(dtype, shape, seed=0):
    """The same values in both byte orders and both memory orders."""
    for byteorder in ("<", ">"):
        for order in ("C", "F"):
            if np.dtype(dtype).itemsize == 1 and byteorder == ">":
                continue
            yield sample(dtype, shape, seed, order, byteorder)


def one(con, sql, *args):
    return con.execute(sql, args).fetchone()[0]


def npy_result(con, sql, *args):
    return load_npy(one(con, sql, *args))


def error_of(con, sql, *args):
    """The error message a statement raises (None when it does not)."""
    try:
        con.execute(sql, args).fetchall()
    except Exception as e:  # sqlite3.OperationalError
        return str(e)
    return None


def f64(a):
    """A float64 (or complex128) copy: the reference precision."""
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def sql_number(x):
    """What a REAL result becomes in SQLite: NaN reads back as NULL."""
    if isinstance(x, (complex, np.complexfloating)):
        return x
    x = float(x)
    return None if x != x else x


def as_complex(text):
    """A complex result, given as the JSON text "[re,im]" (NaN/Infinity as strings)."""

    def part(v):
        return float(v.replace("Infinity", "inf").replace("NaN", "nan")) if isinstance(v, str) else float(v)

    re, im = json.loads(text)
    return complex(part(re), part(im))


def close(got, want, rtol=1e-12, atol=0.0):
    if want is None or got is None:
        return got is None and want is None
    if isinstance(got, str):  # complex as "[re,im]"
        got = as_complex(got)
    if np.isinf(want) or np.isinf(got):
        return got == want
    return abs(got - want) <= atol + rtol * abs(want)


@contextlib.contextmanager
def quiet():
    """NumPy warns on NaN/overflow in the references; the tests expect it."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield
