# SPDX-License-Identifier: Apache-2.0
"""Timing in turns, for bench/run.py and its parts: the sides of a
comparison run alternately (A B A B ...) after one warm-up run each, so a
change in the machine's load hits them alike."""

import statistics
import time


def turn_times(fns, repeat, warm=True):
    """Each function's times over `repeat` turns. A function that returns a
    FlowerPeer reply (a dict with "time") is timed by the peer, inside its own
    process."""
    if warm:
        for f in fns:
            f()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            r = f()
            t = time.perf_counter() - t
            times[i].append(r["time"] if isinstance(r, dict) and "time" in r else t)
    return times


def in_turns(fns, repeat, warm=True):
    """Each function's best time over `repeat` turns."""
    return [min(t) for t in turn_times(fns, repeat, warm)]


def in_turns_median(fns, repeat):
    """Each function's median time over `repeat` turns."""
    return [statistics.median(t) for t in turn_times(fns, repeat)]
