"""Argument handling shared by the framework frontends (``pytorch``, ``onnx``, ``tf``, ``paddle``).

Frontends are thin: they check their framework's rules, translate arguments into a ``planner.XMap`` (built by its
constructors ``XMap.along_dim``, ``XMap.slices``, ``XMap.nd``) and call ``planner.scatter`` / ``planner.gather``.
What they share lives here: tensor and index checks, the wrapping of negative indices for the frameworks that
allow them (ONNX, Paddle), and the ND gather/scatter that ONNX and TensorFlow both have. Every check runs before
anything is written.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import torch

from . import planner
from ._reductions import SUPPORTED_DTYPES
from .ops._checks import INDEX_DTYPES, check_tensor
from .planner import XMap


def check_index(index, name: str, like: torch.Tensor) -> torch.Tensor:
    check_tensor(index, name)
    if index.dtype not in INDEX_DTYPES:
        raise TypeError(f"{name} must have dtype int32 or int64, got {index.dtype}")
    if index.device != like.device:
        raise ValueError(f"{name} is on {index.device} but the data is on {like.device}")
    return index


def check_updates(updates, data: torch.Tensor, name: str = "updates", reduces: bool = True) -> torch.Tensor:
    """Same dtype and device as ``data``; a dtype the kernels support when values are combined."""
    check_tensor(updates, name)
    if updates.dtype != data.dtype:
        raise TypeError(f"{name} has dtype {updates.dtype} but the data has {data.dtype}; they must match")
    if updates.device != data.device:
        raise ValueError(f"{name} is on {updates.device} but the data is on {data.device}")
    if reduces and data.dtype not in SUPPORTED_DTYPES:
        names = ", ".join(str(d).replace("torch.", "") for d in SUPPORTED_DTYPES)
        raise TypeError(f"reducing {data.dtype} is not supported; scatterx reduces {names}")
    return updates


def check_shape(t: torch.Tensor, expected: Sequence[int], name: str, why: str = "") -> None:
    if list(t.shape) != list(expected):
        raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {tuple(expected)}{why}")


def normalize_axis(axis, ndim: int, name: str = "axis") -> int:
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{name} must be an int, got {type(axis).__name__}")
    if not -max(ndim, 1) <= axis < max(ndim, 1):
        raise IndexError(f"{name}={axis} is out of range for a tensor with {ndim} dimension(s)")
    return axis % max(ndim, 1)


def wrap_negative(index: torch.Tensor, sizes, name: str) -> torch.Tensor:
    """Indices in ``[-size, size)`` -> ``[0, size)`` (ONNX and Paddle count negative indices from the end).
    ``sizes``: an int, or a list with one size per entry of ``index``'s last dim (ND indices). IndexError for
    anything outside."""
    if torch.compiler.is_compiling():  # traced: no value is read; wrap every entry (the ops check the range)
        per = torch.as_tensor(sizes, dtype=torch.int64, device=index.device)
        return torch.where(index < 0, index + per.to(index.dtype), index)
    if index.numel() == 0:
        return index
    # one pass for the common case, every entry already in [0, size): the extremes, per coordinate for ND indices
    if isinstance(sizes, int):
        low, high = (int(v) for v in torch.aminmax(index))
        if low >= 0 and high < sizes:
            return index
    else:
        lows, highs = (v.tolist() for v in torch.aminmax(index.reshape(-1, len(sizes)), dim=0))
        if all(lo >= 0 and hi < size for lo, hi, size in zip(lows, highs, sizes)):
            return index
    per = torch.as_tensor(sizes, dtype=torch.int64, device=index.device)
    bad = (index < -per) | (index >= per)
    if bool(bad.any()):
        where = tuple(int(i) for i in torch.nonzero(bad)[0])
        size = int(per) if per.dim() == 0 else int(per[where[-1]])
        raise IndexError(
            f"{name}{list(where)} = {int(index[where])} is out of range for a dimension of size "
            f"{size} (valid: [{-size}, {size - 1}])"
        )
    negative = index < 0
    if bool(negative.any()):
        index = torch.where(negative, index + per.to(index.dtype), index)
    return index


def scalar_or_tensor(value, like: torch.Tensor, name: str) -> torch.Tensor:
    """A Python number becomes a 0-d tensor of ``like``'s dtype (to be broadcast by the caller)."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (bool, int, float)):
        return torch.tensor(value, dtype=like.dtype, device=like.device)
    raise TypeError(f"{name} must be a torch.Tensor or a number, got {type(value).__name__}")


# ------------------------------------------------------------------------------------- ND (ONNX and TensorFlow)
def nd_map(data, indices, batch_dims: int, op: str, negative: bool) -> XMap:
    """The map of ``GatherND``/``ScatterND``/``*_nd`` after the argument checks; ``negative``: indices may count
    from the end of their dim (ONNX), else they must be in range (TensorFlow)."""
    check_tensor(data, "data")
    check_index(indices, "indices", data)
    m = XMap.nd(indices, data.shape, batch_dims, op)
    if negative:
        b, k = batch_dims, indices.size(-1)
        wrapped = wrap_negative(indices, list(data.shape[b : b + k]), "indices")
        m = m if wrapped is indices else replace(m, index=wrapped)
    return m


def nd_gather(data, indices, batch_dims: int, op: str, negative: bool) -> torch.Tensor:
    """Slices ``data[b, indices[b, i]]``; output shape ``B + I + data.shape[b+k:]``."""
    return planner.gather(nd_map(data, indices, batch_dims, op, negative), data)


def nd_scatter(data, indices, updates, mode: str, op: str, negative: bool) -> torch.Tensor:
    """``updates[i]`` (a slice of shape ``data.shape[k:]``) reduced into ``data[indices[i]]`` (a new tensor)."""
    m = nd_map(data, indices, 0, op, negative)
    check_updates(updates, data, reduces=mode != "assign")
    check_shape(updates, m.shape, "updates", " (indices.shape[:-1] + data.shape[indices.shape[-1]:])")
    return planner.scatter(m, data, updates, mode, include_self=True)
