# SPDX-License-Identifier: Apache-2.0
"""The crash soak (tests/flower/soak.py) in brief: a 10-round FedAdam run of
a 4 MB model with a 0-d counter, killed with SIGKILL at 5 seeded random
moments (clients training, evaluate_fn, inside the COMMIT, inside the
checkpoint) and resumed each time: the log sound after every kill, the end
bit for bit as an uninterrupted run. `make soak` runs 20 kills (CI), more
with SOAK_KILLS."""

import tempfile

import soak


def test_crash_soak_in_brief():
    with tempfile.TemporaryDirectory() as tmp:
        figures = soak.soak(kills=5, seed=2, folder=tmp)
    assert figures["kills"] == 5 and figures["checks"] == figures["processes"] >= 6, figures
    print(
        f"{figures['kills']} kills ({figures['by_moment']}), {figures['processes']} processes, every check sound, "
        f"the end bit for bit: {figures['seconds']} s"
    )
