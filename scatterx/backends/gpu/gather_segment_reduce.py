"""``gather_segment_reduce`` on the GPU: segments of rows named by a gather list, plain (the segment kernel) or
scaled by per-entry weights."""

from __future__ import annotations

import torch

from ..._reductions import Reduction, accumulator_dtype
from ...kernels.gpu import gather_segment_reduce as weighted_kernels
from ...kernels.gpu._codegen import kernel_code
from ...kernels.gpu._tiles import launch_config, tile_shapes
from .._common import new_result, shape3
from ._launch import DTYPES, FLAG, INT, KERNEL_REDUCTIONS, POINTER, TL_DTYPE, Variant, cdiv, launch
from .segment_reduce import launch_segments


def gather_segment_reduce(src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction):
    """Segment ``s`` reduces the rows ``index[ptr[s]:ptr[s+1]]`` of ``src`` (both checked): a new tensor."""
    outer, n, inner = shape3(src, dim)
    out = new_result(src, dim, ptr.numel() - 1)
    if out.numel() > 0:
        launch_segments(
            src.contiguous(), ptr, index.to(torch.int64).contiguous(), red, None, False, out, (outer, n, inner)
        )
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
        block_e, block_f = launch_config(inner, weighted_kernels.MAX_ELEMENTS)
        args = dict(
            src=src.contiguous(),
            index=index.to(torch.int64).contiguous(),
            weight=weight.contiguous(),
            ptr=ptr,
            out=out,
            S=num_segments,
            H=heads,
            C=channels,
            divide=red.divide_by_count,
        )
        launch(
            weighted_kernels.weighted_gather_segment_reduce_kernel,
            (num_segments * cdiv(inner, block_f),),
            args,
            **_weighted_constexprs(red, src.dtype, block_e, block_f),
        )
    return out


def _weighted_constexprs(red: Reduction, dtype: torch.dtype, block_e: int, block_f: int) -> dict:
    acc = accumulator_dtype(dtype)
    return dict(
        REDUCE=kernel_code(red),
        IDENTITY=red.identity(acc),
        ACC=TL_DTYPE[acc],
        IS_INT=not dtype.is_floating_point,
        BLOCK_E=block_e,
        BLOCK_F=block_f,
    )


def variants():
    """The weighted kernel's variants (the plain form is the segment kernel's, ``segment_reduce.variants``): each
    reduction, dtype and tile shape."""
    for red in KERNEL_REDUCTIONS:
        for dtype in DTYPES:
            data = POINTER[dtype]
            params = dict(src=data, index="*i64", weight=data, ptr="*i64", out=data, S=INT, H=INT, C=INT, divide=FLAG)
            for block_e, block_f in tile_shapes(weighted_kernels.MAX_ELEMENTS):
                yield Variant.of(
                    weighted_kernels.weighted_gather_segment_reduce_kernel,
                    params,
                    _weighted_constexprs(red, dtype, block_e, block_f),
                    aligned=("C",) if block_f >= 16 else (),
                )
