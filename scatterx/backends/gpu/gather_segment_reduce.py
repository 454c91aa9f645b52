"""``gather_segment_reduce`` on the GPU: segments of rows named by a gather list, plain or scaled by per-entry
weights -- both on the balanced segment kernels."""

from __future__ import annotations

import torch

from ..._reductions import Reduction
from .._common import shape3
from .._outputs import new_result
from .segment_reduce import launch_segments
from .segments import rows_to_segments

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["gather_segment_reduce", "weighted_gather_segment_reduce"]


def gather_segment_reduce(src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction):
    """Segment ``s`` reduces the rows ``index[ptr[s]:ptr[s+1]]`` of ``src`` (both checked): a new tensor."""
    outer, n, inner = shape3(src, dim)
    out = new_result(src, dim, ptr.numel() - 1)
    if out.numel() > 0:
        segment_of = rows_to_segments(ptr, index.numel())
        rows = index.to(torch.int64).contiguous()
        launch_segments(src.contiguous(), ptr, segment_of, rows, red, None, False, out, (outer, n, inner))
    return out


def weighted_gather_segment_reduce(
    src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, weight: torch.Tensor, red: Reduction
) -> torch.Tensor:
    """As ``backends.cpu.weighted_gather_segment_reduce``: src ``(N, H, C)``, weight ``(E, H)``; ``(S, H, C)``."""
    rows, heads, channels = src.shape
    num_segments = ptr.numel() - 1
    out = torch.empty((num_segments, heads, channels), dtype=src.dtype, device=src.device)
    if out.numel() > 0:
        inner = heads * channels
        launch_segments(
            src.contiguous(),
            ptr,
            rows_to_segments(ptr, index.numel()),
            index.to(torch.int64).contiguous(),
            red,
            None,
            False,
            out,
            (1, rows, inner),
            weight=weight.contiguous(),
            channels=channels,
        )
    return out


def variants():
    """None of its own: both forms run the segment kernels (``segment_reduce.variants``)."""
    return iter(())
