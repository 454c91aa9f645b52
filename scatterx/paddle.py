"""Paddle's ``scatter`` and ``put_along_axis`` on scatterx's engine: torch tensors in, torch tensors out.

Both follow Paddle's semantics and are tested against golden vectors recorded by running Paddle itself
(``tests/frontends/golden/paddle.json``, made by ``tools/make_golden.py``). Results are new tensors: no input is
written. Indices are int32 or int64 tensors on the data's device; negative indices
count from the end of their axis, as in Paddle, and an index outside ``[-s, s)`` raises IndexError before
anything is written. The reductions take float32, float64, float16, bfloat16, int32 and int64 data (TypeError for
any other dtype); writing without a reduction takes any dtype.

:func:`scatter` implements the API of Paddle's design, ``scatter(x, index, updates, overwrite=True, axis=0,
reduce="add", include_self=False)``, of which Paddle 3.3 itself implements the ``axis=0``, ``reduce="add"``,
``include_self=False`` subset:

- ``index`` is 1-D (``updates`` has ``len(index)`` slices along ``axis``) or 0-D (``updates`` is one slice,
  i.e. ``x``'s shape without ``axis``);
- ``overwrite=True``: the indexed slices are replaced; with duplicate indices the last one wins (Paddle's CPU
  kernel writes in order; its documentation calls the order undefined). ``reduce`` and ``include_self`` are then
  ignored;
- ``overwrite=False``: the indexed slices are reduced with ``reduce`` (``"add"``, ``"mul"``, ``"mean"``,
  ``"amax"``, ``"amin"``). Without ``include_self`` they are reset first -- Paddle zeroes them for add, which is
  the same as reducing the updates alone; scatterx generalises that to the other reductions (each starts from its
  own identity). With ``include_self`` ``x``'s values take part (mean counts them).

:func:`put_along_axis` is Paddle's, including its ``broadcast`` argument.
"""

from __future__ import annotations

from typing import Union

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

__all__ = ["put_along_axis", "scatter"]

_REDUCE = {"add": "sum", "mul": "prod", "multiply": "prod", "mean": "mean", "amax": "amax", "amin": "amin"}


def _mode(reduce, table) -> str:
    if not isinstance(reduce, str):
        raise TypeError(f"reduce must be a str, got {type(reduce).__name__}")
    if reduce not in table:
        raise ValueError(f"reduce must be one of {list(table)}, got {reduce!r}")
    return table[reduce]


def _check_flags(**flags) -> None:
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{name} must be a bool, got {type(value).__name__}")


