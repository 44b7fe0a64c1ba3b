# SPDX-License-Identifier: Apache-2.0
"""What the extension registers is safe to use anywhere: every SQL function
is deterministic and innocuous (so it works in indexes, CHECK constraints,
generated columns, and views and triggers under trusted_schema=OFF), the
tables are innocuous too (but ar_rolling_mean, which runs the SQL it is
given, and is refused there), and nothing registered reads or writes files or
runs commands. Needs no NumPy.
"""

import os
import sqlite3

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXT = os.environ.get("AR_EXTENSION", os.path.join(ROOT, "build", "arrayrecord"))
if not os.path.isabs(EXT):
    EXT = os.path.join(ROOT, EXT)

DETERMINISTIC = 0x000000800
DIRECTONLY = 0x000080000
INNOCUOUS = 0x000200000

# The functions of process-wide settings (the thread count, the memory
# pool's bound and what it holds): direct-only, neither deterministic nor
# innocuous; they read nothing of a database.
SETTERS = {"ar_threads", "ar_pool", "ar_pool_held"}
# The one table that runs SQL given as its argument (ar_rolling_mean's
# query): not innocuous, so an untrusted schema cannot reach, through it,
# what the connection keeps from the schema.
RUNS_SQL = {"ar_rolling_mean"}


def connect():
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(EXT)
    con.enable_load_extension(False)
    return con


def registered():
    """(functions [(name, narg, type, flags)], tables [name]) the extension adds."""
    plain = sqlite3.connect(":memory:")
    plain_fns = set(plain.execute("SELECT name, narg FROM pragma_function_list"))
    plain_mods = {r[0] for r in plain.execute("SELECT name FROM pragma_module_list")}
    con = connect()
    fns = [
        r
        for r in con.execute("SELECT DISTINCT name, narg, type, flags FROM pragma_function_list ORDER BY 1, 2")
        if (r[0], r[1]) not in plain_fns
    ]
    mods = [
        r[0]
        for r in con.execute("SELECT name FROM pragma_module_list ORDER BY 1")
        if r[0] not in plain_mods and not r[0].startswith("pragma_")
    ]
    return fns, mods


# Random on purpose, so not deterministic (with a seed it is): the one exception.
RANDOM = {("ar_add_noise", 2)}


def test_every_function_is_deterministic_and_innocuous():
    fns, _ = registered()
    assert len(fns) >= 40, fns
    bad = [
        (name, narg, hex(flags))
        for name, narg, _, flags in fns
        if name not in SETTERS
        and ((not flags & DETERMINISTIC and (name, narg) not in RANDOM) or not flags & INNOCUOUS or flags & DIRECTONLY)
    ]
    assert [(n, a) for n, a, _, flags in fns if not flags & DETERMINISTIC and n not in SETTERS] == sorted(RANDOM)
    assert not bad, "functions without SQLITE_DETERMINISTIC|SQLITE_INNOCUOUS: %s" % bad
    setters = [(name, narg, hex(flags)) for name, narg, _, flags in fns if name in SETTERS]
    assert setters and all(
        int(f, 16) & DIRECTONLY and not int(f, 16) & (DETERMINISTIC | INNOCUOUS) for *_, f in setters
    ), setters


def test_functions_and_tables_work_in_untrusted_schema():
    """Under trusted_schema=OFF only innocuous functions and tables may run
    from views and triggers; every one of ours must."""
    fns, mods = registered()
    fns = [f for f in fns if f[0] not in SETTERS]
    con = connect()
    con.execute("PRAGMA trusted_schema = OFF")
    con.execute("CREATE TABLE t(a BLOB, b BLOB)")
    con.execute("CREATE TABLE log(x)")
    for i, (name, narg, _kind, _) in enumerate(fns):
        args = ", ".join(["NULL"] * (narg if narg >= 0 else 2))
        con.execute("CREATE VIEW v%d AS SELECT %s(%s) AS x" % (i, name, args))
        con.execute("SELECT * FROM v%d" % i).fetchall()
        con.execute("CREATE TRIGGER g%d AFTER INSERT ON t BEGIN INSERT INTO log SELECT %s(%s); END" % (i, name, args))
    assert RUNS_SQL <= set(mods), mods
    for name in RUNS_SQL:
        con.execute("CREATE VIEW tv_%s AS SELECT * FROM %s('SELECT NULL', 1)" % (name, name))
        try:
            con.execute("SELECT count(*) FROM tv_%s" % name).fetchall()
        except sqlite3.OperationalError as e:
            assert str(e) == 'unsafe use of virtual table "%s"' % name, e
        else:
            raise AssertionError("%s ran from a view under trusted_schema=OFF" % name)
    for name in set(mods) - RUNS_SQL:
        # as many NULLs as the table has arguments (hidden columns)
        (nargs,) = con.execute("SELECT count(*) FROM pragma_table_xinfo(?) WHERE hidden = 1", (name,)).fetchone()
        assert nargs >= 1, name
        con.execute("CREATE VIEW tv_%s AS SELECT * FROM %s(%s)" % (name, name, ", ".join(["NULL"] * nargs)))
        assert con.execute("SELECT count(*) FROM tv_%s" % name).fetchone() == (0,)
    con.execute("INSERT INTO t VALUES (NULL, NULL)")
    assert con.execute("SELECT count(*) FROM log").fetchone() == (len(fns),)


