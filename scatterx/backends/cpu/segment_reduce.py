"""``segment_reduce`` on the CPU, and the launch of the segment kernel (``kernels/cpu/segment_reduce.py``) that it
shares with ``gather_segment_reduce`` and two routes of ``index_scatter_reduce``."""

from __future__ import annotations

import torch

from ..._reductions import Reduction
from ...kernels.cpu import launch, numpy_view, storage_code
from ...kernels.cpu.segment_reduce import segment_reduce as segment_kernel
from .._common import shape3
from .._outputs import new_result
from . import routes
from ._arguments import chunks, finish, perm_np, streams, target, view3

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["segment_reduce"]


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, dim: int, red: Reduction) -> torch.Tensor:
    """Reduce ``src`` over the CSR segments ``ptr`` (checked by ``check_ptr``) along ``dim``: a new tensor."""
    return reduce_segments(src, dim, ptr, None, red, None, include_self=False, route="segment_reduce")


def reduce_segments(
    src,
    dim,
    ptr,
    perm,
    red: Reduction,
    out,
    include_self: bool,
    base=None,
    index=None,
    route: str = routes.Route.SEGMENTS,
):
    """The segment kernel over validated ``ptr`` (rows ``perm[...]`` when given): into ``out`` in place, or a new
    tensor (empty segments 0, or ``base``'s values). ``index``: an input ``out`` must not overlap; ``route``: what
    ``routes.recording`` sees."""
    t = routes.tuning()
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    result = new_result(src, dim, num_segments) if out is None else out
    written = result if out is None else target(out, src, index)
    fill_empty = out is None and base is None
    include_self = bool(include_self) and not fill_empty
    initial = written if base is None else base.contiguous()
    if outer * inner * num_segments > 0:
        ptr_np = ptr.numpy()
        row_bytes = max(inner * src.element_size(), 1)
        gather = perm is not None
        stream = not gather and streams(src, written, inner, t)
        routes.record(route, stream)
        bounds, threads = chunks(ptr_np, outer, n, inner, t, routes.reduce_minimum(t) if inner > 1 else None)
        # every array here is C-contiguous, aligned and writable: the dtypes and literals determine the variant
        launch(
            segment_kernel,
            ("segment", red.code, src.dtype, initial.dtype, written.dtype),
            outer * (len(bounds) - 1),
            threads,
            view3(src, outer, n, inner),
            perm_np(perm),
            ptr_np,
            bounds,
            numpy_view(initial).reshape(outer, num_segments, inner),
            numpy_view(written).reshape(outer, num_segments, inner),
            reduce=red.code,
            storage=storage_code(src.dtype),
            gather=gather,
            include_self=include_self,
            fill_empty=fill_empty,
            lookahead=min(max(t.prefetch_bytes // row_bytes, 8), 32),  # rows of prefetch lookahead
            stream=stream,
        )
    elif base is not None:
        written.copy_(base)
    return result if out is None else finish(out, written)
