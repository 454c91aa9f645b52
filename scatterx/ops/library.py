"""scatterx's ops as PyTorch custom ops (``torch.library``): schema, fake (meta) implementation, kernels and
autograd, so that they trace under ``torch.compile`` and differentiate like any torch op.

Each op is a ``triton_op`` whose body dispatches by device (see ``_op``): CUDA tensors run the Triton kernels
through ``ops/gpu.py`` (traceable), CPU tensors the Numba kernels behind an opaque ``<name>_cpu`` op.

``torch.ops.scatterx.index_scatter_reduce`` is functional: ``base`` (what the user's ``out`` holds) is read, never
written; the public function copies the result into ``out``.

Gradients (w.r.t. ``src`` and ``base``), for a group ``s`` = the ``src`` rows with ``index == s`` (plus ``base[s]``
when ``include_self``) and ``g = grad[s]``:
- sum: ``g`` for every member; mean: ``g / count`` (the count includes ``base[s]`` with ``include_self``).
- prod: the product of the other members, exactly, zeros included: with one zero, the zero's gradient is the
  product of the others and everyone else's is 0; with two or more, all are 0. No division by zero, no NaN.
- amax/amin: ``g`` split evenly among the members equal to the result (``base[s]`` included with include_self).
- ``base`` rows that receive nothing pass ``g`` through; with ``include_self=False`` receiving rows get 0.
sum and mean are differentiated with differentiable torch ops, so their double backward works. prod, amax and
amin run ``torch.ops.scatterx.index_scatter_reduce_backward`` (kernels, no derivative of its own) -- unless the
backward itself is recorded (``create_graph=True``), where the same formulas run as differentiable ops, so that
double backward works for every reduction (amax/amin's tie masks count as constants, as in torch).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from .._reductions import resolve
from .gpu import uses_triton

_LINEAR = ("sum", "mean")


def needs_op(*tensors) -> bool:
    """Whether a call must go through the custom op: a gradient is wanted, or torch.compile is tracing. Otherwise
    the public functions call the same implementation directly (the op adds copies for ``out=``, and torch's
    custom-op machinery imports torch._dynamo on its first call, ~1.5 s)."""
    if torch.compiler.is_compiling():
        return True
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _forward_impl(src, index, dim, reduce, sorted, dim_size, base, include_self):
    """The kernel behind the op (validation included): a new result, ``base`` untouched."""
    from .index_scatter import _index_scatter_reduce_eager

    return _index_scatter_reduce_eager(
        dim, index, src, reduce, sorted, dim_size=dim_size, include_self=include_self, base=base
    )


def _op(name: str):
    """Define ``scatterx::<name>`` from a function made of torch ops, calls to CPU-only ops and ``wrap_triton``
    launches: a ``torch.library.triton_op`` when Triton is installed (torch.compile then traces into the Triton
    kernels on CUDA), else a plain custom op; either way the function doubles as the fake implementation.

    The function picks the backend by device (``gpu.uses_triton``): CUDA runs the Triton kernels through
    ``ops/gpu.py`` (torch ops and launches only, no host sync, so it traces); CPU calls the op's ``_cpu`` twin,
    an opaque custom op over the Numba kernels (which no tracer can enter), with its own fake implementation."""

    def define(fn):
        from ..kernels.gpu import available

        if available():
            return torch.library.triton_op(name, fn, mutates_args=())
        op = torch.library.custom_op(name, fn, mutates_args=())
        op.register_fake(fn)
        return op

    return define


def _new_segments(src, dim: int, dim_size: int):
    shape = list(src.shape)
    shape[dim % src.dim()] = dim_size
    return src.new_empty(shape)


@torch.library.custom_op("scatterx::index_scatter_reduce_cpu", mutates_args=(), device_types="cpu")
def _index_scatter_reduce_cpu(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int,
    reduce: str,
    sorted: bool,
    dim_size: int,
    base: Optional[torch.Tensor],
    include_self: bool,
) -> torch.Tensor:
    return _forward_impl(src, index, dim, reduce, sorted, dim_size, base, include_self)


@_index_scatter_reduce_cpu.register_fake
def _(src, index, dim, reduce, sorted, dim_size, base, include_self):
    return _new_segments(src, dim, dim_size)


@_op("scatterx::index_scatter_reduce")
def index_scatter_reduce_op(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int,
    reduce: str,
    sorted: bool,
    dim_size: int,
    base: Optional[torch.Tensor],
    include_self: bool,
) -> torch.Tensor:
    if not uses_triton(src):
        return torch.ops.scatterx.index_scatter_reduce_cpu(src, index, dim, reduce, sorted, dim_size, base, include_self)
    from . import gpu

    dim = dim % src.dim()
    return gpu.index_scatter_reduce(src, index, dim, resolve(reduce), sorted, dim_size, base, include_self)


# ------------------------------------------------------------------------------------------------------ backward
def _per_segment(values: torch.Tensor, dim: int, ndim: int) -> torch.Tensor:
    """View a vector of per-segment values so that it broadcasts along ``dim`` of an ``ndim`` tensor."""
    shape = [1] * ndim
    shape[dim] = values.numel()
    return values.view(shape)


def _pad_rows(grad_rows: torch.Tensor, src_shape, dim: int) -> torch.Tensor:
    """Gradient for all of ``src`` (of ``src_shape``) from that of its first ``grad_rows.size(dim)`` slices (the
    rest take no part)."""
    missing = src_shape[dim] - grad_rows.size(dim)
    if missing == 0:
        return grad_rows
    shape = list(src_shape)
    shape[dim] = missing
    return torch.cat([grad_rows, grad_rows.new_zeros(shape)], dim)


def _counts(index: torch.Tensor, dim_size: int, dtype) -> torch.Tensor:
    """Members per segment. Plain torch ops on purpose, not the ``count_index`` kernel: the sum/mean backward is
    traced by torch.compile (a Numba call cannot be) and must stay differentiable for double backward."""
    return torch.zeros(dim_size, dtype=dtype, device=index.device).index_add_(
        0, index, torch.ones(index.numel(), dtype=dtype, device=index.device)
    )


def _linear_backward(grad, src_shape, index, base, dim, reduce, include_self):
    """sum / mean: differentiable torch ops (so double backward works). They need ``src``'s shape, not its values:
    the forward does not keep ``src`` alive for them (in message passing it is an edges x features tensor)."""
    ndim, dim_size = len(src_shape), grad.size(dim)
    idx = index.long()
    counts = _counts(idx, dim_size, grad.dtype)
    takes_self = base is not None and include_self
    if reduce == "mean":
        scale = 1.0 / (counts + (1.0 if takes_self else 0.0)).clamp(min=1.0)
        grad_in = grad * _per_segment(scale, dim, ndim)
    else:
        grad_in = grad
    grad_src = _pad_rows(grad_in.index_select(dim, idx), src_shape, dim)
    grad_base = None
    if base is not None:
        received = _per_segment(counts > 0, dim, ndim)
        grad_base = torch.where(received, grad_in if include_self else torch.zeros_like(grad), grad)
    return grad_src, grad_base


@torch.library.custom_op("scatterx::index_scatter_reduce_backward_cpu", mutates_args=(), device_types="cpu")
def _index_scatter_reduce_backward_cpu(
    grad: torch.Tensor,
    src: torch.Tensor,
    index: torch.Tensor,
    result: torch.Tensor,
    base: Optional[torch.Tensor],
    dim: int,
    reduce: str,
    sorted: bool,
    include_self: bool,
) -> Tuple[torch.Tensor, torch.Tensor]:
    return _backward_impl(grad, src, index, result, base, dim, reduce, sorted, include_self)


@_index_scatter_reduce_backward_cpu.register_fake
def _(grad, src, index, result, base, dim, reduce, sorted, include_self):
    return torch.empty_like(src), (torch.empty_like(base) if base is not None else grad.new_empty(0))


@_op("scatterx::index_scatter_reduce_backward")
def index_scatter_reduce_backward_op(
    grad: torch.Tensor,
    src: torch.Tensor,
    index: torch.Tensor,
    result: torch.Tensor,
    base: Optional[torch.Tensor],
    dim: int,
    reduce: str,
    sorted: bool,
    include_self: bool,
) -> Tuple[torch.Tensor, torch.Tensor]:
    if not uses_triton(src):
        return torch.ops.scatterx.index_scatter_reduce_backward_cpu(
            grad, src, index, result, base, dim, reduce, sorted, include_self
        )
    return _backward_impl(grad, src, index, result, base, dim, reduce, sorted, include_self)


def _product_of_others(values, is_zero, zeros_of_group, product_of_group, g):
    """Product of the other members of each value's group, times the group's gradient: with no zero in the group
    the group's product over the value; for the group's only zero the product of the rest; otherwise 0."""
    safe = torch.where(is_zero, torch.ones_like(values), values)
    no_zero = (zeros_of_group == 0) & ~is_zero
    only_zero = (zeros_of_group == 1) & is_zero
    factor = torch.where(no_zero, product_of_group / safe, torch.where(only_zero, product_of_group, 0.0))
    return g * factor


def _backward_impl(
    grad: torch.Tensor,
    src: torch.Tensor,
    index: torch.Tensor,
    result: torch.Tensor,
    base: Optional[torch.Tensor],
    dim: int,
    reduce: str,
    sorted: bool,
    include_self: bool,
    graph: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Gradients of prod, amax and amin w.r.t. src and base (an empty tensor when there is no base).

    ``graph=False`` (the backward op): per-group counts and products on scatterx's kernels, the tie split on the
    tie kernel. ``graph=True`` (``create_graph``, a double backward ahead): the same values from differentiable
    ops -- the tie masks are constants, as in torch's own formula, and prod's products go through the op."""
    ndim, dim_size, m = src.dim(), grad.size(dim), index.numel()
    idx = index.long()
    rows = src.narrow(dim, 0, m)
    takes_self = base is not None and include_self
    received = _per_segment(_counts(idx, dim_size, grad.dtype) > 0, dim, ndim)

    def group_sum(values):  # per-segment sum of rows (constants: masks and zero counts)
        if graph:
            return torch.zeros(result.shape, dtype=grad.dtype, device=grad.device).index_add_(dim, idx, values)
        return _forward_impl(values, index, dim, "sum", sorted, dim_size, None, False)

    if reduce in ("amax", "amin"):
        if graph:
            mask = (rows == result.index_select(dim, idx)).to(grad.dtype)
            ties = group_sum(mask) + ((base == result).to(grad.dtype) if takes_self else 0.0)
            ties = ties.clamp(min=1.0)
            grad_src = _pad_rows(grad.index_select(dim, idx) * mask / ties.index_select(dim, idx), src.shape, dim)
        else:
            from .segment import tie_backward

            grad_src, ties = tie_backward(grad, src, index, result, base, dim, sorted, include_self)
        self_grad = grad / ties.clamp(min=1.0) * (base == result) if takes_self else None
    elif reduce == "prod":
        zero_rows = rows == 0
        zeros = group_sum(zero_rows.to(grad.dtype))
        g_rows = grad.index_select(dim, idx)
        nonzero = torch.where(zero_rows, torch.ones_like(rows), rows)
        product_of = index_scatter_reduce_op if graph else _forward_impl
        if takes_self:
            zeros = zeros + (base == 0).to(grad.dtype)
            nonzero_base = torch.where(base == 0, torch.ones_like(base), base)
            product = product_of(nonzero, index, dim, "prod", sorted, dim_size, nonzero_base, True)
        else:
            product = product_of(nonzero, index, dim, "prod", sorted, dim_size, None, True)
        grad_rows = _product_of_others(
            rows, zero_rows, zeros.index_select(dim, idx), product.index_select(dim, idx), g_rows
        )
        grad_src = _pad_rows(grad_rows, src.shape, dim)
        self_grad = _product_of_others(base, base == 0, zeros, product, grad) if takes_self else None
    else:
        raise ValueError(f"index_scatter_reduce_backward handles prod, amax and amin, not {reduce!r}")
    if base is None:
        return grad_src, grad.new_empty(0)
    grad_base = torch.where(received, self_grad if takes_self else torch.zeros_like(grad), grad)
    return grad_src, grad_base


