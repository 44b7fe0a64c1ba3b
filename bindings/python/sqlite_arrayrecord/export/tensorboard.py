# SPDX-License-Identifier: Apache-2.0
"""Logged runs as TensorBoard runs (the [tensorboard] extra), the one
module that imports tensorboard; the events are written with TensorBoard's
own protobuf classes and record writer:

    to_tensorboard("runs.db", "tb")     # then: tensorboard --logdir tb

One TensorBoard run per logged run, in LOGDIR/<run name> (a / or \\ in the
name becomes _): scalars train/NAME, evaluate/NAME, server/NAME,
bytes/sent, bytes/received and time/STEP with step = round, as float64
(TensorBoard's scalar summaries, exact); a histogram per layer of each
round's global model (model/KEY: ar_inspect's, np.histogram's 30 bins of
its finite values) and of the clients' update norms |u - p| of each round
(clients/update_norm); the strategy, settings and run config as a
Markdown table (text "settings", step 0). Wall times are the rounds' ends.

The events of a run are one file, events.out.tfevents.<time>.sqlite-arrayrecord,
written beside under another name and renamed into place; exporting again
writes the file anew and deletes the earlier one, so the run keeps one
point per step (files of other writers in the folder are left alone).
"""

import os
import re
import time

import numpy as np
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata
from tensorboard.plugins.scalar import metadata as scalar_metadata
from tensorboard.plugins.text import metadata as text_metadata
from tensorboard.summary.writer.record_writer import RecordWriter
from tensorboard.util import tensor_util

from . import _source

__all__ = ["to_tensorboard"]

SUFFIX = ".sqlite-arrayrecord"  # our event files' last part: only these are replaced


def to_tensorboard(db, logdir, run=None):
    """Writes the runs of the database ``db`` (a path) as TensorBoard runs
    under ``logdir`` (made when missing): every run, or the one named
    ``run``. Returns one dict per run: name, path (its event file), scalars
    and histograms (how many points). ValueError for an unknown run name or
    two runs whose folder names would be the same; FileNotFoundError for a
    missing database."""
    con, _ = _source.connect(db)
    try:
        runs = _source.select(con, run)
        folders = {}
        for r in runs:
            folder = run_folder(r["name"])
            if folder in folders:
                raise ValueError(
                    f"to_tensorboard: runs {folders[folder]!r} and {r['name']!r} would share the folder {folder!r}"
                )
            folders[folder] = r["name"]
        return [_export(con, os.path.join(os.fspath(logdir), run_folder(r["name"])), r) for r in runs]
    finally:
        con.close()


def run_folder(name):
    """The folder of a run under the log directory: its name, / \\ and NUL as _."""
    folder = re.sub(r"[/\\\x00]", "_", name)
    return folder if folder.strip(".") else folder.replace(".", "_") or "_"


def _event(wall_ms, step, tag, metadata, array):
    value = summary_pb2.Summary.Value(tag=tag, metadata=metadata, tensor=tensor_util.make_tensor_proto(array))
    return event_pb2.Event(wall_time=(wall_ms or 0) / 1000.0, step=step, summary=summary_pb2.Summary(value=[value]))


def _histogram(h):
    return np.array(h["buckets"], dtype=np.float64).reshape(-1, 3)


def _export(con, folder, run):
    os.makedirs(folder, exist_ok=True)
    start = _source.millis(run["started_at"]) or _source.now_millis()
    events = [event_pb2.Event(wall_time=start / 1000.0, file_version="brain.Event:2")]
    text_md = text_metadata.create_summary_metadata(display_name="settings", description="")
    events.append(_event(start, 0, "settings", text_md, np.array(_source.settings_text(run), dtype=object)))
    scalars = _source.scalars(con, run)
    for k, step, value, when in scalars:
        md = scalar_metadata.create_summary_metadata(display_name=k, description="")
        events.append(_event(when, step, k, md, np.array(float(value), dtype=np.float64)))
    hists = [(rnd, when, k, h) for rnd, when, k, h in _source.layer_histograms(con, run)]
    hists += [(rnd, when, "clients/update_norm", h) for rnd, when, h in _source.norm_histograms(con, run)]
    for rnd, when, k, h in hists:
        md = histogram_metadata.create_summary_metadata(display_name=k, description="")
        events.append(_event(when or start, rnd, k, md, _histogram(h)))
    name = f"events.out.tfevents.{int(time.time()):010d}{SUFFIX}"
    tmp = os.path.join(folder, f".writing{SUFFIX}.{os.getpid()}")
    with open(tmp, "wb") as fh:
        writer = RecordWriter(fh)
        for e in events:
            writer.write(e.SerializeToString())
        fh.flush()
        os.fsync(fh.fileno())
    path = os.path.join(folder, name)
    os.replace(tmp, path)
    for old in os.listdir(folder):
        if old.startswith("events.out.tfevents.") and old.endswith(SUFFIX) and old != name:
            os.remove(os.path.join(folder, old))
    return {"name": run["name"], "path": path, "scalars": len(scalars), "histograms": len(hists)}
