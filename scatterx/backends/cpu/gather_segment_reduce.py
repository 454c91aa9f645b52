"""``gather_segment_reduce`` on the CPU: segments of rows named by a gather list, plain (the segment kernel) or
scaled by per-entry weights (``kernels/cpu/gather_segment_reduce.py``)."""

from __future__ import annotations

import torch

from ..._reductions import Reduction
from ...kernels.cpu import launch, numpy_view, storage_code
from ...kernels.cpu.gather_segment_reduce import weighted_gather_segment_reduce as weighted_kernel
from .._outputs import empty
from . import routes
from ._arguments import chunks, index64
from .segment_reduce import reduce_segments

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["gather_segment_reduce", "weighted_gather_segment_reduce"]


def gather_segment_reduce(src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction):
    """Segment ``s`` reduces the rows ``index[ptr[s]:ptr[s+1]]`` of ``src`` (both checked): a new tensor."""
    return reduce_segments(src, dim, ptr, index, red, None, include_self=False, route="gather_segment_reduce")


def weighted_gather_segment_reduce(
    src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, weight: torch.Tensor, red: Reduction
) -> torch.Tensor:
    """Segment ``s`` reduces ``weight[k, h] * src[index[k], h, :]`` over its edges ``k``: src ``(N, H, C)``,
    weight ``(E, H)``, both checked, as are ``ptr`` and ``index``. A new ``(S, H, C)`` tensor."""
    _n, heads, channels = src.shape
    out = empty((ptr.numel() - 1, heads, channels), src.dtype, "cpu")
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        bounds, threads = chunks(ptr_np, 1, index.numel(), heads * channels, routes.tuning())
        routes.record("weighted_gather_segment_reduce")
        launch(
            weighted_kernel,
            ("weighted", red.code, src.dtype),
            len(bounds) - 1,
            threads,
            numpy_view(src.contiguous()),
            numpy_view(weight.contiguous()),
            index64(index),
            ptr_np,
            bounds,
            numpy_view(out),
            red.code,
            storage_code(src.dtype),
        )
    return out
