"""``gather_segment_reduce``: message passing without materializing the messages.

``out[s] = reduce(src[index[k]] for k in ptr[s]:ptr[s+1])`` along ``dim``. For a graph whose edges are grouped by
target, ``ptr`` is the CSR offsets by target and ``index`` the source of each edge: the sum is ``A @ x`` (a
sparse-dense product with unit weights), the mean its row-normalized form. The gather-then-scatter it replaces
(``x.index_select(0, src_nodes)`` then a scatter) writes and reads an ``edges x features`` tensor; here each row
is read where it is needed and only ``segments x features`` is written. It runs on the segment kernel with
``index`` as its gather list (the same kernel the unsorted path of ``index_scatter_reduce`` runs with a sort
permutation).

The backward of the linear reductions (sum, mean) is the same op on the transposed structure (``csr_transpose``:
for each source row, the segments that read it), so double backward works too. Pass
``transpose=csr_transpose(...)`` to reuse it across calls on one graph. prod/amax/amin have no such form: with a
gradient wanted they take the exact, slower path of an ``index_select`` followed by ``index_scatter_reduce``.

With ``weight`` (GCN's normalised edge weights, GAT's attention per head) each gathered slice is scaled by its
entry's weight before the reduction: its own op (``weighted_gather_segment_reduce``, kernels in
``kernels/*/weighted.py``) on a ``(rows, heads, channels)`` view. Its backward is the weighted op on the
transposed structure for ``src`` and an SDDMM for ``weight`` (both ops in ``_message_passing.py``); it derives the
transposed structure itself, with the order of its entries (``transpose_with_order``), so ``transpose`` is not
used there.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from .._reductions import accumulator_dtype, resolve
from ..backends import backend_for
from ._backward import per_segment
from ._checks import check_integer_vector, check_src, check_tensor, normalize_dim
from ._library import define_op, needs_op, register_autograd
from ._message_passing import checked_structure, weighted_forward, weighted_gather_segment_reduce_differentiable
from ._segments import segment_of_entries
from .csr_transpose import csr_transpose_op
from .index_scatter_reduce import index_scatter_reduce


def gather_segment_reduce(
    src: torch.Tensor,
    ptr: torch.Tensor,
    index: torch.Tensor,
    reduce: str = "sum",
    dim: int = 0,
    *,
    weight: Optional[torch.Tensor] = None,
    transpose: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
) -> torch.Tensor:
    """Reduce the ``src`` slices that ``index`` names, segment by segment: message passing without the messages.

    Segment ``s`` covers the entries ``index[ptr[s]:ptr[s+1]]``, and ``out.select(dim, s)`` is the reduction of
    the slices ``src.select(dim, index[k])`` they name (0 for an empty segment). The same as
    ``index_scatter_reduce(dim, ptr_to_index(ptr), src.index_select(dim, index), reduce)``, without the gathered
    copy: for a graph whose edges are grouped by target (``ptr`` the CSR offsets by target, ``index`` the source
    of each edge) the sum is ``A @ x`` and the mean its row-normalised form, and no ``edges x features`` tensor is
    written or read.

    Differentiable w.r.t. ``src`` (and ``weight``). The backward of sum and mean is the same operation on the
    transposed structure (:func:`scatterx.csr_transpose`), so double backward works; prod/amax/amin with a
    gradient wanted take the exact, slower path of an ``index_select`` followed by ``index_scatter_reduce``.

    Args:
        src: the rows to gather (any supported dtype; the reduced dim is ``dim``).
        ptr: CSR offsets, ``num_segments + 1`` non-decreasing entries from 0 to ``index.numel()``.
        index: int32/int64, entries in ``[0, src.size(dim))``, in any order and with repeats.
        reduce: ``"sum"``, ``"mean"``, ``"prod"``, ``"amax"``, ``"amin"`` (aliases add, mul, max, min).
        dim: the dimension of ``src`` that ``index`` names slices along (negative counts from the end).
        weight: optional per-entry weights, src's dtype and device: ``(E,)`` scales the whole slice
            ``src[index[k]]``; ``(E, H)`` scales head ``h`` of it, ``src`` then having ``H`` at ``dim + 1``
            (``(N, H, C)`` for dim 0) -- GCN's normalised edge weights, GAT's attention per head. The reduction is
            of ``weight[k] * src[index[k]]`` (a mean divides by the number of entries, not by the weights' sum).
            Differentiable in both ``src`` and ``weight``.
        transpose: ``csr_transpose(ptr, index, src.size(dim))`` when the caller keeps it; else the backward of
            sum/mean computes it (a counting sort of ``index``). It must be exactly that: its sizes and bounds
            are checked here, and another structure gives other gradients. (Unused with ``weight``, though still
            checked.)

    Returns:
        A new tensor of ``src``'s dtype, device and shape, but ``num_segments`` (``ptr.numel() - 1``) along
        ``dim``.

    Raises:
        TypeError: ``src``, ``ptr``, ``index``, ``weight`` or an element of ``transpose`` is not a tensor;
            ``src`` has another dtype (bool, int8, complex, ...); ``ptr``, ``index`` or the elements of
            ``transpose`` are not int32/int64; ``weight``'s dtype differs from ``src``'s; ``transpose`` is not a
            pair; ``dim`` is not an int.
        ValueError: ``reduce`` is unknown; ``ptr`` or ``index`` is not 1-D, or is on another device than
            ``src``; ``ptr`` is empty, does not start at 0, does not end at ``index.numel()``, or decreases;
            ``weight`` has another shape than ``(E,)`` or ``(E, H)`` with ``src.size(dim + 1) == H``, or is on
            another device; ``transpose`` does not fit (its sizes, or its ``ptr_t`` malformed).
        IndexError: ``dim`` is out of range; an entry of ``index`` is negative or not below ``src.size(dim)``; an
            entry of ``transpose[1]`` is not a segment.
        NotImplementedError: ``src`` is on a device other than the CPU and CUDA, or on CUDA without Triton.

    Example:
        >>> src = torch.tensor([1., 10., 100.])
        >>> ptr, index = torch.tensor([0, 2, 3]), torch.tensor([2, 0, 2])  # segment 0 reads rows 2, 0; 1 row 2
        >>> gather_segment_reduce(src, ptr, index)
        tensor([101., 100.])
        >>> gather_segment_reduce(src, ptr, index, "amin")
        tensor([  1., 100.])
        >>> gather_segment_reduce(src, ptr, index, weight=torch.tensor([1., 2., 3.]))
        tensor([102., 300.])
    """
    red, src, ptr, index, dim = _checked(src, ptr, index, reduce, dim)
    if weight is not None:
        return _weighted(src, ptr, index, red, dim, weight, transpose)
    ptr_t, index_t = _checked_transpose(transpose, src, dim, ptr, index)
    if not needs_op(src):
        # (the transpose too, though no backward will use it: a bad argument is an error on every path)
        return _forward(src, ptr, index, red.name, dim, ptr_t, index_t)
    if red.linear or not (torch.is_grad_enabled() and src.requires_grad):
        # (traced without a gradient: the op itself, so that an exported graph keeps it whole)
        return gather_segment_reduce_differentiable(src, ptr, index, red.name, dim, ptr_t, index_t)
    # prod/amax/amin with a gradient: no transposed form, so gather the rows and take index_scatter_reduce's
    # exact backward (ties split, zeros in products). Traced, the values are checked by the ops it runs instead:
    # index_select checks index, and the targets come from ptr's own lengths.
    if not torch.compiler.is_compiling():
        ptr, index = checked_structure(src, ptr, index, dim)
        if ptr_t is not None:
            _check_transpose_values(src, ptr_t, index_t, ptr.numel() - 1)
    targets = segment_of_entries(ptr, index.numel())
    return index_scatter_reduce(
        dim, targets, src.index_select(dim, index), red.name, sorted=True, dim_size=ptr.numel() - 1
    )


def _checked(src, ptr, index, reduce, dim):
    """The checks that read no values: ``(reduction, src, ptr, index, dim >= 0)``."""
    red = resolve(reduce)
    check_src(src)
    check_tensor(ptr, "ptr")
    check_tensor(index, "index")
    src = src.view(1) if src.dim() == 0 else src
    dim = normalize_dim(dim, src.dim())
    return red, src, check_integer_vector(ptr, "ptr", src), check_integer_vector(index, "index", src), dim


def _checked_transpose(transpose, src, dim, ptr, index):
    """``(ptr_t, index_t)`` with their types and sizes checked (their values are checked by the op, where they are
    used), or ``(None, None)``."""
    if transpose is None:
        return None, None
    if not (isinstance(transpose, (tuple, list)) and len(transpose) == 2):
        raise TypeError("transpose must be the pair (ptr_t, index_t) that csr_transpose returns")
    ptr_t = check_integer_vector(check_tensor(transpose[0], "transpose[0] (ptr_t)"), "transpose[0] (ptr_t)", src)
    index_t = check_integer_vector(check_tensor(transpose[1], "transpose[1] (index_t)"), "transpose[1] (index_t)", src)
    if ptr_t.numel() != src.size(dim) + 1 or index_t.numel() != index.numel():
        raise ValueError(
            f"transpose does not fit: ptr_t has {ptr_t.numel()} entries (need src.size({dim}) + 1 = "
            f"{src.size(dim) + 1}) and index_t {index_t.numel()} (need index.numel() = {index.numel()})"
        )
    return ptr_t, index_t


def _check_transpose_values(src, ptr_t, index_t, num_segments: int) -> None:
    """The transpose's values, named as the caller passed them (inside the op, where host reads are allowed:
    the CPU twin is opaque to torch.compile, the GPU checks are device asserts)."""
    backend = backend_for(src)
    backend.check_ptr(ptr_t, index_t.numel(), "index.numel()")
    backend.check_index(index_t, num_segments, "transpose[1] (index_t)", "the number of segments")


def _forward(
    src: Tensor, ptr: Tensor, index: Tensor, reduce: str, dim: int, ptr_t: Optional[Tensor], index_t: Optional[Tensor]
) -> Tensor:
    """What the op runs: validation, then the segment kernel with ``index`` as its gather list. ``ptr_t`` /
    ``index_t``: the transposed structure for the backward, or None (checked here, used by the backward)."""
    red, src, ptr, index, dim = _checked(src, ptr, index, reduce, dim)
    ptr, index = checked_structure(src, ptr, index, dim)
    if ptr_t is not None and index_t is not None:
        _check_transpose_values(src, ptr_t, index_t, ptr.numel() - 1)
    return backend_for(src).gather_segment_reduce(src, ptr, index, dim, red)


def _fake(src, ptr, index, reduce, dim, ptr_t, index_t):
    shape = list(src.shape) or [1]
    shape[dim % len(shape)] = ptr.size(0) - 1
    return src.new_empty(shape)


gather_segment_reduce_op = define_op("gather_segment_reduce", _forward, _fake)


def _setup_context(ctx, inputs, output):
    src, ptr, index, reduce, dim, ptr_t, index_t = inputs
    ctx.given_shape = tuple(src.shape)
    src = src.view(1) if src.dim() == 0 else src
    ctx.dim, ctx.red, ctx.num_rows = dim % src.dim(), resolve(reduce), src.size(dim % src.dim())
    ctx.has_transpose = ptr_t is not None and index_t is not None
    ctx.save_for_backward(ptr, index, *((ptr_t, index_t) if ctx.has_transpose else ()))


def _autograd_backward(ctx, grad):
    """sum: the same op on the transposed structure; mean: the same, of ``grad / count``. Both differentiable."""
    ptr, index, *transpose = ctx.saved_tensors
    if not ctx.red.linear:
        raise NotImplementedError(f"gather_segment_reduce has no transposed backward for {ctx.red.name!r}")
    ptr_t, index_t = transpose if ctx.has_transpose else csr_transpose_op(ptr, index, ctx.num_rows)
    if ctx.red.divide_by_count:
        counts = ptr.diff().clamp(min=1).to(accumulator_dtype(grad.dtype))
        grad = (grad / per_segment(counts, ctx.dim, grad.dim())).to(grad.dtype)  # (a half type's: rounded once)
    grad_src = gather_segment_reduce_op(grad, ptr_t, index_t, "sum", ctx.dim, ptr, index)
    return grad_src.reshape(ctx.given_shape), None, None, None, None, None, None


gather_segment_reduce_differentiable = register_autograd(
    gather_segment_reduce_op, _forward, _autograd_backward, _setup_context
)


# ------------------------------------------------------------------------------------------------ weighted
def _weighted(src: Tensor, ptr: Tensor, index: Tensor, red, dim: int, weight, transpose) -> Tensor:
    """The weighted form on a ``(rows, heads, channels)`` view of ``src`` with the reduced dim first."""
    heads = _checked_weight(weight, src, index, dim)
    # a wrong argument is an error, though it is not used (its values read outside an op only in eager mode)
    ptr_t, index_t = _checked_transpose(transpose, src, dim, ptr, index)
    if ptr_t is not None and not torch.compiler.is_compiling():
        _check_transpose_values(src, ptr_t, index_t, ptr.numel() - 1)
    # the reduced dim first and the heads (if any) second; every other dim is a channel
    lead = (dim, dim + 1)[: weight.dim()]
    moved = src.movedim(lead, tuple(range(len(lead))))
    channels = 1
    for size in moved.shape[len(lead) :]:
        channels *= size
    rows = moved.reshape(moved.size(0), heads, channels)
    weight = weight.reshape(index.numel(), heads)
    if not needs_op(rows, weight):
        out = weighted_forward(rows, ptr, index, weight, red.name)
    elif red.linear or not (torch.is_grad_enabled() and (rows.requires_grad or weight.requires_grad)):
        # (traced without a gradient: the op itself, so that an exported graph keeps it whole)
        out = weighted_gather_segment_reduce_differentiable(rows, ptr, index, weight, red.name)
    else:
        # prod/amax/amin with a gradient: the messages, then index_scatter_reduce's exact backward (traced, the
        # values are checked by the ops it runs, as in gather_segment_reduce)
        if not torch.compiler.is_compiling():
            ptr, index = checked_structure(rows, ptr, index, 0)
        targets = segment_of_entries(ptr, index.numel())
        messages = rows.index_select(0, index) * weight.unsqueeze(-1)
        out = index_scatter_reduce(0, targets, messages, red.name, sorted=True, dim_size=ptr.numel() - 1)
    out = out.reshape(out.size(0), *moved.shape[1:]).movedim(tuple(range(len(lead))), lead)
    return out if out.is_contiguous() else out.contiguous()


def _checked_weight(weight, src: Tensor, index: Tensor, dim: int) -> int:
    """Check ``weight`` against ``src`` and ``index``; the number of heads it has (1 for a ``(E,)`` weight)."""
    check_tensor(weight, "weight")
    if weight.dtype != src.dtype:
        raise TypeError(f"weight has dtype {weight.dtype} but src has dtype {src.dtype}; they must match")
    if weight.device != src.device:
        raise ValueError(f"weight is on {weight.device} but src is on {src.device}")
    if weight.dim() not in (1, 2) or weight.size(0) != index.numel():
        raise ValueError(
            f"weight must have shape (E,) or (E, heads) with E = index.numel() = {index.numel()}, got "
            f"{tuple(weight.shape)}"
        )
    if weight.dim() == 1:
        return 1
    if src.dim() <= dim + 1 or src.size(dim + 1) != weight.size(1):
        raise ValueError(
            f"weight of shape {tuple(weight.shape)} has {weight.size(1)} heads: src needs them at dim "
            f"{dim + 1}, got src of shape {tuple(src.shape)}"
        )
    return weight.size(1)
