# SPDX-License-Identifier: Apache-2.0
"""Logged runs into MLflow (the [mlflow] extra: mlflow-skinny, MLflow's
client), the one module that imports mlflow:

    to_mlflow("runs.db", tracking_uri="http://127.0.0.1:5000")

One MLflow run per logged run, named as the logged run, in the experiment
asked for (MLflow's default one otherwise): parameters are the strategy's
class, the planned rounds, the run config (config.KEY) and the strategy's
settings (settings.NAME); metrics train/NAME, evaluate/NAME, server/NAME,
bytes/sent, bytes/received and time/STEP with step = round and the
round's end as timestamp; tags the strategy's class, the Flower run ids,
the database's path, the logged run's number and name and how it ended
(sqlite_arrayrecord.*), its notes as the MLflow run's description; the
run's start and end times, and its status (FINISHED, FAILED, KILLED for a
run whose process died, RUNNING).

Exporting again updates that MLflow run, found by its
sqlite_arrayrecord.key tag (a digest of the database's path, the run's
number and its start) in any active experiment: a metric point of a step
MLflow already has is not sent again (the rounds a resumed run added
are), parameters MLflow has are not sent again, and a logged value that
differs from MLflow's is an error (ValueError) rather than a second point.
"""

import math

from mlflow.entities import Metric, Param, RunTag, ViewType
from mlflow.tracking import MlflowClient

from . import _source

__all__ = ["to_mlflow"]

STATUS = {
    "finished": "FINISHED",
    "failed": "FAILED",
    "interrupted": "KILLED",
    "running": "RUNNING",
    "unknown": "FINISHED",
}
BATCH_METRICS, BATCH_PARAMS = 1000, 100  # MLflow's limits per log_batch call
MAX_PARAM = 6000  # MLflow's longest parameter value


def to_mlflow(db, run=None, *, tracking_uri=None, experiment=None):
    """Exports the runs of the database ``db`` (a path) to MLflow: every run,
    or the one named ``run``. ``tracking_uri``: MLflow's (an http:// server,
    or any URI MLflow's client takes; None: MLFLOW_TRACKING_URI or MLflow's
    default); ``experiment``: an experiment's name (made when missing;
    None: the default experiment). Returns one dict per run: name,
    mlflow_run_id, created (True for a new MLflow run), params and metrics
    (how many were sent this time). ValueError for an unknown run name, a
    parameter value longer than MLflow takes, or a value that differs from
    what MLflow already holds; FileNotFoundError for a missing database."""
    con, path = _source.connect(db)
    try:
        client = MlflowClient(tracking_uri=tracking_uri)
        experiment_id = _experiment(client, experiment)
        return [_export(client, experiment_id, con, path, r) for r in _source.select(con, run)]
    finally:
        con.close()


def _experiment(client, name):
    if name is None:
        found = client.get_experiment_by_name("Default")
        return found.experiment_id if found else client.create_experiment("Default")
    found = client.get_experiment_by_name(name)
    return found.experiment_id if found else client.create_experiment(name)


def _find(client, key):
    """The active MLflow run carrying our key tag, in any active experiment, or None."""
    ids = [e.experiment_id for e in client.search_experiments(view_type=ViewType.ACTIVE_ONLY, max_results=50000)]
    runs = client.search_runs(
        ids, filter_string=f"tags.`{_source.PREFIX}key` = '{key}'", run_view_type=ViewType.ACTIVE_ONLY
    )
    return runs[0] if runs else None


def _same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def _export(client, experiment_id, con, path, run):
    tags = _source.tags(path, run)
    if run["notes"]:
        tags["mlflow.note.content"] = run["notes"]
    found = _find(client, tags[_source.PREFIX + "key"])
    created = found is None
    if created:
        found = client.create_run(
            experiment_id, start_time=_source.millis(run["started_at"]), tags=tags, run_name=run["name"]
        )
    run_id = found.info.run_id
    # parameters: MLflow keeps the first value of each; a different one is an error
    have = found.data.params
    params = []
    for k, v in _source.params(run).items():
        if len(v) > MAX_PARAM:
            raise ValueError(
                f"to_mlflow: run {run['name']!r}: parameter {k} has {len(v)} characters, MLflow takes {MAX_PARAM}"
            )
        if k not in have:
            params.append(Param(k, v))
        elif have[k] != v:
            raise ValueError(
                f"to_mlflow: run {run['name']!r}: MLflow has parameter {k} = {have[k]!r}, the database {v!r}"
            )
    # metrics: the points of steps MLflow does not have yet
    history = {}
    for k in found.data.metrics:
        history[k] = {m.step: m.value for m in client.get_metric_history(run_id, k)}
    metrics = []
    for k, step, value, when in _source.scalars(con, run):
        value = float(value)
        old = history.get(k, {})
        if step in old:
            if not _same(old[step], value):
                raise ValueError(
                    f"to_mlflow: run {run['name']!r}: MLflow has {k} = {old[step]!r} at step {step}, the database {value!r}"
                )
            continue
        metrics.append(Metric(k, value, when, step))
    tag_list = [RunTag(k, v) for k, v in tags.items()]
    for i in range(0, len(params), BATCH_PARAMS):
        client.log_batch(run_id, params=params[i : i + BATCH_PARAMS])
    for i in range(0, len(tag_list), BATCH_PARAMS):
        client.log_batch(run_id, tags=tag_list[i : i + BATCH_PARAMS])
    for i in range(0, len(metrics), BATCH_METRICS):
        client.log_batch(run_id, metrics=metrics[i : i + BATCH_METRICS])
    status = STATUS.get(run["ended"], "FINISHED")
    end = _source.millis(run["finished_at"])
    if status == "RUNNING":
        client.update_run(run_id, status=status)
    else:
        client.set_terminated(run_id, status=status, end_time=end)
    return {
        "name": run["name"],
        "mlflow_run_id": run_id,
        "created": created,
        "params": len(params),
        "metrics": len(metrics),
    }
