"""Reference for ``scatterx.ops.csr_transpose`` and ``csr_order``: the lists built one entry at a time."""

from __future__ import annotations

from typing import List, Tuple

import torch

__all__ = ["csr_order", "csr_transpose"]


def _as_csr(lists: List[List[int]]) -> Tuple[torch.Tensor, torch.Tensor]:
    ptr = [0]
    for members in lists:
        ptr.append(ptr[-1] + len(members))
    flat = [x for members in lists for x in members]
    return torch.tensor(ptr, dtype=torch.int64), torch.tensor(flat, dtype=torch.int64)


def csr_transpose(ptr: torch.Tensor, index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(ptr_t, index_t)``: for each row, the segments that read it, in increasing order (twice if read twice)."""
    readers: List[List[int]] = [[] for _ in range(num_rows)]
    offsets, rows = ptr.tolist(), index.tolist()
    for s in range(len(offsets) - 1):
        for e in range(offsets[s], offsets[s + 1]):
            readers[rows[e]].append(s)
    return _as_csr(readers)


def csr_order(index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(ptr, order)``: for each value ``r`` below ``num_rows``, the positions of ``index`` holding it, in order."""
    positions: List[List[int]] = [[] for _ in range(num_rows)]
    for i, r in enumerate(index.tolist()):
        positions[r].append(i)
    return _as_csr(positions)
