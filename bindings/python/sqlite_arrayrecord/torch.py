# SPDX-License-Identifier: Apache-2.0
"""PyTorch state_dicts as Flower ArrayRecords: from_state_dict(sd) -> bytes,
to_state_dict(bytes) -> {key: tensor}.

torch is imported inside these functions only, so importing the package
never imports it. Tensors of a NumPy dtype travel as NumPy items; bfloat16
and float8, which NumPy lacks, as raw "safetensors" items.
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


def to_state_dict(blob):
    """Flower ArrayRecord bytes -> {key: torch.Tensor}, in record order, ready
    for module.load_state_dict(). The tensors own their memory. Reads the raw
    "safetensors" items from_state_dict and ar_from_safetensors write
    (bfloat16, float8) as well as NumPy items, checked as from_record
    checks them."""
    import torch

    if blob is None:
        return None
    by_name = {name: dt for dt, name in _torch_raw_dtypes(torch).items()}
    mv, items = _record_items(blob, "to_state_dict")
    out = {}
    for item in items:
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
            out[key] = torch.from_numpy(ints).view(tdt).reshape(shape)
            continue
        arr = _item_array(mv, item, "to_state_dict", True)
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        out[key] = torch.from_numpy(arr)
    return out
