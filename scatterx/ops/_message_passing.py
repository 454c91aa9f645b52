"""The two ops of weighted message passing, whose gradients are each other: the weighted gather-segment reduce
(``gather_segment_reduce(..., weight=)``) and SDDMM (``sddmm``).

``weighted_gather_segment_reduce_op(src (N, H, C), ptr, index, weight (E, H), reduce)``:
``out[s, h] = reduce(weight[k, h] * src[index[k], h])`` over the segment's entries. ``sddmm_op(ptr, index, a, b,
op)``: per entry ``k`` of segment ``s``, ``a[index[k]] op b[s]`` over ``(H, C)`` rows, or their dot over ``C``.
The public functions (``gather_segment_reduce.py``, ``sddmm.py``) check the arguments and shape the views; this
module holds what the two share: the ops, their autograd, and the transposed structure with its entry order. It
is one module because each backward calls the other op (weighted sum -> SDDMM for the weights; SDDMM's dot ->
weighted sums for both ends), which split in two files would be an import cycle.
"""

from __future__ import annotations

from typing import Tuple

from torch import Tensor

from .._reductions import resolve
from ..backends import backend_for
from ._library import define_op, register_autograd
from ._segments import segment_of_entries
from .csr_transpose import csr_order_op
from .index_scatter_reduce import index_scatter_reduce_op
from .segment_reduce import segment_reduce_op


def checked_structure(src: Tensor, ptr: Tensor, index: Tensor, dim: int):
    """``(ptr, index)`` with their values checked against ``src`` (raised at once on the CPU, asserted on the
    device on the GPU)."""
    backend = backend_for(src)
    ptr = backend.check_ptr(ptr, index.numel(), "index.numel()")
    backend.check_index(index, src.size(dim), "index", f"src.size({dim})")
    return ptr, index.contiguous()


def transpose_with_order(ptr: Tensor, index: Tensor, num_rows: int) -> Tuple[Tensor, Tensor, Tensor]:
    """``(ptr_t, index_t, order)``: ``csr_transpose(ptr, index, num_rows)`` and, for each of its entries, the
    position in ``index`` it came from (to carry per-entry weights over). One counting sort (``csr_order``), then
    each entry's segment looked up."""
    entries = index.numel()
    ptr_t, order = csr_order_op(index, num_rows)
    segment_of = segment_of_entries(ptr, entries)
    return ptr_t, segment_of.index_select(0, order), order


# ---------------------------------------------------------------------------------- weighted gather-segment
def weighted_forward(src: Tensor, ptr: Tensor, index: Tensor, weight: Tensor, reduce: str) -> Tensor:
    """What the weighted op runs, on ``src (N, H, C)`` and ``weight (E, H)``: value checks, then the kernel."""
    red = resolve(reduce)
    ptr, index = checked_structure(src, ptr, index, 0)
    return backend_for(src).weighted_gather_segment_reduce(src, ptr, index, weight.contiguous(), red)


def _weighted_fake(src, ptr, index, weight, reduce):
    return src.new_empty((ptr.size(0) - 1, src.size(1), src.size(2)))


weighted_gather_segment_reduce_op = define_op("weighted_gather_segment_reduce", weighted_forward, _weighted_fake)


def _weighted_setup_context(ctx, inputs, output):
    src, ptr, index, weight, reduce = inputs
    ctx.red = resolve(reduce)
    ctx.save_for_backward(src, ptr, index, weight)


def _weighted_backward(ctx, grad):
    """For src: the same op on the transposed structure, each entry keeping its weight (``transpose_with_order``
    gives the entries' order); for weight: the SDDMM ``<grad[s], src[index[k]]>`` per head. mean: the same, of
    ``grad / count``. The ops themselves, with their registered gradients: differentiable again, and traceable
    (no value read outside an op)."""
    src, ptr, index, weight = ctx.saved_tensors
    if not ctx.red.linear:
        raise NotImplementedError(f"gather_segment_reduce has no transposed backward for {ctx.red.name!r}")
    if ctx.red.divide_by_count:
        grad = grad / ptr.diff().clamp(min=1).to(grad.dtype).view(-1, 1, 1)
    grad_src = grad_weight = None
    if ctx.needs_input_grad[0]:
        ptr_t, index_t, order = transpose_with_order(ptr, index, src.size(0))
        grad_src = weighted_gather_segment_reduce_op(grad, ptr_t, index_t, weight.index_select(0, order), "sum")
    if ctx.needs_input_grad[3]:
        grad_weight = sddmm_op(ptr, index, src, grad, "dot").reshape(weight.shape)
    return grad_src, None, None, grad_weight, None


weighted_gather_segment_reduce_differentiable = register_autograd(
    weighted_gather_segment_reduce_op, weighted_forward, _weighted_backward, _weighted_setup_context
)


# ------------------------------------------------------------------------------------------------------ SDDMM
def sddmm_forward(ptr: Tensor, index: Tensor, a: Tensor, b: Tensor, op: str) -> Tensor:
    """What the op runs on ``(rows, heads, channels)`` views: the value checks, then the kernel. ``(E, H, C)``,
    or ``(E, H, 1)`` for dot."""
    backend = backend_for(a)
    ptr = backend.check_ptr(ptr, index.numel(), "index.numel()")
    backend.check_index(index, a.size(0), "index", "a.size(0)")
    return backend.sddmm(ptr, index.contiguous(), a, b, op)


def _sddmm_fake(ptr, index, a, b, op):
    return a.new_empty((index.size(0), a.size(1), 1 if op == "dot" else a.size(2)))


sddmm_op = define_op("sddmm", sddmm_forward, _sddmm_fake)


def _sddmm_setup_context(ctx, inputs, output):
    ptr, index, a, b, op = inputs
    ctx.op = op
    ctx.save_for_backward(ptr, index, a, b)


def _sddmm_backward(ctx, grad):
    """add: the edge gradient scattered to its source and summed per target; mul: the same of ``grad`` times the
    other end; dot: weighted gather-segment sums of the other end (on the transposed structure for ``a``)."""
    ptr, index, a, b = ctx.saved_tensors
    want_a, want_b = ctx.needs_input_grad[2], ctx.needs_input_grad[3]
    grad_a = grad_b = None
    if ctx.op == "dot":
        edge_weight = grad.reshape(grad.size(0), grad.size(1))
        if want_a:
            ptr_t, index_t, order = transpose_with_order(ptr, index, a.size(0))
            grad_a = weighted_gather_segment_reduce_op(b, ptr_t, index_t, edge_weight.index_select(0, order), "sum")
        if want_b:
            grad_b = weighted_gather_segment_reduce_op(a, ptr, index, edge_weight, "sum")
        return None, None, grad_a, grad_b, None
    if want_a:
        to_a = grad
        if ctx.op == "mul":
            targets = segment_of_entries(ptr, index.numel())
            to_a = grad * b.index_select(0, targets)
        grad_a = index_scatter_reduce_op(to_a, index, 0, "sum", False, a.size(0), None, False, False)
    if want_b:
        to_b = grad * a.index_select(0, index) if ctx.op == "mul" else grad
        grad_b = segment_reduce_op(to_b, ptr, "sum", 0)
    return None, None, grad_a, grad_b, None


sddmm_differentiable = register_autograd(sddmm_op, sddmm_forward, _sddmm_backward, _sddmm_setup_context)
