"""ONNX's gather/scatter operators (opset 18 semantics) on scatterx's engine: torch tensors in and out.

Indices may be negative (counted from the end of their axis), as ONNX allows; anything outside ``[-s, s)`` raises
IndexError before anything is written. Reductions: ``"none"`` (assign; with duplicate indices the last one in
row-major order wins -- ONNX leaves that case undefined), ``"add"``, ``"mul"``, ``"max"``, ``"min"``; the data's
own value always takes part, as in ONNX.
"""

from __future__ import annotations

import torch

from . import planner
from ._frontend import check_index, check_shape, check_tensor, check_updates, normalize_axis, wrap_negative
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
    if indices.dim() != data.dim():
        raise ValueError(f"{op}: indices has rank {indices.dim()} but data has rank {data.dim()}; they must be equal")
    axis = normalize_axis(axis, data.dim())
    for d in range(data.dim()):
        if d != axis and indices.size(d) > data.size(d):
            raise ValueError(f"{op}: indices.shape[{d}] = {indices.size(d)} exceeds data.shape[{d}] = {data.size(d)}")
    indices = wrap_negative(indices, data.size(axis), "indices")
    carry = tuple((d, d) for d in range(data.dim()) if d != axis)
    return XMap(tuple(indices.shape), tuple(data.shape), indices, tuple(range(data.dim())), (axis,), carry)


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


def nd_map(data, indices, batch_dims: int, op: str, negative: bool, updates_name: str = "updates"):
    """GatherND / ScatterND / TensorFlow's ``*_nd``: ``indices`` of shape ``B + I + (k,)`` over ``data`` of shape
    ``B + P``; position ``(b, i, rest)`` of the iterated tensor (shape ``B + I + P[k:]``) maps to
    ``data[b, indices[b, i], rest]``. The batch dims are both looked up and carried, so the planner folds them
    into the row number; ``P[k:]`` is the slice."""
    check_tensor(data, "data")
    check_index(indices, "indices", data)
    if isinstance(batch_dims, bool) or not isinstance(batch_dims, int) or batch_dims < 0:
        raise ValueError(f"batch_dims must be a non-negative int, got {batch_dims!r}")
    if indices.dim() < 1:
        raise ValueError(f"{op}: indices must have rank >= 1, got a 0-d tensor")
    b, k = batch_dims, indices.size(-1)
    if b >= indices.dim() or b > data.dim():
        raise ValueError(f"{op}: batch_dims={b} must be less than the rank of indices ({indices.dim()}) and at most "
                         f"that of data ({data.dim()})")
    if b + k > data.dim():
        raise ValueError(f"{op}: indices.shape[-1] = {k} plus batch_dims = {b} exceeds the rank of data ({data.dim()})")
    if tuple(indices.shape[:b]) != tuple(data.shape[:b]):
        raise ValueError(f"{op}: the batch dims of indices {tuple(indices.shape[:b])} and data "
                         f"{tuple(data.shape[:b])} differ")
    if negative:
        indices = wrap_negative(indices, list(data.shape[b : b + k]), "indices")
    q = indices.dim() - 1  # B + I dims of the iterated tensor
    shape = tuple(indices.shape[:-1]) + tuple(data.shape[b + k :])
    carry = tuple((d, d) for d in range(b)) + tuple((q + j, b + k + j) for j in range(data.dim() - b - k))
    return XMap(shape, tuple(data.shape), indices, tuple(range(q)), tuple(range(b, b + k)), carry, vector=True)


def gather_nd(data, indices, batch_dims: int = 0) -> torch.Tensor:
    """ONNX GatherND: slices ``data[b, indices[b, i]]``; output shape ``B + I + data.shape[b+k:]``."""
    return planner.gather(nd_map(data, indices, batch_dims, "GatherND", negative=True), data)


def nd_scatter(data, indices, updates, mode: str, op: str, negative: bool) -> torch.Tensor:
    m = nd_map(data, indices, 0, op, negative)
    check_updates(updates, data, reduces=mode != "assign")
    check_shape(updates, m.shape, "updates", " (indices.shape[:-1] + data.shape[indices.shape[-1]:])")
    return planner.scatter(m, data, updates, mode, include_self=True)


def scatter_nd(data, indices, updates, reduction: str = "none") -> torch.Tensor:
    """ONNX ScatterND: ``updates[i]`` (a slice of shape ``data.shape[k:]``) into ``data[indices[i]]``."""
    return nd_scatter(data, indices, updates, _reduction(reduction), "ScatterND", negative=True)
