# SPDX-License-Identifier: Apache-2.0
"""What the tracking tests share (a helper, not a test module): the logged
database, written once per process by tests/datasette/fixture.py's
log_runs (three runs by LoggingStrategy: Krum, FedAvg under a hostile name,
FedAdam failed and resumed), and the real servers the exports are read
back from, each on 127.0.0.1 at a free port, in a session of its own,
waited for with a deadline and always stopped with every process it
started (SIGTERM to its process group, SIGKILL after a grace period):

    with MlflowServer(folder) as uri: ...       # mlflow server, SQLite backend store
    with TensorBoard(logdir) as url: ...        # tensorboard --logdir
"""

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "datasette"))
VENV = os.path.join(ROOT, "build", "tracking")
BIN = os.path.join(VENV, "bin")
STARTUP = 120  # seconds a server may take to answer (the MLflow store's migrations take several)
# tests/run names the extension relative to the root; the docs' blocks run in other folders
if not os.path.isabs(os.environ.get("AR_EXTENSION", "/")):
    os.environ["AR_EXTENSION"] = os.path.join(ROOT, os.environ["AR_EXTENSION"])

import fixture  # noqa: E402  (tests/datasette/fixture.py)

import sqlite_arrayrecord as sar  # noqa: E402

_STATE = {}
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # no proxy for 127.0.0.1


def logged_db():
    """The path of the logged database, written once per process."""
    if "db" not in _STATE:
        folder = tempfile.mkdtemp(prefix="ar-tracking-")
        atexit.register(shutil.rmtree, folder, True)
        path = os.path.join(folder, "runs.db")
        fixture.log_runs(path)
        _STATE["db"] = path
    return _STATE["db"]


def sql():
    """Our own connection to the logged database, extension loaded."""
    return sar.connect(logged_db(), detect_types=0)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url, timeout=30):
    """(status, body) of a GET."""
    try:
        with _OPENER.open(url, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def fetch_json(url):
    status, body = fetch(url)
    assert status == 200, (url, status, body[:500])
    return json.loads(body)


class Service:
    """A server process in a session of its own: started, waited for until
    ready() holds (or STARTUP seconds), stopped with its whole process group."""

    def __init__(self, cmd, folder, name):
        self.cmd, self.folder, self.name = cmd, folder, name
        self.proc = self.log = None

    def ready(self):
        raise NotImplementedError

    def __enter__(self):
        self.log = open(os.path.join(self.folder, self.name + ".log"), "wb")
        self.proc = subprocess.Popen(
            self.cmd, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, cwd=self.folder
        )
        atexit.register(self.stop)
        deadline = time.monotonic() + STARTUP
        try:
            while not self.ready():
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.log_text()}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.name} did not answer in {STARTUP} s:\n{self.log_text()}")
                time.sleep(0.2)
        except BaseException:
            self.stop()
            raise
        return self

    def log_text(self):
        with open(self.log.name, errors="replace") as fh:
            return fh.read()[-3000:]

    def stop(self, grace=10):
        """SIGTERM to the group, SIGKILL after grace seconds; every process
        of the group is gone when it returns."""
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, sig)
            deadline = time.monotonic() + wait
            while _group_alive(self.proc.pid) and time.monotonic() < deadline:
                self.proc.poll()
                time.sleep(0.05)
            if not _group_alive(self.proc.pid):
                break
        self.proc.wait(timeout=10)
        assert not _group_alive(self.proc.pid), f"{self.name}: processes of group {self.proc.pid} survived SIGKILL"
        self.proc = None
        self.log.close()
        atexit.unregister(self.stop)

    def __exit__(self, *exc):
        self.stop()


def _group_alive(pgid):
    """Whether any process of the group is alive (zombies aside)."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


class MlflowServer(Service):
    """`mlflow server` with a SQLite backend store in folder (one worker)."""

    def __init__(self, folder):
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        store = "sqlite:///" + os.path.join(folder, "mlflow.db")
        cmd = [os.path.join(BIN, "mlflow"), "server", "--backend-store-uri", store]
        cmd += ["--default-artifact-root", os.path.join(folder, "artifacts"), "--host", "127.0.0.1"]
        cmd += ["--port", str(self.port), "--workers", "1"]
        super().__init__(cmd, folder, "mlflow")

    def ready(self):
        try:
            return fetch(self.uri + "/health", timeout=5)[0] == 200
        except OSError:
            return False


class TensorBoard(Service):
    """`tensorboard --logdir` in Python (--load_fast=false: TensorBoard's own
    Python reader, which keeps float64 scalars as they are), reloading every
    second."""

    def __init__(self, logdir, folder):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [os.path.join(BIN, "tensorboard"), "--logdir", logdir, "--host", "127.0.0.1", "--port", str(self.port)]
        cmd += ["--load_fast=false", "--reload_interval", "1"]
        super().__init__(cmd, folder, "tensorboard")

    def ready(self):
        try:
            return fetch(self.url + "/data/runs", timeout=5)[0] == 200
        except OSError:
            return False


def run_cli(*args, env=None):
    """python -m sqlite_arrayrecord ARGS in this environment: (exit status, stdout, stderr)."""
    out = subprocess.run(
        [sys.executable, "-m", "sqlite_arrayrecord", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, **(env or {})),
    )
    return out.returncode, out.stdout, out.stderr