def _setup_context(ctx, inputs, output):
    src, index, dim, reduce, sorted, dim_size, base, include_self = inputs
    ctx.dim = dim % src.dim()
    ctx.reduce = resolve(reduce).name
    ctx.sorted = sorted
    ctx.include_self = include_self
    ctx.has_base = base is not None
    ctx.src_shape = tuple(src.shape)
    placeholder = src.new_empty(0)
    keep = (placeholder, placeholder) if ctx.reduce in _LINEAR else (src, output)  # sum/mean: no values needed
    ctx.save_for_backward(keep[0], index, keep[1], base if base is not None else placeholder)


def _backward(ctx, grad):
    src, index, result, base = ctx.saved_tensors
    base = base if ctx.has_base else None
    if ctx.reduce in _LINEAR:
        grad_src, grad_base = _linear_backward(grad, ctx.src_shape, index, base, ctx.dim, ctx.reduce, ctx.include_self)
    elif torch.is_grad_enabled():  # create_graph=True: differentiable ops, so that a double backward works
        grad_src, grad_base = _backward_impl(
            grad, src, index, result, base, ctx.dim, ctx.reduce, ctx.sorted, ctx.include_self, graph=True
        )
        grad_base = grad_base if ctx.has_base else None
    else:
        grad_src, grad_base = index_scatter_reduce_backward_op(
            grad, src, index, result, base, ctx.dim, ctx.reduce, ctx.sorted, ctx.include_self
        )
        grad_base = grad_base if ctx.has_base else None
    return grad_src, None, None, None, None, None, grad_base, None


