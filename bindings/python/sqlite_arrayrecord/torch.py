# SPDX-License-Identifier: Apache-2.0
"""PyTorch state_dicts as Flower ArrayRecords: from_state_dict(sd) -> bytes,
to_state_dict(bytes, like=None) -> {key: tensor}.

torch is imported inside these functions only, so importing the package
never imports it. Tensors of a NumPy dtype travel as NumPy items; bfloat16
and float8, which NumPy lacks, as raw "safetensors" items.

FedAvg in SQL (ar_mean) makes integer arrays float64: a BatchNorm layer's
int64 num_batches_tracked comes back as the clients' weighted mean count.
to_state_dict(rec, like=model.state_dict()) returns every tensor in the
model's dtype, rounding such floats to the nearest integer (ties to even),
and checks the record's keys and shapes against the model's first:

    net.load_state_dict(to_state_dict(rec, like=net.state_dict()), strict=True)
"""

import numpy as np

from .record import SAFETENSORS_STYPE, _build, _item_array, _items_of, _record_items

__all__ = ["from_state_dict", "to_state_dict"]


def _torch_raw_dtypes(torch):
    """torch dtypes without a NumPy dtype -> safetensors names (as ar_from_safetensors stores them)."""
    out = {torch.bfloat16: "BF16"}
    for attr, name in (
        ("float8_e5m2", "F8_E5M2"),
        ("float8_e4m3fn", "F8_E4M3"),
        ("float8_e5m2fnuz", "F8_E5M2FNUZ"),
        ("float8_e4m3fnuz", "F8_E4M3FNUZ"),
    ):
        if hasattr(torch, attr):
            out[getattr(torch, attr)] = name
    return out


def from_state_dict(state_dict):
    """A PyTorch state_dict (any mapping of names to tensors) -> Flower
    ArrayRecord bytes, in its order. Tensors of a NumPy dtype become
    numpy.ndarray items (as Flower's ArrayRecord(torch_state_dict=...) stores
    them); bfloat16 and float8 tensors become raw items with stype
    "safetensors" and dtype the safetensors name ("BF16"), the little-endian
    bytes unchanged, exactly as ar_from_safetensors stores them.
    to_state_dict reads them all back bit for bit."""
    import torch

    raw = _torch_raw_dtypes(torch)
    items = []
    for key, t in _items_of(state_dict, "from_state_dict"):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"from_state_dict: {key!r} is a {type(t).__name__}, not a tensor")
        t = t.detach().cpu().contiguous()
        if t.dtype in raw:
            size = t.element_size()
            ints = t.view({1: torch.uint8, 2: torch.int16}[size]).numpy()
            data = ints.astype(ints.dtype.newbyteorder("<"), copy=False).reshape(-1).view(np.uint8)
            items.append((key, (raw[t.dtype], list(t.shape), SAFETENSORS_STYPE, data)))
        else:
            items.append((key, t.numpy()))
    return _build(items, "from_state_dict")


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _shape_text(shape):
    return str(tuple(int(d) for d in shape))


def _check_like(like, items, torch):
    """like's (key, tensor) pairs in its order, after checking that its keys
    and shapes are the record's: the first mismatch is a ValueError."""
    if not hasattr(like, "items") or not hasattr(like, "keys"):
        raise TypeError(
            f"to_state_dict: like must be a mapping of names to tensors (model.state_dict()), not {type(like).__name__}"
        )
    refs = list(like.items())
    shapes = {item[1]: item[3] for item in items}
    names = {key for key, _ in refs}
    missing = [key for key, _ in refs if key not in shapes]
    extra = [key for key in shapes if key not in names]
    counts = f"like: {len(missing)} of its {len(refs)} keys missing; record: {len(extra)} of its {len(shapes)} keys not in like"
    for key, ref in refs:
        if not isinstance(ref, torch.Tensor):
            raise TypeError(f"to_state_dict: like[{key!r}] is a {type(ref).__name__}, not a tensor")
        if key not in shapes:
            raise ValueError(f"to_state_dict: key {key!r} of like is missing from the record ({counts})")
        if tuple(shapes[key]) != tuple(ref.shape):
            raise ValueError(
                f"to_state_dict: key {key!r} has shape {_shape_text(shapes[key])} in the record "
                f"but {_shape_text(ref.shape)} in like"
            )
    if extra:
        raise ValueError(f"to_state_dict: key {extra[0]!r} is in the record but not in like ({counts})")
    return refs


