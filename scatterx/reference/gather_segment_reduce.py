"""Reference for ``scatterx.gather_segment_reduce`` (and its weighted form)."""

from __future__ import annotations

from typing import Optional

import torch

from ._rows import _wide
from .segment_reduce import segment_reduce

__all__ = ["gather_segment_reduce"]


def gather_segment_reduce(
    src: torch.Tensor,
    ptr: torch.Tensor,
    index: torch.Tensor,
    reduce: str = "sum",
    dim: int = 0,
    weight: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Reference for ``scatterx.gather_segment_reduce``: gather the rows (scaled by their weights: the whole row,
    or head ``h`` at ``dim + 1``), then reduce them segment by segment."""
    dim = dim % src.dim()
    rows = src.index_select(dim, index.to(torch.int64))
    if weight is not None:
        shape = [1] * rows.dim()
        shape[dim] = weight.size(0)
        if weight.dim() == 2:
            shape[dim + 1] = weight.size(1)
        wide = _wide(rows.dtype)
        return segment_reduce(rows.to(wide) * weight.to(wide).reshape(shape), ptr, reduce, dim).to(src.dtype)
    return segment_reduce(rows, ptr, reduce, dim)
