"""torch_scatter's ``scatter`` family on scatterx's engine, with torch_scatter's semantics (not scatterx's core
ones, where they differ -- the README's table lists where and why):

- ``index`` is broadcast as torch_scatter broadcasts it (``utils.broadcast``); an index expanded from 1-D runs on
  the slice kernels, any other one element by element (the planner decides).
- Without ``dim_size`` and ``out``, the output has ``index.max() + 1`` rows along ``dim`` (0 for an empty index).
- ``out=`` is written in place and returned; its values take part (sum adds to them, min/max compare with them);
  ``scatter_mean`` divides by the number of members only (``out``'s value does not count); integer mean floors.
- ``scatter_mul``: a row that receives nothing is 1 (with ``out``: keeps its value).
- ``scatter_min``/``scatter_max`` return ``(values, argindex)``: a member is selected only if it strictly beats
  the best so far, starting from the dtype's finite extreme (or ``out``'s value): the first of tied members
  wins, NaN and +-inf at the wrong end are never selected, and a row where nothing was selected is 0 (``out``'s
  value with ``out``) with argindex ``src.size(dim)``. The gradient goes to the selected member.

Each public function is a TorchScript-compilable shell (``torch.jit.script`` works on it, as on torch_scatter's)
around a ``torch.jit.ignore``d implementation that runs in Python.
"""

from typing import Optional, Tuple

import torch

from .. import planner
from ..ops import index_scatter_reduce_from
from . import _engine


@torch.jit.ignore
def _prepare(src: torch.Tensor, index: torch.Tensor, dim: int, out: Optional[torch.Tensor],
             dim_size: Optional[int]) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor], int, int]:
    """``(src, broadcast index, its 1-D form or None (_engine.vector_along), dim >= 0, rows out)`` after the
    checks that read no values."""
    _engine.check_tensor(src, "src")
    _engine.check_index(index)
    if src.dim() == 0:
        src = src.view(1)
    dim = _engine.normalize_dim(dim, src.dim())
    index = _engine.broadcast_index(index, src, dim)
    vector = _engine.vector_along(index, src, dim)
    if out is not None:
        _engine.check_out(out, src, list(src.shape), dim)
        size = out.size(dim)
    elif dim_size is not None:
        if dim_size < 0:
            raise ValueError(f"dim_size must be >= 0, got {dim_size}")
        size = dim_size
    else:
        size = _engine.size_from_index(index if vector is None else vector)
    return src, index, vector, dim, size


@torch.jit.ignore
def _reduce(src: torch.Tensor, index: torch.Tensor, dim: int, out: Optional[torch.Tensor], dim_size: Optional[int],
            reduce: str) -> torch.Tensor:
    """sum, mul and mean (torch_scatter's rules above): sum and mean of a 1-D index (or one expanded from it)
    into a new tensor on the core op, the rest on the planner's scatter."""
    dtype = src.dtype
    src, index, vector, dim, size = _prepare(src, index, dim, out, dim_size)
    work = _engine.widened(src)
    shape = list(src.shape)
    shape[dim] = size
    if src.numel() == 0:  # nothing to reduce: torch_scatter's zeros (mul too), or out as it is
        return out if out is not None else _engine.nothing(src, shape)
    if vector is not None and out is None and reduce != "mul":  # the core op's form: its sum, its mean
        return _engine.finish(index_scatter_reduce_from(dim, vector, work, reduce, None, None, dim_size=size),
                              None, dtype)
    m = planner.XMap.along_dim(index, shape, dim, op=f"scatter_{reduce}")
    if reduce == "mean" and out is not None:  # out + sum, divided by the members only
        total = planner.scatter(m, _engine.base_of(out, src), work, "sum", include_self=True)
        ones = torch.ones((), dtype=total.dtype, device=src.device).expand(index.shape)
        count = planner.scatter(m, torch.zeros(shape, dtype=total.dtype, device=src.device), ones, "sum")
        count = count.clamp_(min=1)
        result = total / count if total.is_floating_point() else torch.div(total, count, rounding_mode="floor")
        return _engine.finish(result, out, dtype)
    if out is not None:
        result = planner.scatter(m, _engine.base_of(out, src), work, "prod" if reduce == "mul" else reduce, include_self=True)
        return _engine.finish(result, out, dtype)
    if reduce != "mul":  # the core's sum, and its mean (sum / members, integer floor), are torch_scatter's
        return _engine.finish(planner.reduced(m, work, reduce), None, dtype)
    base = torch.ones(shape, dtype=work.dtype, device=src.device)  # a product of nothing is 1 here
    return _engine.finish(planner.scatter(m, base, work, "prod", include_self=False), None, dtype)


