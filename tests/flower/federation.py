# SPDX-License-Identifier: Apache-2.0
"""A real Flower federation on this machine, bounded in time and always
cleaned up: one SuperLink, N SuperNodes and `flwr run`, all from
build/flwr/bin, every address on 127.0.0.1 at a free port.

    with Federation("examples/flower_app", supernodes=2) as fed:
        run = fed.run({"num-server-rounds": 2, "db": "/abs/run.db"}, timeout=120)
        assert run.ok, run.log
        fed.schema()            # the SuperLink database's .schema

A helper module for tests/flower/test_*.py (not a test file itself).

How Flower 1.42 is driven here:

- `flower-superlink --insecure --database <dir>/state.db --host 127.0.0.1
  --port P --disable-runtime-dependency-installation`: one HTTP server
  carries the Control, Fleet and Runtime (ServerAppIo) APIs; no health server
  and no gRPC APIs are started (FLWR_INTERNAL_GRPC_* are left unset). The
  SuperLink starts its own `flower-superexec`, which starts `flwr-serverapp`.
- `flower-supernode --insecure --superlink 127.0.0.1:P --host 127.0.0.1
  --port Q --node-config "partition-id=i num-partitions=N"`: Q is the
  SuperNode's Runtime API, which its `flower-superexec` and the
  `flwr-clientapp` processes talk to. SuperNodes install no dependencies
  unless --allow-runtime-dependency-installation is given.
- `flwr run <app> federation --stream --run-config '...'` with
  FLWR_HOME/config.toml holding `[superlink.federation]` (address
  127.0.0.1:P, insecure). Its exit status does not tell whether the run
  succeeded; `flwr ls --run-id ID --format json` does (status
  "finished:completed").
- FLWR_HOME and HOME are a temporary folder; telemetry and the update check
  are off (FLWR_TELEMETRY_ENABLED=0, FLWR_DISABLE_UPDATE_CHECK=1) and proxies
  unset, so nothing leaves 127.0.0.1.

Cleanup: every process started here runs in its own session and carries a
marker in its environment, inherited by the SuperExecs, ServerApps and
ClientApps that Flower starts in sessions of their own. stop() (called on
leaving the `with`, on a timeout, on an exception or Ctrl-C, on SIGTERM and
at exit) sends SIGTERM to each process group and to every marked process,
then SIGKILL to whatever is left after a grace period. Should this process
die without stopping them (SIGKILL), the SuperLink and SuperNodes get SIGKILL
(PR_SET_PDEATHSIG) and a watchdog process, which reads EOF on its stdin when
this process ends, stops every marked process that is left (Flower's
ServerApps and ClientApps take tens of seconds to notice on their own) and
removes the temporary folder.
"""

import atexit
import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLWR_BIN = os.path.join(ROOT, "build", "flwr", "bin")
MARKER = "SQLITE_ARRAYRECORD_FEDERATION"
CONNECTION = "federation"


class FederationError(RuntimeError):
    """The federation could not start or did not finish in time. Its
    message ends with the tail of every log."""


