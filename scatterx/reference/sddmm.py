"""Reference for ``scatterx.sddmm``."""

from __future__ import annotations

import torch

from ._rows import _wide

__all__ = ["sddmm"]


def sddmm(ptr: torch.Tensor, index: torch.Tensor, a: torch.Tensor, b: torch.Tensor, op: str = "dot") -> torch.Tensor:
    """Reference for ``scatterx.sddmm``: both ends gathered per edge, then combined."""
    counts = (ptr[1:] - ptr[:-1]).to(torch.int64)
    targets = torch.repeat_interleave(torch.arange(counts.numel(), device=ptr.device), counts)
    x, y = a.index_select(0, index.to(torch.int64)), b.index_select(0, targets)
    if op == "add":
        return x + y
    if op == "mul":
        return x * y
    wide = _wide(a.dtype)
    return (x.to(wide) * y.to(wide)).sum(-1).to(a.dtype)
