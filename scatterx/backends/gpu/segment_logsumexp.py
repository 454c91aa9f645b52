"""``segment_logsumexp`` on the GPU."""

from __future__ import annotations

from typing import Optional

import torch

from ..._reductions import accumulator_dtype
from ...kernels.gpu import segment_logsumexp as logsumexp_kernels
from ...kernels.gpu._tiles import launch_config
from .._common import new_result, shape3
from ._launch import TL_DTYPE, cdiv, wrap_triton


def segment_logsumexp(
    src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int, flavour: int, eps: float
) -> torch.Tensor:
    """As ``backends.cpu.segment_logsumexp``: a new tensor."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    out = new_result(src, dim, num_segments)
    if out.numel() > 0:
        acc = accumulator_dtype(src.dtype)
        start = float("-inf") if flavour == 0 else torch.finfo(src.dtype).min
        params = torch.tensor([start, eps], dtype=acc, device=src.device)
        block_e, block_f = launch_config(n if perm is None else perm.numel(), num_segments, inner)
        grid = (outer * num_segments * cdiv(inner, block_f),)
        wrap_triton(logsumexp_kernels.segment_logsumexp_kernel)[grid](
            src.contiguous(), ptr if perm is None else perm, ptr, params, out, n, num_segments, inner,
            ACC=TL_DTYPE[acc], GATHER=perm is not None, FLAVOUR=flavour, BLOCK_E=block_e, BLOCK_F=block_f,
        )
    return out
