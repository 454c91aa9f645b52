"""``csr_transpose``: a CSR structure read the other way (for each row, the segments that read it).

The backward of ``gather_segment_reduce`` runs on it, and the fused PyG layers keep one per graph.
"""

from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor

from ..backends import backend_for
from ._checks import check_index_and_size, check_integer_vector, check_tensor
from ._library import define_op

#: Bytes a row of ``num_rows`` costs: its offset and its count (the counting sort of ``segments``)
_ROW_BYTES = 16


def csr_transpose(ptr: torch.Tensor, index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """A CSR structure read the other way: for each row, the segments that read it.

    ``(ptr, index)`` says which rows each segment reads (segment ``s`` reads rows ``index[ptr[s]:ptr[s+1]]``, as
    :func:`scatterx.gather_segment_reduce` takes it). The result ``(ptr_t, index_t)`` lists, for each row ``r`` in
    ``[0, num_rows)``, the segments that read it, ``index_t[ptr_t[r]:ptr_t[r+1]]``, in increasing order (a segment
    that reads a row twice is listed twice). It is the structure the backward of ``gather_segment_reduce`` runs
    on; pass it as that function's ``transpose=`` to compute it once per graph.

    Args:
        ptr: 1-D int32/int64 CSR offsets: non-decreasing entries from 0 to ``index.numel()``.
        index: 1-D int32/int64, the row each entry reads, in ``[0, num_rows)``, in any order and with repeats.
        num_rows: the number of rows, an int >= 0 (for ``gather_segment_reduce``: ``src.size(dim)``).

    Returns:
        A tuple ``(ptr_t, index_t)`` of new int64 tensors on ``index``'s device, ``ptr_t`` with ``num_rows + 1``
        entries and ``index_t`` with ``index.numel()``.

    Raises:
        TypeError: ``ptr`` or ``index`` is not a tensor or not int32/int64; ``num_rows`` is not an int (None
            included).
        ValueError: ``ptr`` or ``index`` is not 1-D; ``ptr`` is empty, does not start at 0, does not end at
            ``index.numel()``, or decreases; ``ptr`` is on another device than ``index``; ``num_rows`` is
            negative or beyond 64-bit sizes.
        IndexError: an entry of ``index`` is negative or not below ``num_rows``.
        MemoryError: ``num_rows + 1`` offsets would not fit in the device's free memory.

    Example:
        >>> ptr, index = torch.tensor([0, 2, 3]), torch.tensor([2, 0, 2])  # segment 0 reads rows 2, 0; segment 1 row 2
        >>> csr_transpose(ptr, index, 3)  # row 0 is read by segment 0, row 1 by none, row 2 by segments 0 and 1
        (tensor([0, 1, 1, 3]), tensor([0, 0, 1]))
    """
    check_tensor(ptr, "ptr")
    index, num_rows = check_index_and_size(index, num_rows, "num_rows", row_bytes=_ROW_BYTES)
    ptr = check_integer_vector(ptr, "ptr", index)
    if not torch.compiler.is_compiling():  # traced, the op checks it (host reads are its own)
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


# ------------------------------------------------------------------------------------------------ the order
def csr_order(index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(ptr, order)``: the entries of ``index`` grouped by value -- ``order[ptr[r]:ptr[r+1]]`` are the positions
    holding ``r``, in increasing order -- for ``r`` in ``[0, num_rows)``. Both int64. (The transpose of "each
    entry is its own segment", without that structure's arange; what a CSR adjacency by target needs.)

    >>> csr_order(torch.tensor([2, 0, 2]), 3)
    (tensor([0, 1, 1, 3]), tensor([1, 0, 2]))
    """
    index, num_rows = check_index_and_size(index, num_rows, "num_rows", row_bytes=_ROW_BYTES)
    return csr_order_op(index, num_rows)


def _order(index: Tensor, num_rows: int) -> Tuple[Tensor, Tensor]:
    """What the op runs: a stable counting sort (CPU) or sort (GPU), which checks ``index`` against ``num_rows``."""
    ptr, perm = backend_for(index).segments(index, num_rows, sorted=False, size_name="num_rows")
    return ptr.to(torch.int64), perm.to(torch.int64)


def _order_fake(index, num_rows):
    return index.new_empty(num_rows + 1, dtype=torch.int64), index.new_empty(index.numel(), dtype=torch.int64)


csr_order_op = define_op("csr_order", _order, _order_fake)