def scatter(
    x: torch.Tensor,
    index: torch.Tensor,
    updates: torch.Tensor,
    overwrite: bool = True,
    axis: int = 0,
    reduce: str = "add",
    include_self: bool = False,
) -> torch.Tensor:
    """Paddle's ``scatter``: a copy of ``x`` with the slices along ``axis`` named by ``index`` replaced by (or
    reduced with) the slices of ``updates``.

    Slice ``i`` of ``updates`` along ``axis`` goes to slice ``index[i]`` of ``x``; the slices no index names keep
    ``x``'s value. Beyond Paddle 3.3, which implements ``axis=0``, ``reduce="add"``, ``include_self=False``,
    every axis and reduction of Paddle's design is supported (see the module docstring).

    Args:
        x: tensor of rank >= 1.
        index: 1-D or 0-D int32 or int64 tensor on ``x``'s device; values in ``[-s, s)``, ``s = x.size(axis)``.
        updates: ``x``'s shape with ``len(index)`` along ``axis`` (1-D ``index``), or ``x``'s shape without
            ``axis`` (0-D ``index``); ``x``'s dtype and device.
        overwrite: replace the slices (True: with duplicate indices the last one wins; ``reduce`` and
            ``include_self`` are ignored) or reduce into them (False).
        axis: the axis the slices are taken along, in ``[-r, r)`` for ``x`` of rank ``r``.
        reduce: with ``overwrite=False``, ``"add"``, ``"mul"`` (or ``"multiply"``), ``"mean"``, ``"amax"`` or
            ``"amin"``. Checked even when ``overwrite=True``.
        include_self: with ``overwrite=False``, whether ``x``'s values take part in the reduction (mean counts
            them); without them the named slices hold the reduction of their updates alone.

    Returns:
        A new tensor of ``x``'s shape, dtype and device.

    Raises:
        TypeError: ``x``, ``index`` or ``updates`` is not a tensor, ``index`` is not int32/int64, ``updates``'
            dtype differs from ``x``'s, ``axis`` is not an int, ``reduce`` is not a string, ``overwrite`` or
            ``include_self`` is not a bool, or a reduction is asked of a dtype scatterx does not reduce.
        ValueError: ``reduce`` is not one of the names above, ``x`` is 0-d, ``index`` has more than one dim,
            ``updates`` has the wrong shape, or a tensor is on another device.
        IndexError: ``axis`` is out of range, or an index is outside ``[-s, s)``.

    Example:
        >>> x = torch.zeros(3, 2)
        >>> scatter(x, torch.tensor([2, -3]), torch.tensor([[1., 2.], [3., 4.]]))
        tensor([[3., 4.],
                [0., 0.],
                [1., 2.]])
        >>> scatter(torch.ones(3), torch.tensor([1, 1]), torch.tensor([4., 7.]), overwrite=False)
        tensor([ 1., 11.,  1.])
        >>> scatter(torch.ones(3), torch.tensor([1, 1]), torch.tensor([4., 7.]), overwrite=False, reduce="mean",
        ...         include_self=True)
        tensor([1., 4., 1.])
    """
    check_tensor(x, "x")
    check_index(index, "index", x)
    _check_flags(overwrite=overwrite, include_self=include_self)
    if x.dim() == 0:
        raise ValueError("scatter: x must have at least one dimension")
    mode = _mode(reduce, _REDUCE)
    mode = "assign" if overwrite else mode
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


