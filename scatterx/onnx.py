"""ONNX's gather/scatter operators (opset 18 semantics) on scatterx's engine: torch tensors in and out.

Indices may be negative (counted from the end of their axis), as ONNX allows; anything outside ``[-s, s)`` raises
IndexError before anything is written. Reductions: ``"none"`` (assign; with duplicate indices the last one in
row-major order wins -- ONNX leaves that case undefined), ``"add"``, ``"mul"``, ``"max"``, ``"min"``; the data's
own value always takes part, as in ONNX.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from . import planner
from ._frontend import (
    check_index,
    check_shape,
    check_tensor,
    check_updates,
    nd_gather,
    nd_scatter,
    normalize_axis,
    wrap_negative,
)
from .planner import XMap

_REDUCTIONS = {"none": "assign", "add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def _reduction(reduction: str) -> str:
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {list(_REDUCTIONS)}, got {reduction!r}")
    return _REDUCTIONS[reduction]


def _elements_map(data, indices, axis, op):
    """GatherElements/ScatterElements: ``u`` over ``indices``, ``t = u`` with ``t[axis] = indices[u]``."""
    check_tensor(data, "data")
    check_index(indices, "indices", data)
    axis = normalize_axis(axis, data.dim())
    m = XMap.along_dim(indices, data.shape, axis, names=("indices", "data"), op=op)
    return replace(m, index=wrap_negative(indices, data.size(axis), "indices"))


def gather_elements(data, indices, axis: int = 0) -> torch.Tensor:
    """ONNX GatherElements (= ``torch.gather`` with negative indices)."""
    return planner.gather(_elements_map(data, indices, axis, "GatherElements"), data)


def scatter_elements(data, indices, updates, axis: int = 0, reduction: str = "none") -> torch.Tensor:
    """ONNX ScatterElements: ``updates`` (same shape as ``indices``) into a copy of ``data`` along ``axis``."""
    mode = _reduction(reduction)
    m = _elements_map(data, indices, axis, "ScatterElements")
    check_updates(updates, data, reduces=mode != "assign")
    check_shape(updates, indices.shape, "updates", " (the shape of indices)")
    return planner.scatter(m, data, updates, mode, include_self=True)


def gather(data, indices, axis: int = 0) -> torch.Tensor:
    """ONNX Gather: ``out[i..., j, k...] = data[i..., indices[j], k...]``, shape
    ``data.shape[:axis] + indices.shape + data.shape[axis+1:]`` (= ``tf.gather``, ``numpy.take``)."""
    check_tensor(data, "data")
    check_index(indices, "indices", data)
    if data.dim() == 0:
        raise ValueError("Gather: data must have rank >= 1")
    axis = normalize_axis(axis, data.dim())
    indices = wrap_negative(indices, data.size(axis), "indices")
    q = indices.dim()
    shape = tuple(data.shape[:axis]) + tuple(indices.shape) + tuple(data.shape[axis + 1 :])
    carry = tuple((d, d) for d in range(axis)) + tuple((axis + q + j, axis + 1 + j) for j in range(data.dim() - axis - 1))
    m = XMap(shape, tuple(data.shape), indices, tuple(range(axis, axis + q)), (axis,), carry)
    return planner.gather(m, data)


def gather_nd(data, indices, batch_dims: int = 0) -> torch.Tensor:
    """ONNX GatherND: slices ``data[b, indices[b, i]]``; output shape ``B + I + data.shape[b+k:]``."""
    return nd_gather(data, indices, batch_dims, "GatherND", negative=True)


def scatter_nd(data, indices, updates, reduction: str = "none") -> torch.Tensor:
    """ONNX ScatterND: ``updates[i]`` (a slice of shape ``data.shape[k:]``) into ``data[indices[i]]``."""
    return nd_scatter(data, indices, updates, _reduction(reduction), "ScatterND", negative=True)
