"""Reference for ``scatterx.segment_reduce``."""

from __future__ import annotations

import torch

from .index_scatter_reduce import index_scatter_reduce

__all__ = ["segment_reduce"]


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, reduce: str = "sum", dim: int = 0) -> torch.Tensor:
    """Reference for ``scatterx.segment_reduce``: expand ``ptr`` to an index and reduce."""
    counts = (ptr[1:] - ptr[:-1]).to(torch.int64)
    index = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    return index_scatter_reduce(dim, index, src, reduce, dim_size=counts.numel())
