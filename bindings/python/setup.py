# SPDX-License-Identifier: Apache-2.0
"""Build of the sqlite-arrayrecord Python package.

Compiles the extension's C sources into sqlite_arrayrecord/arrayrecord.so
with the Makefile's flags and ships it inside the package. The sources are
the repository's own (this folder is bindings/python in a checkout), or the
copy an sdist carries in csrc/ (made by the sdist command below), so a wheel
builds from a checkout and from an sdist alike. No Python C API is used:
the library is a SQLite extension, loaded by path, so the wheel is tagged
py3-none-<platform>.
"""

import os
import shlex
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
BUNDLED = os.path.join(HERE, "csrc")
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
SOURCE_PARTS = ("src", "include", "sql", "VERSION", "LICENSE")
SQL_FILES = ("schema.sql", "schema_raw.sql", "views.sql")  # shipped: the logger and .store create databases with them


def source_root():
    """Where src/, include/ and VERSION are: an sdist's csrc/, else the checkout."""
    for root in (BUNDLED, REPO):
        if os.path.isfile(os.path.join(root, "src", "arrayrecord.c")) and os.path.isfile(os.path.join(root, "VERSION")):
            return root
    raise SystemExit(
        "sqlite-arrayrecord: C sources not found: build from a checkout of the repository "
        f"(expected {REPO}/src) or from an sdist (csrc/)"
    )


def version():
    with open(os.path.join(source_root(), "VERSION"), encoding="utf-8") as f:
        return f.read().strip()


def compile_library(out, tmp):
    """cc the codec, math and SQL sources as the Makefile does; link out."""
    root = source_root()
    cc = shlex.split(os.environ.get("CC", "cc"))
    flags = [
        "-std=c99",
        "-O2",
        "-fPIC",
        "-fvisibility=hidden",
        "-I" + os.path.join(root, "src"),
        "-I" + os.path.join(root, "include"),
    ]
    flags += shlex.split(os.environ.get("CFLAGS", ""))
    jobs = []
    for folder in ("codec", "math", "sql"):
        d = os.path.join(root, "src", folder)
        for name in sorted(os.listdir(d)):
            if name.endswith(".c"):
                # Numeric kernels: vectorized, and no FMA so results do not depend on the CPU.
                extra = ["-O3", "-ffp-contract=off"] if folder == "math" else []
                jobs.append((os.path.join(d, name), folder + "_" + name[:-2] + ".o", extra))
    jobs.append((os.path.join(root, "src", "arrayrecord.c"), "arrayrecord.o", ['-DAR_VERSION="%s"' % version()]))
    os.makedirs(tmp, exist_ok=True)

    def one(job):
        src, obj, extra = job
        obj = os.path.join(tmp, obj)
        subprocess.run(cc + flags + extra + ["-c", "-o", obj, src], check=True)
        return obj

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        objs = list(pool.map(one, jobs))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    subprocess.run(
        cc + ["-shared", "-o", out] + objs + shlex.split(os.environ.get("LDFLAGS", "")) + ["-lm", "-lz", "-lzstd"],
        check=True,
    )


class BuildPy(build_py):
    """The Python files, plus the compiled extension next to them and the
    SQL schema (sql/schema.sql, sql/views.sql) in sqlite_arrayrecord/sql/."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            # An editable install (pip install -e) runs from the checkout,
            # where loadable_path() finds build/arrayrecord.so from `make`:
            # a copy compiled here would go stale as the C sources change.
            return
        sql_dir = os.path.join(self.build_lib, "sqlite_arrayrecord", "sql")
        os.makedirs(sql_dir, exist_ok=True)
        for name in SQL_FILES:
            shutil.copy2(os.path.join(source_root(), "sql", name), os.path.join(sql_dir, name))
        build = self.get_finalized_command("build")
        compile_library(
            os.path.join(self.build_lib, "sqlite_arrayrecord", "arrayrecord.so"),
            os.path.join(build.build_temp, "arrayrecord-obj"),
        )


class Sdist(sdist):
    """An sdist carries the C sources (csrc/), since ../../src is not in it."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        root = source_root()
        for part in SOURCE_PARTS:
            src, dst = os.path.join(root, part), os.path.join(base_dir, "csrc", part)
            if os.path.isdir(src):
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.o", "*.d"))
            elif os.path.isfile(src):
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                shutil.copy2(src, dst)


class BinaryDistribution(Distribution):
    """The package holds a compiled library: platform wheel, platlib install."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": BuildPy, "sdist": Sdist}
try:
    from wheel.bdist_wheel import bdist_wheel

    class BdistWheel(bdist_wheel):
        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            # Any Python 3 can load the library: it does not use Python's C API.
            return "py3", "none", super().get_tag()[2]

    cmdclass["bdist_wheel"] = BdistWheel
except ImportError:
    pass

setup(version=version(), cmdclass=cmdclass, distclass=BinaryDistribution)
