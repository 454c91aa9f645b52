"""``gatv2_logits`` on the CPU, and its gradient (``kernels/cpu/gatv2_logits.py``)."""

from __future__ import annotations

import torch

from ...kernels.cpu import NATIVE, launch, numpy_view, storage_code
from ...kernels.cpu.gatv2_logits import gatv2_grad as grad_kernel
from ...kernels.cpu.gatv2_logits import gatv2_logits as logits_kernel
from ...kernels.cpu.segments import balanced_bounds
from .._outputs import empty
from . import routes
from ._arguments import chunks, index64

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["gatv2_grad", "gatv2_logits"]


def gatv2_logits(ptr, index, a, b, att, slope: float) -> torch.Tensor:
    """GATv2's logits per edge ``k`` of segment ``s``: ``sum_c att[h, c] * leaky_relu(a[index[k], h, c] + b[s, h,
    c])``, ``(E, H)``; a, b ``(N, H, C)``, att ``(H, C)``. Everything checked."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = empty((edges, heads), a.dtype, "cpu")
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        bounds, threads = chunks(ptr_np, 1, edges, heads * channels, routes.tuning())
        routes.record("gatv2_logits")
        launch(
            logits_kernel,
            ("gatv2", a.dtype),
            len(bounds) - 1,
            threads,
            numpy_view(a.contiguous()),
            numpy_view(b.contiguous()),
            numpy_view(att.contiguous()),
            index64(index),
            ptr_np,
            bounds,
            float(slope),
            numpy_view(out),
            storage_code(a.dtype),
        )
    return out


def gatv2_grad(seg, other, att, ptr, index, grad, slope: float, want_att: bool):
    """``(grad_seg (S, H, C), grad_att (H, C))`` of GATv2's logits on segments ``ptr`` of the ``seg`` side, each
    entry reading ``other[index[k]]`` (``kernels/cpu/gatv2_logits.py``); grad_att is zeros unless ``want_att``."""
    _, heads, channels = seg.shape
    out = empty(seg.shape, seg.dtype, "cpu")
    acc_dtype = torch.float32 if storage_code(seg.dtype) != NATIVE else seg.dtype
    ptr_np = ptr.to(torch.int64).contiguous().numpy()
    bounds, threads = chunks(ptr_np, 1, index.numel(), heads * channels, routes.tuning())
    if want_att:  # att's gradient adds one partial per work item: items that depend on no thread count, same bits
        bounds = balanced_bounds(ptr_np, max(1, min(len(ptr_np) - 1, ATT_CHUNKS)))
    parts = torch.zeros((max(len(bounds) - 1, 0) if want_att else 1, heads, channels), dtype=acc_dtype)
    if out.numel() > 0:
        routes.record("gatv2_grad")
        launch(
            grad_kernel,
            ("gatv2_grad", seg.dtype),
            len(bounds) - 1,
            threads,
            numpy_view(seg.contiguous()),
            numpy_view(other.contiguous()),
            numpy_view(att.contiguous()),
            index64(index),
            ptr_np,
            bounds,
            numpy_view(grad.contiguous()),
            float(slope),
            numpy_view(out),
            parts.numpy(),
            want_att=bool(want_att),
            storage=storage_code(seg.dtype),
        )
    # the partials added in item order (NumPy's sum along the first axis: row by row, on one thread; torch's may
    # split a short reduction over its threads)
    return out, torch.from_numpy(parts.numpy().sum(0)).to(seg.dtype)


#: The work items of ``gatv2_grad`` when it computes att's gradient: at most this many chunks of segments, on any
#: number of threads, so that the partials and their sum are the same on every machine (results are bit for bit
#: the same across thread counts); enough to balance 16 threads at ``chunks_per_thread`` 4.
ATT_CHUNKS = 64
