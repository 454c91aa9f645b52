"""ONNX's gather and scatter operators on scatterx's engine: torch tensors in, torch tensors out.

The five functions follow the semantics of the ONNX operators of opset 18 -- ``GatherElements``,
``ScatterElements``, ``Gather``, ``GatherND`` and ``ScatterND`` -- with their attributes as keyword arguments
(``axis``, ``reduction``, ``batch_dims``); they are tested against the ``onnx`` package's reference
implementation. Results are new tensors: no input is written.

Indices may be negative and then count from the end of their axis, as ONNX allows. Where scatterx differs from
(or is stricter than) the ONNX specification:

- an index outside ``[-s, s)`` (``s`` the size of its axis) raises IndexError before anything is written;
- ``reduction="none"`` (assign) with duplicate indices: the last one in row-major order wins -- ONNX leaves
  that case undefined;
- the other reductions are ``"add"``, ``"mul"``, ``"max"`` and ``"min"``; the data's own value always takes part,
  as in ONNX. They reduce float32, float64, float16, bfloat16, int32 and int64 data (TypeError for any other
  dtype); gathers and ``"none"`` take any dtype;
- indices must be int32 or int64 tensors, on the data's device; a wrong argument raises TypeError, ValueError or
  IndexError (see each function) instead of failing inside a runtime.

Large results (32 MiB and more, on the CPU) are made in the memory of an earlier result that nothing references
any more, as onnxruntime's arena does, instead of fresh pages on every call: in a loop that drops each result
before the next call, no page faults. ``scatterx.planner.release_outputs()`` hands that memory back.

To export a model that uses these functions to ONNX, see :mod:`scatterx.export`.
"""

from __future__ import annotations

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
    wrapping_on_failure,
)
from .planner import XMap

__all__ = ["gather", "gather_elements", "gather_nd", "scatter_elements", "scatter_nd"]

_REDUCTIONS = {"none": "assign", "add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def _reduction(reduction: str) -> str:
    if not isinstance(reduction, str):
        raise TypeError(f"reduction must be a str, got {type(reduction).__name__}")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"reduction must be one of {list(_REDUCTIONS)}, got {reduction!r}")
    return _REDUCTIONS[reduction]


def _elements_map(data, indices, axis, op):
    """GatherElements/ScatterElements: ``u`` over ``indices``, ``t = u`` with ``t[axis] = indices[u]``."""
    check_tensor(data, "data")
    check_index(indices, "indices", data)
    if data.dim() == 0:
        raise ValueError(f"{op}: data must have rank >= 1, got a 0-d tensor")
    axis = normalize_axis(axis, data.dim())
    return XMap.along_dim(indices, data.shape, axis, names=("indices", "data"), op=op)


def gather_elements(data: torch.Tensor, indices: torch.Tensor, axis: int = 0) -> torch.Tensor:
    """ONNX ``GatherElements``: ``out[u] = data[u with u[axis] = indices[u]]``.

    The same as ``torch.gather(data, axis, indices)``, with negative indices counted from the end of ``axis``.

    Args:
        data: tensor of rank >= 1, any dtype.
        indices: int32 or int64 tensor of ``data``'s rank, on ``data``'s device; along every axis but ``axis`` at
            most ``data``'s size. Values in ``[-s, s)``, ``s = data.size(axis)``.
        axis: the axis ``indices`` indexes, in ``[-r, r)`` for ``data`` of rank ``r``.

    Returns:
        A new tensor of ``indices``' shape, with ``data``'s dtype and device.

    Raises:
        TypeError: ``data`` or ``indices`` is not a tensor, ``indices`` is not int32/int64, or ``axis`` is not an
            int.
        ValueError: ``data`` is 0-d, ``indices``' rank differs from ``data``'s, ``indices`` is larger than
            ``data`` along another axis, or ``indices`` is on another device.
        IndexError: ``axis`` is out of range, or an index is outside ``[-s, s)``.

    Example:
        >>> data = torch.tensor([[1., 2.], [3., 4.]])
        >>> gather_elements(data, torch.tensor([[0, 0], [1, -2]]), axis=1)
        tensor([[1., 1.],
                [4., 3.]])
    """
    m = _elements_map(data, indices, axis, "GatherElements")
    with planner.reusing_outputs():
        return wrapping_on_failure(lambda m: planner.gather(m, data), m, data.size(m.coords[0]))


