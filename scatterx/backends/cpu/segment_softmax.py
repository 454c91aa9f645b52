"""``segment_softmax`` on the CPU, and its gradient (``kernels/cpu/segment_softmax.py``)."""

from __future__ import annotations

from typing import Optional

import torch

from ...kernels.cpu import launch, numpy_view, storage_code
from ...kernels.cpu.segment_softmax import segment_softmax as softmax_kernel
from ...kernels.cpu.segment_softmax import segment_softmax_backward as backward_kernel
from .._common import shape3
from .._outputs import empty
from . import routes
from ._arguments import chunks, perm_np, view3

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["segment_softmax", "segment_softmax_backward"]


def segment_softmax(src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int) -> torch.Tensor:
    """Softmax of ``src`` along ``dim`` within each segment (rows ``perm[ptr[s]:ptr[s+1]]``, or positions): a
    new tensor of ``src``'s shape."""
    outer, n, inner = shape3(src, dim)
    out = empty(src.shape, src.dtype, "cpu")
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        bounds, threads = chunks(ptr_np, outer, n, inner, routes.tuning())
        routes.record("segment_softmax")
        launch(
            softmax_kernel,
            ("softmax", src.dtype),
            outer * (len(bounds) - 1),
            threads,
            view3(src, outer, n, inner),
            perm_np(perm),
            ptr_np,
            bounds,
            numpy_view(out).reshape(outer, n, inner),
            storage_code(src.dtype),
            perm is not None,
        )
    return out


def segment_softmax_backward(
    out: torch.Tensor, grad: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int
) -> torch.Tensor:
    """``out * (grad - sum over the segment of grad * out)``: the gradient of ``segment_softmax``."""
    outer, n, inner = shape3(out, dim)
    grad_src = empty(out.shape, out.dtype, "cpu")
    if grad_src.numel() > 0:
        ptr_np = ptr.numpy()
        bounds, threads = chunks(ptr_np, outer, n, inner, routes.tuning())
        routes.record("segment_softmax_backward")
        launch(
            backward_kernel,
            ("softmax_backward", out.dtype),
            outer * (len(bounds) - 1),
            threads,
            view3(out, outer, n, inner),
            view3(grad, outer, n, inner),
            perm_np(perm),
            ptr_np,
            bounds,
            numpy_view(grad_src).reshape(outer, n, inner),
            storage_code(out.dtype),
            perm is not None,
        )
    return grad_src
