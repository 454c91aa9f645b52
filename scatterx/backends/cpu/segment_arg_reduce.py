"""``segment_arg_reduce`` on the CPU: amax/amin over CSR segments and the row of the selected member."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import torch

from ..._reductions import Reduction, accumulator_dtype
from ...kernels.cpu import launch, numpy_view, storage_code
from ...kernels.cpu.segment_arg_reduce import segment_arg_reduce as arg_kernel
from .._common import shape3
from .._outputs import empty, new_result
from . import routes
from ._arguments import chunks, perm_np, view3

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["segment_arg_reduce"]


def segment_arg_reduce(
    src: torch.Tensor,
    ptr: torch.Tensor,
    perm: Optional[torch.Tensor],
    dim: int,
    red: Reduction,
    base: Optional[torch.Tensor],
    start: float,
    fill: int,
    none: int,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(values, arg)`` of the selecting reduction ``red`` over the validated segments ``ptr`` (rows ``perm[...]``
    when given), each a new tensor: see ``kernels/cpu/segment_arg_reduce.py`` for ``base``, ``start``, ``fill``,
    ``none``."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    values = new_result(src, dim, num_segments)
    arg = empty(values.shape, torch.int64, "cpu")
    if values.numel() > 0:
        ptr_np = ptr.numpy()
        acc = np.dtype(str(accumulator_dtype(src.dtype)).replace("torch.", "")).type
        initial = values if base is None else base.contiguous()
        bounds, threads = chunks(ptr_np, outer, n, inner, routes.tuning())
        routes.record("segment_arg_reduce")
        launch(
            arg_kernel,
            ("arg", red.code, src.dtype),
            outer * (len(bounds) - 1),
            threads,
            view3(src, outer, n, inner),
            perm_np(perm),
            ptr_np,
            bounds,
            numpy_view(initial).reshape(outer, num_segments, inner),
            acc(start),
            numpy_view(values).reshape(outer, num_segments, inner),
            arg.numpy().reshape(outer, num_segments, inner),
            reduce=red.code,
            storage=storage_code(src.dtype),
            gather=perm is not None,
            has_base=base is not None,
            fill=fill,
            none=none,
        )
    return values, arg
