"""``segment_reduce`` on the GPU, and the launch of the balanced segment kernels (``kernels/gpu/segment_reduce.py``)
that it shares with the plain ``gather_segment_reduce`` and two routes of ``index_scatter_reduce``."""

from __future__ import annotations

import functools

import torch

from ..._reductions import Reduction, accumulator_dtype
from ...kernels.gpu import segment_reduce as segment_kernels
from ...kernels.gpu._codegen import kernel_code
from ...kernels.gpu._grid import balanced_grid, tile, tiles
from .._common import shape3
from .._outputs import new_result
from . import routes
from ._launch import DTYPES, FLAG, INT, KERNEL_REDUCTIONS, POINTER, TL_DTYPE, Variant, cdiv, launch
from .segments import rows_to_segments

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["segment_reduce"]


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, dim: int, red: Reduction) -> torch.Tensor:
    """Reduce ``src`` over the CSR segments ``ptr`` (checked by ``check_ptr``) along ``dim``: a new tensor."""
    outer, n, inner = shape3(src, dim)
    out = new_result(src, dim, ptr.numel() - 1)
    if out.numel() > 0:
        index = rows_to_segments(ptr, n)
        launch_segments(src.contiguous(), ptr, index, None, red, None, False, out, (outer, n, inner))
    return out


def launch_segments(
    src, ptr, index, perm, red: Reduction, base, include_self: bool, out, shape, weight=None, channels=None
) -> torch.Tensor:
    """Launch the balanced segment kernels: ``out`` (outer, S, inner) from ``src`` (outer, n, inner), all
    contiguous; row ``r`` of the segment order (``r < index.numel()``) is src row ``perm[r]`` (int64) where given,
    else ``r``, and belongs to segment ``index[r]`` (int64, non-decreasing, the segments of ``ptr``). With
    ``weight`` (``(index.numel(), inner // channels)``, ``outer == 1``), row ``r``'s member is scaled by
    ``weight[r, head]`` in each of its heads of ``channels`` features. Returns a
    one-element int64 tensor: 1 if every entry of ``index`` was in ``[0, S)`` and not below the one before it, else
    0 -- for the caller's ``torch._assert_async`` where the index came from its user."""
    outer, n, inner = shape
    num_segments = ptr.numel() - 1
    rows = index.numel()
    settings = routes.tuning()
    block_e, block_f = tile(inner, settings.max_elements)
    fblocks = cdiv(inner, block_f)
    programs, share = balanced_grid(
        rows + num_segments,
        outer * fblocks,
        routes.multiprocessors(src.device),
        settings.programs_per_sm,
        settings.min_events,
    )
    # Never one program: under torch.compile, Inductor passes P as the constant 1 (it ignores do_not_specialize),
    # the fix-up kernel's loop over earlier shares folds to a loop that never runs, and Triton 3.6 fails to compile
    # it (an assertion in its TritonGPUCoalesce pass; measured on an H200, docs/decisions/gpu-segment-kernel.md).
    # A second program's share is empty: it finds no segment and writes nothing.
    programs = max(programs, 2)
    acc = accumulator_dtype(src.dtype)
    partials = torch.empty((2, outer, programs, inner), dtype=acc, device=src.device)
    meta = torch.empty(1 + 3 * programs, dtype=torch.int64, device=src.device)
    flags = dict(
        has_base=base is not None,
        include_self=bool(include_self) and base is not None,
        divide=red.divide_by_count,
    )
    grid = (programs * fblocks * outer,)
    constexprs = _constexprs(red, src.dtype, block_e, block_f)
    launch(
        segment_kernels.segment_reduce_kernel,
        grid,
        dict(
            src=src,
            perm=index if perm is None else perm,
            weight=src if weight is None else weight,
            index=index,
            ptr=ptr,
            base=out if base is None else base,
            out=out,
            partials=partials,
            meta=meta,
            n=n,
            E=rows,
            S=num_segments,
            inner=inner,
            C=inner if weight is None else channels,
            K=share,
            P=programs,
            gather=perm is not None,
            weighted=weight is not None,
            **flags,
        ),
        **constexprs,
    )
    launch(
        segment_kernels.segment_fixup_kernel,
        grid,
        dict(
            ptr=ptr,
            base=out if base is None else base,
            out=out,
            partials=partials,
            meta=meta,
            S=num_segments,
            inner=inner,
            P=programs,
            **flags,
        ),
        **constexprs,
    )
    if red.divide_by_count and not src.dtype.is_floating_point:  # integer mean: the kernels leave it undivided
        counts = (ptr.diff() + int(flags["include_self"])).view(1, num_segments, 1)
        rows3 = out.view(outer, num_segments, inner)
        rows3.copy_(torch.where(counts > 0, torch.div(rows3, counts.clamp(min=1), rounding_mode="floor"), rows3))
    return meta[:1]


@functools.cache
def _constexprs(red: Reduction, dtype: torch.dtype, block_e: int, block_f: int) -> dict:
    """The kernels' compile-time values (one dict per variant, made once: a launch only unpacks it)."""
    acc = accumulator_dtype(dtype)
    return dict(
        REDUCE=kernel_code(red),
        IDENTITY=red.identity(acc),
        ACC=TL_DTYPE[acc],
        IS_INT=not dtype.is_floating_point,
        BLOCK_E=block_e,
        BLOCK_F=block_f,
    )


def variants():
    """Every variant of the two segment kernels: each reduction (mean's is sum's), dtype and tile."""
    for red in KERNEL_REDUCTIONS:
        for dtype in DTYPES:
            data, acc = POINTER[dtype], POINTER[accumulator_dtype(dtype)]
            flags = dict(has_base=FLAG, include_self=FLAG, divide=FLAG)
            main = dict(
                src=data,
                perm="*i64",
                weight=data,
                index="*i64",
                ptr="*i64",
                base=data,
                out=data,
                partials=acc,
                meta="*i64",
                n=INT,
                E=INT,
                S=INT,
                inner=INT,
                C=INT,
                K=INT,
                P=INT,
                gather=FLAG,
                weighted=FLAG,
                **flags,
            )
            fixup = dict(ptr="*i64", base=data, out=data, partials=acc, meta="*i64", S=INT, inner=INT, P=INT, **flags)
            for block_e, block_f in tiles():
                constexprs = _constexprs(red, dtype, block_e, block_f)
                aligned = ("inner",) if block_f >= 16 else ()
                yield Variant.of(segment_kernels.segment_reduce_kernel, main, constexprs, aligned=aligned)
                yield Variant.of(segment_kernels.segment_fixup_kernel, fixup, constexprs, aligned=aligned)