torch.library.register_autograd("scatterx::index_scatter_reduce", _backward, setup_context=_setup_context)


# -------------------------------------------------------------------------------------------------- segment_reduce
@torch.library.custom_op("scatterx::segment_reduce_cpu", mutates_args=(), device_types="cpu")
def _segment_reduce_cpu(src: torch.Tensor, ptr: torch.Tensor, reduce: str, dim: int) -> torch.Tensor:
    from .segment import _segment_reduce_eager

    return _segment_reduce_eager(src, ptr, reduce, dim)


@_segment_reduce_cpu.register_fake
def _(src, ptr, reduce, dim):
    return _new_segments(src, dim, ptr.size(0) - 1)


@_op("scatterx::segment_reduce")
def segment_reduce_op(src: torch.Tensor, ptr: torch.Tensor, reduce: str, dim: int) -> torch.Tensor:
    if not uses_triton(src):
        return torch.ops.scatterx.segment_reduce_cpu(src, ptr, reduce, dim)
    from . import gpu

    return gpu.segment_reduce(src, ptr, resolve(reduce), dim % src.dim())


def _segment_setup_context(ctx, inputs, output):
    src, ptr, reduce, dim = inputs
    ctx.dim = dim % src.dim()
    ctx.reduce = resolve(reduce).name
    ctx.src_shape = tuple(src.shape)
    if ctx.reduce in _LINEAR:  # sum/mean need src's shape only
        src, output = src.new_empty(0), output.new_empty(0)
    ctx.save_for_backward(src, ptr, output)


