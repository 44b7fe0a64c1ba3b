# SPDX-License-Identifier: Apache-2.0
"""Runs the Python tests: every test_* function in tests/python/test_*.py.

Prints one line per test ("ok NAME", "FAIL NAME", "SKIP NAME reason") for
tests/run to count. NumPy comes from Debian's python3-numpy; without it the
NumPy cross-checks cannot run, and they are reported as SKIP loudly, never
as passed. A test that cannot run here (an optional module missing, say)
raises Skip with the reason and the install line.
"""

import gc
import importlib
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class Skip(Exception):
    """Raise to skip a test with a reason (from runner import Skip): it is
    reported as "SKIP NAME: reason", never as passed."""


# Run as a script this module is __main__; tests importing "runner" must get
# this very module, or their Skip would be another class and count as FAIL.
sys.modules.setdefault("runner", sys.modules[__name__])


def main(folder=HERE, group="python", only=None):
    """Runs the test_*.py modules of folder, labelled group/module.name."""
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        import numpy  # noqa: F401

        have_numpy = True
    except ImportError:
        have_numpy = False
        print("!! NumPy is missing: install it with 'apt-get install -y python3-numpy'.")
        print("!! Every NumPy cross-check below is SKIPPED (not passed).")
    failed = 0
    modules = sorted(f[:-3] for f in os.listdir(folder) if f.startswith("test_") and f.endswith(".py"))
    only = sys.argv[1:] if only is None else only
    for modname in modules:
        if only and modname not in only:
            continue
        try:
            mod = importlib.import_module(modname)
        except ImportError as e:
            if not have_numpy and "numpy" in str(e):
                print(f"SKIP {group}/{modname}: NumPy missing")
            else:
                print(f"FAIL {group}/{modname} (import)")
                traceback.print_exc(file=sys.stdout)
                failed += 1
            continue
        except Exception:
            print(f"FAIL {group}/{modname} (import)")
            traceback.print_exc(file=sys.stdout)
            failed += 1
            continue
        for name in sorted(n for n in dir(mod) if n.startswith("test_") and callable(getattr(mod, n))):
            label = f"{group}/{modname}.{name}"
            try:
                getattr(mod, name)()
            except Skip as e:
                print(f"SKIP {label}: {e}")
            except Exception:
                print(f"FAIL {label}")
                for line in traceback.format_exc().splitlines():
                    print("  " + line)
                failed += 1
            else:
                print(f"ok {label}")
            sys.stdout.flush()
        # Connections a module left in reference cycles hold SQLite memory,
        # which a later test's process-wide heap limit would count.
        del mod
        gc.collect()
    return 1 if failed else 0


def main_in_environment(folder, group, versions, make_target):
    """main() for a group run by the Python of an environment of its own
    (tests/flower, tests/datasette): prints what versions() says it runs
    against, or, when that fails to import, a FAIL line naming the make
    target that builds the environment (returns 1)."""
    try:
        print("running against " + versions())
    except ImportError as e:
        print(f"FAIL {group}/environment: {e}: run 'make {make_target}'")
        return 1
    return main(folder=folder, group=group)


if __name__ == "__main__":
    sys.exit(main())
