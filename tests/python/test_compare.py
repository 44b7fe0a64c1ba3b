# SPDX-License-Identifier: Apache-2.0
"""ar_compare(a, b) cross-checked with NumPy: random arrays of every dtype
family (and pairs of different dtypes), in both byte orders and memory
orders, small and larger than a block, with NaN/Inf; the rows a real model
comparison gives (keys on one side, other shapes)."""

import numpy as np
from arlib import connect, random_array, record_bytes
from mathlib import DTYPES, f64, quiet, sample

COLUMNS = (
    "key, match, norm_a, norm_b, dot, cosine, norm_diff, max_abs_diff, mean_diff, rel_change, changed,"
    " nonfinite_a, nonfinite_b"
)


def nan_none(x):
    x = float(x)
    return None if x != x else x


def reference(a, b):
    """NumPy's numbers for a row: every element as float64 (complex128),
    differences in double, as ar_compare documents."""
    with quiet():
        A, B = f64(a).ravel(), f64(b).ravel()
        D = A - B
        cplx = A.dtype.kind == "c" or B.dtype.kind == "c"
        if cplx:
            A, B, D = A.astype(np.complex128), B.astype(np.complex128), D.astype(np.complex128)
        na, nb = np.sqrt(np.sum(np.abs(A) ** 2)), np.sqrt(np.sum(np.abs(B) ** 2))
        nd = np.sqrt(np.sum(np.abs(D) ** 2))
        dot = None if cplx else nan_none(np.dot(A, B))
        row = {
            "norm_a": nan_none(na),
            "norm_b": nan_none(nb),
            "dot": dot,
            "cosine": None if cplx or dot is None or not (na > 0 and nb > 0) else nan_none(dot / (na * nb)),
            "norm_diff": nan_none(nd),
            "max_abs_diff": None if D.size == 0 else nan_none(np.max(np.abs(D))),
            "mean_diff": None if cplx or D.size == 0 else nan_none(np.mean(D)),
            "rel_change": None if not nb > 0 and nb == nb else nan_none(nd / nb),
            "changed": int(np.count_nonzero(A != B)),
            "nonfinite_a": int(np.count_nonzero(~np.isfinite(A))),
            "nonfinite_b": int(np.count_nonzero(~np.isfinite(B))),
        }
        # scales for the sums that can cancel: the tolerance is relative to
        # what was summed, not to a result near zero
        scale = {
            "dot": float(np.sum(np.abs(A * B))) if not cplx else 0.0,
            "mean_diff": float(np.mean(np.abs(D))) if D.size and not cplx else 0.0,
            "cosine": 1.0,
        }
    return row, scale


def check_row(got, a, b, what):
    want, scale = reference(a, b)
    names = COLUMNS.replace(" ", "").split(",")[2:]
    got = dict(zip(names, got[2:]))
    for name, w in want.items():
        g = got[name]
        cplx = a.dtype.kind == "c" or b.dtype.kind == "c"
        if name == "max_abs_diff" and cplx and g is not None and w is not None and np.isfinite(w):
            # |z| is hypot, NumPy's complex abs its own SIMD loop: an ulp apart
            assert abs(g - w) <= 2 * np.spacing(w), (what, name, g, w)
            continue
        if name in ("max_abs_diff", "changed", "nonfinite_a", "nonfinite_b"):
            assert g == w and type(g) is type(w), (what, name, g, w)  # exact
            continue
        if w is None or g is None:
            assert g is None and w is None, (what, name, g, w)
            continue
        if np.isinf(w) or np.isinf(g):
            assert g == w, (what, name, g, w)
            continue
        tol = 1e-12 * max(abs(w), scale.get(name, 0.0))
        assert abs(g - w) <= tol, (what, name, g, w, abs(g - w) / max(abs(w), 1e-300))


def compare(con, a, b):
    rows = con.execute(
        "SELECT %s FROM ar_compare(?, ?)" % COLUMNS, (record_bytes([("k", a)]), record_bytes([("k", b)]))
    ).fetchall()
    assert len(rows) == 1 and rows[0][0] == "k", rows
    return rows[0]


def test_compare_same_dtype_every_family():
    con = connect()
    rng = np.random.default_rng(7)
    for code in DTYPES:
        for shape in [(), (0,), (7,), (3, 5), (3000,), (41, 53)]:
            a = random_array(rng, code, shape)
            b = random_array(rng, code, shape)
            row = compare(con, a, b)
            assert row[1] == "same", (code, shape, row)
            check_row(row, a, b, (code, shape))
            # against itself: nothing differs
            row = compare(con, a, a)
            assert row[6] in (0.0, None) and row[10] == (0 if code[0] not in "fc" else row[10]), (code, shape, row)


