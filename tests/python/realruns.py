# SPDX-License-Identifier: Apache-2.0
"""Real federated training on scikit-learn's digits, for the tests and the
bench of packed records: the models of a run as a client and a server see
them, round by round, with a fixed seed (the same arrays on every run on one
machine).

  mlp_run()   a NumPy MLP (64-256-256-10, float32), 6 clients with IID
              shards, SGD with momentum, 20 rounds of FedAvg
  cnn_run()   a small CNN with BatchNorm (PyTorch: Debian's python3-torch),
              10 clients with non-IID shards (Dirichlet 0.5 over the
              labels), SGD with momentum and weight decay, 20 rounds of
              FedAvg

Each yields Round(round, base, replies, global_model): base the global model
the round's clients started from (round - 1's; round 1's is the initial
model), replies a list of (client, num_examples, state) and global_model the
FedAvg of the replies as Flower's aggregate_arrayrecords computes it (each
array times n_i / total, summed, in NumPy's dtypes: a PyTorch int64
num_batches_tracked becomes float64 in the global model, as it does in
Flower). A state is a dict of NumPy arrays in the model's order.

The data is read from the digits.csv.gz that scikit-learn ships
(python3-sklearn), by file, so environments without scikit-learn itself
(build/flwr) can run the NumPy MLP when the file is on the machine.
"""

import gzip
import os
from collections import namedtuple

import numpy as np

Round = namedtuple("Round", "round base replies global_model")

SKLEARN_INSTALL = "apt-get install -y python3-sklearn"
TORCH_INSTALL = "apt-get install -y python3-torch"
_DIGITS_PLACES = ("/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz",)


def digits_path():
    """Path of scikit-learn's digits.csv.gz, or None."""
    try:
        import sklearn.datasets

        path = os.path.join(os.path.dirname(sklearn.datasets.__file__), "data", "digits.csv.gz")
        if os.path.isfile(path):
            return path
    except ImportError:
        pass
    return next((p for p in _DIGITS_PLACES if os.path.isfile(p)), None)


def load_digits():
    """(x, y): 1797 images of 8x8 pixels scaled to [0, 1] (float32), labels (int64)."""
    path = digits_path()
    if path is None:
        raise FileNotFoundError(f"scikit-learn's digits data is missing: {SKLEARN_INSTALL}")
    with gzip.open(path, "rt") as f:
        table = np.loadtxt(f, delimiter=",")
    return (table[:, :-1] / 16.0).astype(np.float32), table[:, -1].astype(np.int64)


def _iid_shards(rng, n, clients):
    return np.array_split(rng.permutation(n), clients)


def _dirichlet_shards(rng, y, clients, alpha):
    """Each label's samples spread over the clients in Dirichlet(alpha)
    proportions: some clients see a few labels mostly (non-IID)."""
    shards = [[] for _ in range(clients)]
    for label in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == label))
        cuts = (np.cumsum(rng.dirichlet([alpha] * clients)) * len(idx)).astype(int)[:-1]
        for c, part in enumerate(np.split(idx, cuts)):
            shards[c].extend(part.tolist())
    return [np.array(sorted(s), dtype=np.int64) for s in shards]


def fedavg(replies):
    """Flower's aggregate_arrayrecords: sum of array * (n_i / total), in
    NumPy's dtypes (the replies' key order)."""
    total = sum(n for _, n, _ in replies)
    out = {}
    for key in replies[0][2]:
        out[key] = np.asarray(np.sum([state[key] * (n / total) for _, n, state in replies], axis=0))
    return out


# --- the NumPy MLP ---------------------------------------------------------------


def _mlp_init(rng, sizes):
    state = {}
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        bound = np.sqrt(6.0 / fan_in)
        state[f"fc{i}.weight"] = rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32)
        state[f"fc{i}.bias"] = np.zeros(fan_out, np.float32)
    return state


def _mlp_grads(state, layers, x, y):
    """Cross-entropy gradients of a ReLU MLP, float32."""
    acts = [x]
    h = x
    for i in range(layers):
        h = h @ state[f"fc{i}.weight"].T + state[f"fc{i}.bias"]
        if i < layers - 1:
            h = np.maximum(h, 0)
        acts.append(h)
    logits = acts[-1]
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(y)), y] -= 1
    delta = (p / len(y)).astype(np.float32)
    grads = {}
    for i in reversed(range(layers)):
        grads[f"fc{i}.weight"] = delta.T @ acts[i]
        grads[f"fc{i}.bias"] = delta.sum(axis=0)
        if i:
            delta = (delta @ state[f"fc{i}.weight"]) * (acts[i] > 0)
    return grads


def mlp_run(rounds=20, clients=6, epochs=2, lr=0.05, momentum=0.9, batch=32, seed=0, sizes=(64, 256, 256, 10)):
    """Yields the Rounds of a NumPy MLP trained with FedAvg (see the module)."""
    x, y = load_digits()
    rng = np.random.default_rng(seed)
    shards = _iid_shards(rng, len(y), clients)
    layers = len(sizes) - 1
    model = _mlp_init(rng, sizes)
    for r in range(1, rounds + 1):
        replies = []
        for c, shard in enumerate(shards):
            state = {k: v.copy() for k, v in model.items()}
            velocity = {k: np.zeros_like(v) for k, v in state.items()}
            for _ in range(epochs):
                order = rng.permutation(shard)
                for start in range(0, len(order), batch):
                    idx = order[start : start + batch]
                    for k, g in _mlp_grads(state, layers, x[idx], y[idx]).items():
                        velocity[k] = np.float32(momentum) * velocity[k] + g
                        state[k] = state[k] - np.float32(lr) * velocity[k]
            replies.append((f"client-{c}", len(shard), state))
        new = fedavg(replies)
        yield Round(r, model, replies, new)
        model = new


# --- the PyTorch CNN ---------------------------------------------------------------


def _cnn(torch):
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 4 * 4, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


def cnn_run(rounds=20, clients=10, epochs=1, lr=0.05, momentum=0.9, weight_decay=5e-4, batch=32, seed=0, alpha=0.5):
    """Yields the Rounds of a PyTorch CNN with BatchNorm trained with FedAvg
    on non-IID shards (see the module). Raises ImportError without torch."""
    import torch

    x, y = load_digits()
    rng = np.random.default_rng(seed)
    shards = _dirichlet_shards(rng, y, clients, alpha)
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    net = _cnn(torch)
    images = torch.from_numpy(x.reshape(-1, 1, 8, 8))
    labels = torch.from_numpy(y)
    model = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
    template = net.state_dict()
    for r in range(1, rounds + 1):
        replies = []
        for c, shard in enumerate(shards):
            # load_state_dict casts each array to the model's dtype (float64 back to int64)
            net.load_state_dict({k: torch.from_numpy(np.asarray(v)).to(template[k].dtype) for k, v in model.items()})
            net.train()
            opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
            gen = torch.Generator().manual_seed(seed * 1000 + r * 100 + c)
            for _ in range(epochs):
                order = torch.from_numpy(shard)[torch.randperm(len(shard), generator=gen)]
                for start in range(0, len(order), batch):
                    idx = order[start : start + batch]
                    if len(idx) < 2:  # BatchNorm needs two samples
                        continue
                    opt.zero_grad()
                    loss = torch.nn.functional.cross_entropy(net(images[idx]), labels[idx])
                    loss.backward()
                    opt.step()
            state = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
            replies.append((f"client-{c}", len(shard), state))
        new = fedavg(replies)
        yield Round(r, model, replies, new)
        model = new
