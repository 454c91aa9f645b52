"""``segment_reduce`` on the GPU, and the launch of the segment kernel it shares with ``gather_segment_reduce`` and
two routes of ``index_scatter_reduce``."""

from __future__ import annotations

import torch

from ..._reductions import Reduction, accumulator_dtype
from ...kernels.gpu import segment_reduce as segment_kernels
from ...kernels.gpu._tiles import launch_config
from .._common import new_result, shape3
from ._launch import TL_DTYPE, cdiv, wrap_triton


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, dim: int, red: Reduction) -> torch.Tensor:
    """Reduce ``src`` over the CSR segments ``ptr`` (checked by ``check_ptr``) along ``dim``: a new tensor."""
    outer, n, inner = shape3(src, dim)
    out = new_result(src, dim, ptr.numel() - 1)
    if out.numel() > 0:
        launch_segments(src.contiguous(), ptr, None, n, red, None, False, out, (outer, n, inner))
    return out


def launch_segments(src, ptr, perm, m: int, red: Reduction, base, include_self: bool, out, shape) -> None:
    """Launch the segment kernel: ``out`` (outer, S, inner) from ``src`` (outer, n, inner), all contiguous; ``m``
    rows take part (sizes the tile from the average segment length without reading ``ptr``)."""
    outer, n, inner = shape
    num_segments = ptr.numel() - 1
    acc = accumulator_dtype(src.dtype)
    block_e, block_f = launch_config(m, num_segments, inner)
    grid = (outer * num_segments * cdiv(inner, block_f),)
    wrap_triton(segment_kernels.segment_reduce_kernel)[grid](
        src, ptr if perm is None else perm, ptr, out if base is None else base, out,
        n, num_segments, inner,
        REDUCE=red.code,
        IDENTITY=red.identity(acc),
        ACC=TL_DTYPE[acc],
        IS_INT=not src.dtype.is_floating_point,
        GATHER=perm is not None,
        HAS_BASE=base is not None,
        INCLUDE_SELF=bool(include_self) and base is not None,
        BLOCK_E=block_e,
        BLOCK_F=block_f,
    )


