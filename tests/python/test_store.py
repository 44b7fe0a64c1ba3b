# SPDX-License-Identifier: Apache-2.0
"""The packed and raw stores of sql/schema.sql (sqlite_arrayrecord.store):
the same run answers every view and recipe alike in both; writes through
the views are checked and packed, and a base deleted or changed first
repacks what depends on it; pack_database and unpack_database convert a
database bit for bit, a log of version 0.1.0 included."""

import contextlib
import os
import shutil
import sqlite3
import sys
import tempfile

import test_sql_cookbook as cookbook
from arlib import ROOT, connect, data, error_of, one, read_sql

sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
from sqlite_arrayrecord import store  # noqa: E402

# Under 1 KiB a record is kept as it is (packing would make it larger); the
# cookbook's models are smaller than that, so its checks run a second time
# over a store that packs every record.
SMALL = ("length(NEW.content) >= 1024", "length(NEW.rec) >= 1024")


def schema(kind):
    """schema.sql for "raw", "packed" or "packed-all" (every record packed)."""
    if kind == "raw":
        return store.schema_script(store.RAW)
    text = store.schema_script(store.PACKED)
    if kind == "packed-all":
        for s in SMALL:
            assert text.count(s) == 1, s
            text = text.replace(s, "1")
    return text


@contextlib.contextmanager
def cookbook_schema(kind):
    """The cookbook's tracking_db made with that schema."""
    real = cookbook.read_sql
    cookbook.read_sql = lambda name: schema(kind) if name == "schema.sql" else real(name)
    try:
        yield
    finally:
        cookbook.read_sql = real


def answers(con):
    """Every row of every view of the schema and of sql/views.sql, and the
    read-only recipes of sql/queries.sql, as Python values (errors as text)."""
    out = {}
    views = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name")]
    for v in sorted(set(views) | {"replies", "global_models"}):
        cols = [r[1] for r in con.execute(f'PRAGMA table_info("{v}")')]
        out[v] = con.execute(f'SELECT * FROM "{v}" ORDER BY {", ".join(map(str, range(1, len(cols) + 1)))}').fetchall()
    params = {"run": 1, "round": 2, "round_a": 1, "round_b": 3, "key": "fc1.weight"}
    for name, sql in cookbook.recipes().items():
        if name in ("export_layer", "shrink_to_float16", "replay_strategies"):
            continue  # they write (a file, the store); replay_strategies is driven by the cookbook's own check
        try:
            out[name] = con.execute(sql, {k: v for k, v in params.items() if f":{k}" in sql}).fetchall()
        except sqlite3.Error as e:
            out[name] = str(e)
    return out


def test_cookbook_on_every_store():
    """The cookbook's checks against NumPy, over each store."""
    for kind in ("raw", "packed-all"):
        with cookbook_schema(kind):
            cookbook.test_schema_checks_records()
            cookbook.test_views_match_numpy()
            cookbook.test_cookbook_recipes()


def test_stores_answer_alike():
    with tempfile.TemporaryDirectory() as tmp:
        got = {}
        for kind in ("raw", "packed", "packed-all"):
            with cookbook_schema(kind):
                con, _, _ = cookbook.tracking_db(os.path.join(tmp, kind + ".db"))
            assert store.store_of(con) == ("raw" if kind == "raw" else "packed")
            if kind == "packed-all":
                assert one(con, "SELECT count(*) FROM reply_store WHERE packed = 0") == 0
                assert one(con, "SELECT count(*) FROM reply_store WHERE base_round = round - 1") == 12
                assert one(con, "SELECT count(*) FROM model_store WHERE packed = 1") == 4
            got[kind] = answers(con)
            con.close()
        assert got["raw"].keys() == got["packed"].keys() == got["packed-all"].keys()
        for name in got["raw"]:
            assert got["packed"][name] == got["raw"][name], name
            assert got["packed-all"][name] == got["raw"][name], name


def big_run(con, rounds=12, clients=3):
    """A run whose records are packed (over 1 KiB): tests/data's MLP with noise."""
    con.executescript(schema("packed") + read_sql("views.sql"))
    con.execute("INSERT INTO runs(run, name) VALUES (1, 'big')")
    for c in range(clients):
        con.execute("INSERT INTO clients(client) VALUES (?)", (f"c{c}",))
    base = data("records/mlp_dict.pb")
    models = {}
    for r in range(rounds + 1):
        models[r] = one(con, "SELECT ar_add_noise(?, ?, ?)", base, 0.01 * r, r) if r else base
        con.execute("INSERT INTO rounds(run, round) VALUES (1, ?)", (r,))
        con.execute("INSERT INTO global_models VALUES (1, ?, ?)", (r, models[r]))
        for c in range(clients if r else 0):
            con.execute(
                "INSERT INTO client_updates(run, round, client, num_examples, rec) "
                "VALUES (1, ?, ?, ?, ar_add_noise(?, 0.001, ?))",
                (r, f"c{c}", 10 + c, models[r - 1], 100 * r + c),
            )
    con.commit()
    return models


