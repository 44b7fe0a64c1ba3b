# SPDX-License-Identifier: Apache-2.0
"""The wrapped strategy's settings and state, and the state back.

Settings are the strategy's public attributes as JSON (what a resumed run
must match). The state is every attribute after a round, in a RecordDict
that strategy_state.state holds (docs/flower-logging.md, "Resuming a
run"):

    _kinds        ConfigRecord  attribute path -> how it is stored
    _scalars      ConfigRecord  JSON values (as text) and bytes, by path
    _npscalars    ConfigRecord  path -> the keys of a dict or list whose
                                values were NumPy scalars (np.float64, ...),
                                stored as 0-d arrays and given back as
                                scalars
    _unknown      ConfigRecord  the attributes it cannot store, and the class
    _rng          ConfigRecord  Python's and NumPy's global generators
    _rng_arrays   ArrayRecord   (their key arrays)
    attr:<path>   one record per array-valued attribute

NumPy turns arithmetic on 0-d arrays into NumPy scalars (0.9 * np.zeros(())
is an np.float64), so the dicts and lists of Flower's server optimizers
(FedAdam's m_t, FedAvgM's momentum_vector, ...) hold scalars beside arrays
for a model with 0-d arrays (BatchNorm's num_batches_tracked). Each value
comes back with the type and bits it had, so a resumed run continues bit
for bit.
"""

import json
import random

import numpy as np
from flwr.app import Array, ArrayRecord, ConfigRecord, MetricRecord, RecordDict
from flwr.serverapp.strategy import Strategy

from ._wire import rd_bytes, rd_from_bytes
from .errors import ResumeError


def class_name(obj):
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def settings(strategy):
    """The strategy's class and public attributes as JSON-able values
    (arrays and records are state, left out; callables by name)."""
    out = {}
    for name, v in _attrs(strategy):
        if name.startswith("_"):
            continue
        kind = _kind(v)
        if kind == "strategy":
            out[name] = {"class": class_name(v), "settings": settings(v)}
        elif kind in ("json", "tuple"):
            out[name] = v
        elif kind == "callable":
            out[name] = getattr(v, "__module__", "?") + "." + getattr(v, "__qualname__", type(v).__qualname__)
        elif kind is None:
            out[name] = f"<{class_name(v)}>"
    return out


def state_bytes(strategy):
    """The strategy's state (and Python's and NumPy's global generators) as
    the bytes of a RecordDict, and the list of the attributes it could not
    store, each named down to the value (m_t['bn.count'] (builtins.set)):
    (bytes, list)."""
    items, kinds, scalars, npscalars, unknown = {}, {}, {}, {}, []
    _snapshot(strategy, "", items, kinds, scalars, npscalars, unknown)
    version, py_state, gauss = random.getstate()
    np_name, np_keys, np_pos, np_has_gauss, np_gauss = np.random.get_state()
    rd = RecordDict(
        {
            "_kinds": ConfigRecord(kinds),
            "_scalars": ConfigRecord(scalars),
            "_npscalars": ConfigRecord(npscalars),
            "_unknown": ConfigRecord({"attributes": unknown, "class": class_name(strategy)}),
            "_rng": ConfigRecord(
                {
                    "python_version": version,
                    "python_gauss": json.dumps(gauss),
                    "numpy_name": np_name,
                    "numpy_pos": int(np_pos),
                    "numpy_has_gauss": int(np_has_gauss),
                    "numpy_gauss": float(np_gauss),
                }
            ),
            "_rng_arrays": ArrayRecord(
                {"python": Array(np.array(py_state, dtype=np.uint64)), "numpy": Array(np.asarray(np_keys))}
            ),
            **items,
        }
    )
    return rd_bytes(rd), unknown


def restore_state(strategy, blob):
    """Sets the attributes stored in the state RecordDict back on the
    strategy (and Python's and NumPy's global generators); ResumeError when
    the state holds attributes that could not be stored."""
    rd = rd_from_bytes(blob)
    unknown = list(rd["_unknown"]["attributes"])
    if unknown:
        raise ResumeError(
            f"LoggingStrategy: cannot resume: the state of {rd['_unknown']['class']} includes "
            f"{', '.join(unknown)}, which the log cannot store (it keeps arrays and NumPy scalars, ArrayRecords, "
            "Metric/ConfigRecords, dicts and lists of arrays and NumPy scalars, bytes and JSON values); "
            "resuming would not continue the same run"
        )
    kinds, scalars = rd["_kinds"], rd["_scalars"]
    npscalars = rd["_npscalars"] if "_npscalars" in rd else {}  # logs of before it have none
    for path, kind in kinds.items():
        if kind == "strategy":
            continue
        *parents, name = path.split(".")
        owner = strategy
        for p in parents:
            owner = getattr(owner, p)
        if kind == "json":
            value = json.loads(scalars[path])
        elif kind == "tuple":
            value = tuple(json.loads(scalars[path]))
        elif kind == "bytes":
            value = scalars[path]
        else:
            value = _from_record(kind, rd["attr:" + path], set(npscalars.get(path, ())))
        setattr(owner, name, value)
    rng, arrays = rd["_rng"], rd["_rng_arrays"]
    random.setstate(
        (rng["python_version"], tuple(int(x) for x in arrays["python"].numpy()), json.loads(rng["python_gauss"]))
    )
    np.random.set_state(
        (
            rng["numpy_name"],
            arrays["numpy"].numpy(),
            rng["numpy_pos"],
            rng["numpy_has_gauss"],
            rng["numpy_gauss"],
        )
    )