def scatter_elements(
    data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, axis: int = 0, reduction: str = "none"
) -> torch.Tensor:
    """ONNX ``ScatterElements``: ``updates`` written or reduced into a copy of ``data`` along ``axis``.

    ``out[u with u[axis] = indices[u]]`` receives ``updates[u]`` for every position ``u`` of ``indices``; the
    positions no index names keep ``data``'s value. With a reduction ``data``'s own value takes part.

    Args:
        data: tensor of rank >= 1.
        indices: int32 or int64 tensor of ``data``'s rank, on ``data``'s device; along every axis but ``axis`` at
            most ``data``'s size. Values in ``[-s, s)``, ``s = data.size(axis)``.
        updates: tensor of ``indices``' shape, with ``data``'s dtype and device.
        axis: the axis ``indices`` indexes, in ``[-r, r)`` for ``data`` of rank ``r``.
        reduction: ``"none"`` (write; with duplicate indices the last one in row-major order wins), ``"add"``,
            ``"mul"``, ``"max"`` or ``"min"``.

    Returns:
        A new tensor of ``data``'s shape, dtype and device.

    Raises:
        TypeError: ``data``, ``indices`` or ``updates`` is not a tensor, ``indices`` is not int32/int64,
            ``updates``' dtype differs from ``data``'s, ``axis`` is not an int, ``reduction`` is not a string, or a
            reduction is asked of a dtype scatterx does not reduce.
        ValueError: ``reduction`` is not one of the five, ``data`` is 0-d, ``indices``' rank differs from
            ``data``'s or it is larger than ``data`` along another axis, ``updates``' shape is not ``indices``',
            or a tensor is on another device.
        IndexError: ``axis`` is out of range, or an index is outside ``[-s, s)``.

    Example:
        The example of the ONNX specification, with a negative index:

        >>> data = torch.tensor([[1., 2., 3., 4., 5.]])
        >>> scatter_elements(data, torch.tensor([[1, -2]]), torch.tensor([[10., 20.]]), axis=1)
        tensor([[ 1., 10.,  3., 20.,  5.]])
        >>> scatter_elements(torch.zeros(3), torch.tensor([0, 2, 0]), torch.tensor([1., 2., 3.]), reduction="add")
        tensor([4., 0., 2.])
    """
    mode = _reduction(reduction)
    m = _elements_map(data, indices, axis, "ScatterElements")
    check_updates(updates, data, reduces=mode != "assign")
    check_shape(updates, indices.shape, "updates", " (the shape of indices)")
    with planner.reusing_outputs():
        return wrapping_on_failure(
            lambda m: planner.scatter(m, data, updates, mode, include_self=True), m, data.size(m.coords[0])
        )


def gather(data: torch.Tensor, indices: torch.Tensor, axis: int = 0) -> torch.Tensor:
    """ONNX ``Gather``: whole slices of ``data`` along ``axis``, picked by ``indices`` (= ``tf.gather``,
    ``numpy.take``).

    ``out[i..., j..., k...] = data[i..., indices[j...], k...]``, of shape
    ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``; a 0-d ``indices`` removes ``axis``.

    Args:
        data: tensor of rank >= 1, any dtype.
        indices: int32 or int64 tensor of any shape, on ``data``'s device; values in ``[-s, s)``,
            ``s = data.size(axis)``.
        axis: the axis to gather along, in ``[-r, r)`` for ``data`` of rank ``r``.

    Returns:
        A new tensor of shape ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``, with ``data``'s dtype
        and device.

    Raises:
        TypeError: ``data`` or ``indices`` is not a tensor, ``indices`` is not int32/int64, or ``axis`` is not an
            int.
        ValueError: ``data`` is 0-d, or ``indices`` is on another device.
        IndexError: ``axis`` is out of range, or an index is outside ``[-s, s)``.

    Example:
        >>> data = torch.tensor([[1., 2., 3.], [4., 5., 6.]])
        >>> gather(data, torch.tensor([2, -3]), axis=1)
        tensor([[3., 1.],
                [6., 4.]])
        >>> gather(data, torch.tensor(-1))  # a 0-d index: the last row
        tensor([4., 5., 6.])
    """
    check_tensor(data, "data")
    check_index(indices, "indices", data)
    if data.dim() == 0:
        raise ValueError("Gather: data must have rank >= 1")
    axis = normalize_axis(axis, data.dim())
    indices = wrap_negative(indices, data.size(axis), "indices")
    q = indices.dim()
    shape = tuple(data.shape[:axis]) + tuple(indices.shape) + tuple(data.shape[axis + 1 :])
    after = tuple((axis + q + j, axis + 1 + j) for j in range(data.dim() - axis - 1))
    carry = tuple((d, d) for d in range(axis)) + after
    m = XMap(shape, tuple(data.shape), indices, tuple(range(axis, axis + q)), (axis,), carry)
    with planner.reusing_outputs():
        return planner.gather(m, data)


