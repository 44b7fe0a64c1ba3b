# SPDX-License-Identifier: Apache-2.0
"""Every example runs as a newcomer would run it: the sqlite3-shell demo and
tour, and the Python examples (/usr/bin/python3, NumPy, matplotlib), each in
a fresh temporary folder. The plot example must write a non-empty PNG; without
matplotlib (an optional module) it is SKIPPED, saying how to install it. The
PyTorch example runs in --quick mode (ResNet-18 with torchvision, which is
SKIPPED loudly when torchvision is missing) and with its small CNN, which
runs every cookbook recipe; both need torch (python3-torch)."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

from arlib import EXT, ROOT
from runner import Skip

EXAMPLES = os.path.join(ROOT, "examples")
# The examples import sqlite_arrayrecord: the package's source in this tree,
# loading the library under test (AR_EXTENSION), not an installed copy.
ENV = dict(os.environ, AR_EXTENSION=EXT, PYTHONPATH=os.path.join(ROOT, "bindings", "python"))


def run(cmd, cwd, stdin=None):
    res = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, timeout=300, env=ENV)
    out = res.stdout.decode("utf-8", "replace")
    assert res.returncode == 0, f"{cmd} failed ({res.returncode}):\n{out}\n{res.stderr.decode('utf-8', 'replace')}"
    return out


def shell_script(name):
    """The example script, loading the extension under test (the sanitizer
    and valgrind builds live outside build/) instead of ./build/arrayrecord."""
    with open(os.path.join(EXAMPLES, name), "rb") as f:
        script = f.read()
    line = b".load ./build/arrayrecord\n"
    assert line in script, name
    return script.replace(line, b".load " + EXT.encode() + b"\n")


def need_module(module, package):
    """Skip the test, with the install line, when the Python that runs the
    examples (this one) lacks an optional module."""
    if importlib.util.find_spec(module) is None:
        raise Skip(f"{module} is missing: install it with 'apt-get install -y {package}'")


def sqlite3_shell():
    shell = shutil.which("sqlite3")
    assert shell, "the sqlite3 shell is not installed (apt-get install sqlite3)"
    return shell


def test_demo_sql():
    script = shell_script("demo.sql")
    with tempfile.TemporaryDirectory() as tmp:
        out = run([sqlite3_shell(), os.path.join(tmp, "demo.db")], ROOT, script)
    for expected in ("FedAvg of the round", "ar_agg", "bytes_written", "fc1.weight"):
        assert expected in out, (expected, out)
    assert "rror" not in out, out


def test_tour_sql():
    script = shell_script("tour.sql")
    out = run([sqlite3_shell()], ROOT, script)
    assert "-- 7. export" in out and "rror" not in out, out
    assert os.path.getsize(os.path.join(ROOT, "build", "tour-fc.weight.npy")) > 0


def flower_log(tmp, rounds):
    """Runs examples/flower_log.py into tmp/runs.db; its output."""
    out = run(
        [sys.executable, os.path.join(EXAMPLES, "flower_log.py"), "--db", "runs.db", "--rounds", str(rounds)], tmp
    )
    assert "FedAvg in SQL matches NumPy in every round" in out, out
    assert len([line for line in out.splitlines() if line.strip()[:1].isdigit()]) == rounds, out
    return out


def test_flower_log_twice_into_one_database():
    with tempfile.TemporaryDirectory() as tmp:
        flower_log(tmp, 4)
        # a second run goes into the same database as run 2
        out = flower_log(tmp, 2)
        assert out.startswith("run 2 "), out


def test_flower_log_then_plot():
    need_module("matplotlib", "python3-matplotlib")
    with tempfile.TemporaryDirectory() as tmp:
        flower_log(tmp, 4)
        run([sys.executable, os.path.join(EXAMPLES, "plot_rounds.py"), "--db", "runs.db", "--out", "r.png"], tmp)
        png = os.path.join(tmp, "r.png")
        with open(png, "rb") as f:
            head = f.read(8)
        assert head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(png) > 10_000, (head, os.path.getsize(png))


def test_replay_strategies():
    need_module("matplotlib", "python3-matplotlib")
    with tempfile.TemporaryDirectory() as tmp:
        out = run(
            [sys.executable, os.path.join(EXAMPLES, "replay_strategies.py"), "--out", "replay.png", "--rounds", "5"],
            tmp,
        )
        assert "round  5: |FedAvg - fedadam|" in out and "round  0: |FedAvg - fedadam| = 0.000000" in out, out
        with open(os.path.join(tmp, "replay.png"), "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def test_checkpoints():
    with tempfile.TemporaryDirectory() as tmp:
        out = run([sys.executable, os.path.join(EXAMPLES, "checkpoints.py"), "--db", "ck.db"], tmp)
    assert "all arrays equal to the in-memory model" in out, out
    assert "agree within 1e-3: yes" in out, out


def torch_fedavg(tmp, *flags):
    """Runs examples/torch_fedavg.py into tmp/torch.db; its output, checked:
    the final "ok" line and its numbers, one report per round."""
    need_module("torch", "python3-torch")
    out = run([sys.executable, os.path.join(EXAMPLES, "torch_fedavg.py"), "--db", "torch.db", *flags], tmp)
    ok = re.search(
        r"^ok: (\w+), (\d+) rounds x (\d+) clients, FedAvg in SQL within (\S+) float32 ulps of torch, "
        r"outputs within (\S+), (\d+) counters int64 again, db (\S+) MB",
        out,
        re.M,
    )
    assert ok and "FAILED" not in out, out
    model, rounds, clients, ulps, outputs, counters, mb = ok.groups()
    assert (int(rounds), int(clients)) == (2, 2), out
    assert float(ulps) <= 1 and float(outputs) <= 1e-4 and int(counters) > 0, out
    assert abs(float(mb) * 1e6 - os.path.getsize(os.path.join(tmp, "torch.db"))) <= 1e5, out
    # the counters: client 0 trains 1 batch of 8, client 1 two; FedAvg 1.667 -> 2, not 1
    assert "clients [1, 2], weights [8, 16] -> 1.66667 (float64, logged so) -> like= gives 2 (int64); " in out, out
    assert "load_state_dict alone: 1" in out, out
    assert f"{counters} buffers int64 -> float64 in the FedAvg record" in out, out
    assert re.search(
        r"^-- fedavg_check: 2 rows\n.*\n   1 \| 2 \| 24 \| 1 \| None\n   2 \| 2 \| 24 \| 1 \| None$", out, re.M
    ), out
    return model, out


def test_torch_fedavg_quick():
    with tempfile.TemporaryDirectory() as tmp:
        model, out = torch_fedavg(tmp, "--quick")
    if importlib.util.find_spec("torchvision") is None:
        assert model == "small", out
        raise Skip("torchvision is missing, the example ran its small CNN: 'apt-get install -y python3-torchvision'")
    assert model == "resnet18" and "model: resnet18 (torchvision's, random weights)" in out, out


def test_torch_fedavg_small_cnn_every_recipe():
    with tempfile.TemporaryDirectory() as tmp:
        model, out = torch_fedavg(tmp, "--quick", "--model", "small")
    assert model == "small", out
    for name in ("layer_norm_jumps", "clients_against_consensus", "largest_updates", "diff_checkpoints"):
        assert re.search(rf"^-- {name}: \d+ rows?$", out, re.M), (name, out)
    assert "-- shrink_to_float16: 1 row" in out, out
