"""TensorFlow's scatter, gather and segment operations on scatterx's engine: torch tensors in, torch tensors out.

The functions take TensorFlow's arguments (``tensor``, ``indices``, ``updates``; ``params``; ``data``,
``segment_ids``, ``num_segments``) and follow TensorFlow's rules as its CPU kernels apply them; they are tested
against golden vectors recorded by running TensorFlow itself (``tests/frontends/golden/tensorflow.json``, made by
``tools/make_golden.py``). Results are new tensors: no input is written.

- ``tensor_scatter_nd_*`` and :func:`gather_nd`: indices must be in range -- a negative or too large one raises
  IndexError (TensorFlow's CPU kernels raise ``InvalidArgumentError``; its GPU kernels ignore or zero-fill
  instead).
- :func:`tensor_scatter_nd_update` with duplicate indices: the last update wins (TensorFlow does not promise an
  order).
- ``unsorted_segment_*``: ``segment_ids`` has the shape of a prefix of ``data.shape``; negative ids are dropped;
  ids ``>= num_segments`` raise IndexError. Empty segments hold 0 (sum, mean), 1 (prod), the dtype's lowest value
  (max: the most negative finite float, not ``-inf``) or its highest (min) -- max/min start from those values, so
  a segment of ``-inf`` alone gives the lowest finite value, exactly as in TensorFlow.
- Indices are int32 or int64 tensors on the data's device. The reductions (every function but
  :func:`tensor_scatter_nd_update` and :func:`gather_nd`) take float32, float64, float16, bfloat16, int32 and
  int64 data (TypeError for any other dtype).

.. Why this module is long: each of its eleven functions documents its arguments, result and errors in full (the
   ``tensor_scatter_nd_*`` and ``unsorted_segment_*`` families repeat what they share, for their reference pages).
"""

from __future__ import annotations

import operator
from typing import Union

import torch

from . import planner
from ._frontend import check_index, check_tensor, check_updates, nd_gather, nd_scatter
from ._reductions import accumulator_dtype
from .ops._checks import INDEX_DTYPES
from .planner import XMap

__all__ = [
    "gather_nd",
    "tensor_scatter_nd_add",
    "tensor_scatter_nd_max",
    "tensor_scatter_nd_min",
    "tensor_scatter_nd_sub",
    "tensor_scatter_nd_update",
    "unsorted_segment_max",
    "unsorted_segment_mean",
    "unsorted_segment_min",
    "unsorted_segment_prod",
    "unsorted_segment_sum",
]


def _scatter_nd(tensor, indices, updates, mode: str, op: str) -> torch.Tensor:
    check_tensor(tensor, "tensor")  # (TensorFlow's names in the messages; nd_scatter checks the rest)
    check_tensor(updates, "updates")
    return nd_scatter(tensor, indices, updates, mode, op, negative=False)


def tensor_scatter_nd_update(tensor: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor) -> torch.Tensor:
    """``tf.tensor_scatter_nd_update``: a copy of ``tensor`` with the slices at ``indices`` replaced by
    ``updates``.

    ``indices`` has shape ``I + (k,)``; ``updates[i]``, a slice of shape ``tensor.shape[k:]``, goes to
    ``tensor[indices[i]]``. The positions no index names keep ``tensor``'s value. With duplicate indices the last
    update wins.

    Args:
        tensor: the tensor to update, of rank >= 1, any dtype.
        indices: int32 or int64 tensor of rank >= 1 on ``tensor``'s device; its last dim holds
            ``k <= rank(tensor)`` coordinates, each in ``[0, s)`` for the size ``s`` of its dim.
        updates: tensor of shape ``indices.shape[:-1] + tensor.shape[k:]``, with ``tensor``'s dtype and device.

    Returns:
        A new tensor of ``tensor``'s shape, dtype and device.

    Raises:
        TypeError: an argument is not a tensor, ``indices`` is not int32/int64, or ``updates``' dtype differs from
            ``tensor``'s.
        ValueError: ``tensor`` or ``indices`` is 0-d, ``k`` exceeds ``tensor``'s rank, ``updates`` has the wrong
            shape, or a tensor is on another device.
        IndexError: a coordinate is negative or not less than the size of its dim.

    Example:
        >>> tensor_scatter_nd_update(torch.zeros(4), torch.tensor([[1], [3], [1]]), torch.tensor([5., 6., 7.]))
        tensor([0., 7., 0., 6.])
    """
    return _scatter_nd(tensor, indices, updates, "assign", "tensor_scatter_nd_update")


