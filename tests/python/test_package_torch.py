# SPDX-License-Identifier: Apache-2.0
"""to_state_dict(blob, like=model.state_dict()): the record's tensors in
like's dtypes and order, after checking its keys and shapes.

FedAvg in SQL (ar_mean) turns BatchNorm's int64 num_batches_tracked into a
float64 weighted mean; like= brings it back as int64, rounded to the nearest
integer (ties to even), which the tests check against NumPy's rint of a
float64 FedAvg. Records are built by arlib's independent encoder where the
dtype matters. Needs Debian's python3-torch; without it every test is
SKIPPED with the install line.
"""

import os
import sys

import numpy as np
from arlib import EXT, ROOT, record_bytes, small_cnn
from arlib import connect as ar_connect
from runner import Skip

PKG_SRC = os.path.join(ROOT, "bindings", "python")
sys.path.insert(0, PKG_SRC)
os.environ["AR_EXTENSION"] = EXT
import sqlite_arrayrecord as sar  # noqa: E402


def need_torch():
    try:
        import torch
    except ImportError:
        raise Skip("torch is missing: install it with 'apt-get install -y python3-torch'") from None
    return torch


def error_of(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except (ValueError, TypeError) as e:
        return f"{type(e).__name__}: {e}"
    raise AssertionError(f"no error from {fn.__name__}{args}")


def test_fedavg_of_batchnorm_counters_reloads_as_int64():
    torch = need_torch()
    torch.manual_seed(1)
    # three clients train 3, 4 and 4 batches: their counters differ, and so
    # does the weighted mean (3.4, 3.5 and 3.67 below) from any integer
    steps, cases = (3, 4, 4), {(1, 1, 1): 4, (2, 1, 2): 4, (120, 80, 200): 4, (1, 1, 0): 4, (3, 1, 0): 3}
    cases[(1, 0, 1)] = 4  # 3.5, a tie: to even
    cases[(3, 0, 1)] = 3  # 3.25
    cases[(5, 0, 3)] = 3  # 3.375
    cases[(1, 0, 3)] = 4  # 3.75
    states = []
    for n in steps:
        net = small_cnn(torch)
        net.train()
        for _ in range(n):
            net(torch.randn(2, 3, 8, 8))
        states.append({k: v.clone() for k, v in net.state_dict().items()})
    assert [s["1.num_batches_tracked"].item() for s in states] == list(steps)
    con = ar_connect()
    con.execute("CREATE TABLE u(rec BLOB, n INTEGER)")
    like = small_cnn(torch).state_dict()
    for weights, expected_count in cases.items():
        con.execute("DELETE FROM u")
        con.executemany("INSERT INTO u VALUES (?, ?)", [(sar.from_state_dict(s), w) for s, w in zip(states, weights)])
        (avg,) = con.execute("SELECT ar_mean(rec, n) FROM u").fetchone()
        mean = sum(w * c for w, c in zip(weights, steps)) / sum(weights)
        as_stored = sar.to_state_dict(avg)
        assert as_stored["1.num_batches_tracked"].dtype == torch.float64, weights
        assert abs(as_stored["1.num_batches_tracked"].item() - mean) < 1e-12, (weights, mean)
        back = sar.to_state_dict(avg, like=like)
        assert list(back) == list(like)
        assert {k: (v.dtype, v.shape) for k, v in back.items()} == {k: (v.dtype, v.shape) for k, v in like.items()}
        count = back["1.num_batches_tracked"]
        assert count.item() == expected_count == int(np.rint(mean)), (weights, mean, count)
        # the float32 arrays are ar_mean's own bytes, not recast
        for key in ("0.weight", "1.running_mean", "1.running_var"):
            assert back[key].numpy().tobytes() == as_stored[key].numpy().tobytes(), key
        fresh = small_cnn(torch)
        fresh.load_state_dict(back, strict=True)
        assert fresh.state_dict()["1.num_batches_tracked"].item() == expected_count
        # what load_state_dict does on its own: a truncating copy into int64
        plain = small_cnn(torch)
        plain.load_state_dict(as_stored, strict=True)
        assert plain.state_dict()["1.num_batches_tracked"].item() == int(mean), (weights, mean)


def test_float_to_integer_rounds_half_to_even():
    torch = need_torch()
    values = np.array([2.5, 3.5, -2.5, -0.5, 0.5, 2.4999999999999996, 2.9999999999999996, 1e15 + 0.5, -7.0])
    rec = record_bytes([("c", values), ("h", values[:5].astype(np.float16)), ("e", np.zeros((0, 2)))])
    like = {
        "c": torch.zeros(9, dtype=torch.int64),
        "h": torch.zeros(5, dtype=torch.int32),
        "e": torch.zeros(0, 2, dtype=torch.int8),
    }
    out = sar.to_state_dict(rec, like=like)
    assert out["c"].tolist() == [2, 4, -2, 0, 0, 2, 3, 10**15, -7] == np.rint(values).astype(np.int64).tolist()
    assert out["h"].dtype == torch.int32 and out["h"].tolist() == [2, 4, -2, 0, 0]
    assert out["e"].dtype == torch.int8 and out["e"].shape == (0, 2)
    # bool: rounded, then 0 or 1 only
    rec = record_bytes([("b", np.array([0.4, 0.5, 0.6, 1.0, 1.4]))])
    assert sar.to_state_dict(rec, like={"b": torch.zeros(5, dtype=torch.bool)})["b"].tolist() == [
        False,
        False,
        True,
        True,
        True,
    ]


def test_values_an_integer_dtype_cannot_hold():
    torch = need_torch()
    i64 = torch.zeros(2, dtype=torch.int64)
    for value, dtype, shown in (
        (np.nan, torch.int64, "nan"),
        (np.inf, torch.int64, "inf"),
        (-np.inf, torch.int32, "-inf"),
        (2.0**63, torch.int64, "9.223372036854776e+18"),
        (-(2.0**63) - 4096, torch.int64, "-9.223372036854780e+18"),
        (127.5, torch.int8, "128.0"),
        (-0.6, torch.uint8, "-1.0"),
        (2.0, torch.bool, "2.0"),
    ):
        rec = record_bytes([("ok", np.zeros(2)), ("bn.num_batches_tracked", np.array([1.0, value]))])
        like = {"ok": i64, "bn.num_batches_tracked": torch.zeros(2, dtype=dtype)}
        name = str(dtype).replace("torch.", "")
        expected = (
            f"ValueError: to_state_dict: key 'bn.num_batches_tracked' is float64 in the record, {name} in like: "
            f"it holds {float(shown)!r}, which {name} cannot hold"
        )
        assert error_of(sar.to_state_dict, rec, like=like) == expected, (value, dtype)
    # the extremes themselves fit
    edges = np.array([-(2.0**63), 2.0**63 - 1024])
    out = sar.to_state_dict(record_bytes([("x", edges)]), like={"x": i64})["x"]
    assert out.tolist() == [-(2**63), 2**63 - 1024]
    rec = record_bytes([("x", np.array([-128.0, 127.4]))])
    assert sar.to_state_dict(rec, like={"x": torch.zeros(2, dtype=torch.int8)})["x"].tolist() == [-128, 127]
    # integers narrowed to a smaller integer dtype: checked the same way
    rec = record_bytes([("x", np.array([5, 2**31], np.int64))])
    assert error_of(sar.to_state_dict, rec, like={"x": torch.zeros(2, dtype=torch.int32)}) == (
        "ValueError: to_state_dict: key 'x' is int64 in the record, int32 in like: "
        "it holds 2147483648, which int32 cannot hold"
    )
    rec = record_bytes([("x", np.array([5, -(2**31)], np.int64))])
    assert sar.to_state_dict(rec, like={"x": torch.zeros(2, dtype=torch.int32)})["x"].tolist() == [5, -(2**31)]
    # complex into a real dtype would drop the imaginary part
    rec = record_bytes([("z", np.array([1 + 2j]))])
    assert error_of(sar.to_state_dict, rec, like={"z": torch.zeros(1)}) == (
        "ValueError: to_state_dict: key 'z' is complex128 in the record, float32 in like: "
        "the cast would drop the imaginary part"
    )


def test_floating_casts_are_torch_casts():
    torch = need_torch()
    rng = np.random.default_rng(3)
    f64 = rng.standard_normal(50) * 1e3
    i64 = np.arange(-3, 3, dtype=np.int64) * (2**40 + 1)
    bf16 = torch.randn(4, 2).bfloat16()
    rec = sar.to_record({"f64": f64, "i64": i64})
    rec = sar.from_state_dict({**sar.to_state_dict(rec), "bf16": bf16})  # bf16 as a raw safetensors item
    like = {"bf16": torch.zeros(4, 2, dtype=torch.float64), "f64": torch.zeros(50), "i64": torch.zeros(6).half()}
    out = sar.to_state_dict(rec, like=like)
    assert list(out) == ["bf16", "f64", "i64"]  # like's order
    assert out["f64"].dtype == torch.float32 and torch.equal(out["f64"], torch.from_numpy(f64).to(torch.float32))
    assert out["f64"].numpy().tobytes() == f64.astype(np.float32).tobytes()
    assert out["i64"].dtype == torch.float16 and torch.equal(out["i64"], torch.from_numpy(i64).to(torch.float16))
    assert out["bf16"].dtype == torch.float64 and torch.equal(out["bf16"], bf16.double())
    # in like's dtype already: the very values, bit for bit
    same = sar.to_state_dict(
        rec, like={"f64": torch.zeros(50, dtype=torch.float64), "i64": torch.zeros(6, dtype=torch.int64), "bf16": bf16}
    )
    assert same["f64"].numpy().tobytes() == f64.tobytes() and same["i64"].tolist() == i64.tolist()
    assert torch.equal(same["bf16"].view(torch.int16), bf16.view(torch.int16))
    # without like: the record's keys, order and dtypes
    plain = sar.to_state_dict(rec)
    assert list(plain) == ["f64", "i64", "bf16"]
    assert [t.dtype for t in plain.values()] == [torch.float64, torch.int64, torch.bfloat16]
    assert sar.to_state_dict(None, like=like) is None


def test_keys_and_shapes_must_match_like():
    torch = need_torch()
    rec = record_bytes(
        [
            ("fc.weight", np.zeros((2, 3), np.float32)),
            ("fc.bias", np.zeros(2, np.float32)),
            ("bn1.num_batches_tracked", np.array(4.0)),
        ]
    )
    like = {
        "fc.weight": torch.zeros(2, 3),
        "fc.bias": torch.zeros(2),
        "bn1.num_batches_tracked": torch.tensor(0),
    }
    assert sar.to_state_dict(rec, like=like)["bn1.num_batches_tracked"].item() == 4
    cases = [
        (
            {**like, "fc.weight": torch.zeros(3, 2)},
            "ValueError: to_state_dict: key 'fc.weight' has shape (2, 3) in the record but (3, 2) in like",
        ),
        (
            {**like, "bn1.num_batches_tracked": torch.zeros(1, dtype=torch.int64)},
            "ValueError: to_state_dict: key 'bn1.num_batches_tracked' has shape () in the record but (1,) in like",
        ),
        (
            {**like, "bn1.running_mean": torch.zeros(2)},
            "ValueError: to_state_dict: key 'bn1.running_mean' of like is missing from the record "
            "(like: 1 of its 4 keys missing; record: 0 of its 3 keys not in like)",
        ),
        (
            {k: v for k, v in like.items() if k != "fc.bias"},
            "ValueError: to_state_dict: key 'fc.bias' is in the record but not in like "
            "(like: 0 of its 2 keys missing; record: 1 of its 3 keys not in like)",
        ),
        (
            {"module." + k: v for k, v in like.items()},  # a DataParallel model's keys
            "ValueError: to_state_dict: key 'module.fc.weight' of like is missing from the record "
            "(like: 3 of its 3 keys missing; record: 3 of its 3 keys not in like)",
        ),
        (
            {**like, "fc.bias": np.zeros(2, np.float32)},
            "TypeError: to_state_dict: like['fc.bias'] is a ndarray, not a tensor",
        ),
        (
            list(like.values()),
            "TypeError: to_state_dict: like must be a mapping of names to tensors (model.state_dict()), not list",
        ),
    ]
    for bad, expected in cases:
        assert error_of(sar.to_state_dict, rec, like=bad) == expected, expected
    # keys and shapes are checked before any payload is read
    broken = record_bytes([("w", ("float32", [2], "numpy.ndarray", b"not a .npy file"))])
    assert "not a .npy file" in error_of(sar.to_state_dict, broken)
    assert error_of(sar.to_state_dict, broken, like={"w": torch.zeros(3)}) == (
        "ValueError: to_state_dict: key 'w' has shape (2,) in the record but (3,) in like"
    )
    net = small_cnn(torch)
    good = sar.from_state_dict(net.state_dict())
    # a module is not a state_dict
    assert error_of(sar.to_state_dict, good, like=net) == (
        "TypeError: to_state_dict: like must be a mapping of names to tensors (model.state_dict()), not Sequential"
    )
