"""Paddle's ``scatter`` and ``put_along_axis`` on scatterx's engine: torch tensors in and out.

``scatter(x, index, updates, overwrite=True, axis=0, reduce="add", include_self=False)`` follows Paddle's API
design; Paddle 3.3 itself implements the ``axis=0``, ``reduce="add"``, ``include_self=False`` subset:
- ``index`` is 1-D (``updates`` has ``len(index)`` slices along ``axis``) or 0-D (``updates`` is one slice, i.e.
  ``x``'s shape without ``axis``). Negative indices count from the end, as in Paddle.
- ``overwrite=True``: the indexed slices are replaced; with duplicates the last one wins (Paddle's CPU kernel
  writes in order; its docs call the order undefined). ``reduce``/``include_self`` are then ignored.
- ``overwrite=False``: the indexed slices are reduced with ``reduce`` (add, mul, mean, amax, amin). Without
  ``include_self`` they first reset -- Paddle zeroes them for add, which is the same as reducing the updates
  alone; that generalisation (a reduction's own identity) is what the other reductions use. With
  ``include_self`` x's values take part (mean counts them).
``put_along_axis`` is Paddle's, including ``broadcast``. Golden vectors: tests/golden/paddle.json.
"""

from __future__ import annotations

import torch

from . import planner
from ._frontend import (
    check_index,
    check_shape,
    check_tensor,
    check_updates,
    normalize_axis,
    scalar_or_tensor,
    wrap_negative,
)
from .planner import XMap

_REDUCE = {"add": "sum", "mul": "prod", "multiply": "prod", "mean": "mean", "amax": "amax", "amin": "amin"}


def scatter(x, index, updates, overwrite: bool = True, axis: int = 0, reduce: str = "add",
            include_self: bool = False) -> torch.Tensor:
    check_tensor(x, "x")
    check_index(index, "index", x)
    if x.dim() == 0:
        raise ValueError("scatter: x must have at least one dimension")
    if reduce not in _REDUCE:
        raise ValueError(f"reduce must be one of {list(_REDUCE)}, got {reduce!r}")
    mode = "assign" if overwrite else _REDUCE[reduce]
    check_updates(updates, x, reduces=mode != "assign")
    axis = normalize_axis(axis, x.dim())
    if index.dim() > 1:
        raise ValueError(f"scatter: index must be 1-D or 0-D, got shape {tuple(index.shape)}")
    if index.dim() == 0:
        expected = list(x.shape[:axis]) + list(x.shape[axis + 1 :])
        check_shape(updates, expected, "updates", " (x's shape without axis, for a 0-D index)")
        index, updates = index.view(1), updates.unsqueeze(axis)
    else:
        expected = list(x.shape)
        expected[axis] = index.numel()
        check_shape(updates, expected, "updates", f" (x's shape with len(index) along axis {axis})")
    index = wrap_negative(index, x.size(axis), "index")
    return planner.scatter(XMap.slices(index, x.shape, axis), x, updates, mode, include_self=include_self)


_PUT_REDUCE = {"assign": "assign", **_REDUCE}


def put_along_axis(arr, indices, values, axis: int, reduce: str = "assign", include_self: bool = True,
                   broadcast: bool = True) -> torch.Tensor:
    """Paddle's ``put_along_axis``: ``values`` reduced into ``arr`` at ``indices`` along ``axis`` (like
    ``torch.scatter_reduce``). With ``broadcast=True`` (Paddle's default) ``indices`` and ``values`` are first
    broadcast to ``arr``'s shape with ``indices.shape[axis]`` along ``axis``, when ``indices`` fits in ``arr``."""
    check_tensor(arr, "arr")
    check_index(indices, "indices", arr)
    if reduce not in _PUT_REDUCE:
        raise ValueError(f"reduce must be one of {list(_PUT_REDUCE)}, got {reduce!r}")
    mode = _PUT_REDUCE[reduce]
    if indices.dim() != arr.dim():
        raise ValueError("put_along_axis: indices and arr must have the same number of dimensions")
    axis = normalize_axis(axis, arr.dim())
    values = scalar_or_tensor(values, arr, "values")
    check_updates(values, arr, "values", reduces=mode != "assign")
    if broadcast:
        shape = list(arr.shape)
        shape[axis] = indices.size(axis)
        if all(a >= i for a, i in zip(arr.shape, indices.shape)):
            indices = indices.expand(shape) if _broadcastable(indices.shape, shape) else indices
            values = values.expand(indices.shape)
        else:
            values = values.expand(indices.shape)
    elif values.dim() == 0:
        values = values.expand(indices.shape)
    elif values.dim() != indices.dim():
        raise ValueError("put_along_axis: indices and values must have the same number of dimensions")
    for d in range(arr.dim()):
        if (d != axis and indices.size(d) > arr.size(d)) or indices.size(d) > values.size(d):
            raise ValueError(f"put_along_axis: size mismatch at dim {d}: arr {tuple(arr.shape)}, indices "
                             f"{tuple(indices.shape)}, values {tuple(values.shape)}")
    for d in range(arr.dim()):
        values = values.narrow(d, 0, indices.size(d))
    indices = wrap_negative(indices, arr.size(axis), "indices")
    m = XMap.along_dim(indices, arr.shape, axis, names=("indices", "arr"), op="put_along_axis")
    return planner.scatter(m, arr, values, mode, include_self=include_self)


def _broadcastable(shape, target) -> bool:
    return all(s == t or s == 1 for s, t in zip(shape, target))