def tensor_scatter_nd_add(tensor: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor) -> torch.Tensor:
    """``tf.tensor_scatter_nd_add``: a copy of ``tensor`` with ``updates`` added at ``indices``.

    ``indices`` has shape ``I + (k,)``; ``updates[i]``, a slice of shape ``tensor.shape[k:]``, is added to
    ``tensor[indices[i]]`` (duplicates add up). The positions no index names keep ``tensor``'s value.

    Args:
        tensor: the tensor to update, of rank >= 1.
        indices: int32 or int64 tensor of rank >= 1 on ``tensor``'s device; its last dim holds
            ``k <= rank(tensor)`` coordinates, each in ``[0, s)`` for the size ``s`` of its dim.
        updates: tensor of shape ``indices.shape[:-1] + tensor.shape[k:]``, with ``tensor``'s dtype and device.

    Returns:
        A new tensor of ``tensor``'s shape, dtype and device.

    Raises:
        TypeError: an argument is not a tensor, ``indices`` is not int32/int64, ``updates``' dtype differs from
            ``tensor``'s, or ``tensor``'s dtype is not one scatterx reduces.
        ValueError: ``tensor`` or ``indices`` is 0-d, ``k`` exceeds ``tensor``'s rank, ``updates`` has the wrong
            shape, or a tensor is on another device.
        IndexError: a coordinate is negative or not less than the size of its dim.

    Example:
        >>> tensor_scatter_nd_add(torch.ones(2, 2), torch.tensor([[1], [1]]), torch.tensor([[1., 2.], [3., 4.]]))
        tensor([[1., 1.],
                [5., 7.]])
    """
    return _scatter_nd(tensor, indices, updates, "sum", "tensor_scatter_nd_add")


def tensor_scatter_nd_sub(tensor: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor) -> torch.Tensor:
    """``tf.tensor_scatter_nd_sub``: a copy of ``tensor`` with ``updates`` subtracted at ``indices``.

    ``indices`` has shape ``I + (k,)``; ``updates[i]``, a slice of shape ``tensor.shape[k:]``, is subtracted
    from ``tensor[indices[i]]`` (duplicates add up). The positions no index names keep ``tensor``'s value.

    Args:
        tensor: the tensor to update, of rank >= 1.
        indices: int32 or int64 tensor of rank >= 1 on ``tensor``'s device; its last dim holds
            ``k <= rank(tensor)`` coordinates, each in ``[0, s)`` for the size ``s`` of its dim.
        updates: tensor of shape ``indices.shape[:-1] + tensor.shape[k:]``, with ``tensor``'s dtype and device.

    Returns:
        A new tensor of ``tensor``'s shape, dtype and device.

    Raises:
        TypeError: an argument is not a tensor, ``indices`` is not int32/int64, ``updates``' dtype differs from
            ``tensor``'s, or ``tensor``'s dtype is not one scatterx reduces.
        ValueError: ``tensor`` or ``indices`` is 0-d, ``k`` exceeds ``tensor``'s rank, ``updates`` has the wrong
            shape, or a tensor is on another device.
        IndexError: a coordinate is negative or not less than the size of its dim.

    Example:
        >>> tensor_scatter_nd_sub(torch.ones(2, 2), torch.tensor([[1]]), torch.tensor([[1., 2.]]))
        tensor([[ 1.,  1.],
                [ 0., -1.]])
    """
    check_tensor(tensor, "tensor")
    check_updates(updates, tensor)  # before negating: its dtype must be one scatterx reduces (not bool)
    return _scatter_nd(tensor, indices, -updates, "sum", "tensor_scatter_nd_sub")


