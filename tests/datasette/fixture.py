# SPDX-License-Identifier: Apache-2.0
"""The database the Datasette plugin's tests (and the browser tests) look
at, written like a real run (a helper, not a test module):

    path, metadata = fixture.make(folder)
    Datasette([path], metadata=metadata)

- Two runs logged by sqlite_arrayrecord.flower.LoggingStrategy over
  tests/flower/stub_grid.py's StubGrid (Flower's own Strategy.start): run 1
  "krum-conv" is Krum(num_malicious_nodes=1) over 4 rounds of 5 clients of a
  small conv net (a 4-D conv weight, a 2-D dense weight, biases); client
  105 is poisoned (its model moves 8 times as far as an honest client's,
  the opposite way) and client 104 is a straggler (an error reply in rounds
  2 and 3, a smaller, late update otherwise); run 2 is FedAvg over 2 rounds
  of the same clients, under a hostile name (HOSTILE) with a hostile
  string in its run config.
- Run 3 "fedadam-resumed" is FedAdam(eta=0.05) over 4 rounds of the same
  clients, as a subclass carrying a hostile string among its settings; its
  first Flower run fails in round 3 (the grid raises) and a second one
  resumes it to the end; its replies carry each node's "partition-id"
  (node 101 is partition 0, ...), so clients.info labels the clients, and
  its server-side metrics include one under a hostile name.
- Runs 4 "fleet-100" and 5 "pair-2" are FedAvg over 2 rounds of 100 and 2
  nodes whose ids are Flower's 19- and 20-digit numbers (FLEET, PAIR; some
  above 2**63), each answering as node 101 + i % 5 above: the heatmaps'
  client axes at both sizes.
- npy_cells(id, name, arr NPY): .npy cells, a malformed and a truncated one.
- records(id, name, rec ARRAYRECORD): standalone ArrayRecords, hostile keys,
  a malformed and a truncated record, an empty record x''.
- dicts(id, name, rd RECORDDICT): RecordDicts with metrics and config
  (hostile metric names and config strings), a malformed one.
- blobs(id, note, data): an undeclared column: short random blobs, x'', a
  .npy, a record and a RecordDict (found by their content), text, a number.
- configured(id, payload BLOB): payload named "arrayrecord" by the
  plugin's configuration in the metadata: a record and a malformed blob.
- keyed(name TEXT PRIMARY KEY, rec ARRAYRECORD): text keys with "/", "."
  and "~" (Datasette's tilde-encoded row paths); loose(rec ARRAYRECORD): a
  rowid table.
- secret(id, rec ARRAYRECORD): forbidden by the metadata (allow: false).

Everything is seeded: the same bytes each time. Written with build/datasette's
Python (flwr 1.42.0, NumPy 2; make datasette-env).
"""

import os
import random
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "flower"))

import sqlite_arrayrecord as sar  # noqa: E402

HOSTILE = "<img src=x onerror=alert(1)>"
SCRIPT = "<script>alert(1)</script>"
DB_NAME = "fixture"  # Datasette's name of the database (the file's stem)
NODES = (101, 102, 103, 104, 105)
STRAGGLER, POISONED = 104, 105
KRUM_F = 1
# Node ids as Flower draws them (uint64): 19 and 20 digits.
FLEET = tuple(int(i) for i in np.random.default_rng(5).integers(10**18, 2**64 - 1, 100, dtype=np.uint64))
PAIR = (12345678901234567890, 9876543210987654321)


def initial_model():
    """The conv net's starting parameters, as {key: ndarray}."""
    rng = np.random.default_rng(7)
    return {
        "conv1.weight": rng.normal(0, 0.3, (4, 2, 3, 3)).astype(np.float32),
        "conv1.bias": np.zeros(4, np.float32),
        "fc.weight": rng.normal(0, 0.2, (3, 16)).astype(np.float32),
        "fc.bias": np.zeros(3, np.float32),
    }


def _target():
    """Where honest clients pull the model (a common direction)."""
    rng = np.random.default_rng(11)
    return {k: (a + rng.normal(0, 0.5, a.shape)).astype(a.dtype) for k, a in initial_model().items()}