def test_compare_byte_and_memory_orders():
    con = connect()
    for code in ["i2", "i8", "u4", "f2", "f4", "f8", "c8", "c16"]:
        for shape in [(3, 4), (40, 60), (2, 3, 5)]:
            for i, a in enumerate(
                [sample(code, shape, 1, o, bo) for bo in "<>" for o in "CF" if not (bo == ">" and code == "u1")]
            ):
                b = sample(code, shape, 2 + i, "CF"[i % 2], "<")
                row = compare(con, a, b)
                check_row(row, a, b, (code, shape, a.dtype.str, a.flags.f_contiguous))
                assert row[1] == ("same" if a.dtype == b.dtype else "dtype"), row


def test_compare_different_dtypes():
    """FedAvg's float64 against the int64 it came from, float32 against
    float64, bool against integers: compared by value."""
    con = connect()
    rng = np.random.default_rng(11)
    pairs = [("i8", "f8"), ("f4", "f8"), ("?", "u1"), ("i1", "u8"), ("f2", "f4"), ("i4", "c8"), ("u8", "i8")]
    for x, y in pairs:
        for shape in [(5,), (2500,), (30, 31)]:
            a = random_array(rng, x, shape)
            b = random_array(rng, y, shape)
            row = compare(con, a, b)
            assert row[1] == "dtype", (x, y, row)
            check_row(row, a, b, (x, y, shape))


def test_compare_nan_and_inf():
    con = connect()
    for code in ["f2", "f4", "f8", "c16"]:
        for seed in range(3):
            a = sample(code, (50,), seed, special=True)
            b = sample(code, (50,), seed + 10, special=seed == 1)
            check_row(compare(con, a, b), a, b, (code, seed))
    # inf == inf is unchanged, inf - inf is NaN: max_abs_diff and norm_diff NULL
    a = np.array([np.inf, 1.0, 2.0])
    b = np.array([np.inf, 1.0, 3.0])
    row = compare(con, a, b)
    check_row(row, a, b, "inf")
    assert row[10] == 1 and row[6] is None and row[7] is None, row


def test_compare_a_model_update():
    """A resnet-like record against an update: keys in another order, one
    key only on each side, a changed shape, an int64 counter made float64."""
    con = connect()
    rng = np.random.default_rng(3)
    g = [
        ("conv1.weight", rng.standard_normal((16, 3, 3, 3)).astype("f4")),
        ("bn1.running_mean", rng.standard_normal(16).astype("f4")),
        ("bn1.num_batches_tracked", np.array(100, dtype="i8")),
        ("fc.weight", rng.standard_normal((10, 64)).astype("f4")),
        ("fc.bias", rng.standard_normal(10).astype("f4")),
    ]
    u = [
        ("fc.weight", g[3][1] + rng.standard_normal((10, 64)).astype("f4") * np.float32(0.01)),
        ("conv1.weight", g[0][1] * np.float32(1.5)),
        ("bn1.num_batches_tracked", np.array(103.0)),
        ("bn1.running_mean", rng.standard_normal(17).astype("f4")),
        ("extra", np.zeros(3, dtype="f4")),
    ]
    rows = con.execute(
        "SELECT %s, position, b_position FROM ar_compare(?, ?)" % COLUMNS, (record_bytes(u), record_bytes(g))
    ).fetchall()
    assert [(r[0], r[1], r[-2], r[-1]) for r in rows] == [
        ("fc.weight", "same", 0, 3),
        ("conv1.weight", "same", 1, 0),
        ("bn1.num_batches_tracked", "dtype", 2, 2),
        ("bn1.running_mean", "shape", 3, 1),
        ("extra", "a_only", 4, None),
        ("fc.bias", "b_only", None, 4),
    ], rows
    gd, ud = dict(g), dict(u)
    for r in rows[:3]:
        check_row(r[:-2], ud[r[0]], gd[r[0]], r[0])
    assert abs(rows[1][9] - 0.5) < 1e-7  # conv1 scaled by 1.5: rel_change 0.5
    assert abs(rows[1][5] - 1.0) < 1e-12  # and the same direction
    shape_row = rows[3]
    assert shape_row[4:10] == (None,) * 6 and shape_row[10] is None
    assert abs(shape_row[2] - float(np.linalg.norm(f64(ud["bn1.running_mean"])))) <= 1e-12 * shape_row[2]
    assert abs(shape_row[3] - float(np.linalg.norm(f64(gd["bn1.running_mean"])))) <= 1e-12 * shape_row[3]


