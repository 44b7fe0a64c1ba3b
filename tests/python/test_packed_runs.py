# SPDX-License-Identifier: Apache-2.0
"""Packed records on real training runs (tests/python/realruns.py: digits,
FedAvg): every reply packed against the global model it started from and
every global model against the one before, through SQL; each BLOB unpacks
to its record bit for bit, and the whole run's stored / raw is printed
(`make bench --only packing` prints the full table with its targets; here
only a loose bound guards against a regression that would store raw).
"""

import numpy as np
import realruns
from arlib import connect, record_bytes
from runner import Skip


def need_digits():
    if realruns.digits_path() is None:
        raise Skip(f"scikit-learn's digits data is missing: {realruns.SKLEARN_INSTALL}")


def pack_run(rounds, lossy=False):
    need_digits()
    con = connect()
    raw = stored = 0
    for r in rounds:
        base = record_bytes(list(r.base.items()))
        states = [s for _, _, s in r.replies] + [r.global_model]
        for i, state in enumerate(states):
            rec = record_bytes([(k, np.asarray(v)) for k, v in state.items()])
            opt = '{"lossy": "float16"}' if lossy and i < len(r.replies) else None
            (p,) = con.execute("SELECT ar_pack(?, ?, ?)", (rec, base, opt)).fetchone()
            (back,) = con.execute("SELECT ar_unpack(?, ?)", (p, base)).fetchone()
            if opt is None:
                assert back == rec
            else:
                assert con.execute("SELECT ar_allclose(?, ?, 0, 1e-3)", (back, rec)).fetchone() == (1,)
            raw += len(rec)
            stored += len(p)
    return stored / raw


def test_mlp_run_packs_bit_for_bit():
    ratio = pack_run(realruns.mlp_run())
    print(f"NumPy MLP, 6 clients, 20 rounds: stored / raw {ratio:.3f}")
    assert ratio < 0.75


def test_mlp_run_lossy_replies():
    ratio = pack_run(realruns.mlp_run(rounds=5), lossy=True)
    print(f"NumPy MLP, 5 rounds, lossy float16 replies: stored / raw {ratio:.3f}")
    assert ratio < 0.5


def test_cnn_run_packs_bit_for_bit():
    need_digits()
    try:
        import torch  # noqa: F401
    except ImportError:
        raise Skip(f"PyTorch is missing: {realruns.TORCH_INSTALL}") from None
    ratio = pack_run(realruns.cnn_run(rounds=8))
    print(f"CNN with BatchNorm, 10 clients, 8 rounds: stored / raw {ratio:.3f}")
    assert ratio < 0.8


def test_the_digits_are_there():
    need_digits()
    x, y = realruns.load_digits()
    assert x.shape == (1797, 64) and x.dtype == np.float32 and set(y.tolist()) == set(range(10))
