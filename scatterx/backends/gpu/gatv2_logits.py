"""``gatv2_logits`` on the GPU, and its gradient."""

from __future__ import annotations

import torch

from ..._reductions import accumulator_dtype
from ...kernels.gpu import gatv2_logits as gatv2_kernels
from ...kernels.gpu._tiles import launch_config, tile_shapes
from .._common import segment_of_entries
from ._launch import FLAG, FLOATS, INT, POINTER, TL_DTYPE, Variant, cdiv, launch

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["gatv2_grad", "gatv2_logits"]


def gatv2_logits(ptr, index, a, b, att, slope: float) -> torch.Tensor:
    """As ``backends.cpu.gatv2_logits``: ``(E, H)``."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = torch.empty((edges, heads), dtype=a.dtype, device=a.device)
    if out.numel() > 0:
        targets = segment_of_entries(ptr, edges)
        block_e, block_c = launch_config(channels)
        args = dict(
            a=a.contiguous(),
            b=b.contiguous(),
            att=att.contiguous(),
            index=index.to(torch.int64).contiguous(),
            targets=targets,
            out=out,
            E=edges,
            H=heads,
            C=channels,
            slope_ptr=torch.full((1,), slope, dtype=accumulator_dtype(a.dtype), device=a.device),
        )
        launch(
            gatv2_kernels.gatv2_logits_kernel,
            (cdiv(edges, block_e) * heads,),
            args,
            **_logits_constexprs(a.dtype, block_e, block_c),
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
        block_e, block_f = launch_config(heads * channels)
        args = dict(
            seg=seg.contiguous(),
            other=other.contiguous(),
            att=att.contiguous(),
            index=index.to(torch.int64).contiguous(),
            ptr=ptr,
            grad=grad.contiguous(),
            out=out,
            att_part=parts,
            H=heads,
            C=channels,
            slope_ptr=torch.full((1,), slope, dtype=acc, device=seg.device),
            want_att=bool(want_att),
        )
        launch(
            gatv2_kernels.gatv2_grad_kernel,
            (num_segments * cdiv(heads * channels, block_f),),
            args,
            **_grad_constexprs(seg.dtype, block_e, block_f),
        )
    return out, parts.sum(0).to(seg.dtype)


def _logits_constexprs(dtype: torch.dtype, block_e: int, block_c: int) -> dict:
    return dict(ACC=TL_DTYPE[accumulator_dtype(dtype)], BLOCK_E=block_e, BLOCK_C=block_c)


def _grad_constexprs(dtype: torch.dtype, block_e: int, block_f: int) -> dict:
    return dict(ACC=TL_DTYPE[accumulator_dtype(dtype)], BLOCK_E=block_e, BLOCK_F=block_f)


def variants():
    """Every variant of the two GATv2 kernels: each floating dtype and tile shape."""
    for dtype in FLOATS:
        data, acc = POINTER[dtype], POINTER[accumulator_dtype(dtype)]
        logits = dict(
            a=data, b=data, att=data, index="*i64", targets="*i64", out=data, E=INT, H=INT, C=INT, slope_ptr=acc
        )
        grad = dict(
            seg=data,
            other=data,
            att=data,
            index="*i64",
            ptr="*i64",
            grad=data,
            out=data,
            att_part=acc,
            H=INT,
            C=INT,
            slope_ptr=acc,
            want_att=FLAG,
        )
        for block_e, block_f in tile_shapes():
            aligned = ("C",) if block_f >= 16 else ()
            yield Variant.of(
                gatv2_kernels.gatv2_logits_kernel, logits, _logits_constexprs(dtype, block_e, block_f), aligned
            )
            yield Variant.of(gatv2_kernels.gatv2_grad_kernel, grad, _grad_constexprs(dtype, block_e, block_f), aligned)
