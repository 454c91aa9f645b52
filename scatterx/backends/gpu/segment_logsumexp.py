"""``segment_logsumexp`` on the GPU."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from ..._reductions import accumulator_dtype
from ...kernels.gpu import segment_logsumexp as logsumexp_kernels
from ...kernels.gpu._tiles import launch_config, tile_shapes
from .._common import shape3
from .._outputs import new_result
from ._launch import FLAG, FLOATS, INT, POINTER, TL_DTYPE, Variant, cdiv, launch

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["segment_logsumexp"]


def segment_logsumexp(
    src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int, flavour: int, eps: float
) -> torch.Tensor:
    """As ``backends.cpu.segment_logsumexp``: a new tensor."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    out = new_result(src, dim, num_segments)
    if out.numel() > 0:
        block_e, block_f = launch_config(inner)
        args = dict(
            src=src.contiguous(),
            perm=ptr if perm is None else perm.to(torch.int64).contiguous(),
            ptr=ptr,
            out=out,
            n=n,
            S=num_segments,
            inner=inner,
            # in two float32 parts: Triton passes a float as a float32 scalar, which rounded float64's 1e-12 by
            # 4e-9 of its value (found on an H200; the interpreter passes the Python float as it is)
            eps=float(np.float32(eps)),
            eps_low=float(np.float32(eps - float(np.float32(eps)))),
            gather=perm is not None,
            log_softmax=flavour == 1,
        )
        launch(
            logsumexp_kernels.segment_logsumexp_kernel,
            (outer * num_segments * cdiv(inner, block_f),),
            args,
            **_constexprs(src.dtype, block_e, block_f),
        )
    return out


def _constexprs(dtype: torch.dtype, block_e: int, block_f: int) -> dict:
    # (the start of log-softmax's maximum is a compile-time constant of the dtype: a value passed at run time
    # would be a host-to-device copy, a sync, or a float32 scalar that cannot hold float64's minimum)
    return dict(LOWEST=torch.finfo(dtype).min, ACC=TL_DTYPE[accumulator_dtype(dtype)], BLOCK_E=block_e, BLOCK_F=block_f)


def variants():
    """Every variant of the log-sum-exp kernel: each floating dtype and tile shape."""
    for dtype in FLOATS:
        params = dict(
            src=POINTER[dtype],
            perm="*i64",
            ptr="*i64",
            out=POINTER[dtype],
            n=INT,
            S=INT,
            inner=INT,
            eps="fp32",
            eps_low="fp32",
            gather=FLAG,
            log_softmax=FLAG,
        )
        for block_e, block_f in tile_shapes():
            yield Variant.of(
                logsumexp_kernels.segment_logsumexp_kernel,
                params,
                _constexprs(dtype, block_e, block_f),
                aligned=("inner",) if block_f >= 16 else (),
            )