@torch.jit.ignore
def _select(src: torch.Tensor, index: torch.Tensor, dim: int, out: Optional[torch.Tensor], dim_size: Optional[int],
            reduce: str) -> Tuple[torch.Tensor, torch.Tensor]:
    dtype = src.dtype
    src, index, vector, dim, size = _prepare(src, index, dim, out, dim_size)
    work = _engine.widened(src)
    if src.numel() == 0:  # nothing to select: zeros (or out as it is), argindex src.size(dim)
        shape = list(src.shape)
        shape[dim] = size
        arg = torch.full(shape, src.size(dim), dtype=torch.int64, device=src.device)
        return (out if out is not None else _engine.nothing(src, shape)), arg
    plan = _engine.ScatterPlan(work, index, dim, size, vector)
    base = None if out is None else _engine.base_of(out, src).reshape(plan.outer, plan.S, plan.inner)
    values, arg = _engine.select(plan.src3, plan.rows, plan.S, reduce, base, "unselected" if out is None else "none",
                                 dtype=dtype)
    values = values.reshape(plan.out_shape)
    arg = plan.along(arg).reshape(plan.out_shape)
    return _engine.finish(values, out, dtype), arg


def scatter_sum(src: torch.Tensor, index: torch.Tensor, dim: int = -1, out: Optional[torch.Tensor] = None,
                dim_size: Optional[int] = None) -> torch.Tensor:
    """Sum of the ``src`` entries sharing an ``index`` value along ``dim`` (torch_scatter's ``scatter_sum``)."""
    return _reduce(src, index, dim, out, dim_size, "sum")


def scatter_add(src: torch.Tensor, index: torch.Tensor, dim: int = -1, out: Optional[torch.Tensor] = None,
                dim_size: Optional[int] = None) -> torch.Tensor:
    """``scatter_sum``."""
    return _reduce(src, index, dim, out, dim_size, "sum")


def scatter_mul(src: torch.Tensor, index: torch.Tensor, dim: int = -1, out: Optional[torch.Tensor] = None,
                dim_size: Optional[int] = None) -> torch.Tensor:
    """Product (empty rows 1; exact gradient, zeros included)."""
    return _reduce(src, index, dim, out, dim_size, "mul")


def scatter_mean(src: torch.Tensor, index: torch.Tensor, dim: int = -1, out: Optional[torch.Tensor] = None,
                 dim_size: Optional[int] = None) -> torch.Tensor:
    """Mean over the members (with ``out``: ``(out + sum) / members``); integers round down."""
    return _reduce(src, index, dim, out, dim_size, "mean")


def scatter_min(src: torch.Tensor, index: torch.Tensor, dim: int = -1, out: Optional[torch.Tensor] = None,
                dim_size: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(minimum, argmin)`` (see the module docstring for ties, NaN and empty rows)."""
    return _select(src, index, dim, out, dim_size, "amin")


def scatter_max(src: torch.Tensor, index: torch.Tensor, dim: int = -1, out: Optional[torch.Tensor] = None,
                dim_size: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(maximum, argmax)`` (see the module docstring for ties, NaN and empty rows)."""
    return _select(src, index, dim, out, dim_size, "amax")


def scatter(src: torch.Tensor, index: torch.Tensor, dim: int = -1, out: Optional[torch.Tensor] = None,
            dim_size: Optional[int] = None, reduce: str = "sum") -> torch.Tensor:
    """torch_scatter's ``scatter``: ``reduce`` is "sum"/"add", "mul", "mean", "min" or "max"."""
    if reduce == "sum" or reduce == "add":
        return scatter_sum(src, index, dim, out, dim_size)
    if reduce == "mul":
        return scatter_mul(src, index, dim, out, dim_size)
    elif reduce == "mean":
        return scatter_mean(src, index, dim, out, dim_size)
    elif reduce == "min":
        return scatter_min(src, index, dim, out, dim_size)[0]
    elif reduce == "max":
        return scatter_max(src, index, dim, out, dim_size)[0]
    else:
        raise ValueError(f"reduce must be 'sum', 'add', 'mul', 'mean', 'min' or 'max', got '{reduce}'")
