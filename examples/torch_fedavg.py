# SPDX-License-Identifier: Apache-2.0
"""Federated averaging of a real PyTorch CNN with BatchNorm, logged in SQLite
and aggregated in SQL.

The model is torchvision's ResNet-18 with random weights (num_classes=10)
when torchvision is installed, a small CNN with BatchNorm otherwise
(--model picks; the script says which it used). Each client trains on its
own synthetic, non-IID images (CPU, fixed seeds) for one pass over its data
— client c has steps + c batches, so the clients' BatchNorm counters differ
— and its state_dict goes into client_updates as a Flower ArrayRecord
(sqlite_arrayrecord.from_state_dict), in a database made from
sql/schema.sql and sql/views.sql, as examples/flower_log.py logs a run.
Each round the server:

  - computes FedAvg in SQL, the round_fedavg view: ar_mean(rec, num_examples)
    over the round's updates, and logs it as the new global model;
  - reloads it into a fresh model with
    load_state_dict(to_state_dict(rec, like=model.state_dict()), strict=True);
  - computes FedAvg in torch (float64 accumulation, rounded once to each
    tensor's dtype) and checks that the two state_dicts agree to float32
    rounding and that the two models' outputs agree;
  - prints what FedAvg did to the BatchNorm buffers: ar_mean makes every
    int64 num_batches_tracked a float64 weighted mean of the clients'
    counts (and the logged global model keeps it float64), which like=
    rounds back to int64, where load_state_dict alone would truncate.

At the end it runs the cookbook recipes of sql/queries.sql on the logged
run and prints their answers (fedavg_check among them) — all but
export_layer, which needs the sqlite3 shell's writefile; replay_strategies
is driven round by round, its server optimizer stepping the int64 counters
as float64, as Flower's strategies do. The per-layer recipes leave
BatchNorm buffers out (their is_buffer column), since a counter's step of
whole counts would top every weight's change.
When every check passed it prints a line starting with "ok: "; a failed
check prints "FAILED: ..." and exits with status 1.

    /usr/bin/python3 examples/torch_fedavg.py --db torch_runs.db          # full
    /usr/bin/python3 examples/torch_fedavg.py --db torch_runs.db --quick  # CI size

Full mode (ResNet-18, 4 clients x 3 rounds, 5-8 batches of 16 at 32x32,
the model reaching ~90% test accuracy): about two minutes on a busy 2-core
machine (torch uses one thread); a 717 MB database (16 records of 44.8 MB).
--quick (ResNet-18, 2 clients x 2 rounds, 1-2 batches of 8): 15-40 s,
314 MB. --model small: a few seconds
(mostly importing torch) and under 1 MB either way. Needs Debian's
python3-torch (and python3-torchvision for ResNet-18).
"""

import argparse
import json
import os
import sys
import time

import numpy as np

try:
    import torch
except ImportError:
    sys.exit("torch_fedavg: needs PyTorch: apt-get install -y python3-torch (and python3-torchvision)")

try:
    import sqlite_arrayrecord as sar
except ImportError:  # not installed: the package's source in this checkout, with build/arrayrecord.so from make
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bindings", "python"))
    import sqlite_arrayrecord as sar

from replay_strategies import recipes, replay  # noqa: E402  (examples/replay_strategies.py, beside this file)

SQL_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "sql")
CLASSES = 10


def read_sql(name):
    with open(os.path.join(SQL_DIR, name), encoding="utf-8") as f:
        return f.read()


