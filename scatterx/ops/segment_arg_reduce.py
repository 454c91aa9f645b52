"""``segment_arg_reduce``: amax/amin over CSR segments together with the row of the member selected, in one pass.

This is torch_scatter's selection (``scatter_max``, ``segment_max_csr``, ... with their ``argmax``), which the
drop-in ``scatterx.torch_scatter`` runs on. It differs from ``segment_reduce``'s amax/amin on purpose:

- a member is selected only if it *strictly* beats the best so far (the table's ``prefers``), starting from a
  start value: the first of tied members wins, and NaN is never selected (amax would propagate it);
- the start value is ``base`` (e.g. torch_scatter's ``out=``), or the reduction's identity (-inf / +inf, the
  integer extremes), or with ``finite_start`` the dtype's finite extreme (torch_scatter's ``lowest()``/``max()``);
- ``fill`` says what is written where nothing was selected: ``"none"`` keeps the start value, ``"unselected"``
  writes 0 there, ``"empty"`` writes 0 for segments with no member only;
- the gradient goes to the selected member only (torch_scatter's rule), not split among ties, and to ``base``
  where its start value was kept.

``arg`` names the row along ``dim`` (through ``perm`` when rows are gathered), ``src.size(dim)`` where nothing was
selected.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from .._reductions import resolve
from ..backends import backend_for
from ._checks import check_integer_vector, check_src, check_tensor, normalize_dim
from ._library import define_op, needs_op, register_autograd

FILLS = {"none": 0, "unselected": 1, "empty": 2}


def segment_arg_reduce(
    src: torch.Tensor,
    ptr: torch.Tensor,
    reduce: str = "amax",
    dim: int = 0,
    *,
    perm: Optional[torch.Tensor] = None,
    base: Optional[torch.Tensor] = None,
    finite_start: bool = False,
    fill: str = "unselected",
) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(values, arg)``: per segment ``s`` (positions ``ptr[s]:ptr[s+1]`` along ``dim``, rows ``perm[...]`` when
    given) and per element of the other dims, the member selected by ``reduce`` ("amax"/"max" or "amin"/"min")
    and its row. See the module docstring for the start value, ``fill`` and ties.

    ``ptr``: ``S + 1`` non-decreasing offsets from 0 to the number of positions (``perm.numel()`` or
    ``src.size(dim)``). ``perm``: rows of ``src`` in ``[0, src.size(dim))``. ``base``: ``src``'s shape with ``S``
    along ``dim``. Differentiable w.r.t. ``src`` and ``base``.

    >>> segment_arg_reduce(torch.tensor([1., 3., 3., 2.]), torch.tensor([0, 3, 3, 4]))
    (tensor([3., 0., 2.]), tensor([1, 4, 3]))
    """
    red, src, ptr, perm, base, dim = _checked(src, ptr, reduce, dim, perm, base, fill)
    if not needs_op(src, base):
        return _forward(src, ptr, perm, base, red.name, dim, finite_start, fill)
    return segment_arg_reduce_differentiable(src, ptr, perm, base, red.name, dim, finite_start, fill)


def _checked(src, ptr, reduce, dim, perm, base, fill):
    """The checks that read no values."""
    red = resolve(reduce)
    if not red.selects:
        raise ValueError(f"segment_arg_reduce selects a member: reduce must be amax/max or amin/min, got {reduce!r}")
    if fill not in FILLS:
        raise ValueError(f"fill must be one of {sorted(FILLS)}, got {fill!r}")
    check_src(src)
    check_tensor(ptr, "ptr")
    src = src.view(1) if src.dim() == 0 else src
    dim = normalize_dim(dim, src.dim())
    ptr = check_integer_vector(ptr, "ptr", src)
    if ptr.device != src.device:
        raise ValueError(f"ptr is on {ptr.device} but src is on {src.device}")
    if perm is not None:
        perm = check_integer_vector(perm, "perm", src)
        if perm.device != src.device:
            raise ValueError(f"perm is on {perm.device} but src is on {src.device}")
    if base is not None:
        check_tensor(base, "base")
        expected = list(src.shape)
        expected[dim] = ptr.numel() - 1
        if base.dtype != src.dtype or base.device != src.device or list(base.shape) != expected:
            raise ValueError(
                f"base must be a {src.dtype} tensor of shape {tuple(expected)} on {src.device}, got "
                f"{base.dtype} {tuple(base.shape)} on {base.device}"
            )
    return red, src, ptr, perm, base, dim


