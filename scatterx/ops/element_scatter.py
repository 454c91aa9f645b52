"""``element_scatter``: the planner's element plans, where every dim went through the index lookup and each row is
a single element (flat offsets into the data tensor). Functional and not differentiable: the planner runs it
only when no gradient is wanted and nothing is being traced; otherwise it takes the differentiable op of
``index_scatter_reduce`` on the same flat views.

The CPU backend has a kernel of its own for it (each thread owns a range of targets and streams all rows: no
sort); the GPU backend runs its segment path."""

from __future__ import annotations

import torch

from .._reductions import NAMES
from ..backends import backend_for
from ._checks import check_src, check_tensor


def element_scatter(rows: torch.Tensor, src: torch.Tensor, base: torch.Tensor, reduce: str, include_self: bool):
    """A new 1-D tensor: ``base`` with ``src[i]`` reduced into position ``rows[i]`` for every ``i``, in order.

    ``rows``/``src``/``base``: 1-D, ``rows.numel() == src.numel()``, ``src`` and ``base`` of one dtype.
    ``reduce``: ``"assign"`` (the last write wins) or a canonical name of the reduction table; ``include_self``:
    ``base``'s value takes part (mean counts it). Positions that receive nothing keep ``base``'s value.
    IndexError (before anything is written) for a row outside ``[0, base.numel())``."""
    if reduce != "assign" and reduce not in NAMES:
        raise ValueError(f"reduce must be 'assign' or one of {NAMES}, got {reduce!r}")
    check_src(src)
    check_tensor(base, "base")
    check_tensor(rows, "rows")
    if rows.dim() != 1 or src.dim() != 1 or base.dim() != 1 or rows.numel() != src.numel():
        raise ValueError(
            f"element_scatter takes 1-D rows, src and base with as many rows as src values; got shapes "
            f"{tuple(rows.shape)}, {tuple(src.shape)}, {tuple(base.shape)}"
        )
    if base.dtype != src.dtype or base.device != src.device or rows.device != src.device:
        raise ValueError("base must have src's dtype and device, and rows src's device")
    if rows.dtype not in (torch.int32, torch.int64):
        raise TypeError(f"rows must have dtype int32 or int64, got {rows.dtype}")
    return backend_for(src).element_scatter(src, rows, base, reduce, include_self)
