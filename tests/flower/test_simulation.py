# SPDX-License-Identifier: Apache-2.0
"""LoggingStrategy in Flower's Simulation Engine, run as users run it:
`flwr run examples/flower_app --stream --federation-config
"num-supernodes=4"` on the local simulation runtime (a detached local
SuperLink, the ServerApp in a thread of flwr-simulation, ClientApps as Ray
actors; tests/flower/simulation.py).

With runtime dependency installation at its default (`uv sync` of the app's
dependencies): every round is logged, each logged global model is rd_mean
over its logged replies in arrival order, bit for bit, and the app's Result
is the last logged model; every client has its partition as its label.
With it off: the simulation is killed with SIGKILL once round 1 is logged
(its `flwr run` hangs and the run stays 'running': both are stopped, the
run with `flwr stop`), then `flwr run` again with resume=true ends the run:
every round consistent, the Flower runs recorded, the new node ids of the
second Flower run labelled with the same partitions. Every process either
simulation started is gone afterwards (Federation.stop raises otherwise).
The two simulations run one after the other (one Ray on a machine).
"""

import os
import signal
import sqlite3
import time

from federation import ROOT
from simulation import Simulation

APP = os.path.join(ROOT, "examples", "flower_app")
NODES = 4
CONFIG = {"local-epochs": 1, "lr": 0.5, "seed": 2024, "min-train-nodes": NODES, "min-available-nodes": NODES}


def _check_rounds(sar, db, rounds):
    """Every round of the one logged run is there and consistent: its global
    model is rd_mean over its train replies (ORDER BY pos), bit for bit; the
    app's Result is the last one. Returns the run's id."""
    con = sar.connect(db)
    try:
        ((run,),) = con.execute("SELECT run FROM runs").fetchall()
        got = [r for (r,) in con.execute("SELECT round FROM rounds WHERE finished_at IS NOT NULL ORDER BY round")]
        assert got == list(range(rounds + 1)), got
        for r in range(1, rounds + 1):
            mean, logged, n = con.execute(
                "SELECT rd_array_record(rd_mean(content)), (SELECT rec FROM global_models WHERE round = ?1), count(*) "
                "FROM (SELECT content FROM replies WHERE round = ?1 AND phase = 'train' AND content IS NOT NULL "
                "ORDER BY pos)",
                (r,),
            ).fetchone()
            assert n == NODES and mean == logged, f"round {r}: {n} replies; rd_mean over them is not the logged model"
        (last,) = con.execute("SELECT rec FROM global_models WHERE round = ?", (rounds,)).fetchone()
        (result,) = con.execute("SELECT arrays FROM flower_result").fetchone()
        assert result == last, "the app's Result.arrays is not the last logged global model"
        return run
    finally:
        con.close()


def test_simulation_with_runtime_dependency_installation():
    import sqlite_arrayrecord as sar

    rounds = 3
    t0 = time.monotonic()
    with Simulation(APP, supernodes=NODES, install_dependencies=True) as sim:
        db = os.path.join(sim.workdir, "run.db")
        res = sim.run(dict(CONFIG, db=db, **{"num-server-rounds": rounds}), timeout=300)
        assert res.ok, f"{res!r}\n{res.log}{sim.tails()}"
        assert "Installing application dependencies" in res.log and "uv sync took" in res.log, res.log
        _check_rounds(sar, db, rounds)
        con = sar.connect(db)
        labels = con.execute("SELECT count(*), count(DISTINCT json_extract(info, '$.partition_id')) FROM clients")
        assert labels.fetchone() == (NODES, NODES)
        (name,) = con.execute("SELECT name FROM runs").fetchone()
        assert name == f"FedAvg-{res.run_id}", name  # LoggingStrategy's default name
        con.close()
    print(
        f"simulation, {NODES} SuperNodes, {rounds} rounds, dependencies installed by uv: {res.seconds:.1f} s of "
        f"flwr run, {time.monotonic() - t0:.1f} s in all; every round rd_mean of its replies, bit for bit"
    )


def test_simulation_killed_and_resumed():
    import sqlite_arrayrecord as sar

    rounds = 4
    t0 = time.monotonic()
    with Simulation(APP, supernodes=NODES, install_dependencies=False) as sim:
        db = os.path.join(sim.workdir, "run.db")
        config = dict(CONFIG, db=db, resume=True, **{"num-server-rounds": rounds, "run-name": "sim"})
        killed = []

        def poll():
            if killed or not os.path.exists(db):
                return
            try:
                ro = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1)
                try:
                    done = ro.execute("SELECT max(round) FROM rounds WHERE finished_at IS NOT NULL").fetchone()[0]
                finally:
                    ro.close()
            except sqlite3.Error:
                return
            if done is None or done < 1:
                return
            sims = [pid for pid, cmd in sim.processes().items() if "flwr-simulation" in cmd]
            for pid in sims:
                os.kill(pid, signal.SIGKILL)
            if sims:
                killed.append(done)
                os.killpg(sim.procs["run0"].pid, signal.SIGKILL)  # flwr run --stream would wait forever

        first = sim.run(config, timeout=300, poll=poll, poll_interval=0.1)
        assert killed, f"the simulation was not killed: {first!r}\n{first.log}{sim.tails()}"
        assert first.run_id is not None and first.status.startswith("running"), first
        rc, out = sim.stop_run(first.run_id)
        assert rc == 0, out
        second = sim.run(config, timeout=300)
        assert second.ok, f"{second!r}\n{second.log}{sim.tails()}"
        assert "LoggingStrategy: resuming run 'sim' after round" in second.log, second.log
        assert "Installing application dependencies" not in second.log
        run = _check_rounds(sar, db, rounds)
        con = sar.connect(db)
        try:
            segments = con.execute(
                "SELECT flower_run_id, first_round, last_round, ended FROM flower_runs WHERE run = ? ORDER BY segment",
                (run,),
            ).fetchall()
            nodes, labels = con.execute(
                "SELECT count(*), count(DISTINCT json_extract(info, '$.partition_id')) FROM clients"
            ).fetchone()
        finally:
            con.close()
    from sqlite_arrayrecord.flower._wire import int64

    done = killed[0]
    assert segments == [
        (int64(first.run_id), 0, done, "interrupted"),
        (int64(second.run_id), done + 1, rounds, "finished"),
    ], segments
    # a new Flower run gives the simulated nodes new ids; their partitions stay
    assert (nodes, labels) == (2 * NODES, NODES), (nodes, labels)
    print(
        f"simulation killed after round {done} of {rounds}, stopped with flwr stop, resumed by a second flwr run "
        f"({second.seconds:.1f} s): every round consistent; {time.monotonic() - t0:.1f} s in all"
    )
