# SPDX-License-Identifier: Apache-2.0
"""Flower's Simulation Engine on this machine, as `flwr run` gives it to
users, bounded in time and always cleaned up (a helper module for
tests/flower/test_simulation.py, not a test file itself).

    with Simulation("examples/flower_app", supernodes=4) as sim:
        run = sim.run({"num-server-rounds": 2, "db": "/abs/run.db"}, timeout=180)
        assert run.ok, run.log

How flwr 1.42 simulates (../shared notes, checked against the wheel):

- FLWR_HOME/config.toml's default connection is `local` (address
  ":local:"): `flwr run APP --stream --federation-config
  "num-supernodes=N"` starts — or reuses — a detached `flower-superlink
  --simulation` (database FLWR_HOME/local-superlink/state.db) that outlives
  the run. Its HTTP and Control ports are 39091 and 39093 unless
  FLWR_LOCAL_SUPERLINK_HTTP_API_PORT and FLWR_LOCAL_CONTROL_API_PORT say
  otherwise: here they are free ports of 127.0.0.1.
- That SuperLink's SuperExec starts `flwr-simulation`, whose ServerApp runs
  in a non-main thread; the ClientApps are Ray actors (Ray's own processes:
  raylet, the GCS, a dashboard agent and a runtime-env agent, the latter two
  ignoring SIGTERM). RAY_TMPDIR puts Ray's session folder in the workdir.
- Runtime dependency installation (`uv sync` of the app's dependencies into
  FLWR_HOME/runtime-envs/<run id>) is on unless the SuperLink's environment
  has FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION=1: install_dependencies
  says which. uv's cache is build/uv-cache, kept between test runs.

Every process inherits the federation marker in its environment (Ray's
too), so stop() finds and stops them all, the detached SuperLink included,
as Federation does; a watchdog does it if this process dies. Two
simulations must not run at once (Ray on one machine): the tests run them
one after the other.
"""

import os

from federation import ROOT, Federation, free_ports

UV_CACHE = os.path.join(ROOT, "build", "uv-cache")


class Simulation(Federation):
    """Flower's local simulation runtime for the app `app`, with
    `supernodes` virtual SuperNodes per run."""

    def __init__(self, app, supernodes=2, install_dependencies=True, **kw):
        super().__init__(app, supernodes=supernodes, **kw)
        self.supernodes = supernodes
        self.install_dependencies = install_dependencies
        self.connection = "local"

    def _env(self):
        env = super()._env()
        http, control = free_ports(2)
        env.update(
            {
                "FLWR_LOCAL_SUPERLINK_HTTP_API_PORT": str(http),
                "FLWR_LOCAL_CONTROL_API_PORT": str(control),
                "RAY_TMPDIR": os.path.join(self.workdir, "ray"),
                "RAY_USAGE_STATS_ENABLED": "0",
                "UV_CACHE_DIR": UV_CACHE,
            }
        )
        if self.install_dependencies:
            del env["FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION"]
        return env

    def _start(self):
        self._prepare("simulation.")
        os.makedirs(self.env["RAY_TMPDIR"], exist_ok=True)
        self.superlink_port = int(self.env["FLWR_LOCAL_SUPERLINK_HTTP_API_PORT"])
        self.state_db = os.path.join(self.flwr_home, "local-superlink", "state.db")
        with open(os.path.join(self.flwr_home, "config.toml"), "w") as f:
            f.write('[superlink]\ndefault = "local"\n\n[superlink.local]\naddress = ":local:"\n')
        return self

    def _run_args(self):
        return ["run", self.app, "--stream", "--federation-config", f"num-supernodes={self.supernodes}"]

    def stop_run(self, run_id):
        """`flwr stop RUN_ID`: a run whose flwr-simulation was killed stays
        'running' for the SuperLink until stopped."""
        return self.flwr("stop", str(run_id), self.connection, timeout=60)
