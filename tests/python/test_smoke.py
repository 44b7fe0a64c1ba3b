# SPDX-License-Identifier: Apache-2.0
"""First cross-checks: the extension loads and reads NumPy's files."""

import numpy as np
from arlib import connect, load_npy, npy_bytes


def test_roundtrip_float32():
    con = connect()
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    blob = npy_bytes(a)
    dtype, shape = con.execute("select npy_dtype(?), npy_shape(?)", (blob, blob)).fetchone()
    assert dtype == "float32" and shape == "[2,3]"
    out = con.execute("select npy(npy_raw(?), 'float32', '[2,3]')", (blob,)).fetchone()[0]
    assert out == blob
    np.testing.assert_array_equal(load_npy(out), a)
