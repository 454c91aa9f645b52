"""``segment_logsumexp`` on the CPU: ``top + log(sum exp(x - top) + eps)`` per validated segment."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from ..._reductions import accumulator_dtype
from ...kernels.cpu import launch, numpy_view, storage_code
from ...kernels.cpu.segment_logsumexp import segment_logsumexp as logsumexp_kernel
from .._common import shape3
from .._outputs import new_result
from . import routes
from ._arguments import chunks, perm_np, view3

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["segment_logsumexp"]


def segment_logsumexp(
    src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int, flavour: int, eps: float
) -> torch.Tensor:
    """``top + log(sum exp(x - top) + eps)`` per validated segment (``kernels/cpu/segment_logsumexp.py``): a new
    tensor."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    out = new_result(src, dim, num_segments)
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        acc = np.dtype(str(accumulator_dtype(src.dtype)).replace("torch.", "")).type
        start = -np.inf if flavour == 0 else torch.finfo(src.dtype).min
        bounds, threads = chunks(ptr_np, outer, n, inner, routes.tuning())
        routes.record("segment_logsumexp")
        launch(
            logsumexp_kernel,
            ("logsumexp", src.dtype),
            outer * (len(bounds) - 1),
            threads,
            view3(src, outer, n, inner),
            perm_np(perm),
            ptr_np,
            bounds,
            acc(start),
            acc(eps),
            numpy_view(out).reshape(outer, num_segments, inner),
            storage=storage_code(src.dtype),
            gather=perm is not None,
            flavour=flavour,
        )
    return out
