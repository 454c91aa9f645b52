"""``gather_segment_reduce``: message passing without materializing the messages; and ``csr_transpose``.

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
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor

from .._reductions import resolve
from ..backends import backend_for
from ._backward import per_segment
from ._checks import check_allocation, check_integer_vector, check_size, check_src, check_tensor, normalize_dim
from ._library import define_op, needs_op, register_autograd
from .index_scatter_reduce import index_scatter_reduce


def gather_segment_reduce(
    src: torch.Tensor,
    ptr: torch.Tensor,
    index: torch.Tensor,
    reduce: str = "sum",
    dim: int = 0,
    *,
    transpose: Optional[Tuple[torch.Tensor, torch.Tensor]] = None,
) -> torch.Tensor:
    """Reduce the ``src`` slices that ``index`` names, segment by segment: segment ``s`` covers the entries
    ``index[ptr[s]:ptr[s+1]]``, and ``out.select(dim, s)`` is their reduction (0 for an empty segment).

    Args:
        src: the rows to gather (any supported dtype; the reduced dim is ``dim``).
        ptr: CSR offsets, ``num_segments + 1`` non-decreasing entries from 0 to ``index.numel()``.
        index: int32/int64, entries in ``[0, src.size(dim))``, in any order and with repeats.
        reduce: ``"sum"``, ``"mean"``, ``"prod"``, ``"amax"``, ``"amin"`` (aliases add, mul, max, min).
        transpose: ``csr_transpose(ptr, index, src.size(dim))`` when the caller keeps it; else the backward of
            sum/mean computes it (a counting sort of ``index``). It must be exactly that: its sizes and bounds
            are checked here, and another structure gives other gradients.

    Same as ``index_scatter_reduce(dim, ptr_to_index(ptr), src.index_select(dim, index), reduce)``, without the
    gathered copy.

    >>> gather_segment_reduce(torch.tensor([1., 10., 100.]), torch.tensor([0, 2, 3]), torch.tensor([2, 0, 2]))
    tensor([101., 100.])
    """
    red, src, ptr, index, dim = _checked(src, ptr, index, reduce, dim)
    ptr_t, index_t = _checked_transpose(transpose, src, dim, ptr, index)
    if not needs_op(src):
        return _forward(src, ptr, index, red.name, dim, None, None)
    if red.linear:
        return gather_segment_reduce_differentiable(src, ptr, index, red.name, dim, ptr_t, index_t)
    # prod/amax/amin with a gradient: no transposed form, so gather the rows and take index_scatter_reduce's
    # exact backward (ties split, zeros in products)
    ptr, index = _checked_structure(src, ptr, index, dim)
    targets = torch.repeat_interleave(
        torch.arange(ptr.numel() - 1, device=ptr.device), ptr.diff(), output_size=index.numel()
    )
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


def _checked_structure(src: Tensor, ptr: Tensor, index: Tensor, dim: int):
    """``(ptr, index)`` with their values checked against ``src`` (raised at once on the CPU, asserted on the
    device on the GPU)."""
    backend = backend_for(src)
    ptr = backend.check_ptr(ptr, index.numel(), "index.numel()")
    backend.check_index(index, src.size(dim), "index", f"src.size({dim})")
    return ptr, index.contiguous()


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
    ptr, index = _checked_structure(src, ptr, index, dim)
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
        counts = ptr.diff().clamp(min=1).to(grad.dtype)
        grad = grad / per_segment(counts, ctx.dim, grad.dim())
    grad_src = gather_segment_reduce_op(grad, ptr_t, index_t, "sum", ctx.dim, ptr, index)
    return grad_src.reshape(ctx.given_shape), None, None, None, None, None, None


gather_segment_reduce_differentiable = register_autograd(
    gather_segment_reduce_op, _forward, _autograd_backward, _setup_context
)


# ------------------------------------------------------------------------------------------------ the transpose
def csr_transpose(ptr: torch.Tensor, index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """The structure read the other way: ``(ptr_t, index_t)`` with, for each row ``r`` in ``[0, num_rows)``, the
    segments that read it, ``index_t[ptr_t[r]:ptr_t[r+1]]``, in increasing order (once per reading). Both int64.

    >>> csr_transpose(torch.tensor([0, 2, 3]), torch.tensor([2, 0, 2]), 3)
    (tensor([0, 1, 1, 3]), tensor([0, 0, 1]))
    """
    check_tensor(ptr, "ptr")
    check_tensor(index, "index")
    index = check_integer_vector(index, "index", index)
    ptr = check_integer_vector(ptr, "ptr", index)
    num_rows = check_size(num_rows, "num_rows")
    if num_rows is None:
        raise TypeError("num_rows must be an int, got None")
    check_allocation(num_rows + 1, 8, index.device, f"num_rows={num_rows}")
    backend_for(index).check_ptr(ptr, index.numel(), "index.numel()")
    return csr_transpose_op(ptr, index, num_rows)


def _transpose(ptr: Tensor, index: Tensor, num_rows: int) -> Tuple[Tensor, Tensor]:
    """What the op runs: group the entries by row (a stable sort, which checks ``index`` against ``num_rows``),
    then name each entry's segment."""
    backend = backend_for(index)
    ptr = backend.check_ptr(ptr, index.numel(), "index.numel()")
    return backend.csr_transpose(ptr, index, num_rows)


def _transpose_fake(ptr, index, num_rows):
    return ptr.new_empty(num_rows + 1, dtype=torch.int64), index.new_empty(index.numel(), dtype=torch.int64)


csr_transpose_op = define_op("csr_transpose", _transpose, _transpose_fake)