def _forward(
    src: Tensor,
    ptr: Tensor,
    perm: Optional[Tensor],
    base: Optional[Tensor],
    reduce: str,
    dim: int,
    finite_start: bool,
    fill: str,
) -> Tuple[Tensor, Tensor]:
    """What ``torch.ops.scatterx.segment_arg_reduce`` runs: every check (values included), then the kernel."""
    red, src, ptr, perm, base, dim = _checked(src, ptr, reduce, dim, perm, base, fill)
    backend = backend_for(src)
    n = src.size(dim)
    if perm is not None:
        backend.check_index(perm, n, "perm", f"src.size({dim})")
        perm = perm.to(torch.int64).contiguous()
    ptr = backend.check_ptr(
        ptr, n if perm is None else perm.numel(), f"src.size({dim})" if perm is None else "perm.numel()"
    )
    if finite_start:
        info = torch.finfo(src.dtype) if src.dtype.is_floating_point else torch.iinfo(src.dtype)
        start = info.min if red.prefers(1, 0) else info.max  # a maximum starts low, a minimum high
    else:
        start = red.identity(src.dtype)
    return backend.segment_arg_reduce(src, ptr, perm, dim, red, base, start, FILLS[fill], n)


def _fake(src, ptr, perm, base, reduce, dim, finite_start, fill):
    shape = list(src.shape) or [1]
    shape[dim % len(shape)] = ptr.size(0) - 1
    return src.new_empty(shape), src.new_empty(shape, dtype=torch.int64)


segment_arg_reduce_op = define_op("segment_arg_reduce", _forward, _fake)


def _setup_context(ctx, inputs, output):
    src, ptr, _perm, base, _reduce, dim, _finite_start, fill = inputs
    ctx.given_shape = tuple(src.shape)
    src = src.view(1) if src.dim() == 0 else src
    ctx.dim = dim % src.dim()
    ctx.n = src.size(ctx.dim)
    ctx.has_base = base is not None
    ctx.fill = fill
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(output[1], ptr)


def _autograd_backward(ctx, grad, grad_arg):
    """The gradient goes to the selected row (torch_scatter's rule): one ``scatter_add`` into a buffer with a spare
    row for "nothing selected" (``arg == n``). Made of torch ops, so it is differentiated again by autograd."""
    arg, ptr = ctx.saved_tensors
    grad_src = grad_base = None
    if ctx.needs_input_grad[0]:
        shape = list(grad.shape)
        shape[ctx.dim] = ctx.n + 1
        grad_src = grad.new_zeros(shape).scatter_add(ctx.dim, arg, grad).narrow(ctx.dim, 0, ctx.n)
        grad_src = grad_src.reshape(ctx.given_shape)
    if ctx.has_base and ctx.needs_input_grad[3]:
        grad_base = torch.where(_keeps_start(ctx.fill, arg, ctx.n, ptr, ctx.dim), grad, torch.zeros_like(grad))
    return grad_src, None, None, grad_base, None, None, None, None


def _keeps_start(fill: str, arg: Tensor, n: int, ptr: Tensor, dim: int) -> Tensor:
    """Where the output holds the start value (``base``'s): nothing selected (``arg == n``), unless ``fill`` wrote
    0 there -- everywhere nothing was selected ("unselected"), or in the segments with no member ("empty")."""
    unselected = arg == n
    if fill == "none":
        return unselected
    if fill == "empty":
        shape = [1] * arg.dim()
        shape[dim] = -1
        return unselected & (ptr[1:] > ptr[:-1]).view(shape)
    return torch.zeros_like(unselected)


segment_arg_reduce_differentiable = register_autograd(
    segment_arg_reduce_op, _forward, _autograd_backward, _setup_context
)