def make_answer(partition=False):
    """Each node's ClientApp: deterministic in (node, round, arrays received);
    partition=True: each reply carries the node's "partition-id" in a
    ConfigRecord, as a simulated ClientApp's node_config gives it."""
    from flwr.app import Array, ArrayRecord, ConfigRecord, Error, MetricRecord, RecordDict
    from flwr.common.constant import ErrorCode

    target = _target()

    def answer(node, msg):
        out = _answer(node, msg)
        if partition and isinstance(out, RecordDict):
            out["config"] = ConfigRecord({"partition-id": node - 101})
        return out

    def _answer(node, msg):
        rnd = int(msg.content["config"]["server-round"])
        rng = np.random.default_rng([node, rnd])
        if node == STRAGGLER and rnd in (2, 3):
            return Error(code=ErrorCode.CLIENT_APP_RAISED_EXCEPTION, reason=f"node {node}: timed out in round {rnd}")
        n = 20 * (node - 100) + rnd
        if msg.metadata.message_type != "train":
            loss = 1.0 / (rnd + 1) + 0.05 * float(rng.random()) + (2.0 if node == POISONED else 0.0)
            return RecordDict(
                {"metrics": MetricRecord({"num-examples": n, "eval_loss": loss, "eval_acc": 1 - loss / 3})}
            )
        out = {}
        for k, a in msg.content["arrays"].items():
            x = a.numpy()
            step = 0.3 * (target[k] - x)
            if node == POISONED:
                step = -8.0 * step
            elif node == STRAGGLER:
                step = 0.1 * step
            out[k] = Array((x + step + rng.normal(0, 0.01, x.shape)).astype(x.dtype))
        loss = 1.0 / rnd + 0.1 * float(rng.random())
        metrics = MetricRecord({"num-examples": n, "train_loss": loss, "steps": int(rng.integers(5, 9))})
        return RecordDict({"arrays": ArrayRecord(out), "metrics": metrics})

    return answer


def _evaluate_fn(server_round, arrays):
    from flwr.app import MetricRecord

    w = arrays["fc.weight"].numpy()
    return MetricRecord({"server_loss": 1.0 / (server_round + 1), "fc_norm": float(np.linalg.norm(w))})


def _evaluate_fn_hostile(server_round, arrays):
    from flwr.app import MetricRecord

    metrics = _evaluate_fn(server_round, arrays)
    return MetricRecord({**metrics, HOSTILE: 0.5 + 0.1 * server_round})


def _tagged_fedadam():
    from flwr.serverapp.strategy import FedAdam

    class TaggedFedAdam(FedAdam):
        """FedAdam with a hostile string among its settings."""

        def __init__(self, **kw):
            super().__init__(**kw)
            self.label = SCRIPT

    TaggedFedAdam.__module__, TaggedFedAdam.__qualname__ = __name__, "TaggedFedAdam"
    return TaggedFedAdam


def log_resumed_run(db):
    """Run 3: its first Flower run fails in round 3, a second one resumes it."""
    from flwr.app import Array, ArrayRecord, ConfigRecord, Context, RecordDict
    from stub_grid import StubGrid, quiet_flower, server_identity

    from sqlite_arrayrecord.flower import LoggingStrategy

    answer = make_answer(partition=True)

    def failing(node, msg):
        if int(msg.content["config"]["server-round"]) == 3:
            raise RuntimeError("the grid lost its connection")
        return answer(node, msg)

    config = {"lr": 0.05, "model": "conv"}
    cls = _tagged_fedadam()
    for attempt, (run_id, node_fn) in enumerate(((502, failing), (503, answer))):
        grid = StubGrid(run_id=run_id, nodes={n: node_fn for n in NODES})
        context = Context(run_id=run_id, node_id=1, node_config={}, state=RecordDict(), run_config=config)
        random.seed(42)
        np.random.seed(42)
        logged = LoggingStrategy(
            cls(eta=0.05), db, "fedadam-resumed", context=context, resume=attempt > 0, notes="fixture run 3"
        )
        initial = ArrayRecord({k: Array(a) for k, a in initial_model().items()})
        with server_identity(grid), quiet_flower():
            try:
                logged.start(
                    grid=grid,
                    initial_arrays=initial,
                    num_rounds=4,
                    train_config=ConfigRecord({"lr": config["lr"]}),
                    evaluate_fn=_evaluate_fn_hostile,
                )
            except RuntimeError:
                assert attempt == 0


def log_fleets(db):
    """Runs 4 and 5: FedAvg over 100 and 2 nodes of Flower-sized ids."""
    from flwr.app import Array, ArrayRecord, ConfigRecord, Context, RecordDict
    from flwr.serverapp.strategy import FedAvg
    from stub_grid import StubGrid, quiet_flower, server_identity

    from sqlite_arrayrecord.flower import LoggingStrategy

    base = make_answer()
    for i, (name, ids) in enumerate((("fleet-100", FLEET), ("pair-2", PAIR))):
        index = {n: k for k, n in enumerate(ids)}
        nodes = {n: (lambda node, msg, index=index: base(101 + index[node] % 5, msg)) for n in ids}
        grid = StubGrid(run_id=504 + i, nodes=nodes)
        context = Context(run_id=504 + i, node_id=1, node_config={}, state=RecordDict(), run_config={"lr": 0.1})
        random.seed(42)
        np.random.seed(42)
        logged = LoggingStrategy(FedAvg(), db, name, context=context, notes=f"{len(ids)} nodes")
        initial = ArrayRecord({k: Array(a) for k, a in initial_model().items()})
        with server_identity(grid), quiet_flower():
            logged.start(grid=grid, initial_arrays=initial, num_rounds=2, train_config=ConfigRecord({"lr": 0.1}))


