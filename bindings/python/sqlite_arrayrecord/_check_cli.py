# SPDX-License-Identifier: Apache-2.0
"""The `check` command of python -m sqlite_arrayrecord:

    check DB

check_log over the database: prints each problem on stdout and exits 1, or
prints "ok" and exits 0; a database that cannot be opened exits 1 with a
message on stderr."""

import os
import sqlite3
import sys


def add_parser(sub):
    c = sub.add_parser(
        "check",
        help="check a log LoggingStrategy wrote",
        description="Check a log: SQLite's integrity_check and foreign_key_check, then every logged run's rounds, "
        "global models and digests.",
    )
    c.add_argument("db", metavar="DB", help="the database LoggingStrategy wrote")


def run(args, parser):
    from .logcheck import check_log

    if not os.path.isfile(args.db):
        print(f"check: no database {args.db}", file=sys.stderr)
        return 1
    try:
        problems = check_log(args.db)
    except sqlite3.Error as e:
        print(f"check: {args.db}: {e}", file=sys.stderr)
        return 1
    for p in problems:
        print(p)
    if not problems:
        print("ok")
    return 1 if problems else 0