def tensor_scatter_nd_max(tensor: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor) -> torch.Tensor:
    """``tf.tensor_scatter_nd_max``: a copy of ``tensor`` with each slice at ``indices`` the element-wise maximum
    of its value and the ``updates`` it receives.

    ``indices`` has shape ``I + (k,)``; ``updates[i]``, a slice of shape ``tensor.shape[k:]``, is reduced into
    ``tensor[indices[i]]``. The positions no index names keep ``tensor``'s value.

    Args:
        tensor: the tensor to update, of rank >= 1.
        indices: int32 or int64 tensor of rank >= 1 on ``tensor``'s device; its last dim holds
            ``k <= rank(tensor)`` coordinates, each in ``[0, s)`` for the size ``s`` of its dim.
        updates: tensor of shape ``indices.shape[:-1] + tensor.shape[k:]``, with ``tensor``'s dtype and device.

    Returns:
        A new tensor of ``tensor``'s shape, dtype and device.

    Raises:
        TypeError: an argument is not a tensor, ``indices`` is not int32/int64, ``updates``' dtype differs from
            ``tensor``'s, or ``tensor``'s dtype is not one scatterx reduces.
        ValueError: ``tensor`` or ``indices`` is 0-d, ``k`` exceeds ``tensor``'s rank, ``updates`` has the wrong
            shape, or a tensor is on another device.
        IndexError: a coordinate is negative or not less than the size of its dim.

    Example:
        >>> tensor_scatter_nd_max(torch.zeros(3), torch.tensor([[0], [2], [0]]), torch.tensor([4., -1., 7.]))
        tensor([7., 0., 0.])
    """
    return _scatter_nd(tensor, indices, updates, "amax", "tensor_scatter_nd_max")


def tensor_scatter_nd_min(tensor: torch.Tensor, indices: torch.Tensor, updates: torch.Tensor) -> torch.Tensor:
    """``tf.tensor_scatter_nd_min``: a copy of ``tensor`` with each slice at ``indices`` the element-wise minimum
    of its value and the ``updates`` it receives.

    ``indices`` has shape ``I + (k,)``; ``updates[i]``, a slice of shape ``tensor.shape[k:]``, is reduced into
    ``tensor[indices[i]]``. The positions no index names keep ``tensor``'s value.

    Args:
        tensor: the tensor to update, of rank >= 1.
        indices: int32 or int64 tensor of rank >= 1 on ``tensor``'s device; its last dim holds
            ``k <= rank(tensor)`` coordinates, each in ``[0, s)`` for the size ``s`` of its dim.
        updates: tensor of shape ``indices.shape[:-1] + tensor.shape[k:]``, with ``tensor``'s dtype and device.

    Returns:
        A new tensor of ``tensor``'s shape, dtype and device.

    Raises:
        TypeError: an argument is not a tensor, ``indices`` is not int32/int64, ``updates``' dtype differs from
            ``tensor``'s, or ``tensor``'s dtype is not one scatterx reduces.
        ValueError: ``tensor`` or ``indices`` is 0-d, ``k`` exceeds ``tensor``'s rank, ``updates`` has the wrong
            shape, or a tensor is on another device.
        IndexError: a coordinate is negative or not less than the size of its dim.

    Example:
        >>> tensor_scatter_nd_min(torch.zeros(3), torch.tensor([[0], [2], [0]]), torch.tensor([4., -1., 7.]))
        tensor([ 0.,  0., -1.])
    """
    return _scatter_nd(tensor, indices, updates, "amin", "tensor_scatter_nd_min")


def gather_nd(params: torch.Tensor, indices: torch.Tensor, batch_dims: int = 0) -> torch.Tensor:
    """``tf.gather_nd``: the slices of ``params`` named by index tuples.

    ``indices`` has shape ``B + I + (k,)`` and ``params`` shape ``B + P``, where ``B`` are the ``batch_dims``
    leading dims they share; ``out[b, i] = params[b, indices[b, i]]``, the slice of shape ``P[k:]`` at the ``k``
    coordinates ``indices[b, i]``.

    Args:
        params: tensor of rank >= 1, any dtype.
        indices: int32 or int64 tensor of rank >= 1 on ``params``' device; its last dim holds
            ``k <= rank(params) - batch_dims`` coordinates, each in ``[0, s)`` for the size ``s`` of its dim.
        batch_dims: the number of leading dims ``indices`` and ``params`` share (equal sizes).

    Returns:
        A new tensor of shape ``B + I + P[k:]``, with ``params``' dtype and device.

    Raises:
        TypeError: ``params`` or ``indices`` is not a tensor, ``indices`` is not int32/int64, or ``batch_dims`` is
            not an int.
        ValueError: ``params`` or ``indices`` is 0-d, ``batch_dims`` is negative or not less than ``indices``'
            rank, ``batch_dims + k`` exceeds ``params``' rank, the batch dims differ, or ``indices`` is on another
            device.
        IndexError: a coordinate is negative or not less than the size of its dim.

    Example:
        >>> params = torch.tensor([[1., 2.], [3., 4.]])
        >>> gather_nd(params, torch.tensor([[1, 0], [0, 1]]))
        tensor([3., 2.])
        >>> gather_nd(params, torch.tensor([[1], [0]]), batch_dims=1)
        tensor([2., 3.])
    """
    check_tensor(params, "params")
    return nd_gather(params, indices, batch_dims, "gather_nd", negative=False)


