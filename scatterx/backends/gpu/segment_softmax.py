"""``segment_softmax`` on the GPU, and its gradient."""

from __future__ import annotations

from typing import Optional

import torch

from ..._reductions import accumulator_dtype
from ...kernels.gpu import segment_softmax as softmax_kernels
from ...kernels.gpu._tiles import launch_config
from .._common import shape3
from ._launch import TL_DTYPE, cdiv, wrap_triton


def segment_softmax(src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int) -> torch.Tensor:
    """As ``backends.cpu.segment_softmax``."""
    outer, n, inner = shape3(src, dim)
    out = torch.empty(src.shape, dtype=src.dtype, device=src.device)
    num_segments = ptr.numel() - 1
    if out.numel() > 0 and num_segments > 0:
        block_e, block_f = launch_config(n, num_segments, inner)
        wrap_triton(softmax_kernels.segment_softmax_kernel)[(outer * num_segments * cdiv(inner, block_f),)](
            src.contiguous(), ptr if perm is None else perm.contiguous(), ptr, out, n, num_segments, inner,
            ACC=TL_DTYPE[accumulator_dtype(src.dtype)], GATHER=perm is not None, BLOCK_E=block_e, BLOCK_F=block_f,
        )
    return out


def segment_softmax_backward(
    out: torch.Tensor, grad: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int
) -> torch.Tensor:
    """As ``backends.cpu.segment_softmax_backward``."""
    outer, n, inner = shape3(out, dim)
    grad_src = torch.empty(out.shape, dtype=out.dtype, device=out.device)
    num_segments = ptr.numel() - 1
    if grad_src.numel() > 0 and num_segments > 0:
        block_e, block_f = launch_config(n, num_segments, inner)
        wrap_triton(softmax_kernels.segment_softmax_backward_kernel)[(outer * num_segments * cdiv(inner, block_f),)](
            out.contiguous(), grad.contiguous(), ptr if perm is None else perm.contiguous(), ptr, grad_src,
            n, num_segments, inner,
            ACC=TL_DTYPE[accumulator_dtype(out.dtype)], GATHER=perm is not None, BLOCK_E=block_e, BLOCK_F=block_f,
        )
    return grad_src