def log_runs(db):
    """The logged runs (Krum, FedAvg, FedAdam resumed, the fleets) into db."""
    from flwr.app import Array, ArrayRecord, ConfigRecord, Context, RecordDict
    from flwr.serverapp.strategy import FedAvg, Krum
    from stub_grid import StubGrid, quiet_flower, server_identity

    from sqlite_arrayrecord.flower import LoggingStrategy

    runs = (
        ("krum-conv", Krum(num_malicious_nodes=KRUM_F), 4, {"lr": 0.05, "model": "conv"}),
        (HOSTILE, FedAvg(), 2, {"lr": 0.1, "note": SCRIPT}),
    )
    for i, (name, strategy, rounds, config) in enumerate(runs):
        grid = StubGrid(run_id=500 + i, nodes={n: make_answer() for n in NODES})
        context = Context(run_id=500 + i, node_id=1, node_config={}, state=RecordDict(), run_config=config)
        random.seed(42)
        np.random.seed(42)
        logged = LoggingStrategy(strategy, db, name, context=context, notes=f"fixture run {i + 1}")
        initial = ArrayRecord({k: Array(a) for k, a in initial_model().items()})
        with server_identity(grid), quiet_flower():
            logged.start(
                grid=grid,
                initial_arrays=initial,
                num_rounds=rounds,
                train_config=ConfigRecord({"lr": config["lr"]}),
                evaluate_fn=_evaluate_fn,
            )
    log_resumed_run(db)
    log_fleets(db)


# {"h": BF16 [3], "z": F16 [2]} as safetensors bytes
_SAFETENSORS_BF16 = bytes.fromhex(
    "8c000000000000007b227a223a7b226474797065223a22463136222c227368617065223a5b325d2c22646174615f6f6666736574"
    "73223a5b362c31305d7d2c2268223a7b226474797065223a2242463136222c227368617065223a5b335d2c22646174615f6f6666"
    "73657473223a5b302c365d7d2c225f5f6d657461646174615f5f223a7b22666f726d6174223a227074227d7d803f004040400"
    "03c00c0"
)


def _random_blob(rng, n):
    return bytes(rng.integers(0, 256, n, dtype=np.uint8))


