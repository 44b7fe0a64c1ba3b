# SPDX-License-Identifier: Apache-2.0
"""The `pack` and `unpack` commands of python -m sqlite_arrayrecord:

    pack DB [--lossy float16|bfloat16]
    unpack DB

store.pack_database / store.unpack_database over the database; prints the
file's size before and after and exits 0, or a message on stderr and exits
1."""

import os
import sqlite3
import sys


def add_parser(sub):
    p = sub.add_parser(
        "pack",
        help="pack a database's replies and global models (bit for bit)",
        description="Convert an experiment-tracking database to the packed store (every row checked), then VACUUM.",
    )
    p.add_argument("db", metavar="DB", help="the database (LoggingStrategy's log, or one of sql/schema.sql)")
    p.add_argument("--lossy", choices=("float16", "bfloat16"), help="store train replies' updates as this float")
    u = sub.add_parser(
        "unpack",
        help="store a database's replies and global models as Flower's bytes",
        description="Convert an experiment-tracking database to the raw store (every row checked), then VACUUM.",
    )
    u.add_argument("db", metavar="DB", help="the database")


def run(args, parser):
    from .store import pack_database, unpack_database

    if not os.path.isfile(args.db):
        print(f"{args.command}: no database {args.db}", file=sys.stderr)
        return 1
    try:
        if args.command == "pack":
            before, after = pack_database(args.db, lossy=args.lossy)
        else:
            before, after = unpack_database(args.db)
    except (sqlite3.Error, ValueError, RuntimeError) as e:
        print(f"{args.command}: {args.db}: {e}", file=sys.stderr)
        return 1
    print(f"{args.db}: {before} bytes -> {after} bytes ({after / max(before, 1):.3f})")
    return 0