def _segment_backward(ctx, grad):
    """The gradient of index_scatter_reduce (no out) with the index that ``ptr`` describes."""
    src, ptr, result = ctx.saved_tensors
    lengths = (ptr[1:] - ptr[:-1]).long()
    index = torch.repeat_interleave(
        torch.arange(lengths.numel(), device=ptr.device), lengths, output_size=ctx.src_shape[ctx.dim]
    )
    if ctx.reduce in _LINEAR:
        grad_src, _ = _linear_backward(grad, ctx.src_shape, index, None, ctx.dim, ctx.reduce, False)
    elif torch.is_grad_enabled():  # create_graph=True (see _backward)
        grad_src, _ = _backward_impl(grad, src, index, result, None, ctx.dim, ctx.reduce, True, False, graph=True)
    else:
        grad_src, _ = index_scatter_reduce_backward_op(
            grad, src, index, result, None, ctx.dim, ctx.reduce, True, False
        )
    return grad_src, None, None, None


torch.library.register_autograd("scatterx::segment_reduce", _segment_backward, setup_context=_segment_setup_context)


# ------------------------------------------------------------------------------------------- gather_segment_reduce
@torch.library.custom_op("scatterx::gather_segment_reduce_cpu", mutates_args=(), device_types="cpu")
def _gather_segment_reduce_cpu(
    src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, reduce: str, dim: int
) -> torch.Tensor:
    from .gather_segment import _gather_segment_reduce_eager

    return _gather_segment_reduce_eager(src, ptr, index, reduce, dim)