class RunResult:
    """One `flwr run`: its exit status, the run's status, its log."""

    def __init__(self, returncode, run_id, status, log, seconds):
        self.returncode = returncode  # flwr run's exit status
        self.run_id = run_id  # None when the run did not start
        self.status = status  # "finished:completed" for a run that succeeded
        self.log = log  # the streamed log (flwr run's stdout and stderr)
        self.seconds = seconds

    @property
    def ok(self):
        return self.returncode == 0 and self.status == "finished:completed"

    def __repr__(self):
        return f"RunResult(returncode={self.returncode}, run_id={self.run_id}, status={self.status!r}, seconds={self.seconds:.1f})"


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (all held open until chosen)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _die_with_parent():
    """preexec_fn: SIGKILL this child when the process that started it dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _marked_pids(tag):
    """Every live process whose environment holds MARKER=tag."""
    needle = f"{MARKER}={tag}".encode()
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    pids.append(int(name))
        except OSError:
            continue
    return pids


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"  # a zombie is gone
    except OSError:
        return False


def _tail(path, lines=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return "(no log)\n"


class Federation:
    """A SuperLink and `supernodes` SuperNodes on 127.0.0.1, for a `with`.

    app: the Flower app's folder. node_configs: one --node-config string per
    SuperNode (default "partition-id=i num-partitions=N"). workdir: a folder
    to use (default: a new temporary one, removed on stop unless keep).
    env: extra environment for every process.

    After start(): workdir, state_db, flwr_home, superlink_port,
    supernode_ports, logs {name: path}, and timings {"superlink": seconds to
    a healthy SuperLink, "supernodes": seconds until every SuperNode is
    registered and online}.
    """

    def __init__(
        self,
        app,
        supernodes=2,
        node_configs=None,
        workdir=None,
        keep=False,
        env=None,
        startup_timeout=60.0,
        stop_grace=5.0,
    ):
        if not os.path.isfile(os.path.join(app, "pyproject.toml")):
            raise ValueError(f"Federation: {app} has no pyproject.toml")
        if not os.access(os.path.join(FLWR_BIN, "flower-superlink"), os.X_OK):
            raise FileNotFoundError(f"Federation: {FLWR_BIN}/flower-superlink is missing: run 'make flower-env'")
        self.app = os.path.abspath(app)
        self.node_configs = node_configs or [f"partition-id={i} num-partitions={supernodes}" for i in range(supernodes)]
        if len(self.node_configs) != supernodes:
            raise ValueError("Federation: one node config per SuperNode")
        self.keep = keep
        self.extra_env = dict(env or {})
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self._own_workdir = workdir is None
        self.workdir = os.path.abspath(workdir) if workdir else None
        self.tag = uuid.uuid4().hex
        self.procs = {}  # name -> Popen, in start order
        self.logs = {}
        self.timings = {}
        self._log_files = []
        self._stopped = False
        self._old_sigterm = None
        self._watchdog = None
        self.connection = CONNECTION  # the name of the SuperLink connection in FLWR_HOME/config.toml

    # --- environment ---------------------------------------------------------------

    def _env(self):
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.lower().endswith("_proxy") and not k.startswith("FLWR_") and k != "PYTHONPATH"
        }
        env.update(
            {
                "PATH": FLWR_BIN + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
                "VIRTUAL_ENV": os.path.dirname(FLWR_BIN),
                "HOME": self.home,
                "FLWR_HOME": self.flwr_home,
                "FLWR_TELEMETRY_ENABLED": "0",
                "FLWR_DISABLE_UPDATE_CHECK": "1",
                "FLWR_DISABLE_RUNTIME_DEPENDENCY_INSTALLATION": "1",
                # SuperExec looks for tasks every second by default.
                "FLWR_SUPEREXEC_TASK_POLL_INTERVAL": "0.1",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
                "PYTHONUNBUFFERED": "1",
                "NO_COLOR": "1",
                "COLUMNS": "200",
                MARKER: self.tag,
            }
        )
        env.update(self.extra_env)
        # The build the tests name (tests/run sets AR_EXTENSION=build/arrayrecord):
        # the apps run in other folders.
        if env.get("AR_EXTENSION"):
            env["AR_EXTENSION"] = os.path.abspath(env["AR_EXTENSION"])
        return env

    def _spawn(self, name, argv):
        path = os.path.join(self.workdir, name + ".log")
        f = open(path, "wb")  # closed in stop()
        self._log_files.append(f)
        self.logs[name] = path
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=f,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.workdir,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        self.procs[name] = proc
        return proc

    # --- start ---------------------------------------------------------------------

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self):
        """Starts the SuperLink and the SuperNodes and waits until every
        SuperNode is online; stops everything when that fails."""
        try:
            return self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self):
        self._prepare("federation.")
        return self._start_links(free_ports(1 + len(self.node_configs)))

    def _prepare(self, prefix):
        """The folders, the environment, the watchdog and the SIGTERM handler."""
        if self._own_workdir:
            self.workdir = tempfile.mkdtemp(prefix=prefix)
        os.makedirs(self.workdir, exist_ok=True)
        self.home = os.path.join(self.workdir, "home")
        self.flwr_home = os.path.join(self.workdir, "flwr")
        os.makedirs(self.home, exist_ok=True)
        os.makedirs(self.flwr_home, exist_ok=True)
        self.state_db = os.path.join(self.workdir, "state.db")
        self.env = self._env()
        atexit.register(self.stop)
        # Should this process die without stop() (SIGKILL), the watchdog reads
        # EOF and stops what is left.
        self._watchdog = subprocess.Popen(
            [
                sys.executable,
                os.path.abspath(__file__),
                "--watchdog",
                self.tag,
                str(self.stop_grace),
                self.workdir if self._own_workdir and not self.keep else "",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={k: v for k, v in self.env.items() if k != MARKER},
            start_new_session=True,
        )
        if self._can_handle_signals() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._old_sigterm = signal.signal(signal.SIGTERM, _sigterm_to_exit)

    def _start_links(self, ports):
        self.superlink_port, self.supernode_ports = ports[0], ports[1:]
        with open(os.path.join(self.flwr_home, "config.toml"), "w") as f:
            f.write(
                f'[superlink]\ndefault = "{CONNECTION}"\n\n'
                f'[superlink.{CONNECTION}]\naddress = "127.0.0.1:{self.superlink_port}"\ninsecure = true\n'
            )

        t0 = time.monotonic()
        self._spawn(
            "superlink",
            [
                os.path.join(FLWR_BIN, "flower-superlink"),
                "--insecure",
                "--database",
                self.state_db,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.superlink_port),
                "--disable-runtime-dependency-installation",
            ],
        )
        self._wait(lambda: self._healthy(self.superlink_port), "the SuperLink to answer /health", ["superlink"])
        self.timings["superlink"] = time.monotonic() - t0

        t1 = time.monotonic()
        for i, (port, node_config) in enumerate(zip(self.supernode_ports, self.node_configs)):
            self._spawn(
                f"supernode{i}",
                [
                    os.path.join(FLWR_BIN, "flower-supernode"),
                    "--insecure",
                    "--superlink",
                    f"127.0.0.1:{self.superlink_port}",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--node-config",
                    node_config,
                ],
            )
        n = len(self.node_configs)
        self._wait(lambda: self.online_nodes() >= n, f"{n} SuperNodes to be online", list(self.procs))
        self.timings["supernodes"] = time.monotonic() - t1
        return self

    def _can_handle_signals(self):
        return threading.current_thread() is threading.main_thread()

    def _healthy(self, port):
        try:
            with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
                f"http://127.0.0.1:{port}/health", timeout=1
            ) as r:
                return r.status == 200
        except OSError:
            return False

    def query(self, sql, *args):
        """Rows of a query on the SuperLink's database, opened read-only."""
        con = sqlite3.connect(f"file:{self.state_db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def online_nodes(self):
        """SuperNodes the SuperLink has registered and sees online."""
        if not os.path.exists(self.state_db):
            return 0
        try:
            return self.query("SELECT count(*) FROM node WHERE status = 'online'")[0][0]
        except sqlite3.Error:
            return 0  # not made yet, or mid-migration

    def _wait(self, ready, what, names):
        deadline = time.monotonic() + self.startup_timeout
        while not ready():
            for name in names:
                if self.procs[name].poll() is not None:
                    raise FederationError(
                        f"{name} exited with {self.procs[name].returncode} while waiting for {what}" + self.tails()
                    )
            if time.monotonic() > deadline:
                raise FederationError(f"timed out after {self.startup_timeout:.0f} s waiting for {what}" + self.tails())
            time.sleep(0.1)

    # --- run -----------------------------------------------------------------------

    def flwr(self, *args, timeout=60.0):
        """Runs `flwr ARGS...` against this federation; returns (exit status,
        stdout and stderr). A command that outlives timeout is killed and
        raises FederationError."""
        proc = subprocess.Popen(
            [os.path.join(FLWR_BIN, "flwr"), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.workdir,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc, signal.SIGKILL)
            proc.communicate()
            raise FederationError(f"flwr {' '.join(args)} did not finish in {timeout:.0f} s" + self.tails()) from None
        except BaseException:
            _kill_group(proc, signal.SIGKILL)
            proc.communicate()
            raise
        return proc.returncode, out.decode(errors="replace")

    def run(self, run_config=None, timeout=120.0, poll=None, poll_interval=0.25):
        """`flwr run APP federation --stream` with run_config (a dict of TOML
        values, or a string as --run-config takes it). Waits at most timeout
        seconds for the run to end, calling poll() every poll_interval while
        it runs; on timeout stops the whole federation and raises
        FederationError."""
        args = self._run_args()
        if run_config:
            args += ["--run-config", run_config if isinstance(run_config, str) else toml_overrides(run_config)]
        name = f"run{sum(k.startswith('run') for k in self.logs)}"  # run0, run1, ...
        t0 = time.monotonic()
        proc = self._spawn(name, [os.path.join(FLWR_BIN, "flwr"), *args])
        deadline = t0 + timeout
        while proc.poll() is None:
            if time.monotonic() > deadline:
                self.stop()
                raise FederationError(f"flwr run did not finish in {timeout:.0f} s" + self.tails())
            if poll is not None:
                poll()
            time.sleep(poll_interval)
        seconds = time.monotonic() - t0
        with open(self.logs[name], errors="replace") as f:
            log = f.read()
        m = re.search(r"Successfully started run (\d+)", log)
        run_id = int(m.group(1)) if m else None
        status = self.run_status(run_id) if run_id is not None else None
        return RunResult(proc.returncode, run_id, status, log, seconds)

    def _run_args(self):
        return ["run", self.app, CONNECTION, "--stream"]

    def run_status(self, run_id):
        """The run's status as `flwr ls` tells it ("finished:completed", ...)."""
        rc, out = self.flwr("ls", self.connection, "--run-id", str(run_id), "--format", "json")
        try:
            runs = json.loads(out[out.index("{") :])["runs"]
            return next(r["status"] for r in runs if int(r["run-id"]) == run_id)
        except (ValueError, KeyError, StopIteration) as e:
            raise FederationError(f"flwr ls gave no status for run {run_id} ({e}; exit {rc}):\n{out}") from None

    # --- the SuperLink's database --------------------------------------------------

    def snapshot(self, dest):
        """A consistent copy of the SuperLink's database at dest (SQLite's
        backup API; the SuperLink keeps running)."""
        src = sqlite3.connect(f"file:{self.state_db}?mode=ro", uri=True, timeout=5)
        try:
            out = sqlite3.connect(dest)
            try:
                src.backup(out)
            finally:
                out.close()
        finally:
            src.close()
        return dest

    def schema(self, db=None):
        """`.schema` of the SuperLink's database (or of a snapshot)."""
        db = db or self.state_db
        sqlite3_cli = shutil.which("sqlite3")
        if sqlite3_cli:
            out = subprocess.run(
                [sqlite3_cli, "-readonly", db, ".schema"], capture_output=True, text=True, timeout=30, check=True
            )
            return out.stdout
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY rowid").fetchall()
        finally:
            con.close()
        return "".join(sql + ";\n" for (sql,) in rows)

    # --- stop ----------------------------------------------------------------------

    def tails(self):
        return "".join(f"\n--- {name} ({path}), last lines:\n{_tail(path)}" for name, path in self.logs.items())

    def processes(self):
        """{pid: command line} of the live processes of this federation: those
        started here and those Flower started (SuperExecs, ServerApps,
        ClientApps)."""
        out = {}
        for pid in self.leftovers():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out[pid] = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
        return out

    def _kill_groups(self):
        for proc in self.procs.values():
            _kill_group(proc, signal.SIGKILL)

    def leftovers(self):
        """Processes started by this federation that are still alive."""
        pids = {p.pid for p in self.procs.values() if p.poll() is None}
        return sorted(pid for pid in pids | set(_marked_pids(self.tag)) if _alive(pid))

    def stop(self):
        """Stops every process of the federation (SIGTERM, then SIGKILL after
        stop_grace seconds) and removes the temporary folder unless keep.
        Safe to call more than once."""
        if self._stopped:
            return
        self._stopped = True
        try:
            # Clients first, the SuperLink last: fewer reconnection attempts.
            for proc in reversed(list(self.procs.values())):
                _kill_group(proc, signal.SIGTERM)
            _stop_marked(self.tag, self.stop_grace, before_kill=self._kill_groups)
            for proc in self.procs.values():
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5)
            deadline = time.monotonic() + 5
            while self.leftovers() and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            if self._watchdog is not None:
                with contextlib.suppress(OSError):
                    self._watchdog.stdin.close()  # EOF: it finds nothing left and exits
                try:
                    self._watchdog.wait(timeout=self.stop_grace + 5)
                except subprocess.TimeoutExpired:
                    self._watchdog.kill()
                    self._watchdog.wait()
            for f in self._log_files:
                f.close()
            if self._old_sigterm is not None:
                signal.signal(signal.SIGTERM, self._old_sigterm)
                self._old_sigterm = None
            atexit.unregister(self.stop)
            if self._own_workdir and not self.keep and self.workdir:
                shutil.rmtree(self.workdir, ignore_errors=True)
        left = self.leftovers()
        if left:
            raise FederationError(f"processes {left} survived SIGKILL")


def _stop_marked(tag, grace, before_kill=None):
    """SIGTERM to every process marked with tag, SIGKILL to those still alive
    after grace seconds (before_kill() first)."""
    for pid in _marked_pids(tag):
        _kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(_alive(pid) for pid in _marked_pids(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    if before_kill is not None:
        before_kill()
    for pid in _marked_pids(tag):
        _kill(pid, signal.SIGKILL)


def _watchdog(tag, grace, workdir):
    """The watchdog process: waits for EOF on stdin (the federation's process
    stopped it or died), then stops every process marked with tag and
    removes workdir (when not empty)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the test's to handle
    sys.stdin.buffer.read()
    _stop_marked(tag, grace)
    if workdir:
        shutil.rmtree(workdir, ignore_errors=True)


def _kill(pid, sig):
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def _kill_group(proc, sig):
    """sig to the process group the process leads (its own session)."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)


def _sigterm_to_exit(signum, frame):
    raise SystemExit(128 + signum)  # unwinds through the `with`, which stops everything


def toml_value(v):
    """A Python value as a TOML value for --run-config."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        # flwr splits --run-config at spaces outside quotes and has no escapes
        # for a quote inside them.
        if any(c in v for c in "\"'\\\n"):
            raise ValueError(f"toml_value: {v!r} holds a quote, a backslash or a newline")
        return f'"{v}"'
    raise TypeError(f"toml_value: cannot write {type(v).__name__}")


def toml_overrides(config):
    """{"num-server-rounds": 2, "db": "/x"} -> 'num-server-rounds=2 db="/x"'."""
    return " ".join(f"{k}={toml_value(v)}" for k, v in config.items())


if __name__ == "__main__" and sys.argv[1:2] == ["--watchdog"]:
    _watchdog(sys.argv[2], float(sys.argv[3]), sys.argv[4])
elif __name__ == "__main__":  # a quick manual run: python tests/flower/federation.py [APP]
    app = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "examples", "flower_app")
    with Federation(app, keep=True) as fed:
        print("workdir", fed.workdir, "timings", fed.timings)
        result = fed.run({"num-server-rounds": 2}, timeout=180)
        print(result)
        print(result.log)
