"""``segment_softmax`` on the GPU, and its gradient."""

from __future__ import annotations

from typing import Optional

import torch

from ..._reductions import accumulator_dtype
from ...kernels.gpu import segment_softmax as softmax_kernels
from ...kernels.gpu._tiles import launch_config, tile_shapes
from .._common import shape3
from ._launch import FLAG, FLOATS, INT, POINTER, TL_DTYPE, Variant, cdiv, launch

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["segment_softmax", "segment_softmax_backward"]


def segment_softmax(src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int) -> torch.Tensor:
    """As ``backends.cpu.segment_softmax``."""
    outer, n, inner = shape3(src, dim)
    out = torch.empty(src.shape, dtype=src.dtype, device=src.device)
    num_segments = ptr.numel() - 1
    if out.numel() > 0 and num_segments > 0:
        block_e, block_f = launch_config(inner)
        args = dict(
            src=src.contiguous(),
            perm=ptr if perm is None else perm.to(torch.int64).contiguous(),
            ptr=ptr,
            out=out,
            n=n,
            S=num_segments,
            inner=inner,
            gather=perm is not None,
        )
        launch(
            softmax_kernels.segment_softmax_kernel,
            (outer * num_segments * cdiv(inner, block_f),),
            args,
            **_constexprs(src.dtype, block_e, block_f),
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
        block_e, block_f = launch_config(inner)
        args = dict(
            out=out.contiguous(),
            grad=grad.contiguous(),
            perm=ptr if perm is None else perm.to(torch.int64).contiguous(),
            ptr=ptr,
            grad_src=grad_src,
            n=n,
            S=num_segments,
            inner=inner,
            gather=perm is not None,
        )
        launch(
            softmax_kernels.segment_softmax_backward_kernel,
            (outer * num_segments * cdiv(inner, block_f),),
            args,
            **_constexprs(out.dtype, block_e, block_f),
        )
    return grad_src


def _constexprs(dtype: torch.dtype, block_e: int, block_f: int) -> dict:
    return dict(ACC=TL_DTYPE[accumulator_dtype(dtype)], BLOCK_E=block_e, BLOCK_F=block_f)


def variants():
    """Every variant of the softmax kernels: forward and backward, each floating dtype and tile shape."""
    for dtype in FLOATS:
        data = POINTER[dtype]
        forward = dict(src=data, perm="*i64", ptr="*i64", out=data, n=INT, S=INT, inner=INT, gather=FLAG)
        backward = dict(
            out=data, grad=data, perm="*i64", ptr="*i64", grad_src=data, n=INT, S=INT, inner=INT, gather=FLAG
        )
        for block_e, block_f in tile_shapes():
            aligned = ("inner",) if block_f >= 16 else ()
            constexprs = _constexprs(dtype, block_e, block_f)
            yield Variant.of(softmax_kernels.segment_softmax_kernel, forward, constexprs, aligned)
            yield Variant.of(softmax_kernels.segment_softmax_backward_kernel, backward, constexprs, aligned)