def snapshot(con):
    return (
        con.execute("SELECT run, round, rec FROM global_models ORDER BY run, round").fetchall(),
        con.execute("SELECT * FROM replies ORDER BY run, round, phase, pos").fetchall(),
    )


def test_writes_through_the_views():
    con = connect()
    models = big_run(con)
    # packed against the bases the schema names, and read back bit for bit
    rows = con.execute("SELECT round, packed FROM model_store ORDER BY round").fetchall()
    assert rows == [(r, 1) for r in range(13)], rows
    assert one(con, "SELECT count(*) FROM reply_store WHERE packed = 1 AND base_round = round - 1") == 36
    assert [rec for (_, _, rec) in snapshot(con)[0]] == [models[r] for r in range(13)]
    assert one(con, "SELECT sum(length(rec)) FROM model_store") < 0.9 * sum(map(len, models.values()))
    # every reader of a packed row says what it is
    msg = error_of(con, "SELECT ar_len(rec) FROM model_store WHERE round = 3")
    assert "got a packed record" in msg and "ar_unpack" in msg, msg
    # the raw store's refusals, with the reason
    for sql, want in [
        ("INSERT INTO global_models VALUES (1, 13, x'0a')", "ar_check: record blob truncated at byte 1"),
        ("INSERT INTO global_models VALUES (1, 13, x'')", "ar_check: the record is empty"),
        ("INSERT INTO global_models VALUES (1, 13, NULL)", "global_models: rec must not be NULL"),
        ("INSERT INTO replies(run, round, pos, client, content) VALUES (1, 1, 9, 'c0', x'0a05')", "rd_check: "),
        ("INSERT INTO replies(run, round, pos, client) VALUES (1, 1, 9, 'c0')", "CHECK constraint failed"),
        ("INSERT INTO global_models VALUES (1, 3, (SELECT rec FROM global_models WHERE round = 2))", "UNIQUE"),
    ]:
        assert want in error_of(con, sql), (sql, error_of(con, sql))
    # a base deleted: the replies packed against it are repacked without one, and read the same
    before = snapshot(con)
    con.execute("DELETE FROM global_models WHERE round = 10")
    assert one(con, "SELECT count(*) FROM reply_store WHERE round = 11 AND base_round IS NULL AND packed = 1") == 3
    assert one(con, "SELECT count(*) FROM reply_store WHERE round = 12 AND base_round = 11") == 3
    after = snapshot(con)
    assert after[0] == [row for row in before[0] if row[1] != 10]
    assert after[1] == before[1]
    # a base changed: the same, and the new bytes read back
    con.execute("UPDATE global_models SET rec = ? WHERE round = 0", (models[12],))
    assert one(con, "SELECT count(*) FROM reply_store WHERE round = 1 AND base_round IS NULL") == 3
    assert one(con, "SELECT rec FROM global_models WHERE round = 0") == models[12]
    assert snapshot(con)[1] == before[1]
    assert [r for (_, _, r) in snapshot(con)[0][1:]] == [r for (_, rn, r) in before[0][1:] if rn != 10]
    # a reply rewritten and deleted
    con.execute("UPDATE replies SET error_code = NULL, pos = 7 WHERE round = 2 AND pos = 0")
    assert one(con, "SELECT count(*) FROM replies WHERE round = 2 AND pos = 7 AND content IS NOT NULL") == 1
    con.execute("DELETE FROM replies WHERE round = 2")
    assert one(con, "SELECT count(*) FROM reply_store WHERE round = 2") == 0
    # a round deleted goes with its rows (foreign keys), a run with all of them
    con.execute("DELETE FROM rounds WHERE round = 5")
    assert snapshot(con)[1] == [r for r in before[1] if r[1] not in (2, 5)]
    con.execute("DELETE FROM runs")
    assert one(con, "SELECT (SELECT count(*) FROM model_store) + (SELECT count(*) FROM reply_store)") == 0


def test_lossy_run():
    con = connect()
    con.executescript(schema("packed") + read_sql("views.sql"))
    con.execute("""INSERT INTO runs(run, name, options) VALUES (1, 'l', '{"lossy": "float16"}')""")
    con.execute("INSERT INTO clients(client) VALUES ('c')")
    base = data("records/mlp_dict.pb")
    upd = one(con, "SELECT ar_add_noise(?, 0.001, 5)", base)
    con.execute("INSERT INTO rounds(run, round) VALUES (1, 0), (1, 1)")
    con.execute("INSERT INTO global_models VALUES (1, 0, ?), (1, 1, ?)", (base, upd))
    con.execute("INSERT INTO client_updates(run, round, client, num_examples, rec) VALUES (1, 1, 'c', 3, ?)", (upd,))
    assert one(con, "SELECT rec FROM global_models WHERE round = 1") == upd  # global models stay exact
    got = one(con, "SELECT rec FROM client_updates")
    assert got != upd and one(con, "SELECT ar_allclose(?, ?, 0, 1e-5)", got, upd) == 1
    info = one(con, "SELECT ar_pack_info(content) FROM reply_store")
    assert '"lossy":"float16"' in info.replace(" ", ""), info


