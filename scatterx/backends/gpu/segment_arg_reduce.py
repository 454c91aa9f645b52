"""``segment_arg_reduce`` on the GPU: amax/amin over CSR segments and the row of the selected member."""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from ..._reductions import REDUCTIONS, Reduction, accumulator_dtype
from ...kernels.gpu import segment_arg_reduce as arg_kernels
from ...kernels.gpu._tiles import launch_config, tile_shapes
from .._common import shape3
from .._outputs import new_result
from ._launch import DTYPES, FLAG, INT, POINTER, TL_DTYPE, Variant, cdiv, launch

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["segment_arg_reduce"]


def segment_arg_reduce(
    src: torch.Tensor,
    ptr: torch.Tensor,
    perm: Optional[torch.Tensor],
    dim: int,
    red: Reduction,
    base: Optional[torch.Tensor],
    start: float,
    fill: int,
    none: int,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """As ``backends.cpu.segment_arg_reduce``: ``(values, arg)``, new tensors."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    values = new_result(src, dim, num_segments)
    arg = torch.empty(values.shape, dtype=torch.int64, device=src.device)
    if values.numel() > 0:
        acc = accumulator_dtype(src.dtype)
        block_e, block_f = launch_config(inner)
        args = dict(
            src=src.contiguous(),
            perm=ptr if perm is None else perm.to(torch.int64).contiguous(),
            ptr=ptr,
            base=values if base is None else base.contiguous(),
            start=torch.full((1,), start, dtype=acc, device=src.device),
            out=values,
            arg=arg,
            n=n,
            S=num_segments,
            inner=inner,
            none=none,
            gather=perm is not None,
            has_base=base is not None,
            fill=fill,
        )
        launch(
            arg_kernels.segment_arg_reduce_kernel,
            (outer * num_segments * cdiv(inner, block_f),),
            args,
            **_constexprs(red, src.dtype, block_e, block_f),
        )
    return values, arg


def _constexprs(red: Reduction, dtype: torch.dtype, block_e: int, block_f: int) -> dict:
    acc = accumulator_dtype(dtype)
    # WORST: amax's -inf (or the integer minimum), amin's +inf: a value never preferred
    return dict(REDUCE=red.code, WORST=red.identity(acc), ACC=TL_DTYPE[acc], BLOCK_E=block_e, BLOCK_F=block_f)


def variants():
    """Every variant of the arg-reduce kernel: the selecting reductions, each dtype and tile shape."""
    for red in (r for r in REDUCTIONS if r.selects):
        for dtype in DTYPES:
            data = POINTER[dtype]
            params = dict(
                src=data,
                perm="*i64",
                ptr="*i64",
                base=data,
                start=POINTER[accumulator_dtype(dtype)],
                out=data,
                arg="*i64",
                n=INT,
                S=INT,
                inner=INT,
                none=INT,
                gather=FLAG,
                has_base=FLAG,
                fill=INT,
            )
            for block_e, block_f in tile_shapes():
                yield Variant.of(
                    arg_kernels.segment_arg_reduce_kernel,
                    params,
                    _constexprs(red, dtype, block_e, block_f),
                    aligned=("inner",) if block_f >= 16 else (),
                )