def _from_record(kind, rec, scalar_keys):
    """An array-valued attribute from its record; the keys in scalar_keys
    (of a dict, or list positions as text) come back as NumPy scalars."""

    def value(key, a):
        x = a.numpy()
        return x[()] if key in scalar_keys else x

    if kind == "ndarray":
        return rec[""].numpy()
    if kind == "npscalar":
        return rec[""].numpy()[()]
    if kind == "dict":
        return {k: value(k, a) for k, a in rec.items()}
    if kind == "list":
        return [value(k, a) for k, a in rec.items()]
    return rec  # arrayrecord, metricrecord, configrecord


# ---- what an attribute is, and how it is stored


def _is_array(v):
    """An ndarray or a NumPy scalar that .npy keeps without pickling."""
    return isinstance(v, (np.ndarray, np.generic)) and not np.asarray(v).dtype.hasobject


def _json_exact(v):
    """True when json.loads(json.dumps(v)) gives v back with its types
    (exact types: a NumPy float64 scalar is a float subclass that NumPy 2
    promotes differently, so it is kept as an array)."""
    if v is None or type(v) in (bool, int, float, str):
        return True
    if type(v) is list:
        return all(_json_exact(x) for x in v)
    if type(v) is dict:
        return all(type(k) is str and _json_exact(x) for k, x in v.items())
    return False


def _kind(v):
    """How an attribute's value is stored: a kind name, or None when it
    cannot be (the strategy's state would then be lost on resume)."""
    if isinstance(v, Strategy):
        return "strategy"
    if isinstance(v, ArrayRecord):
        return "arrayrecord"
    if isinstance(v, MetricRecord):
        return "metricrecord"
    if isinstance(v, ConfigRecord):
        return "configrecord"
    if isinstance(v, np.ndarray) and _is_array(v):
        return "ndarray"
    if isinstance(v, np.generic) and _is_array(v):
        return "npscalar"
    if type(v) is dict and v and all(type(k) is str and _is_array(x) for k, x in v.items()):
        return "dict"
    if type(v) is list and v and all(_is_array(x) for x in v):
        return "list"
    if isinstance(v, bytes):
        return "bytes"
    if _json_exact(v):
        return "json"
    if type(v) is tuple and _json_exact(list(v)):
        return "tuple"
    if callable(v):
        return "callable"
    return None


def _unstorable_parts(path, v):
    """Where in a value the log cannot go: the innermost values named by
    their path and type, or the container when each value alone could be
    stored but not together (arrays beside other values)."""
    if type(v) is dict and all(type(k) is str for k in v):
        parts = [(f"{path}[{k!r}]", x) for k, x in v.items()]
    elif type(v) in (list, tuple):
        parts = [(f"{path}[{i}]", x) for i, x in enumerate(v)]
    else:
        what = " with keys that are not strings" if type(v) is dict else ""
        return [f"{path} ({class_name(v)}{what})"]
    inner = [d for p, x in parts if not (_is_array(x) or _json_exact(x)) for d in _unstorable_parts(p, x)]
    return inner or [f"{path} ({class_name(v)} holding arrays beside other values)"]


def _attrs(strategy):
    return sorted(vars(strategy).items())


def _snapshot(strategy, prefix, items, kinds, scalars, npscalars, unknown):
    """Walks the strategy's attributes into the state RecordDict's parts."""
    for name, v in _attrs(strategy):
        path = prefix + name
        kind = _kind(v)
        if kind == "strategy":
            kinds[path] = "strategy"
            _snapshot(v, path + ".", items, kinds, scalars, npscalars, unknown)
        elif kind == "callable":
            continue  # a setting (compared at resume), not state
        elif kind is None:
            unknown += _unstorable_parts(path, v)
        else:
            kinds[path] = kind
            if kind in ("json", "tuple"):
                scalars[path] = json.dumps(v)
            elif kind == "bytes":
                scalars[path] = v
            elif kind in ("ndarray", "npscalar"):
                items["attr:" + path] = ArrayRecord({"": Array(np.asarray(v))})
            elif kind in ("dict", "list"):
                pairs = list(v.items()) if kind == "dict" else [(str(i), x) for i, x in enumerate(v)]
                items["attr:" + path] = ArrayRecord({k: Array(np.asarray(x)) for k, x in pairs})
                keys = [k for k, x in pairs if isinstance(x, np.generic)]
                if keys:
                    npscalars[path] = keys
            else:  # arrayrecord, metricrecord, configrecord
                items["attr:" + path] = v