def test_against_a_base():
    """ar_compare(a, b, base): |a - base|, |b - base|, (a - base).(b - base)
    and its cosine against NumPy in double, for every dtype family, mixed
    dtypes, both memory orders, arrays past a block and past the threads'
    split; NULL where the base lacks a key or has another shape; and the
    numbers of the pair are the same bits with or without a base."""
    con = connect()
    base_cols = "key, norm_a_base, norm_b_base, dot_base, cosine_base"
    with quiet():
        for dt_a, dt_b, dt_c in [
            ("f4", "f4", "f4"),
            ("f8", "f8", "f8"),
            ("f4", "f8", "f4"),
            ("i8", "f4", "i8"),
            ("f2", "f2", "f2"),
            ("c8", "c8", "c8"),
            ("u1", "?", "i2"),
        ]:
            for shape, order in (((3, 5), "C"), ((1500,), "C"), ((40, 77), "F"), ((300_001,), "C")):
                a = sample(dt_a, shape, 1, order)
                b = sample(dt_b, shape, 2, order)
                c = sample(dt_c, shape, 3, "C")
                ra = record_bytes([("w", a), ("only_a", sample("f4", (2,), 4)), ("other", sample("f4", (3,), 5))])
                rb = record_bytes([("w", b), ("other", sample("f4", (3,), 6))])
                rc = record_bytes([("w", c), ("other", sample("f4", (4,), 7))])
                rows = {r[0]: r for r in con.execute(f"SELECT {base_cols} FROM ar_compare(?, ?, ?)", (ra, rb, rc))}
                A, B, C = (f64(x).ravel() for x in (a, b, c))
                cplx = any(x.dtype.kind == "c" for x in (A, B, C))
                E, F = A - C, B - C
                na, nb = np.sqrt(np.sum(np.abs(E) ** 2)), np.sqrt(np.sum(np.abs(F) ** 2))
                _, ga, gb, gd, gc = rows["w"]
                assert np.isclose(ga, na, rtol=1e-12) and np.isclose(gb, nb, rtol=1e-12), (dt_a, shape, ga, na)
                if cplx:
                    assert gd is None and gc is None
                else:
                    dot = np.dot(E, F)
                    assert abs(gd - dot) <= 1e-12 * np.sum(np.abs(E * F)) + 1e-300, (dt_a, shape, gd, dot)
                    assert abs(gc - dot / (na * nb)) <= 1e-12, (dt_a, shape)
                assert rows["only_a"][1:] == (None, None, None, None)  # the base lacks the key
                assert rows["other"][1:] == (None, None, None, None)  # the base's shape differs
                # the pair's numbers do not depend on the base
                two = con.execute(f"SELECT {COLUMNS} FROM ar_compare(?, ?)", (ra, rb)).fetchall()
                three = con.execute(f"SELECT {COLUMNS} FROM ar_compare(?, ?, ?)", (ra, rb, rc)).fetchall()
                assert two == three, (dt_a, shape)
                # norm_a_base is norm_diff of (a, base), bit for bit
                nd = con.execute("SELECT norm_diff FROM ar_compare(?, ?) WHERE key = 'w'", (ra, rc)).fetchone()[0]
                assert nd == ga, (dt_a, shape)
        # a NULL base leaves the four NULL; keys only the base has make no row
        ra = record_bytes([("w", np.arange(3.0))])
        assert con.execute(f"SELECT {base_cols} FROM ar_compare(?, ?, NULL)", (ra, ra)).fetchall() == [
            ("w", None, None, None, None)
        ]
        rc = record_bytes([("w", np.zeros(3)), ("z", np.zeros(1))])
        assert [r[0] for r in con.execute("SELECT key FROM ar_compare(?, ?, ?)", (ra, ra, rc))] == ["w"]
        # b missing a key: a against the base still counts
        rb = record_bytes([("v", np.ones(1))])
        rows = con.execute(f"SELECT {base_cols} FROM ar_compare(?, ?, ?)", (ra, rb, rc)).fetchall()
        assert rows == [("w", float(np.linalg.norm(np.arange(3.0))), None, None, None), ("v", None, None, None, None)]