def put_along_axis(
    arr: torch.Tensor,
    indices: torch.Tensor,
    values: Union[torch.Tensor, float],
    axis: int,
    reduce: str = "assign",
    include_self: bool = True,
    broadcast: bool = True,
) -> torch.Tensor:
    """Paddle's ``put_along_axis``: ``values`` written or reduced into a copy of ``arr`` at ``indices`` along
    ``axis`` (like ``torch.scatter_reduce``).

    ``out[u with u[axis] = indices[u]]`` receives ``values[u]`` for every position ``u`` of ``indices``. With
    ``broadcast=True`` (Paddle's default) ``indices`` and ``values`` are first broadcast to ``arr``'s shape with
    ``indices.shape[axis]`` along ``axis``, when ``indices`` fits in ``arr`` (a ValueError when it fits but does
    not broadcast, as Paddle's ``broadcast_to`` raises); with ``broadcast=False``
    ``indices`` must have ``arr``'s rank, and ``values`` (at least as large as ``indices``) is cut to
    ``indices``' shape.

    Args:
        arr: tensor of rank >= 1.
        indices: int32 or int64 tensor of ``arr``'s rank on ``arr``'s device; along every axis but ``axis`` at most
            ``arr``'s size. Values in ``[-s, s)``, ``s = arr.size(axis)``.
        values: a tensor of ``arr``'s dtype and device (broadcast as above), or a Python number.
        axis: the axis ``indices`` indexes, in ``[-r, r)`` for ``arr`` of rank ``r``.
        reduce: ``"assign"`` (write; with duplicate indices the last one in row-major order wins), ``"add"``,
            ``"mul"`` (or ``"multiply"``), ``"mean"``, ``"amax"`` or ``"amin"``.
        include_self: whether ``arr``'s values take part in the reduction (mean counts them).
        broadcast: whether ``indices`` and ``values`` are broadcast first.

    Returns:
        A new tensor of ``arr``'s shape, dtype and device.

    Raises:
        TypeError: ``arr`` or ``indices`` is not a tensor, ``values`` is neither a tensor nor a number,
            ``indices`` is not int32/int64, ``values``' dtype differs from ``arr``'s, ``axis`` is not an int,
            ``reduce`` is not a string, ``include_self`` or ``broadcast`` is not a bool, or a reduction is asked of
            a dtype scatterx does not reduce.
        ValueError: ``reduce`` is not one of the names above, ``arr`` is 0-d, ``indices``' (or, without
            broadcasting, ``values``') rank differs from ``arr``'s, the sizes do not fit (``indices`` larger than
            ``arr`` along another axis, or fitting but not broadcastable to it when broadcasting; ``values``
            smaller than ``indices`` or not broadcastable to it), or a tensor is on another device.
        IndexError: ``axis`` is out of range, or an index is outside ``[-s, s)``.

    Example:
        >>> arr = torch.zeros(2, 3)
        >>> put_along_axis(arr, torch.tensor([[1], [-1]]), torch.tensor([[5.], [6.]]), axis=1)
        tensor([[0., 5., 0.],
                [0., 0., 6.]])
        >>> put_along_axis(arr, torch.tensor([[1]]), 5., axis=1)  # indices broadcast to every row
        tensor([[0., 5., 0.],
                [0., 5., 0.]])
        >>> put_along_axis(arr, torch.tensor([[1]]), 5., axis=1, broadcast=False)
        tensor([[0., 5., 0.],
                [0., 0., 0.]])
        >>> put_along_axis(torch.ones(3), torch.tensor([0, 0]), torch.tensor([2., 3.]), axis=0, reduce="add")
        tensor([6., 1., 1.])
    """
    check_tensor(arr, "arr")
    check_index(indices, "indices", arr)
    _check_flags(include_self=include_self, broadcast=broadcast)
    mode = _mode(reduce, _PUT_REDUCE)
    if arr.dim() == 0:
        raise ValueError("put_along_axis: arr must have at least one dimension")
    if indices.dim() != arr.dim():
        raise ValueError("put_along_axis: indices and arr must have the same number of dimensions")
    axis = normalize_axis(axis, arr.dim())
    values = scalar_or_tensor(values, arr, "values")
    check_updates(values, arr, "values", reduces=mode != "assign")
    if broadcast:
        shape = list(arr.shape)
        shape[axis] = indices.size(axis)
        if all(a >= i for a, i in zip(arr.shape, indices.shape)):  # (else Paddle keeps indices' own shape)
            if not _broadcastable(indices.shape, shape):  # Paddle's broadcast_to refuses it
                raise ValueError(
                    f"put_along_axis: indices of shape {tuple(indices.shape)} cannot be broadcast to "
                    f"{tuple(shape)} (arr's shape with indices' size along axis {axis}); pass broadcast=False "
                    "to write at indices' own positions"
                )
            indices = indices.expand(shape)
        if not _broadcastable_to(values.shape, indices.shape):
            raise ValueError(
                f"put_along_axis: values of shape {tuple(values.shape)} cannot be broadcast to the "
                f"shape of indices {tuple(indices.shape)}"
            )
        values = values.expand(indices.shape)
    elif values.dim() == 0:
        values = values.expand(indices.shape)
    elif values.dim() != indices.dim():
        raise ValueError("put_along_axis: indices and values must have the same number of dimensions")
    for d in range(arr.dim()):
        if (d != axis and indices.size(d) > arr.size(d)) or indices.size(d) > values.size(d):
            raise ValueError(
                f"put_along_axis: size mismatch at dim {d}: arr {tuple(arr.shape)}, indices "
                f"{tuple(indices.shape)}, values {tuple(values.shape)}"
            )
    for d in range(arr.dim()):
        values = values.narrow(d, 0, indices.size(d))
    indices = wrap_negative(indices, arr.size(axis), "indices")
    m = XMap.along_dim(indices, arr.shape, axis, names=("indices", "arr"), op="put_along_axis")
    return planner.scatter(m, arr, values, mode, include_self=include_self)


def _broadcastable(shape, target) -> bool:
    return all(s == t or s == 1 for s, t in zip(shape, target))


def _broadcastable_to(shape, target) -> bool:
    """Whether ``torch.Tensor.expand`` takes a tensor of ``shape`` to ``target`` (trailing dims aligned)."""
    return len(shape) <= len(target) and _broadcastable(shape[::-1], target[::-1])
