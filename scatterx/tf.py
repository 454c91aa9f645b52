"""TensorFlow's scatter/gather/segment operations on scatterx's engine, with TensorFlow's rules (as on its CPU):

- ``tensor_scatter_nd_*`` and ``gather_nd``: indices must be in range -- negative or too large raises IndexError
  (TensorFlow's CPU kernels raise InvalidArgumentError; its GPU kernels ignore or zero-fill instead).
- ``unsorted_segment_*``: ``segment_ids`` has the shape of a prefix of ``data.shape``; negative ids are dropped;
  ids ``>= num_segments`` raise IndexError. Empty segments hold 0 (sum, mean), 1 (prod), the dtype's lowest
  value (max: the most negative finite float, not -inf) or highest (min) -- max/min start from those values, so
  a segment of ``-inf`` alone gives the lowest finite value, exactly as in TensorFlow.
- ``tensor_scatter_nd_update`` with duplicate indices: the last update wins (TensorFlow does not promise an order).
Golden vectors from TensorFlow itself are in tests/golden/tensorflow.json (``tools/make_golden.py``).
"""

from __future__ import annotations

import torch

from . import planner
from ._frontend import check_index, check_tensor, check_updates, nd_gather, nd_scatter
from .planner import XMap


def tensor_scatter_nd_update(tensor, indices, updates) -> torch.Tensor:
    return nd_scatter(tensor, indices, updates, "assign", "tensor_scatter_nd_update", negative=False)


def tensor_scatter_nd_add(tensor, indices, updates) -> torch.Tensor:
    return nd_scatter(tensor, indices, updates, "sum", "tensor_scatter_nd_add", negative=False)


def tensor_scatter_nd_sub(tensor, indices, updates) -> torch.Tensor:
    check_tensor(updates, "updates")
    return nd_scatter(tensor, indices, -updates, "sum", "tensor_scatter_nd_sub", negative=False)


def tensor_scatter_nd_max(tensor, indices, updates) -> torch.Tensor:
    return nd_scatter(tensor, indices, updates, "amax", "tensor_scatter_nd_max", negative=False)


def tensor_scatter_nd_min(tensor, indices, updates) -> torch.Tensor:
    return nd_scatter(tensor, indices, updates, "amin", "tensor_scatter_nd_min", negative=False)


def gather_nd(params, indices, batch_dims: int = 0) -> torch.Tensor:
    return nd_gather(params, indices, batch_dims, "gather_nd", negative=False)


def _start(dtype: torch.dtype, reduce: str):
    """The value TensorFlow initialises each segment with (what an empty segment keeps)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _unsorted_segment(data, segment_ids, num_segments, reduce: str) -> torch.Tensor:
    check_tensor(data, "data")
    check_index(segment_ids, "segment_ids", data)
    check_updates(data, data, "data")
    r = segment_ids.dim()
    if tuple(segment_ids.shape) != tuple(data.shape[:r]):
        raise ValueError(f"segment_ids.shape {tuple(segment_ids.shape)} must be a prefix of data.shape "
                         f"{tuple(data.shape)}")
    if isinstance(num_segments, torch.Tensor):
        num_segments = int(num_segments)
    if isinstance(num_segments, bool) or not isinstance(num_segments, int) or num_segments < 0:
        raise ValueError(f"num_segments must be a non-negative int, got {num_segments!r}")
    ids = segment_ids.reshape(-1)
    rows = data.reshape((ids.numel(),) + tuple(data.shape[r:]))
    if torch.compiler.is_compiling():
        # traced, no value is read: negative ids go to one extra segment, cut off after
        ids = torch.where(ids < 0, torch.full_like(ids, num_segments), ids)
        shape = (num_segments + 1,) + tuple(data.shape[r:])
        base = torch.full(shape, _start(data.dtype, reduce), dtype=data.dtype, device=data.device)
        m = XMap.slices(ids, shape, 0)
        return planner.scatter(m, base, rows, reduce, include_self=reduce != "mean")[:num_segments]
    if ids.numel() and bool((ids < 0).any()):  # negative ids are dropped
        keep = ids >= 0
        ids, rows = ids[keep], rows[keep]
    shape = (num_segments,) + tuple(data.shape[r:])
    base = torch.full(shape, _start(data.dtype, reduce), dtype=data.dtype, device=data.device)
    m = XMap.slices(ids, shape, 0)
    return planner.scatter(m, base, rows, reduce, include_self=reduce != "mean")


def unsorted_segment_sum(data, segment_ids, num_segments) -> torch.Tensor:
    return _unsorted_segment(data, segment_ids, num_segments, "sum")


def unsorted_segment_prod(data, segment_ids, num_segments) -> torch.Tensor:
    return _unsorted_segment(data, segment_ids, num_segments, "prod")


def unsorted_segment_max(data, segment_ids, num_segments) -> torch.Tensor:
    return _unsorted_segment(data, segment_ids, num_segments, "amax")


def unsorted_segment_min(data, segment_ids, num_segments) -> torch.Tensor:
    return _unsorted_segment(data, segment_ids, num_segments, "amin")


def unsorted_segment_mean(data, segment_ids, num_segments) -> torch.Tensor:
    return _unsorted_segment(data, segment_ids, num_segments, "mean")
