"""``sddmm`` on the CPU: a value per edge from its two end rows (``kernels/cpu/sddmm.py``)."""

from __future__ import annotations

import torch

from ...kernels.cpu import launch, numpy_view, storage_code
from ...kernels.cpu.sddmm import SDDMM_OPS
from ...kernels.cpu.sddmm import sddmm as sddmm_kernel
from .._outputs import empty
from . import routes
from ._arguments import chunks, index64

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["sddmm"]


def sddmm(ptr: torch.Tensor, index: torch.Tensor, a: torch.Tensor, b: torch.Tensor, op: str) -> torch.Tensor:
    """Per edge ``k`` of segment ``s``: ``a[index[k]] op b[s]`` over ``(H, C)`` rows (``(E, H, C)``), or the dot
    product over ``C`` (``(E, H, 1)``). Everything checked."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = empty((edges, heads, 1 if op == "dot" else channels), a.dtype, "cpu")
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        bounds, threads = chunks(ptr_np, 1, edges, heads * channels, routes.tuning())
        routes.record("sddmm")
        launch(
            sddmm_kernel,
            ("sddmm", a.dtype),
            len(bounds) - 1,
            threads,
            numpy_view(a.contiguous()),
            numpy_view(b.contiguous()),
            index64(index),
            ptr_np,
            bounds,
            numpy_view(out),
            SDDMM_OPS[op],
            storage_code(a.dtype),
        )
    return out