class SmallCNN(torch.nn.Module):
    """Two conv layers with BatchNorm, global average pooling, a linear head."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(32)
        self.fc = torch.nn.Linear(32, CLASSES)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = torch.relu(self.bn2(self.conv2(x)))
        return self.fc(x.mean(dim=(2, 3)))


def model_factory(name):
    """(name used, a function making a fresh model)."""
    if name in ("auto", "resnet18"):
        try:
            import torchvision
        except ImportError:
            if name == "resnet18":
                sys.exit("torch_fedavg: --model resnet18 needs torchvision: apt-get install -y python3-torchvision")
        else:
            return "resnet18", lambda: torchvision.models.resnet18(weights=None, num_classes=CLASSES)
    return "small", SmallCNN


def make_data(gen, n, size, templates, skew):
    """n images: a class template plus noise; `skew` weights the classes (non-IID)."""
    y = torch.multinomial(torch.softmax(skew, 0), n, replacement=True, generator=gen)
    x = templates[y] + 0.8 * torch.randn(n, 3, size, size, generator=gen)
    return x, y


def train(model, x, y, batch, lr):
    """One pass over (x, y) in batches, plain SGD: BatchNorm's running
    statistics move and num_batches_tracked counts the batches."""
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for i in range(0, len(y), batch):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x[i : i + batch]), y[i : i + batch])
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return float(np.mean(losses))


@torch.no_grad()
def evaluate(model, x, y):
    model.eval()
    out = model(x)
    return out, float(torch.nn.functional.cross_entropy(out, y)), float((out.argmax(1) == y).float().mean())


def fedavg_torch(states, weights):
    """FedAvg in torch: sum(w_i * x_i) / sum(w_i) accumulated in float64,
    rounded once to each tensor's dtype; integer tensors stay float64, as
    ar_mean (and Flower's aggregate_arrayrecords) gives them."""
    total = float(sum(weights))
    out = {}
    for key, first in states[0].items():
        acc = sum(s[key].to(torch.float64) * float(w) for s, w in zip(states, weights)) / total
        out[key] = acc.to(first.dtype) if first.is_floating_point() else acc
    return out


def ulps32(a, b):
    """Largest distance in float32 ulps between two float32 tensors."""
    a, b = a.numpy(), b.numpy()
    if a.size == 0:
        return 0.0
    return float((np.abs(a.astype(np.float64) - b) / np.spacing(np.maximum(np.abs(a), np.abs(b)))).max())


def check(ok, what):
    if not ok:
        print(f"FAILED: {what}")
        sys.exit(1)


def print_rows(con, title, sql, params, show=6):
    """A recipe's answer, its first rows; when BatchNorm counters lead a
    per-layer answer, its first rows of other layers too."""
    cur = con.execute(sql, params)
    rows = cur.fetchall()
    names = [d[0] for d in cur.description]

    def line(row):
        return "   " + " | ".join(str(round(v, 6) if isinstance(v, float) else v) for v in row)

    print(f"-- {title}: {len(rows)} row{'s' if len(rows) != 1 else ''}")
    print("   " + " | ".join(names))
    for row in rows[:show]:
        print(line(row))
    if len(rows) > show:
        print(f"   ... {len(rows) - show} more")
    if "key" in names:
        at = names.index("key")
        counters = [row for row in rows if row[at].endswith("num_batches_tracked")]
        others = [row for row in rows if not row[at].endswith("num_batches_tracked")]
        if counters and not others:
            print("   every row is a BatchNorm counter: their steps of whole counts outweigh the weights' updates")
        elif counters and rows[0] in counters:
            print(f"   {len(counters)} of these rows are BatchNorm counters; the first of the others:")
            for row in others[:3]:
                print(line(row))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default="torch_runs.db")
    ap.add_argument("--model", choices=("auto", "resnet18", "small"), default="auto")
    ap.add_argument("--quick", action="store_true", help="2 clients x 2 rounds, 1-2 batches of 8 each")
    ap.add_argument("--clients", type=int)
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--steps", type=int, help="batches of client 0 per round (client c: steps + c)")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--size", type=int, default=32, help="image height and width")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    quick = dict(clients=2, rounds=2, steps=1, batch=8)
    full = dict(clients=4, rounds=3, steps=5, batch=16)
    for key, value in (quick if args.quick else full).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    started = time.time()
    torch.manual_seed(args.seed)
    model_name, new_model = model_factory(args.model)
    gen = torch.Generator().manual_seed(args.seed)
    templates = torch.randn(CLASSES, 3, args.size, args.size, generator=gen)

    con = sar.connect(args.db)
    con.executescript(read_sql("schema.sql"))
    con.executescript(read_sql("views.sql"))
    run_name = f"{model_name}-fedavg-seed{args.seed}-{con.execute('SELECT count(*) FROM runs').fetchone()[0]}"
    config = {"strategy": "FedAvg", "model": model_name, **{k: getattr(args, k) for k in full}, "size": args.size}
    run = con.execute("INSERT INTO runs(name, config) VALUES (?, ?)", (run_name, json.dumps(config))).lastrowid

    clients = []
    for c in range(args.clients):
        name = f"client-{c}"
        n = args.batch * (args.steps + c)
        x, y = make_data(gen, n, args.size, templates, torch.randn(CLASSES, generator=gen) * 1.5)
        clients.append((name, x, y))
        con.execute("INSERT OR IGNORE INTO clients(client, info) VALUES (?, ?)", (name, json.dumps({"examples": n})))
    x_test, y_test = make_data(gen, 64, args.size, templates, torch.zeros(CLASSES))

    model = new_model()
    like = model.state_dict()
    counters = [k for k, v in like.items() if not v.is_floating_point()]
    n_params = sum(v.numel() for v in like.values())
    if model_name == "resnet18":
        why = "torchvision's, random weights"
    else:
        why = "a small CNN: --model small" if args.model == "small" else "a small CNN: torchvision is not installed"
    print(
        f"model: {model_name} ({why}), "
        f"{n_params} values in {len(like)} tensors, {len(counters)} of them int64 BatchNorm counters"
    )
    print(
        f"{args.clients} clients x {args.rounds} rounds, client c: {args.steps} + c batches of {args.batch} "
        f"at {args.size}x{args.size}, SGD lr {args.lr}, torch {torch.__version__}, {torch.get_num_threads()} thread(s)"
    )
    _, loss, acc = evaluate(model, x_test, y_test)
    con.execute(
        "INSERT INTO rounds(run, round, metrics) VALUES (?, 0, ?)", (run, json.dumps({"loss": loss, "accuracy": acc}))
    )
    global_rec = sar.from_state_dict(model.state_dict())
    con.execute("INSERT INTO global_models VALUES (?, 0, ?)", (run, global_rec))
    con.commit()

    train_time = 0.0
    worst_ulps, worst_out, counter = 0.0, 0.0, counters[0] if counters else None
    for rnd in range(1, args.rounds + 1):
        con.execute(
            "INSERT INTO rounds(run, round, started_at) VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ','now'))", (run, rnd)
        )
        states, weights = [], []
        for name, x, y in clients:
            local = new_model()
            local.load_state_dict(sar.to_state_dict(global_rec, like=local.state_dict()), strict=True)
            t0 = time.time()
            loss = train(local, x, y, args.batch, args.lr)
            train_time += time.time() - t0
            state = {k: v.detach().clone() for k, v in local.state_dict().items()}
            con.execute(
                "INSERT INTO client_updates(run, round, client, num_examples, metrics, rec) VALUES (?,?,?,?,?,?)",
                (run, rnd, name, len(y), json.dumps({"loss": loss}), sar.from_state_dict(state)),
            )
            states.append(state)
            weights.append(len(y))

        # FedAvg in SQL, logged as the round's global model
        (global_rec,) = con.execute("SELECT rec FROM round_fedavg WHERE run = ? AND round = ?", (run, rnd)).fetchone()
        con.execute("INSERT INTO global_models VALUES (?, ?, ?)", (run, rnd, global_rec))

        # the same FedAvg in torch, both reloaded into fresh models with like=
        stored = sar.to_state_dict(global_rec)  # as logged: counters float64
        expected = fedavg_torch(states, weights)
        ulps = 0.0
        for key, value in expected.items():
            check(stored[key].dtype == value.dtype, f"round {rnd}: {key} is {stored[key].dtype}, not {value.dtype}")
            if value.dtype == torch.float32:
                ulps = max(ulps, ulps32(stored[key], value))
            else:
                check(torch.allclose(stored[key], value, rtol=1e-12, atol=0), f"round {rnd}: {key} differs")
        check(ulps <= 1, f"round {rnd}: FedAvg in SQL is {ulps} float32 ulps from FedAvg in torch")
        worst_ulps = max(worst_ulps, ulps)
        from_sql = new_model()
        from_sql.load_state_dict(sar.to_state_dict(global_rec, like=from_sql.state_dict()), strict=True)
        reference = new_model()
        rounded = {k: torch.round(v).to(like[k].dtype) if k in counters else v for k, v in expected.items()}
        reference.load_state_dict(rounded, strict=True)
        out, loss, acc = evaluate(from_sql, x_test, y_test)
        ref_out, _, _ = evaluate(reference, x_test, y_test)
        diff = float((out - ref_out).abs().max())
        worst_out = max(worst_out, diff)
        check(
            torch.allclose(out, ref_out, rtol=1e-5, atol=1e-5 * float(ref_out.abs().max())),
            f"round {rnd}: outputs differ by {diff}",
        )
        for key in counters:
            check(
                from_sql.state_dict()[key].item() == rounded[key].item(),
                f"round {rnd}: {key} is {from_sql.state_dict()[key].item()}, not {rounded[key].item()}",
            )
        con.execute(
            "UPDATE rounds SET finished_at = strftime('%Y-%m-%dT%H:%M:%fZ','now'), metrics = ? "
            "WHERE run = ? AND round = ?",
            (json.dumps({"loss": loss, "accuracy": acc}), run, rnd),
        )
        con.commit()

        # what FedAvg did to the BatchNorm buffers: the dtypes of a client update and the global model
        changed = con.execute(
            "SELECT count(*), group_concat(DISTINCT u.dtype || ' -> ' || g.dtype) "
            "FROM client_updates AS c, array_record(c.rec) AS u, global_models AS m, array_record(m.rec) AS g "
            "WHERE c.run = ?1 AND c.round = ?2 AND c.client = 'client-0' AND m.run = ?1 AND m.round = ?2 "
            "AND g.key = u.key AND g.dtype != u.dtype",
            (run, rnd),
        ).fetchone()
        truncated = new_model()
        truncated.load_state_dict(stored, strict=True)  # load_state_dict's own cast
        print(
            f"round {rnd}: FedAvg in SQL = FedAvg in torch to {ulps:g} float32 ulp(s), outputs within "
            f"{diff:.2e}; test loss {loss:.4f}, accuracy {acc:.3f}"
        )
        if counter:
            counts = [int(s[counter]) for s in states]
            print(
                f"  {changed[0]} buffers {changed[1]} in the FedAvg record; {counter}: clients {counts}, "
                f"weights {weights} -> {float(stored[counter]):.6g} (float64, logged so) -> like= gives "
                f"{int(from_sql.state_dict()[counter])} (int64); load_state_dict alone: "
                f"{int(truncated.state_dict()[counter])}"
            )
            bn = counter.rsplit(".", 1)[0]
            var = [float(s[bn + ".running_var"].mean()) for s in states]
            print(
                f"  {bn}.running_mean/var stay float32, averaged like the weights: mean running_var "
                f"clients {[round(v, 4) for v in var]} -> {float(stored[bn + '.running_var'].mean()):.4f}"
            )

    rounds_done = time.time()
    print("cookbook (sql/queries.sql) on this run:")
    last = args.rounds
    params = {
        "run": run,
        "round": last,
        "round_a": 0,
        "round_b": last,
        "strategy_a": "fedavg",
        "strategy_b": "fedadam",
        "options_a": "{}",
        "options_b": "{}",
    }
    answers = {}
    for name, sql in recipes().items():
        if name == "export_layer":
            print("-- export_layer: skipped (writefile is the sqlite3 shell's)")
            continue
        t0 = time.time()
        if name == "replay_strategies":
            # one round per statement, each handed the two states of the round before
            # (examples/replay_strategies.py's loop); integer buffers are stepped as
            # Flower's strategies step them, as float64
            rows = replay(con, params["run"], "fedavg", "fedadam", "{}", "{}")
            print(f"-- {name}: {len(rows)} rounds, fedavg against fedadam")
            print("   round | distance")
            for row in rows:
                print(f"   {row[0]} | {row[1]:.6g}")
            answers[name] = rows
            print(f"   ({time.time() - t0:.1f} s)")
            continue
        answers[name] = print_rows(con, name, sql, params)
        print(f"   ({time.time() - t0:.1f} s)")
    check([r[0] for r in answers["fedavg_check"]] == list(range(1, last + 1)), "fedavg_check: not every round")
    check(all(r[3] == 1 for r in answers["fedavg_check"]), "fedavg_check: a stored global model differs")
    con.close()
    size = os.path.getsize(args.db)
    print(
        f"ok: {model_name}, {args.rounds} rounds x {args.clients} clients, FedAvg in SQL within {worst_ulps:g} "
        f"float32 ulps of torch, outputs within {worst_out:.2e}, {len(counters)} counters int64 again, "
        f"db {size / 1e6:.1f} MB, {time.time() - started:.1f} s"
    )
    print(
        f"(training {train_time:.1f} s; logging, FedAvg and checks {rounds_done - started - train_time:.1f} s; "
        f"cookbook {time.time() - rounds_done:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
