"""``gatv2_logits`` on the GPU, and its gradient."""

from __future__ import annotations

import torch

from ..._reductions import accumulator_dtype
from ...kernels.gpu import gatv2_logits as gatv2_kernels
from ...kernels.gpu._tiles import launch_config
from .._common import segment_of_entries
from ._launch import TL_DTYPE, cdiv, wrap_triton


def gatv2_logits(ptr, index, a, b, att, slope: float) -> torch.Tensor:
    """As ``backends.cpu.gatv2_logits``: ``(E, H)``."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = torch.empty((edges, heads), dtype=a.dtype, device=a.device)
    if out.numel() > 0:
        targets = segment_of_entries(ptr, edges)
        block_e, block_c = launch_config(edges, 1, channels)
        wrap_triton(gatv2_kernels.gatv2_logits_kernel)[(cdiv(edges, block_e) * heads,)](
            a.contiguous(), b.contiguous(), att.contiguous(), index.contiguous(), targets, out,
            edges, heads, channels,
            torch.full((1,), slope, dtype=accumulator_dtype(a.dtype), device=a.device),
            ACC=TL_DTYPE[accumulator_dtype(a.dtype)],
            BLOCK_E=block_e,
            BLOCK_C=block_c,
        )
    return out


def gatv2_grad(seg, other, att, ptr, index, grad, slope: float, want_att: bool):
    """As ``backends.cpu.gatv2_grad``: ``(grad_seg (S, H, C), grad_att (H, C))``."""
    num_segments, heads, channels = seg.shape
    out = torch.empty(seg.shape, dtype=seg.dtype, device=seg.device)
    acc = accumulator_dtype(seg.dtype)
    ptr = ptr.to(torch.int64).contiguous()
    parts = torch.zeros(seg.shape if want_att else (1, heads, channels), dtype=acc, device=seg.device)
    if out.numel() > 0:
        block_e, block_f = launch_config(index.numel(), num_segments, heads * channels)
        wrap_triton(gatv2_kernels.gatv2_grad_kernel)[(num_segments * cdiv(heads * channels, block_f),)](
            seg.contiguous(), other.contiguous(), att.contiguous(), index.contiguous(), ptr, grad.contiguous(),
            out, parts,
            heads, channels,
            torch.full((1,), slope, dtype=acc, device=seg.device),
            WANT_ATT=bool(want_att),
            ACC=TL_DTYPE[acc],
            BLOCK_E=block_e,
            BLOCK_F=block_f,
        )
    return out, parts.sum(0).to(seg.dtype)
