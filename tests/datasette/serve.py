# SPDX-License-Identifier: Apache-2.0
"""A real `datasette serve` on 127.0.0.1, for the browser test and the speed
bench (bench/datasette_speed.py): started from build/datasette (`make
datasette-env`) on a free port, waited for with a deadline, and always
stopped (terminate, then kill) when the `with` block ends.

    with Server(db, "--metadata", meta) as ds:
        status, body = ds.get("/fixture/records")

plugin=False starts the same Datasette with this package's plugin
unregistered (Datasette 0.65 loads every installed plugin and has no switch
for one), for the speed bench's side without it.
"""

import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.join(ROOT, "build", "datasette")
DATASETTE = os.path.join(VENV, "bin", "datasette")
PYTHON = os.path.join(VENV, "bin", "python")
MISSING = f"{DATASETTE} not found: run 'make datasette-env' (Datasette 0.65.5 and selenium from PyPI)"

# Local requests never go through a proxy named in the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

# Datasette's command line without the plugins of this package: pluggy's
# registry is emptied of them before the command runs.
_WITHOUT_PLUGIN = (
    "import sys, datasette.plugins as p\n"
    "for m in list(p.pm.get_plugins()):\n"
    "    if getattr(m, '__name__', '').startswith('sqlite_arrayrecord'):\n"
    "        p.pm.unregister(m)\n"
    "from datasette.cli import cli\n"
    "sys.exit(cli(prog_name='datasette'))\n"
)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`datasette serve DB ARGS...`, with `--setting sql_time_limit_ms 60000`
    (the pages over big records run long queries)."""

    def __init__(self, db, *args, plugin=True, timeout=60, env=None):
        self.port = free_port()
        cmd = [DATASETTE] if plugin else [PYTHON, "-c", _WITHOUT_PLUGIN]
        cmd += ["serve", db, "--host", "127.0.0.1", "--port", str(self.port)]
        cmd += ["--setting", "sql_time_limit_ms", "60000", *args]
        self.cmd, self.timeout, self.env = cmd, timeout, env
        self.proc = self.log = None

    def url(self, path="/"):
        return f"http://127.0.0.1:{self.port}{path}"

    def log_text(self):
        with open(self.log.name, errors="replace") as fh:
            return fh.read()

    def __enter__(self):
        self.log = tempfile.NamedTemporaryFile(prefix="datasette-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            self.cmd, stdout=self.log, stderr=subprocess.STDOUT, env=dict(os.environ, **(self.env or {}))
        )
        try:
            self._wait()
        except BaseException:
            self.close()
            raise
        return self

    def _wait(self):
        deadline = time.monotonic() + self.timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"datasette exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}")
            try:
                with _OPENER.open(self.url("/-/versions.json"), timeout=5) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"datasette did not answer in {self.timeout} s:\n{self.log_text()[-3000:]}")
            time.sleep(0.1)

    def close(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log:
            self.log.close()
            os.unlink(self.log.name)
            self.log = None

    def __exit__(self, *exc):
        self.close()

    def get(self, path, timeout=300):
        """The page's status and body (bytes), read whole."""
        try:
            with _OPENER.open(self.url(path), timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()