@_gather_segment_reduce_cpu.register_fake
def _(src, ptr, index, reduce, dim):
    return _new_segments(src, dim, ptr.size(0) - 1)


@_op("scatterx::gather_segment_reduce")
def gather_segment_reduce_op(
    src: torch.Tensor,
    ptr: torch.Tensor,
    index: torch.Tensor,
    reduce: str,
    dim: int,
    ptr_t: Optional[torch.Tensor],
    index_t: Optional[torch.Tensor],
) -> torch.Tensor:
    """``ptr_t``/``index_t``: the transposed structure (``csr_transpose``) for the backward, or None."""
    if not uses_triton(src):
        return torch.ops.scatterx.gather_segment_reduce_cpu(src, ptr, index, reduce, dim)
    from . import gpu
    from .gather_segment import _checked_structure

    dim = dim % src.dim()
    ptr, index = _checked_structure(src, ptr, index, dim)
    return gpu.gather_segment_reduce(src, ptr, index, resolve(reduce), dim)


@torch.library.custom_op("scatterx::csr_transpose", mutates_args=())
def _csr_transpose(ptr: torch.Tensor, index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    from .gather_segment import _csr_transpose_impl

    return _csr_transpose_impl(ptr, index, num_rows)


@_csr_transpose.register_fake
def _(ptr, index, num_rows):
    return ptr.new_empty(num_rows + 1, dtype=torch.int64), index.new_empty(index.numel(), dtype=torch.int64)


def _gather_setup_context(ctx, inputs, output):
    src, ptr, index, reduce, dim, ptr_t, index_t = inputs
    ctx.dim, ctx.reduce, ctx.num_rows = dim % src.dim(), resolve(reduce).name, src.size(dim)
    ctx.has_transpose = ptr_t is not None and index_t is not None
    ctx.save_for_backward(ptr, index, *((ptr_t, index_t) if ctx.has_transpose else ()))


def _gather_backward(ctx, grad):
    """sum: the same op on the transposed structure; mean: the same, of ``grad / count``. Both differentiable."""
    ptr, index, *transpose = ctx.saved_tensors
    if ctx.reduce not in _LINEAR:
        raise NotImplementedError(f"gather_segment_reduce has no transposed backward for {ctx.reduce!r}")
    ptr_t, index_t = transpose if ctx.has_transpose else torch.ops.scatterx.csr_transpose(ptr, index, ctx.num_rows)
    if ctx.reduce == "mean":
        counts = ptr.diff().clamp(min=1).to(grad.dtype)
        grad = grad / _per_segment(counts, ctx.dim, grad.dim())
    grad_src = gather_segment_reduce_op(grad, ptr_t, index_t, "sum", ctx.dim, ptr, index)
    return grad_src, None, None, None, None, None, None


torch.library.register_autograd(
    "scatterx::gather_segment_reduce", _gather_backward, setup_context=_gather_setup_context
)