def gather_nd(data: torch.Tensor, indices: torch.Tensor, batch_dims: int = 0) -> torch.Tensor:
    """ONNX ``GatherND``: the slices of ``data`` named by index tuples.

    ``indices`` has shape ``B + I + (k,)`` and ``data`` shape ``B + P``, where ``B`` are the ``batch_dims``
    leading dims they share; ``out[b, i] = data[b, indices[b, i]]``, the slice of shape ``P[k:]`` at the ``k``
    coordinates ``indices[b, i]`` (each in ``[-s, s)`` for the size ``s`` of its dim).

    Args:
        data: tensor of rank >= 1, any dtype.
        indices: int32 or int64 tensor of rank >= 1 on ``data``'s device; its last dim holds
            ``k <= rank(data) - batch_dims`` coordinates.
        batch_dims: the number of leading dims ``indices`` and ``data`` share (equal sizes).

    Returns:
        A new tensor of shape ``B + I + P[k:]``, with ``data``'s dtype and device.

    Raises:
        TypeError: ``data`` or ``indices`` is not a tensor, ``indices`` is not int32/int64, or ``batch_dims`` is
            not an int.
        ValueError: ``data`` or ``indices`` is 0-d, ``batch_dims`` is negative or not less than ``indices``'
            rank, ``batch_dims + k`` exceeds ``data``'s rank, the batch dims differ, or ``indices`` is on another
            device.
        IndexError: a coordinate is outside ``[-s, s)``.

    Example:
        >>> data = torch.tensor([[1., 2.], [3., 4.]])
        >>> gather_nd(data, torch.tensor([[1, 0], [0, -1]]))  # elements
        tensor([3., 2.])
        >>> gather_nd(data, torch.tensor([[1]]))  # a row
        tensor([[3., 4.]])
        >>> gather_nd(data, torch.tensor([[1], [0]]), batch_dims=1)  # per row of data
        tensor([2., 3.])
    """
    with planner.reusing_outputs():
        return nd_gather(data, indices, batch_dims, "GatherND", negative=True)


def scatter_nd(
    data: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor, reduction: str = "none"
) -> torch.Tensor:
    """ONNX ``ScatterND``: slices of ``updates`` written or reduced into a copy of ``data`` at index tuples.

    ``indices`` has shape ``I + (k,)``; ``updates[i]``, a slice of shape ``data.shape[k:]``, goes to
    ``data[indices[i]]`` (each coordinate in ``[-s, s)`` for the size ``s`` of its dim). The positions no index
    names keep ``data``'s value; with a reduction ``data``'s own value takes part.

    Args:
        data: tensor of rank >= 1.
        indices: int32 or int64 tensor of rank >= 1 on ``data``'s device; its last dim holds
            ``k <= rank(data)`` coordinates.
        updates: tensor of shape ``indices.shape[:-1] + data.shape[k:]``, with ``data``'s dtype and device.
        reduction: ``"none"`` (write; with duplicate indices the last one in row-major order wins), ``"add"``,
            ``"mul"``, ``"max"`` or ``"min"``.

    Returns:
        A new tensor of ``data``'s shape, dtype and device.

    Raises:
        TypeError: ``data``, ``indices`` or ``updates`` is not a tensor, ``indices`` is not int32/int64,
            ``updates``' dtype differs from ``data``'s, ``reduction`` is not a string, or a reduction is asked of
            a dtype scatterx does not reduce.
        ValueError: ``reduction`` is not one of the five, ``data`` or ``indices`` is 0-d, ``k`` exceeds
            ``data``'s rank, ``updates`` has the wrong shape, or a tensor is on another device.
        IndexError: a coordinate is outside ``[-s, s)``.

    Example:
        >>> scatter_nd(torch.zeros(4), torch.tensor([[1], [-1], [1]]), torch.tensor([5., 6., 7.]))
        tensor([0., 7., 0., 6.])
        >>> scatter_nd(torch.ones(2, 2), torch.tensor([[0]]), torch.tensor([[2., 3.]]), reduction="mul")
        tensor([[2., 3.],
                [1., 1.]])
    """
    with planner.reusing_outputs():
        return nd_scatter(data, indices, updates, _reduction(reduction), "ScatterND", negative=True)
