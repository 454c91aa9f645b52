"""torch_scatter's ``broadcast``: how a lower-dimensional index (or count) is stretched to another tensor."""

import torch


def broadcast(src: torch.Tensor, other: torch.Tensor, dim: int) -> torch.Tensor:
    """``src`` viewed with ``other``'s shape: a 1-D ``src`` runs along ``dim`` (leading dims of size 1 in front),
    any ``src`` gets trailing dims of size 1, and the result is ``expand``ed (no copy) to ``other.size()``."""
    if dim < 0:
        dim = other.dim() + dim
    if src.dim() == 1:
        src = src.view([1] * dim + [src.numel()])
    if src.dim() < other.dim():
        src = src.view(list(src.shape) + [1] * (other.dim() - src.dim()))
    return src.expand(other.size())