def raw_database(path):
    with cookbook_schema("raw"):
        con, _, _ = cookbook.tracking_db(path)
    big_run_rows(con)
    con.close()


def big_run_rows(con):
    """big_run's rows as run 2 of the database on con (its store as it is)."""
    other = connect()
    big_run(other)
    con.execute("INSERT INTO runs(run, name) VALUES (2, 'big')")
    con.executemany("INSERT OR IGNORE INTO clients(client) VALUES (?)", other.execute("SELECT client FROM clients"))
    con.executemany("INSERT INTO rounds(run, round) VALUES (2, ?)", other.execute("SELECT round FROM rounds"))
    con.executemany("INSERT INTO global_models VALUES (2, ?, ?)", other.execute("SELECT round, rec FROM global_models"))
    con.executemany(
        "INSERT INTO replies(run, round, phase, pos, client, content) VALUES (2, ?, ?, ?, ?, ?)",
        other.execute("SELECT round, phase, pos, client, content FROM replies"),
    )
    con.commit()


def test_pack_and_unpack_a_database():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.db")
        raw_database(path)
        con = connect(path)
        con.execute("CREATE VIEW mine AS SELECT run, round, length(rec) AS n FROM global_models")
        want = answers(con)
        con.close()
        before, after = store.pack_database(path)
        assert after < before, (before, after)
        con = connect(path)
        assert store.store_of(con) == "packed" and answers(con) == want
        assert one(con, "SELECT count(*) FROM model_store WHERE run = 2 AND packed = 1") == 13
        assert one(con, "SELECT sum(length(rec)) FROM model_store WHERE run = 2") < 0.9 * sum(
            len(r) for (r,) in con.execute("SELECT rec FROM global_models WHERE run = 2")
        )
        assert con.execute("PRAGMA foreign_key_check").fetchall() == [] and one(con, "PRAGMA integrity_check") == "ok"
        con.close()
        store.unpack_database(path)
        con = connect(path)
        assert store.store_of(con) == "raw" and answers(con) == want
        assert one(con, "SELECT type FROM sqlite_master WHERE name = 'global_models'") == "table"
        con.close()
        # a failure leaves the database as it was
        store.pack_database(path, lossy="float16")
        con = connect(path)
        assert one(con, "SELECT count(*) FROM reply_store WHERE ar_pack_info(content) LIKE '%float16%'") > 0
        assert answers(con)["global_models"] == want["global_models"]
        con.close()
    for bad, msg in [("half", "lossy must be"), (None, "no database")]:
        try:
            store.pack_database(os.path.join(tmp, "gone.db"), lossy=bad)
            raise AssertionError("no error")
        except (ValueError, FileNotFoundError) as e:
            assert msg in str(e), e


def test_log_of_version_0_1_0_packs():
    """A log of version 0.1.0 (the raw store) packs and unpacks, its digests
    still checking (they are over Flower's bytes, which do not change)."""
    from sqlite_arrayrecord.logcheck import check_log

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "log.db")
        shutil.copy(os.path.join(ROOT, "tests", "data", "logs", "logged-0.1.0.db"), path)
        con = connect(path)
        assert store.store_of(con) == "raw"
        want = answers(con)
        con.close()
        store.pack_database(path)
        assert check_log(path) == []
        con = connect(path)
        got = answers(con)
        # the rows; the views of sql/views.sql are made anew (today's), so only the store's are compared
        for k in ("replies", "global_models", "client_updates"):
            assert got[k] == want[k], k
        con.close()
        store.unpack_database(path)
        assert check_log(path) == []


def test_the_command_line():
    """python -m sqlite_arrayrecord pack DB / unpack DB: the sizes on stdout, exit 0; a missing
    file exits 1 with the reason on stderr; an unknown --lossy is a usage error (2)."""
    import subprocess

    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python"))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "t.db")
        raw_database(path)

        def cli(*args):
            return subprocess.run(
                [sys.executable, "-m", "sqlite_arrayrecord", *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )

        out = cli("pack", path)
        assert out.returncode == 0 and out.stdout.startswith(f"{path}: ") and "bytes ->" in out.stdout, out
        con = connect(path)
        assert store.store_of(con) == "packed"
        con.close()
        out = cli("unpack", path)
        assert out.returncode == 0, out
        con = connect(path)
        assert store.store_of(con) == "raw"
        con.close()
        out = cli("pack", os.path.join(tmp, "gone.db"))
        assert out.returncode == 1 and "no database" in out.stderr, out
        out = cli("pack", path, "--lossy", "float8")
        assert out.returncode == 2 and "invalid choice" in out.stderr, out
