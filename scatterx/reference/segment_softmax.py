"""Reference for ``scatterx.segment_softmax``."""

from __future__ import annotations

from typing import Optional

import torch

__all__ = ["segment_softmax"]


def segment_softmax(
    src: torch.Tensor, index: Optional[torch.Tensor] = None, ptr: Optional[torch.Tensor] = None, dim: int = 0
) -> torch.Tensor:
    """Reference for ``scatterx.segment_softmax``: ``torch.softmax`` of each group's slices, in float64."""
    dim = dim % src.dim()
    if index is None:
        if ptr is None:
            raise ValueError("segment_softmax takes either index or ptr")
        counts = (ptr[1:] - ptr[:-1]).to(torch.int64)
        index = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    index = index.to(torch.int64)
    wide = src.movedim(dim, 0).to(torch.float64)
    out = torch.empty_like(wide)
    for s in index.unique().tolist():
        members = index == s
        out[members] = torch.softmax(wide[members], dim=0)
    return out.to(src.dtype).movedim(0, dim)