def add_tables(con):
    """The tables of cells beside the logged runs."""
    rng = np.random.default_rng(3)
    good_npy = sar.to_npy(np.arange(12, dtype=np.float32).reshape(3, 4))
    con.executescript(
        """
        CREATE TABLE npy_cells(id INTEGER PRIMARY KEY, name TEXT, arr NPY);
        CREATE TABLE records(id INTEGER PRIMARY KEY, name TEXT, rec ARRAYRECORD);
        CREATE TABLE dicts(id INTEGER PRIMARY KEY, name TEXT, rd RECORDDICT);
        CREATE TABLE blobs(id INTEGER PRIMARY KEY, note TEXT, data);
        CREATE TABLE configured(id INTEGER PRIMARY KEY, payload BLOB);
        CREATE TABLE keyed(name TEXT PRIMARY KEY, rec ARRAYRECORD);
        CREATE TABLE loose(label TEXT, rec ARRAYRECORD);
        CREATE TABLE secret(id INTEGER PRIMARY KEY, rec ARRAYRECORD);
        """
    )
    npys = [
        ("float32 3x4", good_npy),
        ("int64 vector", sar.to_npy(np.arange(-5, 5, dtype=np.int64))),
        ("bool", sar.to_npy(np.array([True, False, True]))),
        ("float64 4-D", sar.to_npy(rng.normal(0, 1, (3, 2, 2, 2)))),
        ("scalar", sar.to_npy(np.array(2.5))),
        ("nan and inf", sar.to_npy(np.array([1.0, np.nan, np.inf, -np.inf, 3.0]))),
        ("complex64", sar.to_npy(np.array([1 + 2j, 3 - 1j], np.complex64))),
        ("constant", sar.to_npy(np.full((4, 4), 7.0, np.float32))),
        ("malformed", b"\x93NUMPY\x01\x00garbage that is no header"),
        ("truncated", good_npy[:-7]),
        ("not npy", b"hello world, not an array"),
    ]
    con.executemany("INSERT INTO npy_cells(name, arr) VALUES (?, ?)", npys)
    model = initial_model()
    good_rec = sar.to_record(model)
    recs = [
        ("conv net", good_rec),
        ("hostile keys", sar.to_record({HOSTILE: np.ones((2, 3), np.float32), SCRIPT: np.zeros(4, np.int32)})),
        (
            "mixed dtypes",
            sar.to_record({"h": np.ones(5, np.float16), "u8": np.arange(6, dtype=np.uint8).reshape(2, 3)}),
        ),
        ("scaled", sar.to_record({k: 2 * a for k, a in model.items()})),
        ("truncated", good_rec[: len(good_rec) // 2]),
        ("malformed", b"\x0a\xff\xff\xff\xff\x0f"),
        ("empty", b""),
    ]
    con.executemany("INSERT INTO records(name, rec) VALUES (?, ?)", recs)
    dicts = [
        (
            "update",
            sar.to_recorddict(
                {
                    "arrays": {"w": np.ones((2, 2), np.float32), "b": np.zeros(2, np.float32)},
                    "metrics": sar.MetricRecord({"num-examples": 120, "loss": 0.25}),
                    "config": sar.ConfigRecord({"lr": 0.1, "optimizer": "sgd"}),
                }
            ),
        ),
        (
            "hostile",
            sar.to_recorddict(
                {
                    "arrays": {HOSTILE: np.ones(3, np.float32)},
                    "metrics": sar.MetricRecord({HOSTILE: 1.5, "num-examples": 3}),
                    "config": sar.ConfigRecord({"note": SCRIPT, "img": HOSTILE}),
                }
            ),
        ),
        ("malformed", b"\x0a\x05\x0a\x01x\x12\xff"),
    ]
    con.executemany("INSERT INTO dicts(name, rd) VALUES (?, ?)", dicts)
    # A RecordDict holding a safetensors BF16 tensor (no NumPy dtype) beside a float16 one.
    con.execute(
        "INSERT INTO dicts(name, rd) VALUES ('bf16', rd('st', 'array', ar_from_safetensors(?)))", (_SAFETENSORS_BF16,)
    )
    blobs = [
        ("random 1", _random_blob(rng, 1)),
        ("random 7", _random_blob(rng, 7)),
        ("random 33", _random_blob(rng, 33)),
        ("empty", b""),
        ("npy", good_npy),
        ("record", good_rec),
        ("recorddict", dicts[0][1]),
        ("text", "just text"),
        ("number", 42),
        ("null", None),
        ("packed record", con.execute("SELECT ar_pack(?1, ar_scale(?1, 0.5))", (good_rec,)).fetchone()[0]),
        (
            "packed lossy",
            con.execute('SELECT ar_pack(?1, ar_scale(?1, 0.5), \'{"lossy": "float16"}\')', (good_rec,)).fetchone()[0],
        ),
        ("packed recorddict", con.execute("SELECT rd_pack(?)", (dicts[0][1],)).fetchone()[0]),
    ]
    con.executemany("INSERT INTO blobs(note, data) VALUES (?, ?)", blobs)
    con.executemany(
        "INSERT INTO configured(payload) VALUES (?)", [(good_rec,), (b"not a record at all",), (_random_blob(rng, 5),)]
    )
    con.executemany(
        "INSERT INTO keyed(name, rec) VALUES (?, ?)",
        [("a/b.c", good_rec), ("tilde~key", recs[2][1]), (HOSTILE, recs[1][1])],
    )
    con.executemany("INSERT INTO loose(label, rec) VALUES (?, ?)", [("first", good_rec), ("second", recs[3][1])])
    con.execute("INSERT INTO secret(id, rec) VALUES (1, ?)", (good_rec,))


def metadata():
    """Datasette's metadata for the fixture: the secret table forbidden, the
    configured table's payload column named an ArrayRecord column."""
    return {
        "databases": {
            DB_NAME: {
                "tables": {
                    "secret": {"allow": False},
                    "configured": {"plugins": {"sqlite-arrayrecord": {"columns": {"payload": "arrayrecord"}}}},
                }
            }
        }
    }


def make(folder):
    """Writes folder/fixture.db (anew) and returns (path, metadata)."""
    path = os.path.join(folder, DB_NAME + ".db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    log_runs(path)
    con = sar.connect(path, detect_types=0)
    try:
        with con:
            add_tables(con)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    return path, metadata()


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    p, _ = make(out)
    print(p)
