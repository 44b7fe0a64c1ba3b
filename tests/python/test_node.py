# SPDX-License-Identifier: Apache-2.0
"""README's Node.js example (the tour's FedAvg) runs under node with the
libsql npm package, loading the extension under test. Without node, or
without the package (installed by .ci/run into build/npm), it is SKIPPED
with the install line."""

import os
import re
import shutil
import subprocess
import tempfile

from arlib import EXT, ROOT
from runner import Skip

NODE_MODULES = os.path.join(ROOT, "build", "npm", "node_modules")


def readme_js():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        blocks = re.findall(r"```js\n(.*?)```", f.read(), re.S)
    assert len(blocks) == 1, "expected one ```js block in README.md"
    return blocks[0]


def test_libsql_tour_fedavg():
    node = shutil.which("node")
    if not node or not shutil.which("npm"):
        raise Skip("node/npm not found: install them with 'apt-get install -y nodejs npm'")
    if not os.path.isdir(os.path.join(NODE_MODULES, "libsql")):
        raise Skip("the libsql npm package is missing: install it with 'npm install --prefix build/npm libsql'")
    script = readme_js()
    assert "db.loadExtension('./build/arrayrecord');" in script
    script = script.replace("'./build/arrayrecord'", repr(os.path.abspath(EXT)))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "tour.js")
        with open(path, "w") as f:
            f.write(script)
        res = subprocess.run(
            [node, path], capture_output=True, text=True, timeout=120, env=dict(os.environ, NODE_PATH=NODE_MODULES)
        )
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == "[0.18,0.120000005] [[0.9,-0.6],[1.2,0.55]]", res.stdout
