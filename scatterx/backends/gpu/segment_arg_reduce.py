"""``segment_arg_reduce`` on the GPU: amax/amin over CSR segments and the row of the selected member."""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from ..._reductions import Reduction, accumulator_dtype
from ...kernels.gpu import segment_arg_reduce as arg_kernels
from ...kernels.gpu._tiles import launch_config
from .._common import new_result, shape3
from ._launch import TL_DTYPE, cdiv, wrap_triton


def segment_arg_reduce(
    src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int, red: Reduction,
    base: Optional[torch.Tensor], start: float, fill: int, none: int,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """As ``backends.cpu.segment_arg_reduce``: ``(values, arg)``, new tensors."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    values = new_result(src, dim, num_segments)
    arg = torch.empty(values.shape, dtype=torch.int64, device=src.device)
    if values.numel() > 0:
        acc = accumulator_dtype(src.dtype)
        worst = red.identity(acc)  # amax: -inf (or the integer minimum), amin: +inf: never preferred
        block_e, block_f = launch_config(n if perm is None else perm.numel(), num_segments, inner)
        grid = (outer * num_segments * cdiv(inner, block_f),)
        wrap_triton(arg_kernels.segment_arg_reduce_kernel)[grid](
            src.contiguous(), ptr if perm is None else perm, ptr, values if base is None else base.contiguous(),
            torch.full((1,), start, dtype=acc, device=src.device), values, arg,
            n, num_segments, inner, none,
            REDUCE=red.code,
            WORST=worst,
            ACC=TL_DTYPE[acc],
            GATHER=perm is not None,
            HAS_BASE=base is not None,
            FILL=fill,
            BLOCK_E=block_e,
            BLOCK_F=block_f,
        )
    return values, arg
