"""PyTorch-compatible ``scatter_reduce``, ``scatter`` and ``gather`` on scatterx's kernels.

Drop-in replacements for ``torch.scatter_reduce``, ``torch.scatter`` and ``torch.gather``: the same arguments,
results and gradients. They are also the top-level ``scatterx.scatter_reduce``, ``scatterx.scatter`` and
``scatterx.gather``. An index expanded from 1-D (``index.view(-1, 1).expand_as(src)``, as PyG builds it) runs on
the slice kernel of :func:`scatterx.index_scatter_reduce`; any other index runs element by element.

torch's conventions kept on purpose:

- a 0-d ``input``, ``index`` or ``src`` counts as a 1-D tensor of one element (the result of ``gather`` has
  ``index``'s shape, that of the scatters ``input``'s);
- an empty index is accepted whatever its dtype and shape (nothing is read or written);
- the amax/amin gradient of ``scatter_reduce`` with ``include_self=False`` counts ``input``'s own value among the
  ties when it equals the result, as torch does;
- reductions of a dtype scatterx's kernels do not take (int8, uint8, int16, bool, complex) are handed to torch's
  own function after the argument checks: torch's results, torch's wraparound, torch's errors.

Differences from torch, all on the side of determinism or leniency:

- duplicates in ``scatter`` (assign): the last write in the index's row-major order wins (torch: undefined), and
  the gradient reaches only that write's ``src`` element (torch's reaches every duplicate);
- half-precision ``mean`` (float16, bfloat16): the sum is kept in float32 and divided before the one rounding to
  the half type (torch rounds the sum first, then divides): a result may differ from torch's in the last place,
  closer to the exact mean (docs/decisions/half-precision.md);
- int32 indices are accepted as well as int64, whatever the torch version;
- bad input raises ``IndexError``, ``ValueError`` or ``TypeError`` (where torch raises ``RuntimeError``) with the
  position of the culprit, before anything is written;
- amax/amin where a group's result is NaN: its NaN members share the gradient, as ``torch.max()`` splits it
  (``torch.scatter_reduce``'s formula gives every member of the group NaN, a 0 / 0).

Under ``torch.compile``, ``gather`` is traced as torch's own indexing (it has no kernel of scatterx's in a graph), so
a bad index in a compiled ``gather`` raises the compiled kernel's ``RuntimeError`` rather than the ``IndexError``
above; the scatters raise their eager errors in a graph too.

>>> import torch
>>> from scatterx.pytorch import scatter_reduce
>>> scatter_reduce(torch.zeros(3), 0, torch.tensor([0, 2, 0]), torch.tensor([1., 2., 3.]), "amax")
tensor([3., 0., 2.])
"""

from __future__ import annotations

import contextlib
from typing import Iterator, Optional, Union

import torch

from . import planner
from ._frontend import check_index, check_out, check_tensor, check_updates, normalize_axis, scalar_or_tensor, write_out
from ._reductions import SUPPORTED_DTYPES
from .planner import XMap

__all__ = ["gather", "scatter", "scatter_reduce"]

_SCATTER_REDUCE = ("sum", "prod", "mean", "amax", "amin")
_SCATTER_MODES = {None: "assign", "add": "sum", "multiply": "prod"}


def _prepare(input, dim, index):
    """``(input, dim, index, empty)`` with 0-d ``input``/``index`` seen as one element, as torch does; an empty
    index is not checked further (torch reads nothing from it)."""
    check_tensor(input, "input")
    check_tensor(index, "index")
    dim = normalize_axis(dim, input.dim(), "dim")
    empty = index.numel() == 0
    if not empty:
        check_index(index, "index", input)
    input = input.view(1) if input.dim() == 0 else input
    index = index.view(1) if index.dim() == 0 else index
    return input, dim, index, empty