def test_scalar_functions_work_in_indexes_and_checks():
    """Indexes on expressions, CHECK constraints and generated columns take
    deterministic functions only."""
    fns, _ = registered()
    con = connect()
    con.execute("CREATE TABLE t(a BLOB, b BLOB, c BLOB)")
    scalars = [(n, a) for n, a, kind, _ in fns if kind == "s" and n not in SETTERS and (n, a) not in RANDOM]
    for i, (name, narg) in enumerate(scalars):
        args = ", ".join(["a", "b", "c", "a"][: (narg if narg >= 0 else 2)])
        con.execute("CREATE INDEX i%d ON t(%s(%s))" % (i, name, args))
    con.execute(
        "CREATE TABLE checked(x BLOB CHECK (x IS NULL OR npy_valid(x)),"
        " dtype TEXT GENERATED ALWAYS AS (CASE WHEN npy_valid(x) THEN npy_dtype(x) END))"
    )
    con.execute("INSERT INTO checked(x) VALUES (npy_from_json('[1, 2]'))")
    assert con.execute("SELECT dtype FROM checked").fetchone() == ("int64",)
    try:
        con.execute("INSERT INTO checked(x) VALUES (x'00')")
    except sqlite3.IntegrityError as e:
        assert "CHECK constraint failed" in str(e)
    else:
        raise AssertionError("a CHECK with npy_valid let a bad value in")


def test_nothing_registered_touches_files_or_processes():
    fns, mods = registered()
    words = ("file", "write", "read", "exec", "system", "shell", "load", "edit", "open", "popen", "url", "http")
    suspicious = sorted({n for n, *_ in fns if n not in SETTERS} | set(mods))
    bad = [n for n in suspicious if any(w in n for w in words)]
    assert not bad, "names that suggest side effects: %s" % bad


def test_the_library_exports_its_entry_point_only():
    """Internal names (buf_init, json_string, ...) stay inside the library:
    an exported one could be bound to a same-named symbol of the host
    process or of another extension. Names the toolchain adds (clang's
    'f.resolver' for the AVX2 copies, sanitizer or gcov runtime symbols)
    are not ours; every function the headers in src/ declare is."""
    import glob
    import re
    import shutil
    import subprocess

    nm = shutil.which("nm")
    assert nm, "nm (binutils) is not installed"
    declared = set()
    for header in glob.glob(os.path.join(ROOT, "src", "**", "*.h"), recursive=True):
        with open(header, encoding="utf-8") as f:
            declared |= set(re.findall(r"^[a-z][\w \*]*?\b(\w+)\(", f.read(), re.M))
    assert {"buf_init", "npy_parse", "sql_register"} <= declared, sorted(declared)[:20]
    out = subprocess.run([nm, "-D", "--defined-only", EXT + ".so"], capture_output=True, text=True, check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert "sqlite3_arrayrecord_init" in exported
    assert not exported & declared, sorted(exported & declared)


def test_refuses_an_older_sqlite():
    """Built to need an SQLite from the future (build/minver, -DAR_SQLITE_MIN_NUMBER),
    the library refuses to load and says which version it needs and which it got."""
    import sqlite3

    path = os.path.join(os.path.dirname(EXT), "minver", "arrayrecord")
    assert os.path.exists(path + ".so"), "build it with: make " + path + ".so"
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    try:
        con.load_extension(path)
    except sqlite3.OperationalError as e:
        msg = str(e)
    else:
        raise AssertionError("loaded despite needing SQLite 9.999.0")
    want = "error during initialization: arrayrecord: needs SQLite 9.999.0 or later, this is SQLite %s"
    assert msg == want % sqlite3.sqlite_version, msg
    assert con.execute("SELECT count(*) FROM pragma_function_list WHERE name = 'ar_mean'").fetchone() == (0,)


def test_version_is_the_version_file():
    """ar_version() is the VERSION file, the one place the version lives."""
    with open(os.path.join(ROOT, "VERSION"), encoding="utf-8") as f:
        want = f.read().strip()
    assert connect().execute("SELECT ar_version()").fetchone() == (want,)
    assert "version=" + want + " " in connect().execute("SELECT ar_debug()").fetchone()[0]