def _start(dtype: torch.dtype, reduce: str):
    """The value TensorFlow initialises each segment with (what an empty segment keeps)."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _num_segments(num_segments) -> int:
    """A non-negative Python int, or a 0-d int32/int64 tensor holding one (TensorFlow's scalar tensor)."""
    if isinstance(num_segments, torch.Tensor):
        if num_segments.dtype not in INDEX_DTYPES:
            raise TypeError(f"num_segments must be an int or an int32/int64 tensor, got dtype {num_segments.dtype}")
        if num_segments.dim() != 0:
            raise ValueError(f"num_segments must be a scalar, got a tensor of shape {tuple(num_segments.shape)}")
        num_segments = int(num_segments)
    elif isinstance(num_segments, bool):
        raise TypeError("num_segments must be an int, got bool")
    elif not isinstance(num_segments, int):
        try:  # a NumPy integer, as TensorFlow takes one (a NumPy bool refuses)
            num_segments = operator.index(num_segments)
        except TypeError:
            raise TypeError(f"num_segments must be an int, got {type(num_segments).__name__}") from None
    if num_segments < 0:
        raise ValueError(f"num_segments must be a non-negative int, got {num_segments!r}")
    return num_segments


def _unsorted_segment(data, segment_ids, num_segments, reduce: str) -> torch.Tensor:
    check_tensor(data, "data")
    check_index(segment_ids, "segment_ids", data)
    check_updates(data, data, "data")
    r = segment_ids.dim()
    if tuple(segment_ids.shape) != tuple(data.shape[:r]):
        raise ValueError(
            f"segment_ids.shape {tuple(segment_ids.shape)} must be a prefix of data.shape {tuple(data.shape)}"
        )
    num_segments = _num_segments(num_segments)
    ids = segment_ids.reshape(-1)
    rows = data.reshape((ids.numel(),) + tuple(data.shape[r:]))
    if torch.compiler.is_compiling():
        # traced, no value is read: negative ids go to one extra segment, cut off after; an id from num_segments on
        # moves up one, past that segment, so that the scatter's range check still refuses it (IndexError, its
        # message counting the extra segment)
        ids = torch.where(ids < 0, torch.full_like(ids, num_segments), torch.where(ids >= num_segments, ids + 1, ids))
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


def unsorted_segment_sum(
    data: torch.Tensor, segment_ids: torch.Tensor, num_segments: Union[int, torch.Tensor]
) -> torch.Tensor:
    """``tf.math.unsorted_segment_sum``: the sum of the slices of ``data`` in each segment.

    ``out[s] = sum of data[i]`` over the positions ``i`` with ``segment_ids[i] == s``, ``segment_ids`` indexing
    the leading dims of ``data``. Negative ids are dropped; an empty segment is 0.

    Args:
        data: tensor of a dtype scatterx reduces.
        segment_ids: int32 or int64 tensor on ``data``'s device, whose shape is a prefix of ``data.shape``; ids in
            ``(-inf, num_segments)``.
        num_segments: the number of segments, a non-negative int or a 0-d int32/int64 tensor.

    Returns:
        A new tensor of shape ``(num_segments,) + data.shape[segment_ids.dim():]``, with ``data``'s dtype and
        device.

    Raises:
        TypeError: ``data`` or ``segment_ids`` is not a tensor, ``segment_ids`` is not int32/int64, ``data``'s
            dtype is not one scatterx reduces, or ``num_segments`` is not an int (or an integer tensor).
        ValueError: ``segment_ids``' shape is not a prefix of ``data.shape``, ``num_segments`` is negative or not
            a scalar, or ``segment_ids`` is on another device.
        IndexError: an id is ``>= num_segments``.

    Example:
        >>> unsorted_segment_sum(torch.tensor([1., 2., 3., 4.]), torch.tensor([0, 2, 0, -1]), 3)
        tensor([4., 0., 2.])
    """
    return _unsorted_segment(data, segment_ids, num_segments, "sum")


def unsorted_segment_prod(
    data: torch.Tensor, segment_ids: torch.Tensor, num_segments: Union[int, torch.Tensor]
) -> torch.Tensor:
    """``tf.math.unsorted_segment_prod``: the product of the slices of ``data`` in each segment.

    ``out[s] = product of data[i]`` over the positions ``i`` with ``segment_ids[i] == s``, ``segment_ids``
    indexing the leading dims of ``data``. Negative ids are dropped; an empty segment is 1.

    Args:
        data: tensor of a dtype scatterx reduces.
        segment_ids: int32 or int64 tensor on ``data``'s device, whose shape is a prefix of ``data.shape``; ids in
            ``(-inf, num_segments)``.
        num_segments: the number of segments, a non-negative int or a 0-d int32/int64 tensor.

    Returns:
        A new tensor of shape ``(num_segments,) + data.shape[segment_ids.dim():]``, with ``data``'s dtype and
        device.

    Raises:
        TypeError: ``data`` or ``segment_ids`` is not a tensor, ``segment_ids`` is not int32/int64, ``data``'s
            dtype is not one scatterx reduces, or ``num_segments`` is not an int (or an integer tensor).
        ValueError: ``segment_ids``' shape is not a prefix of ``data.shape``, ``num_segments`` is negative or not
            a scalar, or ``segment_ids`` is on another device.
        IndexError: an id is ``>= num_segments``.

    Example:
        >>> unsorted_segment_prod(torch.tensor([2., 3., 4.]), torch.tensor([1, 1, 0]), 3)
        tensor([4., 6., 1.])
    """
    return _unsorted_segment(data, segment_ids, num_segments, "prod")


def unsorted_segment_max(
    data: torch.Tensor, segment_ids: torch.Tensor, num_segments: Union[int, torch.Tensor]
) -> torch.Tensor:
    """``tf.math.unsorted_segment_max``: the element-wise maximum of the slices of ``data`` in each segment.

    ``out[s] = max of data[i]`` over the positions ``i`` with ``segment_ids[i] == s``, ``segment_ids`` indexing
    the leading dims of ``data``. Negative ids are dropped. Each segment starts from the dtype's lowest value
    (for floats the most negative finite one, not ``-inf``), which an empty segment keeps and a segment of
    ``-inf`` alone gives, as in TensorFlow.

    Args:
        data: tensor of a dtype scatterx reduces.
        segment_ids: int32 or int64 tensor on ``data``'s device, whose shape is a prefix of ``data.shape``; ids in
            ``(-inf, num_segments)``.
        num_segments: the number of segments, a non-negative int or a 0-d int32/int64 tensor.

    Returns:
        A new tensor of shape ``(num_segments,) + data.shape[segment_ids.dim():]``, with ``data``'s dtype and
        device.

    Raises:
        TypeError: ``data`` or ``segment_ids`` is not a tensor, ``segment_ids`` is not int32/int64, ``data``'s
            dtype is not one scatterx reduces, or ``num_segments`` is not an int (or an integer tensor).
        ValueError: ``segment_ids``' shape is not a prefix of ``data.shape``, ``num_segments`` is negative or not
            a scalar, or ``segment_ids`` is on another device.
        IndexError: an id is ``>= num_segments``.

    Example:
        >>> unsorted_segment_max(torch.tensor([1., 5., 3.]), torch.tensor([0, 0, 2]), 3)
        tensor([ 5.0000e+00, -3.4028e+38,  3.0000e+00])
    """
    return _unsorted_segment(data, segment_ids, num_segments, "amax")


def unsorted_segment_min(
    data: torch.Tensor, segment_ids: torch.Tensor, num_segments: Union[int, torch.Tensor]
) -> torch.Tensor:
    """``tf.math.unsorted_segment_min``: the element-wise minimum of the slices of ``data`` in each segment.

    ``out[s] = min of data[i]`` over the positions ``i`` with ``segment_ids[i] == s``, ``segment_ids`` indexing
    the leading dims of ``data``. Negative ids are dropped. Each segment starts from the dtype's highest value
    (for floats the largest finite one, not ``inf``), which an empty segment keeps, as in TensorFlow.

    Args:
        data: tensor of a dtype scatterx reduces.
        segment_ids: int32 or int64 tensor on ``data``'s device, whose shape is a prefix of ``data.shape``; ids in
            ``(-inf, num_segments)``.
        num_segments: the number of segments, a non-negative int or a 0-d int32/int64 tensor.

    Returns:
        A new tensor of shape ``(num_segments,) + data.shape[segment_ids.dim():]``, with ``data``'s dtype and
        device.

    Raises:
        TypeError: ``data`` or ``segment_ids`` is not a tensor, ``segment_ids`` is not int32/int64, ``data``'s
            dtype is not one scatterx reduces, or ``num_segments`` is not an int (or an integer tensor).
        ValueError: ``segment_ids``' shape is not a prefix of ``data.shape``, ``num_segments`` is negative or not
            a scalar, or ``segment_ids`` is on another device.
        IndexError: an id is ``>= num_segments``.

    Example:
        >>> unsorted_segment_min(torch.tensor([4, 1, 3]), torch.tensor([0, 0, 1]), 3)
        tensor([                  1,                   3, 9223372036854775807])
    """
    return _unsorted_segment(data, segment_ids, num_segments, "amin")


def unsorted_segment_mean(
    data: torch.Tensor, segment_ids: torch.Tensor, num_segments: Union[int, torch.Tensor]
) -> torch.Tensor:
    """``tf.math.unsorted_segment_mean``: the mean of the slices of ``data`` in each segment.

    ``out[s]`` is the mean of ``data[i]`` over the positions ``i`` with ``segment_ids[i] == s``,
    ``segment_ids`` indexing the leading dims of ``data``. Negative ids are dropped; an empty segment is 0.
    Integer ``data`` is averaged as TensorFlow's ``summed / N`` does: the integer sum divided by the count in
    float64 (``tf.truediv``), not rounded to an integer. float16 and bfloat16 too: their sum is rounded to the half
    type (``inf`` past its range, as TensorFlow's) before the divide.

    Args:
        data: tensor of a dtype scatterx reduces.
        segment_ids: int32 or int64 tensor on ``data``'s device, whose shape is a prefix of ``data.shape``; ids in
            ``(-inf, num_segments)``.
        num_segments: the number of segments, a non-negative int or a 0-d int32/int64 tensor.

    Returns:
        A new tensor of shape ``(num_segments,) + data.shape[segment_ids.dim():]`` on ``data``'s device, with
        ``data``'s dtype (float64 for integer ``data``).

    Raises:
        TypeError: ``data`` or ``segment_ids`` is not a tensor, ``segment_ids`` is not int32/int64, ``data``'s
            dtype is not one scatterx reduces, or ``num_segments`` is not an int (or an integer tensor).
        ValueError: ``segment_ids``' shape is not a prefix of ``data.shape``, ``num_segments`` is negative or not
            a scalar, or ``segment_ids`` is on another device.
        IndexError: an id is ``>= num_segments``.

    Example:
        >>> data = torch.tensor([[1., 2.], [3., 4.], [5., 6.]])
        >>> unsorted_segment_mean(data, torch.tensor([0, 0, -1]), 2)
        tensor([[2., 3.],
                [0., 0.]])
        >>> unsorted_segment_mean(torch.tensor([1, 2, 4]), torch.tensor([0, 0, 1]), 3)
        tensor([1.5000, 4.0000, 0.0000], dtype=torch.float64)
    """
    if isinstance(data, torch.Tensor) and (not data.is_floating_point() or accumulator_dtype(data.dtype) != data.dtype):
        # TensorFlow's summed / N: on integers the (wrapping) integer sum and the count, true-divided in float64; on
        # half types (accumulated in float32 by scatterx's mean) the sum rounded to the half type (inf past its
        # range), divided by the count in that type
        summed = _unsorted_segment(data, segment_ids, num_segments, "sum")
        ones = torch.ones(segment_ids.shape, dtype=torch.int64, device=data.device)
        counts = _unsorted_segment(ones, segment_ids, num_segments, "sum").clamp(min=1)
        counts = counts.reshape(counts.shape + (1,) * (summed.dim() - 1))
        if data.is_floating_point():
            return summed / counts.to(data.dtype)
        return summed.double() / counts.double()
    return _unsorted_segment(data, segment_ids, num_segments, "mean")
