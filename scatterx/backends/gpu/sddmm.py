"""``sddmm`` on the GPU: a value per edge from its two end rows."""

from __future__ import annotations

import torch

from ..._reductions import accumulator_dtype
from ...kernels.gpu import sddmm as sddmm_kernels
from ...kernels.gpu._tiles import launch_config, tile_shapes
from .._common import segment_of_entries
from ._launch import DTYPES, FLAG, INT, POINTER, TL_DTYPE, Variant, cdiv, launch

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["sddmm"]


def sddmm(ptr: torch.Tensor, index: torch.Tensor, a: torch.Tensor, b: torch.Tensor, op: str) -> torch.Tensor:
    """As ``backends.cpu.sddmm``: ``(E, H, C)``, or ``(E, H, 1)`` for dot."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = torch.empty((edges, heads, 1 if op == "dot" else channels), dtype=a.dtype, device=a.device)
    if out.numel() > 0:
        targets = segment_of_entries(ptr, edges)
        width = channels if op == "dot" else heads * channels
        # programs own blocks of edges, not segments: the tile shape only (up to 32 edges x 128 features)
        block_e, block_f = launch_config(width)
        per_block = heads if op == "dot" else cdiv(heads * channels, block_f)
        args = dict(
            a=a.contiguous(),
            b=b.contiguous(),
            index=index.to(torch.int64).contiguous(),
            targets=targets.to(torch.int64),
            out=out,
            E=edges,
            H=heads,
            C=channels,
            mul=op == "mul",
        )
        launch(
            sddmm_kernels.sddmm_kernel,
            (cdiv(edges, block_e) * per_block,),
            args,
            **_constexprs(op == "dot", a.dtype, block_e, block_f),
        )
    return out


def _constexprs(dot: bool, dtype: torch.dtype, block_e: int, block_f: int) -> dict:
    return dict(DOT=dot, ACC=TL_DTYPE[accumulator_dtype(dtype)], BLOCK_E=block_e, BLOCK_F=block_f)


def variants():
    """Every variant of the SDDMM kernel: dot or elementwise (add and mul share one), each dtype and tile shape."""
    for dot in (False, True):
        for dtype in DTYPES:
            data = POINTER[dtype]
            params = dict(a=data, b=data, index="*i64", targets="*i64", out=data, E=INT, H=INT, C=INT, mul=FLAG)
            for block_e, block_f in tile_shapes():
                yield Variant.of(
                    sddmm_kernels.sddmm_kernel,
                    params,
                    _constexprs(dot, dtype, block_e, block_f),
                    aligned=("C",) if block_f >= 16 else (),
                )