def _src_region(src: torch.Tensor, index: torch.Tensor, name: str) -> torch.Tensor:
    src = src.view(1) if src.dim() == 0 else src
    if src.shape == index.shape:
        return src
    if src.dim() != index.dim():
        raise ValueError(f"{name}: src has {src.dim()} dimension(s) but index has {index.dim()}")
    for d in range(index.dim()):
        if index.size(d) > src.size(d):
            raise ValueError(f"{name}: index.size({d}) = {index.size(d)} exceeds src.size({d}) = {src.size(d)}")
    for d in range(index.dim()):
        src = src.narrow(d, 0, index.size(d))
    return src


@contextlib.contextmanager
def _culprit_named(m: XMap) -> Iterator[None]:
    """A bad entry of ``index`` is reported as ``gather`` (and torch) report it: at its position in ``index``, with
    the dimension and its size. The planner's slice path finds it in the op it runs, whose message names a position
    among its rows and the op's ``dim_size``. (Traced, no value can be read: the op's error stands.)"""
    try:
        yield
    except IndexError:
        if not torch.compiler.is_compiling():
            planner.check_coordinates(m)
        raise


def scatter_reduce(
    input: torch.Tensor,
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor,
    reduce: str,
    *,
    include_self: bool = True,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """``torch.scatter_reduce``: ``input`` with each ``src[u]`` reduced into ``input[u with u[dim] = index[u]]``.

    For a 2-D ``index`` and ``dim=0``: ``out[index[i][j]][j] (+)= src[i][j]``. Only the part of ``src`` that
    ``index`` covers takes part (``index.size(d) <= src.size(d)`` in every dim, and ``<= input.size(d)`` for
    ``d != dim``). Differentiable w.r.t. ``input`` and ``src``, with torch's gradients (amax/amin split among
    ties, ``input``'s own value counted even with ``include_self=False``, as torch does).

    Args:
        input: the tensor reduced into (not modified).
        dim: the dimension ``index`` points along (negative counts from the end).
        index: int32/int64, as many dimensions as ``input``; entries in ``[0, input.size(dim))``.
        src: the values to reduce, a tensor of ``input``'s dtype and device, as many dimensions as ``index``.
        reduce: ``"sum"``, ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``.
        include_self: whether ``input``'s values take part in the reduction (mean counts them).
        out: the tensor to write the result into (it may be ``input``); written only by a call that succeeds.

    Returns:
        A new tensor of ``input``'s shape, dtype and device, ``input`` with the reductions in the positions
        ``index`` names and its other positions copied; ``out`` when given.

    Raises:
        TypeError: ``input``, ``index`` or ``src`` is not a tensor; ``index`` is not int32/int64; ``src``'s or
            ``out``'s dtype differs from ``input``'s; ``dim`` is not an int; ``include_self`` is not a bool.
        ValueError: ``reduce`` is not one of the five names (torch's spelling: not ``"max"``); ``index`` has
            another number of dimensions than ``input`` and ``src``, or exceeds ``src`` in a dim, or ``input``
            in a dim but ``dim``; ``index`` or ``src`` is on another device than ``input``; ``out`` is on
            another device, or is given while an argument requires grad.
        IndexError: ``dim`` is out of range; an entry of ``index`` is negative or not below ``input.size(dim)``.
        RuntimeError: raised by ``torch.scatter_reduce`` itself for an ``input`` of a dtype the kernels do not
            take (int8, uint8, int16, bool, complex), whose call is handed to torch after the checks of ``dim``,
            ``reduce`` and ``index``'s dtype.

    Example:
        >>> scatter_reduce(torch.zeros(3), 0, torch.tensor([0, 2, 0]), torch.tensor([1., 2., 3.]), "sum")
        tensor([4., 0., 2.])
        >>> x = torch.tensor([[5., 5.], [5., 5.]])
        >>> index = torch.tensor([[0, 1], [0, 0]])
        >>> scatter_reduce(x, 0, index, torch.tensor([[1., 2.], [3., 4.]]), "amax", include_self=False)
        tensor([[3., 4.],
                [5., 2.]])
    """
    if reduce not in _SCATTER_REDUCE:
        raise ValueError(f"reduce must be one of {_SCATTER_REDUCE}, got {reduce!r}")
    if not isinstance(include_self, bool):
        raise TypeError(f"include_self must be a bool, got {type(include_self).__name__}")
    shape = check_tensor(input, "input").shape  # before _prepare sees a 0-d input as one element
    if out is not None:
        check_out(out, input, "scatter_reduce", input, src)
    original = (input, dim, index, src)
    input, dim, index, empty = _prepare(input, dim, index)
    if input.dtype not in SUPPORTED_DTYPES and isinstance(src, torch.Tensor):  # see the module docstring
        result = torch.scatter_reduce(*original, reduce, include_self=include_self)
        return result if out is None else write_out(out, result)
    src = check_updates(src, input, "src")
    if empty:
        return input.clone().view(shape) if out is None else write_out(out, input.view(shape))
    m = XMap.along_dim(index, input.shape, dim, op="scatter_reduce")
    src = _src_region(src, index, "scatter_reduce")
    with _culprit_named(m):
        if out is None:
            return planner.scatter(m, input, src, reduce, include_self, torch_ties=True).view(shape)
        with planner.reusing_outputs():
            return write_out(out, planner.scatter(m, input, src, reduce, include_self).view(shape))


def scatter(
    input: torch.Tensor,
    dim: int,
    index: torch.Tensor,
    src: Union[torch.Tensor, float],
    *,
    reduce: Optional[str] = None,
    out: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """``torch.scatter``: ``src`` written into a copy of ``input`` at the positions ``index`` names along ``dim``.

    ``out[u with u[dim] = index[u]] = src[u]`` for every position ``u`` of ``index`` (only the part of ``src``
    that ``index`` covers is read); ``reduce="add"`` or ``"multiply"`` combines with the value there instead.
    Duplicates: the last write in the index's row-major order wins (torch leaves the order undefined).
    Differentiable w.r.t. ``input`` and ``src``, with torch's gradients (duplicates aside: the module docstring).

    Args:
        input: the tensor written into (not modified).
        dim: the dimension ``index`` points along (negative counts from the end).
        index: int32/int64, as many dimensions as ``input``; entries in ``[0, input.size(dim))``.
        src: a tensor of ``input``'s dtype and device, as many dimensions as ``index``, or a Python number
            written at every position ``index`` names.
        reduce: None (assign), ``"add"`` or ``"multiply"``.
        out: the tensor to write the result into (it may be ``input``); written only by a call that succeeds.

    Returns:
        A new tensor of ``input``'s shape, dtype and device; ``out`` when given.

    Raises:
        TypeError: ``input`` or ``index`` is not a tensor; ``src`` is neither a tensor nor a number; ``index`` is
            not int32/int64; ``src``'s or ``out``'s dtype differs from ``input``'s; ``dim`` is not an int.
        ValueError: ``reduce`` is not None, ``"add"`` or ``"multiply"``; ``index`` has another number of
            dimensions than ``input`` and ``src``, or exceeds ``src`` in a dim, or ``input`` in a dim but ``dim``;
            ``index`` or ``src`` is on another device than ``input``; ``out`` is on another device, or is given
            while an argument requires grad.
        IndexError: ``dim`` is out of range; an entry of ``index`` is negative or not below ``input.size(dim)``.
        RuntimeError: raised by ``torch.scatter`` itself when ``reduce`` is given for an ``input`` of a dtype the
            kernels do not take (int8, uint8, int16, bool, complex), whose call is handed to torch after the
            checks of ``dim``, ``reduce`` and ``index``'s dtype.

    Example:
        >>> scatter(torch.zeros(3), 0, torch.tensor([2, 0, 2]), torch.tensor([1., 2., 3.]))
        tensor([2., 0., 3.])
        >>> scatter(torch.zeros(2, 2), 1, torch.tensor([[1], [0]]), 7.0)
        tensor([[0., 7.],
                [7., 0.]])
    """
    if reduce not in _SCATTER_MODES:
        raise ValueError(f"reduce must be None, 'add' or 'multiply', got {reduce!r}")
    mode = _SCATTER_MODES[reduce]
    shape = check_tensor(input, "input").shape  # before _prepare sees a 0-d input as one element
    if out is not None:
        check_out(out, input, "scatter", input, src)
    original = (input, dim, index)
    input, dim, index, empty = _prepare(input, dim, index)
    if mode != "assign" and input.dtype not in SUPPORTED_DTYPES:  # see the module docstring
        assert reduce is not None  # (mode is not "assign")
        result = torch.scatter(*original, src, reduce=reduce)
        return result if out is None else write_out(out, result)
    if isinstance(src, torch.Tensor):
        src = check_updates(src, input, "src", reduces=mode != "assign")
        if not empty:
            src = _src_region(src, index, "scatter")
    else:
        src = scalar_or_tensor(src, input, "src").expand(index.shape)
        if mode != "assign":
            check_updates(src, input, "src")
    if empty:
        return input.clone().view(shape) if out is None else write_out(out, input.view(shape))
    m = XMap.along_dim(index, input.shape, dim, op="scatter")
    with _culprit_named(m):
        if out is None:
            return planner.scatter(m, input, src, mode, include_self=True).view(shape)
        with planner.reusing_outputs():
            return write_out(out, planner.scatter(m, input, src, mode, include_self=True).view(shape))


def gather(
    input: torch.Tensor, dim: int, index: torch.Tensor, *, sparse_grad: bool = False, out: Optional[torch.Tensor] = None
) -> torch.Tensor:
    """``torch.gather``: ``out[u] = input[u with u[dim] = index[u]]`` for every position ``u`` of ``index``.

    Differentiable w.r.t. ``input``, with torch's gradient (a dense one: ``sparse_grad`` is accepted and
    ignored). Takes every dtype, those the reductions do not take included.

    Args:
        input: the tensor read from.
        dim: the dimension ``index`` points along (negative counts from the end).
        index: int32/int64, as many dimensions as ``input``, ``index.size(d) <= input.size(d)`` for ``d != dim``;
            entries in ``[0, input.size(dim))``.
        sparse_grad: accepted for torch's signature; the gradient is dense either way.
        out: the tensor to write the result into; written only by a call that succeeds (a row gather writes into
            it directly).

    Returns:
        A new tensor of ``index``'s shape with ``input``'s dtype and device; ``out`` when given.

    Raises:
        TypeError: ``input`` or ``index`` is not a tensor; ``index`` is not int32/int64; ``dim`` is not an int;
            ``sparse_grad`` is not a bool; ``out``'s dtype differs from ``input``'s.
        ValueError: ``index`` has another number of dimensions than ``input``, or exceeds it in a dim but
            ``dim``; ``index`` is on another device than ``input``; ``out`` is on another device, or is given while
            ``input`` requires grad.
        IndexError: ``dim`` is out of range; an entry of ``index`` is negative or not below ``input.size(dim)``.

    Example:
        >>> gather(torch.tensor([[1, 2], [3, 4]]), 1, torch.tensor([[0, 0], [1, 0]]))
        tensor([[1, 1],
                [4, 3]])
    """
    if not isinstance(sparse_grad, bool):
        raise TypeError(f"sparse_grad must be a bool, got {type(sparse_grad).__name__}")
    check_tensor(input, "input")  # (the first check, as in _prepare)
    shape = check_tensor(index, "index").shape  # before _prepare sees a 0-d index as one element
    if out is not None:
        check_out(out, input, "gather", input)
    input, dim, index, empty = _prepare(input, dim, index)
    if empty:  # still a view of input, so that autograd connects it (with a zero gradient)
        result = input.reshape(-1).narrow(0, 0, 0).view(shape)
        return result if out is None else write_out(out, result)
    m = XMap.along_dim(index, input.shape, dim, op="gather")
    if out is None:
        return planner.gather(m, input).view(shape)
    if out.shape == shape:  # (viewed as the map's shape: a 0-d index is a map of one element)
        planner.gather(m, input, out=out.view(m.shape))
        return out
    with planner.reusing_outputs():
        return write_out(out, planner.gather(m, input).view(shape))
