"""Backward formulas shared by the ops that reduce groups of slices (``index_scatter_reduce``, ``segment_reduce``,
``gather_segment_reduce``'s exact path).

For a group ``s`` = the ``src`` slices with ``index == s`` (plus ``base[s]`` when it takes part) and
``g = grad[s]``:

- linear reductions (the table's ``linear``: sum, mean): ``g`` for every member, mean divided by the count (which
  includes ``base[s]`` with ``include_self``). Written with differentiable torch ops, so double backward is
  autograd's own; they need ``src``'s shape only, not its values.
- prod: the product of the other members, exactly, zeros included: with one zero, the zero's gradient is the
  product of the others and everyone else's is 0; with two or more, all are 0. No division by zero, no NaN. For a
  double backward the same values are written so that their own derivatives are exact too (``_product_of_others``).
- amax/amin (the table's ``selects``): ``g`` split evenly among the members that tie the result: equal to it, or,
  where the result is NaN, NaN themselves (the members that made it, as torch's ``max()`` splits its gradient;
  ``torch.scatter_reduce``'s formula gives every member NaN there, a 0 / 0). ``count_base``
  says whether ``base[s]`` counts among them: scatterx's rule counts it when it takes part (``include_self``);
  ``torch.scatter_reduce`` counts it whenever it ties, even with ``include_self=False``.
- ``base`` slices that receive nothing pass ``g`` through; with ``include_self=False`` receiving slices get 0.

``nonlinear_backward(graph=False)`` runs on the kernels (group sums, products, the tie kernel); with
``graph=True`` (``create_graph``, a double backward ahead) the same values come from differentiable ops -- the
tie masks are constants, as in torch's own formula.
"""

from __future__ import annotations

from typing import Callable, Optional, Tuple

import torch

from .._reductions import BY_NAME, accumulator_dtype, resolve
from ..backends import backend_for
from ..backends._common import is_tie

_SUM, _PROD = BY_NAME["sum"], BY_NAME["prod"]


def per_segment(values: torch.Tensor, dim: int, ndim: int) -> torch.Tensor:
    """View a vector of per-segment values so that it broadcasts along ``dim`` of an ``ndim`` tensor."""
    shape = [1] * ndim
    shape[dim] = values.numel()
    return values.view(shape)


def pad_rows(grad_rows: torch.Tensor, src_shape, dim: int) -> torch.Tensor:
    """Gradient for all of ``src`` (of ``src_shape``) from that of its first ``grad_rows.size(dim)`` slices (the
    rest take no part)."""
    missing = src_shape[dim] - grad_rows.size(dim)
    if missing == 0:
        return grad_rows
    shape = list(src_shape)
    shape[dim] = missing
    return torch.cat([grad_rows, grad_rows.new_zeros(shape)], dim)


def counts(index: torch.Tensor, dim_size: int, dtype) -> torch.Tensor:
    """Members per segment, in ``dtype``: counted exactly (in int64; a half type's own sum of ones stops at 256 or
    2,048), then converted. Plain torch ops on purpose, not a kernel: the linear backward is traced by
    torch.compile (a Numba call cannot be) and must stay differentiable for double backward."""
    ones = torch.ones(index.numel(), dtype=torch.int64, device=index.device)
    return torch.zeros(dim_size, dtype=torch.int64, device=index.device).index_add_(0, index, ones).to(dtype)


def linear_backward(grad, src_shape, index, base, dim: int, reduce: str, include_self: bool):
    """sum / mean: ``(grad_src, grad_base or None)`` from differentiable torch ops."""
    ndim, dim_size = len(src_shape), grad.size(dim)
    idx = index.long()
    divide = resolve(reduce).divide_by_count
    n = counts(idx, dim_size, accumulator_dtype(grad.dtype)) if divide or base is not None else None  # sum: unused
    takes_self = base is not None and include_self
    if divide:
        assert n is not None  # counted above: mean divides by it
        scale = 1.0 / (n + (1.0 if takes_self else 0.0)).clamp(min=1.0)
        grad_in = (grad * per_segment(scale, dim, ndim)).to(grad.dtype)  # (a half type's: rounded once)
    else:
        # a gradient often arrives expanded (``.sum().backward()``): index_select reads a stride-0 tensor ~10x
        # slower than a copy costs (Cora's 2,708 x 16 into 10,556 rows: 364 us against 7 + 32 us)
        grad_in = grad.contiguous()
    grad_src = pad_rows(grad_in.index_select(dim, idx), src_shape, dim)
    grad_base = None
    if base is not None:
        assert n is not None  # counted above: base's slices that receive nothing pass grad through
        received = per_segment(n > 0, dim, ndim)
        grad_base = torch.where(received, grad_in if include_self else torch.zeros_like(grad), grad)
    return grad_src, grad_base


