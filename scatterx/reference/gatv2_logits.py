"""Reference for ``scatterx.gatv2_logits``."""

from __future__ import annotations

import torch

from ._rows import _wide

__all__ = ["gatv2_logits"]


def gatv2_logits(
    ptr: torch.Tensor,
    index: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    att: torch.Tensor,
    negative_slope: float = 0.2,
) -> torch.Tensor:
    """Reference for ``scatterx.gatv2_logits``: both ends gathered per edge, summed, activated, dotted with
    ``att`` -- PyG's ``GATv2Conv.edge_update`` -- in float64 (differentiable)."""
    counts = (ptr[1:] - ptr[:-1]).to(torch.int64)
    targets = torch.repeat_interleave(torch.arange(counts.numel(), device=ptr.device), counts)
    wide = _wide(a.dtype)
    z = a.to(wide).index_select(0, index.to(torch.int64)) + b.to(wide).index_select(0, targets)
    activated = torch.nn.functional.leaky_relu(z, negative_slope)
    return (activated * att.to(wide).reshape(a.shape[1:])).sum(-1).to(a.dtype)