def _cast(key, t, dtype, torch):
    """t in dtype. A floating value becomes an integer (or bool) by rounding
    to the nearest integer, ties to even (torch.round), then casting; a value
    the integer dtype cannot hold (NaN, infinity, out of range) is a
    ValueError, as is dropping a complex value's imaginary part."""
    if t.dtype == dtype:
        return t
    where = f"to_state_dict: key {key!r} is {_dtype_name(t.dtype)} in the record, {_dtype_name(dtype)} in like"
    if t.dtype.is_complex and not dtype.is_complex:
        raise ValueError(f"{where}: the cast would drop the imaginary part")
    if dtype.is_floating_point or dtype.is_complex:
        return t.to(dtype)
    if dtype == torch.bool:
        lo, hi = 0, 1
    else:
        info = torch.iinfo(dtype)
        lo, hi = info.min, info.max
    if t.dtype.is_floating_point:
        t = torch.round(t.to(torch.float64))  # exact for every floating dtype; ties to even
        bad = ~torch.isfinite(t) | (t < float(lo)) | (t >= float(hi + 1))  # float(hi + 1): a power of two, exact
    elif t.dtype == torch.bool:
        bad = None
    else:
        bad = (t < lo) | (t > hi)
    if bad is not None and bool(bad.any()):
        value = t[bad].reshape(-1)[0].item()
        raise ValueError(f"{where}: it holds {value!r}, which {_dtype_name(dtype)} cannot hold")
    return t.to(dtype)


def to_state_dict(blob, like=None):
    """Flower ArrayRecord bytes -> {key: torch.Tensor}, ready for
    module.load_state_dict(). The tensors own their memory and live on the
    CPU. Reads the raw "safetensors" items from_state_dict and
    ar_from_safetensors write (bfloat16, float8) as well as NumPy items,
    checked as from_record checks them.

    like=None: the record's keys in record order, each tensor in the
    record's dtype, bit-identical to what from_state_dict stored.

    like=model.state_dict() (any mapping of names to tensors): the record
    must hold exactly like's keys, each with like's shape; the first
    mismatch is a ValueError naming the key ("to_state_dict: key 'fc.weight'
    has shape (2, 3) in the record but (3, 2) in like", "... of like is
    missing from the record", "... is in the record but not in like").
    The result follows like's order and dtypes: a tensor of another dtype
    is cast, so the integer buffers FedAvg turned into float64 (ar_mean
    makes BatchNorm's int64 num_batches_tracked a weighted mean of the
    clients' counts) come back as int64. A floating value becomes an
    integer by rounding to the nearest, ties to even (torch.round, as
    numpy.rint), never by truncation as a plain cast or load_state_dict's
    copy would: a weighted mean of 3, 4 and 4 is 3.67 and becomes 4, not 3,
    and 2.9999999999999996 becomes 3. A value the integer dtype cannot hold
    (NaN, infinity, out of range) and a complex value cast to a real dtype
    are errors naming the key; floating casts round to nearest as
    tensor.to(dtype) does.

        net.load_state_dict(to_state_dict(rec, like=net.state_dict()), strict=True)
    """
    import torch

    if blob is None:
        return None
    by_name = {name: dt for dt, name in _torch_raw_dtypes(torch).items()}
    mv, items = _record_items(blob, "to_state_dict")
    refs = None if like is None else _check_like(like, items, torch)
    out = {}
    for item in items:
        out[item[1]] = _tensor(mv, item, by_name, torch)
    if refs is None:
        return out
    return {key: _cast(key, out[key], ref.dtype, torch) for key, ref in refs}


def _tensor(mv, item, by_name, torch):
    """One record item as a tensor that owns its memory."""
    index, key, dtype, shape, stype, (start, end), where = item
    if stype == SAFETENSORS_STYPE and dtype in by_name:
        tdt = by_name[dtype]
        count = 1
        for d in shape:
            count *= d
        size = torch.empty((), dtype=tdt).element_size()
        if count * size != end - start:
            raise ValueError(
                f"to_state_dict: raw array data has {end - start} bytes, dtype and shape need {count * size}{where}"
            )
        ints = np.frombuffer(mv, "<u1" if size == 1 else "<i2", count, start).astype(
            np.uint8 if size == 1 else np.int16
        )  # native order, and a copy torch may own
        return torch.from_numpy(ints).view(tdt).reshape(shape)
    arr = _item_array(mv, item, "to_state_dict", True)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return torch.from_numpy(arr)
