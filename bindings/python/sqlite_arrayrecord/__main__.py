# SPDX-License-Identifier: Apache-2.0
"""python -m sqlite_arrayrecord COMMAND ...: the package's command line.

    python -m sqlite_arrayrecord export mlflow DB [--run NAME] [--tracking-uri URI] [--experiment NAME]
    python -m sqlite_arrayrecord export tensorboard DB --logdir DIR [--run NAME]
    python -m sqlite_arrayrecord check DB
    python -m sqlite_arrayrecord pack DB [--lossy float16|bfloat16]
    python -m sqlite_arrayrecord unpack DB

One module per job (export: sqlite_arrayrecord.export._cli, check:
sqlite_arrayrecord._check_cli, pack and unpack: sqlite_arrayrecord._store_cli); usage
errors exit with status 2, failures with 1, messages on stderr.
"""

import argparse
import sys

COMMANDS = {
    "export": "sqlite_arrayrecord.export._cli",
    "check": "sqlite_arrayrecord._check_cli",
    "pack": "sqlite_arrayrecord._store_cli",
    "unpack": "sqlite_arrayrecord._store_cli",
}


def main(argv=None):
    import importlib

    parser = argparse.ArgumentParser(prog="python -m sqlite_arrayrecord", description="sqlite-arrayrecord's commands")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    modules = {name: importlib.import_module(path) for name, path in COMMANDS.items()}
    for module in dict.fromkeys(modules.values()):  # a module may add several commands
        module.add_parser(sub)
    args = parser.parse_args(argv)
    return modules[args.command].run(args, parser)


if __name__ == "__main__":
    sys.exit(main())
