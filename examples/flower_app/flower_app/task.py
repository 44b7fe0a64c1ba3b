# SPDX-License-Identifier: Apache-2.0
"""The model, the data and the training of the app, in NumPy alone (float32).

A two-layer MLP (tanh hidden layer, softmax output) classifies points of a
few Gaussian clusters. Every partition draws its own examples from a
generator seeded by (seed, partition id): a different number of them and
its own skew over the classes, so FedAvg's weights differ per node. The
same seed, partition and starting arrays always give the same bytes.

    arrays = init_model(2024)                       # {"fc1.weight": ..., ...}
    x, y = load_partition(2024, partition_id=0, num_partitions=2, split="train")
    arrays, loss = train(arrays, x, y, epochs=2, lr=0.5, shuffle_seed=(2024, 0, 1))
    loss, accuracy = evaluate(arrays, *load_partition(2024, 0, 2, "test"))
"""

import numpy as np

FEATURES, HIDDEN, CLASSES = 8, 16, 3
BATCH = 16
KEYS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")


def init_model(seed):
    """The initial arrays, from the seed alone."""
    rng = np.random.default_rng([seed, 7])
    return {
        "fc1.weight": (rng.standard_normal((HIDDEN, FEATURES)) * 0.3).astype(np.float32),
        "fc1.bias": np.zeros(HIDDEN, np.float32),
        "fc2.weight": (rng.standard_normal((CLASSES, HIDDEN)) * 0.3).astype(np.float32),
        "fc2.bias": np.zeros(CLASSES, np.float32),
    }


def load_partition(seed, partition_id, num_partitions, split):
    """Features (float32, [n, FEATURES]) and labels (int64, [n]) of one
    partition: 3/4 of its examples for "train", the rest for "test"."""
    if not 0 <= partition_id < num_partitions:
        raise ValueError(f"partition-id {partition_id} is not in [0, {num_partitions})")
    centers = np.random.default_rng([seed, 11]).standard_normal((CLASSES, FEATURES)) * 1.5
    rng = np.random.default_rng([seed, 13, partition_id])
    n = 64 + 32 * partition_id
    skew = np.full(CLASSES, 1.0)
    skew[partition_id % CLASSES] = 3.0
    y = rng.choice(CLASSES, size=n, p=skew / skew.sum())
    x = (centers[y] + rng.standard_normal((n, FEATURES))).astype(np.float32)
    cut = n * 3 // 4
    return (x[:cut], y[:cut]) if split == "train" else (x[cut:], y[cut:])


def _forward(arrays, x):
    h = np.tanh(x @ arrays["fc1.weight"].T + arrays["fc1.bias"])
    logits = h @ arrays["fc2.weight"].T + arrays["fc2.bias"]
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return h, p / p.sum(axis=1, keepdims=True)


def _loss(p, y):
    return float(-np.log(p[np.arange(len(y)), y] + np.float32(1e-7)).mean())


def train(arrays, x, y, epochs, lr, shuffle_seed):
    """Mini-batch gradient descent on a copy of the arrays; returns the new
    arrays and the mean loss of the last epoch's batches."""
    w = {k: np.array(arrays[k], dtype=np.float32) for k in KEYS}
    lr = np.float32(lr)
    rng = np.random.default_rng(list(shuffle_seed))
    onehot = np.eye(CLASSES, dtype=np.float32)[y]
    loss = 0.0
    for _ in range(epochs):
        order = rng.permutation(len(y))
        losses = []
        for start in range(0, len(y), BATCH):
            idx = order[start : start + BATCH]
            xb, tb = x[idx], onehot[idx]
            h, p = _forward(w, xb)
            losses.append(_loss(p, y[idx]))
            g_logits = (p - tb) / np.float32(len(idx))
            g_h = (g_logits @ w["fc2.weight"]) * (np.float32(1) - h * h)
            grads = {
                "fc2.weight": g_logits.T @ h,
                "fc2.bias": g_logits.sum(axis=0),
                "fc1.weight": g_h.T @ xb,
                "fc1.bias": g_h.sum(axis=0),
            }
            for k in KEYS:
                w[k] -= lr * grads[k]
        loss = float(np.mean(losses))
    return w, loss


def evaluate(arrays, x, y):
    """Mean cross-entropy and accuracy of the arrays on (x, y)."""
    w = {k: np.asarray(arrays[k], dtype=np.float32) for k in KEYS}
    _, p = _forward(w, x)
    return _loss(p, y), float((p.argmax(axis=1) == y).mean())
