"""``segment_softmax``: softmax along ``dim`` within groups of slices -- attention over each node's incoming edges.

The groups are given by an index (``index[i]`` is the group of slice ``i``; any order) or by CSR offsets ``ptr``
over contiguous slices. Every slice belongs to a group. Within each group the result is exactly
``torch.softmax``'s, NaN/inf rules included: ``exp(x - max) / sum(exp(x - max))``, with NaN for a whole group that
holds a NaN or a +inf, or only -inf.

Kernels: one pass per group computes the running maximum and the sum of exponentials rescaled as the maximum
grows (online softmax), a second writes the results (``kernels/cpu/segment_softmax.py``,
``kernels/gpu/segment_softmax.py``); an unsorted index is grouped by the backend's stable sort and its rows gathered
through the permutation. The
gradient ``y * (g - sum(g * y))`` per group is a kernel too (two passes); with ``create_graph=True`` the same
formula runs as differentiable ops, so that double backward works.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from ..backends import backend_for
from ._checks import (
    check_allocation,
    check_integer_vector,
    check_size,
    check_src,
    check_tensor,
    normalize_dim,
    traced_size,
)
from ._library import define_op, needs_op, register_autograd
from .index_scatter_reduce import index_scatter_reduce_op
from .segment_reduce import segment_reduce_op


def segment_softmax(
    src: torch.Tensor,
    index: Optional[torch.Tensor] = None,
    *,
    ptr: Optional[torch.Tensor] = None,
    dim: int = 0,
    num_segments: Optional[int] = None,
    sorted: bool = False,
) -> torch.Tensor:
    """Softmax of ``src`` along ``dim`` within each group of slices: attention over each node's incoming edges.

    The groups are given by an index (``index[i]`` is the group of slice ``i``; any order) or by CSR offsets
    ``ptr`` over contiguous slices; every slice belongs to a group. Within each group the result is exactly
    ``torch.softmax``'s, NaN/inf rules included: ``exp(x - max) / sum(exp(x - max))``, NaN for a whole group that
    holds a NaN or a +inf, or only -inf. Differentiable w.r.t. ``src`` (``y * (g - sum(g * y))`` per group),
    double backward included.

    Args:
        src: float32/float64/float16/bfloat16 (half types are computed in float32), at least 1-D.
        index: int32/int64 with ``src.size(dim)`` entries, the group of each slice, in any order
            (``sorted=True`` promises it is non-decreasing: no sort is needed).
        ptr: instead of ``index``, CSR offsets: group ``s`` is slices ``ptr[s]:ptr[s+1]``, ``ptr[0] == 0``,
            ``ptr[-1] == src.size(dim)``.
        dim: the dimension of ``src`` the groups run along (negative counts from the end).
        num_segments: the number of groups an index may name (default ``index.max() + 1``, read on the host;
            pass it to avoid that sync, e.g. under ``torch.compile``). With ``ptr``, it must be
            ``ptr.numel() - 1`` if given.
        sorted: with ``index``, promise that it is non-decreasing (checked); ignored with ``ptr``.

    Returns:
        A new tensor of ``src``'s shape, dtype and device.

    Raises:
        TypeError: ``src``, ``index`` or ``ptr`` is not a tensor; ``src`` is not floating point; ``index`` or
            ``ptr`` is not int32/int64; ``dim`` or ``num_segments`` is not an int; ``sorted`` is not a bool.
        ValueError: both or neither of ``index`` and ``ptr`` are given; ``src`` is 0-d; ``index`` or ``ptr`` is
            not 1-D or is on another device than ``src``; ``index`` does not have ``src.size(dim)`` entries;
            ``sorted=True`` but ``index`` decreases; ``ptr`` is empty, does not start at 0, does not end at
            ``src.size(dim)``, or decreases; ``num_segments`` is negative, beyond 64-bit sizes, or disagrees with
            ``ptr``.
        IndexError: ``dim`` is out of range; an entry of ``index`` is negative or not below ``num_segments``.
        MemoryError: the offsets of ``num_segments`` groups would not fit in the device's free memory.
        NotImplementedError: ``src`` is on a device other than the CPU and CUDA, or on CUDA without Triton.

    Example:
        >>> segment_softmax(torch.tensor([1., 1., 5.]), torch.tensor([0, 0, 1]))
        tensor([0.5000, 0.5000, 1.0000])
        >>> segment_softmax(torch.tensor([0., 0., 0., 7.]), ptr=torch.tensor([0, 3, 4]))
        tensor([0.3333, 0.3333, 0.3333, 1.0000])
    """
    src, index, ptr, dim, num_segments = _checked(src, index, ptr, dim, num_segments, sorted)
    if not needs_op(src):
        return _forward(src, index, ptr, dim, num_segments, sorted)
    return segment_softmax_differentiable(src, index, ptr, dim, num_segments, sorted)


def _checked(src, index, ptr, dim, num_segments, sorted):
    """The checks that read no values (plus the default ``num_segments``, which reads the index)."""
    check_src(src)
    if not src.is_floating_point():
        raise TypeError(f"segment_softmax needs a floating-point src, got {src.dtype}")
    if src.dim() == 0:
        raise ValueError("segment_softmax: src must have at least one dimension, got a 0-d tensor")
    dim = normalize_dim(dim, src.dim())
    if not isinstance(sorted, bool):
        raise TypeError(f"sorted must be a bool, got {type(sorted).__name__}")
    if (index is None) == (ptr is None):
        raise ValueError("segment_softmax takes either index or ptr (exactly one of them)")
    n = src.size(dim)
    given = num_segments = check_size(num_segments, "num_segments")
    if ptr is not None:
        ptr = check_integer_vector(check_tensor(ptr, "ptr"), "ptr", src)
        if num_segments is not None and not torch.compiler.is_compiling() and num_segments != ptr.numel() - 1:
            raise ValueError(f"num_segments={num_segments} disagrees with ptr, which has {ptr.numel() - 1} groups")
        return src, None, ptr, dim, ptr.numel() - 1
    index = check_integer_vector(check_tensor(index, "index"), "index", src)
    if index.numel() != n:
        raise ValueError(f"index has {index.numel()} entries but src.size({dim}) is {n}: every slice needs a group")
    if num_segments is None and n and torch.compiler.is_compiling():
        # a data-dependent size read by a torch op (the backend's read is NumPy, which Dynamo cannot trace); the
        # kernels check every entry against it
        num_segments = traced_size(index.max())
    elif num_segments is None:
        num_segments = backend_for(src).output_size(index, sorted)[0] if n else 0
    if not torch.compiler.is_compiling():  # (traced sizes may be symbolic; the check is for eager calls)
        what = (
            f"num_segments={num_segments}"
            if given is not None
            else f"the number of groups index.max() + 1 = {num_segments} (no num_segments given)"
        )
        check_allocation(num_segments + 1, 16, src.device, what)  # the groups' offsets, and their counts
    return src, index, None, dim, num_segments


def _structure(src: Tensor, index: Optional[Tensor], ptr: Optional[Tensor], dim: int, num_segments: int, sorted: bool):
    """``(backend, ptr, perm)`` with the index's or ``ptr``'s values checked."""
    backend = backend_for(src)
    if ptr is not None:
        return backend, backend.check_ptr(ptr, src.size(dim), f"src.size({dim})"), None
    ptr, perm = backend.segments(index, num_segments, sorted, size_name="num_segments")
    return backend, ptr, perm


def _forward(
    src: Tensor, index: Optional[Tensor], ptr: Optional[Tensor], dim: int, num_segments: int, sorted: bool
) -> Tensor:
    """What the op runs: every check, then the kernel."""
    src, index, ptr, dim, num_segments = _checked(src, index, ptr, dim, num_segments, sorted)
    backend, ptr, perm = _structure(src, index, ptr, dim, num_segments, sorted)
    return backend.segment_softmax(src, ptr, perm, dim)


def _fake(src, index, ptr, dim, num_segments, sorted):
    return src.new_empty(src.shape)  # contiguous, as the kernels' result is (empty_like keeps a transposed src's)


segment_softmax_op = define_op("segment_softmax", _forward, _fake)


def _backward_kernels(
    out: Tensor, grad: Tensor, index: Optional[Tensor], ptr: Optional[Tensor], dim: int, num_segments: int, sorted: bool
) -> Tensor:
    """``out * (grad - sum over the group of grad * out)``, on the kernels."""
    backend, ptr, perm = _structure(out, index, ptr, dim, num_segments, sorted)
    return backend.segment_softmax_backward(out, grad.contiguous(), ptr, perm, dim)


def _backward_fake(out, grad, index, ptr, dim, num_segments, sorted):
    return out.new_empty(out.shape)


segment_softmax_backward_op = define_op("segment_softmax_backward", _backward_kernels, _backward_fake)


def _setup_context(ctx, inputs, output):
    src, index, ptr, dim, num_segments, sorted = inputs
    ctx.dim, ctx.num_segments, ctx.sorted = dim % src.dim(), num_segments, sorted
    ctx.has_index = index is not None
    ctx.save_for_backward(output, index if index is not None else ptr)


def _autograd_backward(ctx, grad):
    out, structure = ctx.saved_tensors
    index, ptr = (structure, None) if ctx.has_index else (None, structure)
    if not torch.is_grad_enabled():
        grad_src = segment_softmax_backward_op(out, grad, index, ptr, ctx.dim, ctx.num_segments, ctx.sorted)
        return grad_src, None, None, None, None, None
    # create_graph=True: the same formula from differentiable ops
    product = grad * out
    if ctx.has_index:
        dot = index_scatter_reduce_op(
            product, structure, ctx.dim, "sum", ctx.sorted, ctx.num_segments, None, True, False
        )
        dot = dot.index_select(ctx.dim, structure.long())
    else:
        dot = segment_reduce_op(product, structure, "sum", ctx.dim)
        dot = dot.repeat_interleave(structure.diff(), ctx.dim, output_size=out.size(ctx.dim))
    return out * (grad - dot), None, None, None, None, None


segment_softmax_differentiable = register_autograd(segment_softmax_op, _forward, _autograd_backward, _setup_context)
