# SPDX-License-Identifier: Apache-2.0
"""The model, the data and the training of the app, in NumPy alone (float32).

A two-layer MLP (tanh hidden layer, softmax output) classifies points of a
few Gaussian clusters. With batchnorm, the hidden layer is batch-normalized
as PyTorch's BatchNorm1d does it, and the model has what such a model's
state_dict has: the layer's weight and bias, its running_mean and
running_var buffers, the 0-d int64 counter num_batches_tracked, and a
learned 0-d float32 logit_scale (as CLIP's). Every partition draws its own examples from a
generator seeded by (seed, partition id): a different number of them and
its own skew over the classes, so FedAvg's weights differ per node. The
same seed, partition and starting arrays always give the same bytes.

    arrays = init_model(2024)                       # {"fc1.weight": ..., ...}
    arrays = init_model(2024, batchnorm=True)       # ... "bn1.num_batches_tracked": array(0), ...
    x, y = load_partition(2024, partition_id=0, num_partitions=2, split="train")
    arrays, loss = train(arrays, x, y, epochs=2, lr=0.5, shuffle_seed=(2024, 0, 1))
    loss, accuracy = evaluate(arrays, *load_partition(2024, 0, 2, "test"))
"""

import numpy as np

FEATURES, HIDDEN, CLASSES = 8, 16, 3
BATCH = 16
KEYS = ("fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")
BN_KEYS = ("bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked", "logit_scale")
BN_EPS, BN_MOMENTUM = np.float32(1e-5), np.float32(0.1)  # BatchNorm1d's defaults
COUNTER = "bn1.num_batches_tracked"


def init_model(seed, batchnorm=False):
    """The initial arrays, from the seed alone."""
    rng = np.random.default_rng([seed, 7])
    arrays = {
        "fc1.weight": (rng.standard_normal((HIDDEN, FEATURES)) * 0.3).astype(np.float32),
        "fc1.bias": np.zeros(HIDDEN, np.float32),
        "fc2.weight": (rng.standard_normal((CLASSES, HIDDEN)) * 0.3).astype(np.float32),
        "fc2.bias": np.zeros(CLASSES, np.float32),
    }
    if batchnorm:
        arrays.update(
            {
                "bn1.weight": np.ones(HIDDEN, np.float32),
                "bn1.bias": np.zeros(HIDDEN, np.float32),
                "bn1.running_mean": np.zeros(HIDDEN, np.float32),
                "bn1.running_var": np.ones(HIDDEN, np.float32),
                COUNTER: np.array(0, np.int64),
                "logit_scale": np.array(1.0, np.float32),
            }
        )
    return arrays


def load_arrays(record):
    """The model's arrays out of what the server sent ({key: ndarray}), each
    in the model's own dtype, as load_state_dict copies into a model's
    tensors: the server's aggregates come back as float64 for 0-d arrays
    (NumPy scalars) and for the counter."""
    keys = KEYS + (BN_KEYS if "bn1.weight" in record else ())
    return {k: np.asarray(record[k]).astype(np.int64 if k == COUNTER else np.float32) for k in keys}


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


def _forward(arrays, x, training=False):
    """(hidden activations, class probabilities, what the backward pass
    needs). With batchnorm in training, the batch's statistics normalize and
    the running ones are updated in place (as BatchNorm1d.train() does)."""
    z = x @ arrays["fc1.weight"].T + arrays["fc1.bias"]
    cache = {}
    if "bn1.weight" in arrays:
        if training:
            mean, var = z.mean(axis=0), z.var(axis=0)
            n = np.float32(len(z))
            m = BN_MOMENTUM
            arrays["bn1.running_mean"] = (1 - m) * arrays["bn1.running_mean"] + m * mean
            arrays["bn1.running_var"] = (1 - m) * arrays["bn1.running_var"] + m * var * (n / max(n - 1, 1))
            arrays[COUNTER] = arrays[COUNTER] + 1
        else:
            mean, var = arrays["bn1.running_mean"], arrays["bn1.running_var"]
        inv_std = np.float32(1) / np.sqrt(var + BN_EPS)
        zhat = (z - mean) * inv_std
        cache.update(zhat=zhat, inv_std=inv_std)
        z = arrays["bn1.weight"] * zhat + arrays["bn1.bias"]
    h = np.tanh(z)
    logits = h @ arrays["fc2.weight"].T + arrays["fc2.bias"]
    if "logit_scale" in arrays:
        cache["unscaled"] = logits
        logits = logits * arrays["logit_scale"]
    logits = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return h, p / p.sum(axis=1, keepdims=True), cache


def _loss(p, y):
    return float(-np.log(p[np.arange(len(y)), y] + np.float32(1e-7)).mean())


def train(arrays, x, y, epochs, lr, shuffle_seed):
    """Mini-batch gradient descent on a copy of the arrays; returns the new
    arrays and the mean loss of the last epoch's batches."""
    w = {k: np.array(v) for k, v in load_arrays(arrays).items()}
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
            h, p, cache = _forward(w, xb, training=True)
            losses.append(_loss(p, y[idx]))
            g_logits = (p - tb) / np.float32(len(idx))
            grads = {}
            if "logit_scale" in w:
                grads["logit_scale"] = np.asarray((g_logits * cache["unscaled"]).sum(), np.float32)
                g_logits = g_logits * w["logit_scale"]
            g_z = (g_logits @ w["fc2.weight"]) * (np.float32(1) - h * h)
            grads["fc2.weight"] = g_logits.T @ h
            grads["fc2.bias"] = g_logits.sum(axis=0)
            if "bn1.weight" in w:  # back through the batch statistics
                zhat, n = cache["zhat"], np.float32(len(idx))
                grads["bn1.weight"] = (g_z * zhat).sum(axis=0)
                grads["bn1.bias"] = g_z.sum(axis=0)
                g_zhat = g_z * w["bn1.weight"]
                g_z = (cache["inv_std"] / n) * (n * g_zhat - g_zhat.sum(axis=0) - zhat * (g_zhat * zhat).sum(axis=0))
            grads["fc1.weight"] = g_z.T @ xb
            grads["fc1.bias"] = g_z.sum(axis=0)
            for k, g in grads.items():
                w[k] = w[k] - lr * g
        loss = float(np.mean(losses))
    return {k: np.asarray(v) for k, v in w.items()}, loss


def evaluate(arrays, x, y):
    """Mean cross-entropy and accuracy of the arrays on (x, y)."""
    _, p, _ = _forward(load_arrays(arrays), x)
    return _loss(p, y), float((p.argmax(axis=1) == y).mean())