def _product_of_others(values, is_zero, zeros_of_group, product_of_group, g, zero_values_of_group=None):
    """Product of the other members of each value's group, times the group's gradient. ``product_of_group`` is the
    product of the group's nonzero members, ``zeros_of_group`` how many are zero: with no zero among the others,
    the product over the value (or the product itself, for the group's only zero); with one or more, 0.

    ``zero_values_of_group`` (a double backward ahead): the sum of the group's zero members' values, differentiable.
    The product of the others is then written so that its derivatives are right too: where exactly one other
    member is zero, its value (0) times the rest -- whose derivative by that zero is the rest's product, as in
    ``d/dz (z * b) = b`` -- rather than a constant 0; with two or more zeros among the others every first
    derivative of the product is 0 as well."""
    safe = torch.where(is_zero, torch.ones_like(values), values)
    nonzero_others = torch.where(is_zero, product_of_group, product_of_group / safe)
    zeros_of_others = zeros_of_group - is_zero.to(zeros_of_group.dtype)
    if zero_values_of_group is None:
        factor = torch.where(zeros_of_others == 0, nonzero_others, 0.0)
    else:
        other_zero = zero_values_of_group - torch.where(is_zero, values, torch.zeros_like(values))
        with_one = torch.where(zeros_of_others == 1, nonzero_others * other_zero, 0.0)
        factor = torch.where(zeros_of_others == 0, nonzero_others, with_one)
    return g * factor


def nonlinear_backward(
    grad: torch.Tensor,
    src: torch.Tensor,
    index: torch.Tensor,
    result: torch.Tensor,
    base: Optional[torch.Tensor],
    dim: int,
    reduce: str,
    sorted: bool,
    include_self: bool,
    count_base: bool,
    graph: bool = False,
    reduce_op: Optional[Callable] = None,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Gradients of prod, amax and amin w.r.t. ``src`` and ``base`` (an empty tensor when there is no base).

    ``count_base``: ``base``'s value counts among amax/amin's ties (see the module docstring). ``graph=True``
    needs ``reduce_op``, the differentiable ``index_scatter_reduce`` op, for prod's products."""
    red = resolve(reduce)
    backend = backend_for(src)
    ndim, dim_size, m = src.dim(), grad.size(dim), index.numel()
    idx = index.long()
    rows = src.narrow(dim, 0, m)
    self_base = base if include_self else None  # base, where it takes part in the reduction
    received = per_segment(counts(idx, dim_size, torch.int64) > 0, dim, ndim)

    def group_sum(values: torch.Tensor) -> torch.Tensor:  # per-segment sums of rows (constants: masks and zero counts)
        if graph:  # (accumulated as the kernel's are: a half type's count of ties would stop at 256 or 2,048)
            total = torch.zeros(result.shape, dtype=accumulator_dtype(values.dtype), device=grad.device)
            return total.index_add_(dim, idx, values.to(total.dtype)).to(values.dtype)
        return backend.index_scatter_reduce(values.contiguous(), index, dim, _SUM, sorted, dim_size)

    if red.selects:
        tie_base = base if include_self or count_base else None  # base, where its value counts among the ties
        if graph:
            mask = is_tie(rows, result.index_select(dim, idx)).to(grad.dtype)
            count = group_sum(mask) + (is_tie(tie_base, result).to(grad.dtype) if tie_base is not None else 0.0)
            count = count.clamp(min=1.0)
            grad_src = pad_rows(grad.index_select(dim, idx) * mask / count.index_select(dim, idx), src.shape, dim)
        else:
            grad_src, count = backend.tie_backward(grad, src, index, result, base, dim, sorted, tie_base is not None)
        self_grad = grad / count.clamp(min=1.0) * is_tie(self_base, result) if self_base is not None else None
    elif red is _PROD:
        zero_rows = rows == 0
        zeros = group_sum(zero_rows.to(grad.dtype))
        nonzero = torch.where(zero_rows, torch.ones_like(rows), rows)
        nonzero_base = None
        if self_base is not None:
            zeros = zeros + (self_base == 0).to(grad.dtype)
            nonzero_base = torch.where(self_base == 0, torch.ones_like(self_base), self_base)
        if graph:
            if reduce_op is None:
                raise ValueError("nonlinear_backward(graph=True) needs reduce_op")
            product = reduce_op(nonzero, index, dim, "prod", sorted, dim_size, nonzero_base, True, False)
        else:
            product = backend.index_scatter_reduce(
                nonzero.contiguous(), index, dim, _PROD, sorted, dim_size, base=nonzero_base
            )
        zero_values = None  # with a double backward ahead: the zero members' values, as a differentiable sum
        if graph:
            zero_values = group_sum(torch.where(zero_rows, rows, torch.zeros_like(rows)))
            if self_base is not None:
                zero_values = zero_values + torch.where(self_base == 0, self_base, torch.zeros_like(self_base))
        grad_rows = _product_of_others(
            rows,
            zero_rows,
            zeros.index_select(dim, idx),
            product.index_select(dim, idx),
            grad.index_select(dim, idx),
            None if zero_values is None else zero_values.index_select(dim, idx),
        )
        grad_src = pad_rows(grad_rows, src.shape, dim)
        self_grad = (
            _product_of_others(self_base, self_base == 0, zeros, product, grad, zero_values)
            if self_base is not None
            else None
        )
    else:
        raise ValueError(f"nonlinear_backward handles prod, amax and amin, not {reduce!r}")
    if base is None:
        return grad_src, grad.new_empty(0)
    grad_base = torch.where(received, self_grad if self_grad is not None else torch.zeros_like(grad), grad)
    return grad_src, grad_base
