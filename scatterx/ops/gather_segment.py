"""``gather_segment_reduce``: message passing without materializing the messages.

``out[s] = reduce(src[index[k]] for k in ptr[s]:ptr[s+1])`` along ``dim``. For a graph whose edges are grouped by
target, ``ptr`` is the CSR offsets by target and ``index`` the source of each edge: the sum is ``A @ x`` (a
sparse-dense product with unit weights), the mean its row-normalized form. The gather-then-scatter it replaces
(``x.index_select(0, src_nodes)`` then a scatter) writes and reads an ``edges x features`` tensor; here each row
is read where it is needed and only ``segments x features`` is written. It runs on the segment kernel of
``run_segments`` with ``index`` as its gather list (the same kernel the unsorted path of ``index_scatter_reduce``
uses with a sort permutation).

The backward of sum and mean is the same op on the transposed structure (``csr_transpose``: for each source
row, the segments that read it), so double backward works too. Pass ``transpose=csr_transpose(...)`` to reuse it
across calls on one graph. prod/amax/amin have no such form: with a gradient wanted they take the exact, slower
path of an ``index_select`` followed by ``index_scatter_reduce``.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from .._reductions import resolve
from ._checks import check_integer_vector, check_src, normalize_dim
from .gpu import uses_triton
from .library import gather_segment_reduce_op, needs_op
from .segment import check_ptr, run_segments, segments_from_unsorted_index

_LINEAR = ("sum", "mean")


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
            sum/mean computes it (a counting sort of ``index``). It must be exactly that: only its sizes and
            bounds are checked, and another structure gives other gradients.

    Same as ``index_scatter_reduce(dim, ptr_to_index(ptr), src.index_select(dim, index), reduce)``, without the
    gathered copy.

    >>> gather_segment_reduce(torch.tensor([1., 10., 100.]), torch.tensor([0, 2, 3]), torch.tensor([2, 0, 2]))
    tensor([101., 100.])
    """
    red = resolve(reduce)
    check_src(src)
    dim = normalize_dim(dim, src.dim())
    check_integer_vector(ptr, "ptr", src)
    check_integer_vector(index, "index", src)
    ptr_t, index_t = _check_transpose(transpose, src, dim, ptr, index)
    if not needs_op(src):
        return _gather_segment_reduce_eager(src, ptr, index, red.name, dim)
    if red.name in _LINEAR:
        return gather_segment_reduce_op(src, ptr, index, red.name, dim, ptr_t, index_t)
    # prod/amax/amin with a gradient: no transposed form, so gather the rows and take index_scatter_reduce's
    # exact backward (ties split, zeros in products)
    from .index_scatter import index_scatter_reduce

    ptr, index = _checked_structure(src, ptr, index, dim)
    targets = torch.repeat_interleave(
        torch.arange(ptr.numel() - 1, device=ptr.device), ptr.diff(), output_size=index.numel()
    )
    return index_scatter_reduce(
        dim, targets, src.index_select(dim, index), red.name, sorted=True, dim_size=ptr.numel() - 1
    )


def csr_transpose(ptr: torch.Tensor, index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """The structure read the other way: ``(ptr_t, index_t)`` with, for each row ``r`` in ``[0, num_rows)``, the
    segments that read it, ``index_t[ptr_t[r]:ptr_t[r+1]]``, in increasing order (once per reading). Both int64.

    >>> csr_transpose(torch.tensor([0, 2, 3]), torch.tensor([2, 0, 2]), 3)
    (tensor([0, 1, 1, 3]), tensor([0, 0, 1]))
    """
    check_integer_vector(ptr, "ptr", index)
    check_integer_vector(index, "index", index)
    if isinstance(num_rows, bool) or not isinstance(num_rows, int) or num_rows < 0:
        raise TypeError(f"num_rows must be an int >= 0, got {num_rows!r}")
    if not uses_triton(index):
        check_ptr(ptr, index, index.numel(), "index.numel()")
    return torch.ops.scatterx.csr_transpose(ptr, index, num_rows)


def _check_transpose(transpose, src, dim, ptr, index):
    if transpose is None:
        return None, None
    if not (isinstance(transpose, (tuple, list)) and len(transpose) == 2):
        raise TypeError("transpose must be the pair (ptr_t, index_t) that csr_transpose returns")
    ptr_t, index_t = transpose
    check_integer_vector(ptr_t, "transpose[0] (ptr_t)", src)
    check_integer_vector(index_t, "transpose[1] (index_t)", src)
    if ptr_t.numel() != src.size(dim) + 1 or index_t.numel() != index.numel():
        raise ValueError(
            f"transpose does not fit: ptr_t has {ptr_t.numel()} entries (need src.size({dim}) + 1 = "
            f"{src.size(dim) + 1}) and index_t {index_t.numel()} (need index.numel() = {index.numel()})"
        )
    return ptr_t, index_t


def _checked_structure(src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, dim: int):
    """``(ptr, index)`` validated against ``src`` on the host (CPU) or by device asserts (CUDA, no sync)."""
    n = src.size(dim)
    if uses_triton(src):
        from . import gpu

        gpu.check_ptr_on_device(ptr, index.numel())
        gpu.check_index_on_device(index, n, sorted=False)
        return ptr.to(torch.int64), index
    ptr = check_ptr(ptr, src, index.numel(), "index.numel()")
    if index.numel():
        lo, hi = int(index.min()), int(index.max())
        if lo < 0 or hi >= n:
            i = int(torch.nonzero((index < 0) | (index >= n))[0])
            raise IndexError(f"index[{i}]={int(index[i])} is out of range for src.size({dim})={n}")
    return ptr, index.contiguous()


def _gather_segment_reduce_eager(src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, reduce: str, dim: int):
    """What the op runs: validation, then the segment kernel with ``index`` as its gather list."""
    red = resolve(reduce)
    ptr, index = _checked_structure(src, ptr, index, dim)
    if uses_triton(src):
        from . import gpu

        return gpu.gather_segment_reduce(src, ptr, index, red, dim)
    return run_segments(src, dim, ptr, index, red, None, include_self=False)


def _csr_transpose_impl(ptr: torch.Tensor, index: torch.Tensor, num_rows: int):
    """What ``torch.ops.scatterx.csr_transpose`` runs: group the entries by row (a stable sort), then name each
    entry's segment. (The public function checked ``ptr`` on the host for CPU tensors; on the device it is
    checked here, without a host sync, like the index.)"""
    if uses_triton(index):
        from . import gpu

        gpu.check_ptr_on_device(ptr, index.numel())
        gpu.check_index_on_device(index, num_rows, sorted=False)
    lengths = ptr.diff()
    segment_of = torch.repeat_interleave(
        torch.arange(lengths.numel(), device=ptr.device), lengths, output_size=index.numel()
    )
    if uses_triton(index):
        ptr_t, perm = gpu.segments(index, num_rows, sorted=False)
    else:
        ptr_t, perm = segments_from_unsorted_index(index, num_rows)
    return ptr_t.to(torch.int64), segment_of[perm.long()]
