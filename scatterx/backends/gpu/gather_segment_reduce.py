"""``gather_segment_reduce`` on the GPU: segments of rows named by a gather list, plain (the segment kernel) or
scaled by per-entry weights."""

from __future__ import annotations

import torch

from ..._reductions import Reduction, accumulator_dtype
from ...kernels.gpu import gather_segment_reduce as weighted_kernels
from ...kernels.gpu._tiles import launch_config
from .._common import new_result, shape3
from ._launch import TL_DTYPE, cdiv, wrap_triton
from .segment_reduce import launch_segments


def gather_segment_reduce(src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction):
    """Segment ``s`` reduces the rows ``index[ptr[s]:ptr[s+1]]`` of ``src`` (both checked): a new tensor."""
    outer, n, inner = shape3(src, dim)
    out = new_result(src, dim, ptr.numel() - 1)
    if out.numel() > 0:
        launch_segments(src.contiguous(), ptr, index.contiguous(), index.numel(), red, None, False, out,
                      (outer, n, inner))
    return out


def weighted_gather_segment_reduce(
    src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, weight: torch.Tensor, red: Reduction
) -> torch.Tensor:
    """As ``backends.cpu.weighted_gather_segment_reduce``: src ``(N, H, C)``, weight ``(E, H)``; ``(S, H, C)``."""
    _, heads, channels = src.shape
    num_segments = ptr.numel() - 1
    out = torch.empty((num_segments, heads, channels), dtype=src.dtype, device=src.device)
    inner = heads * channels
    if out.numel() > 0:
        acc = accumulator_dtype(src.dtype)
        block_e, block_f = launch_config(index.numel(), num_segments, inner)
        wrap_triton(weighted_kernels.weighted_gather_segment_reduce_kernel)[(num_segments * cdiv(inner, block_f),)](
            src.contiguous(), index.contiguous(), weight.contiguous(), ptr, out,
            num_segments, heads, channels,
            REDUCE=red.code,
            IDENTITY=red.identity(acc),
            ACC=TL_DTYPE[acc],
            IS_INT=not src.dtype.is_floating_point,
            BLOCK_E=block_e,
            BLOCK_F=block_f,
        )
    return out
