"""``sddmm`` on the GPU: a value per edge from its two end rows."""

from __future__ import annotations

import torch

from ..._reductions import accumulator_dtype
from ...kernels.gpu import sddmm as sddmm_kernels
from ...kernels.gpu._tiles import launch_config
from .._common import segment_of_entries
from ._launch import TL_DTYPE, cdiv, wrap_triton


_SDDMM_OPS = {"add": 0, "mul": 1, "dot": 2}


def sddmm(ptr: torch.Tensor, index: torch.Tensor, a: torch.Tensor, b: torch.Tensor, op: str) -> torch.Tensor:
    """As ``backends.cpu.sddmm``: ``(E, H, C)``, or ``(E, H, 1)`` for dot."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = torch.empty((edges, heads, 1 if op == "dot" else channels), dtype=a.dtype, device=a.device)
    if out.numel() > 0:
        targets = segment_of_entries(ptr, edges)
        acc = accumulator_dtype(a.dtype)
        width = channels if op == "dot" else heads * channels
        # programs own blocks of edges, not segments: the tile shape only (up to 64 edges x 128 features)
        block_e, block_f = launch_config(edges, 1, width)
        per_block = heads if op == "dot" else cdiv(heads * channels, block_f)
        wrap_triton(sddmm_kernels.sddmm_kernel)[(cdiv(edges, block_e) * per_block,)](
            a.contiguous(), b.contiguous(), index.contiguous(), targets, out,
            edges, heads, channels,
            OP=_SDDMM_OPS[op],
            ACC=TL_DTYPE[acc],
            BLOCK_E=block_e,
            BLOCK_F=block_f,
        )
    return out
