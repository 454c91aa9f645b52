"""``segment_reduce`` on the GPU, and the launch of the segment kernel it shares with ``gather_segment_reduce`` and
two routes of ``index_scatter_reduce``."""

from __future__ import annotations

import torch

from ..._reductions import Reduction, accumulator_dtype
from ...kernels.gpu import segment_reduce as segment_kernels
from ...kernels.gpu._codegen import kernel_code
from ...kernels.gpu._tiles import launch_config, tile_shapes
from .._common import new_result, shape3
from ._launch import DTYPES, FLAG, INT, KERNEL_REDUCTIONS, POINTER, TL_DTYPE, Variant, cdiv, launch


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, dim: int, red: Reduction) -> torch.Tensor:
    """Reduce ``src`` over the CSR segments ``ptr`` (checked by ``check_ptr``) along ``dim``: a new tensor."""
    outer, n, inner = shape3(src, dim)
    out = new_result(src, dim, ptr.numel() - 1)
    if out.numel() > 0:
        launch_segments(src.contiguous(), ptr, None, red, None, False, out, (outer, n, inner))
    return out


def launch_segments(src, ptr, perm, red: Reduction, base, include_self: bool, out, shape) -> None:
    """Launch the segment kernel: ``out`` (outer, S, inner) from ``src`` (outer, n, inner), all contiguous, rows
    through ``perm`` (int64) where given."""
    outer, n, inner = shape
    num_segments = ptr.numel() - 1
    block_e, block_f = launch_config(inner)
    grid = (outer * num_segments * cdiv(inner, block_f),)
    args = dict(
        src=src,
        perm=ptr if perm is None else perm,
        ptr=ptr,
        base=out if base is None else base,
        out=out,
        n=n,
        S=num_segments,
        inner=inner,
        gather=perm is not None,
        has_base=base is not None,
        include_self=bool(include_self) and base is not None,
        divide=red.divide_by_count,
    )
    launch(segment_kernels.segment_reduce_kernel, grid, args, **_constexprs(red, src.dtype, block_e, block_f))


def _constexprs(red: Reduction, dtype: torch.dtype, block_e: int, block_f: int) -> dict:
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
    """Every variant of the segment kernel: each reduction (mean's is sum's), dtype and tile shape."""
    for red in KERNEL_REDUCTIONS:
        for dtype in DTYPES:
            data = POINTER[dtype]
            params = dict(
                src=data,
                perm="*i64",
                ptr="*i64",
                base=data,
                out=data,
                n=INT,
                S=INT,
                inner=INT,
                gather=FLAG,
                has_base=FLAG,
                include_self=FLAG,
                divide=FLAG,
            )
            for block_e, block_f in tile_shapes():
                yield Variant.of(
                    segment_kernels.segment_reduce_kernel,
                    params,
                    _constexprs(red, dtype, block_e, block_f),
                    aligned=("inner",) if block_f >= 16 else (),
                )
