"""``index_scatter_reduce`` on the GPU: the route (``routes.py``), then its kernels; and the backward of amax/amin
(the gradient split among ties). Made of torch ops and kernel launches (``_launch.launch``), with no host sync, so
that the op is a ``triton_op`` that ``torch.compile`` traces into."""

from __future__ import annotations

import math
from typing import Optional

import torch

from ..._reductions import SUPPORTED_DTYPES, Reduction, accumulator_dtype
from ...kernels.gpu import index_scatter_reduce_atomic as scatter_kernels
from ...kernels.gpu import index_scatter_reduce_backward as backward_kernels
from ...kernels.gpu._codegen import kernel_code
from ...kernels.gpu._tiles import launch_config, tile_shapes
from .._common import is_tie, shape3
from .._outputs import new_result
from . import routes
from ._launch import DTYPES, FLAG, INT, KERNEL_REDUCTIONS, POINTER, TL_DTYPE, Variant, cdiv, launch
from .routes import Route
from .segment_reduce import launch_segments
from .segments import assert_index, segments, sorted_ptr

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["index_scatter_reduce", "small_index_scatter_reduce", "tie_backward"]


def index_scatter_reduce(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int,
    red: Reduction,
    sorted: Optional[bool],
    num_segments: int,
    base: Optional[torch.Tensor] = None,
    out: Optional[torch.Tensor] = None,
    include_self: bool = True,
    index_checked: bool = False,
) -> torch.Tensor:
    """As ``backends.cpu.index_scatter_reduce``. The result is computed into a new tensor and then copied into
    ``out`` (so ``out`` may share memory with anything). ``index_checked``: ``output_size`` validated it."""
    if out is not None:  # base=out: out's values as the initial ones
        result = index_scatter_reduce(
            src, index, dim, red, sorted, num_segments, base=out, include_self=include_self, index_checked=index_checked
        )
        return out.copy_(result)
    index = index.to(torch.int64).contiguous()  # the kernels read it as a flat array (the planner's rows may be a view)
    if sorted is None:  # internal callers (the planner), which sync anyway: one read picks the path
        sorted = index.numel() < 2 or bool((index[1:] >= index[:-1]).all())
    outer, n, inner = shape3(src, dim)
    result = new_result(src, dim, num_segments)
    if result.numel() == 0:
        if not index_checked:  # nothing to compute, but the index is still the user's
            assert_index(index, num_segments, sorted)
        return result
    route = routes.route_for(red, sorted)
    src = src.contiguous()
    base = None if base is None else base.contiguous()
    if route is Route.ATOMIC:
        if sorted and not index_checked:  # (the atomic kernel checks the range, not an order)
            assert_index(index, num_segments, sorted)
        good = _atomic(src, index, red, base, include_self, result, outer, n, inner, num_segments)
        if not index_checked:
            torch._assert_async(good, _bad_index(num_segments, False))
        return result
    if sorted:
        ordered, perm = index, None
    else:
        ordered, perm = torch.sort(index, stable=True)
    ptr = sorted_ptr(ordered, num_segments)
    # the segment kernels check every entry they read (range, and order where the caller promised one)
    good = launch_segments(src, ptr, ordered, perm, red, base, include_self, result, (outer, n, inner))
    if not index_checked:
        torch._assert_async(good, _bad_index(num_segments, sorted))
    return result


def _bad_index(num_segments: int, sorted: bool) -> str:
    """The device-side assert's words for a bad index (the CPU backend's exceptions say which entry)."""
    if sorted:
        return (
            f"index out of range or not sorted: every entry must be in [0, dim_size={num_segments}) and none below "
            "the one before it (sorted=True promises a non-decreasing index)"
        )
    return f"index out of range: every entry must be in [0, dim_size={num_segments})"


def small_index_scatter_reduce(
    src: torch.Tensor,
    index: torch.Tensor,
    dim: int,
    red: Reduction,
    sorted: bool,
    num_segments: Optional[int],
    base: Optional[torch.Tensor] = None,
    include_self: bool = True,
) -> Optional[torch.Tensor]:
    """As ``backends.cpu.small_index_scatter_reduce``, for a plainly valid call of any size: a launch costs the same
    at any size, so every such call takes the ordinary routes here, past the op layer's general checks (a few
    microseconds each) -- with the checks that read no index values made here, and the index's values checked by
    the kernels as ever. None -- the general path, which explains what is wrong -- for anything less plain, and
    without a size: ``index.max() + 1`` is a read on the host."""
    if num_segments is None or src.dtype not in SUPPORTED_DTYPES or index.dtype not in INDEX_DTYPES:
        return None
    if index.device != src.device or (base is None and num_segments * _row(src, dim) > _DIRECT_MAX_ELEMENTS):
        return None  # (a huge output: the general path checks that it fits in memory)
    return index_scatter_reduce(src, index, dim, red, sorted, num_segments, base=base, include_self=include_self)


def _row(src: torch.Tensor, dim: int) -> int:
    numel, n = src.numel(), src.shape[dim]
    return numel // n if n else math.prod(src.shape[:dim]) * math.prod(src.shape[dim + 1 :])


INDEX_DTYPES = (torch.int32, torch.int64)
#: outputs up to this many elements skip the op layer's memory check (1 GiB of float32 at most)
_DIRECT_MAX_ELEMENTS = 1 << 28


def _atomic(src, index, red: Reduction, base, include_self: bool, out, outer, n, inner, num_segments):
    """Unsorted sum/mean with atomics into an accumulator (``out`` itself unless half types accumulate in
    float32), then one elementwise pass for mean, base and empty rows. Returns a one-element int64 tensor: 1 if
    every index entry was in range, else 0 (``counts`` holds the rows per target, then the entries out of range,
    then that flag)."""
    acc_dtype = accumulator_dtype(src.dtype)
    acc = out if acc_dtype == out.dtype else torch.empty(out.shape, dtype=acc_dtype, device=out.device)
    acc.fill_(red.identity(acc_dtype))
    # int64: a target may receive 2^31 entries or more (and 2^32 bad entries must not count as none)
    counts = torch.zeros(num_segments + 2, dtype=torch.int64, device=src.device)
    m = index.numel()
    if m > 0:
        block_e, block_f = scatter_kernels.launch_config(inner)
        args = dict(src=src, index=index, acc=acc, counts=counts, n=n, m=m, S=num_segments, inner=inner)
        launch(
            scatter_kernels.atomic_scatter_kernel,
            (outer * cdiv(m, block_e) * cdiv(inner, block_f),),
            args,
            BLOCK_E=block_e,
            BLOCK_F=block_f,
        )
    args = dict(
        acc=acc,
        counts=counts,
        base=out if base is None else base,
        out=out,
        S=num_segments,
        inner=inner,
        total=out.numel(),
        has_base=base is not None,
        include_self=bool(include_self) and base is not None,
        divide=red.divide_by_count,
    )
    launch(
        scatter_kernels.finish_kernel, (cdiv(out.numel(), FINISH_BLOCK),), args, **_finish_constexprs(red, src.dtype)
    )
    return counts[num_segments + 1 :]


def tie_backward(grad, src, index, result, base, dim: int, sorted: bool, count_base: bool):
    """As ``backends.cpu.tie_backward``: ``(grad_src, ties)`` on the forward's segments."""
    num_segments = result.size(dim)
    outer, n, inner = shape3(src, dim)
    grad_src = torch.empty(src.shape, dtype=src.dtype, device=src.device)
    grad_src.narrow(dim, index.numel(), n - index.numel()).zero_()  # slices that take no part
    ties = torch.zeros(result.shape, dtype=result.dtype, device=result.device)
    if outer * inner * num_segments == 0 or index.numel() == 0:  # no members: only base's value can be a tie
        counted = base is not None and bool(count_base)
        return grad_src.zero_(), is_tie(base, result).to(ties.dtype) if counted else ties.zero_()
    ptr, perm = segments(index, num_segments, sorted)
    block_e, block_f = launch_config(inner)
    result = result.contiguous()
    args = dict(
        src=src.contiguous(),
        perm=ptr if perm is None else perm,
        ptr=ptr,
        result=result,
        grad=grad.contiguous(),
        base=result if base is None else base.contiguous(),
        grad_src=grad_src,
        ties=ties,
        n=n,
        S=num_segments,
        inner=inner,
        gather=perm is not None,
        include_self=base is not None and bool(count_base),
    )
    launch(
        backward_kernels.index_scatter_reduce_backward_kernel,
        (outer * num_segments * cdiv(inner, block_f),),
        args,
        **_tie_constexprs(src.dtype, block_e, block_f),
    )
    return grad_src, ties


FINISH_BLOCK = 1024


def _finish_constexprs(red: Reduction, dtype: torch.dtype) -> dict:
    return dict(REDUCE=kernel_code(red), IS_INT=not dtype.is_floating_point, BLOCK=FINISH_BLOCK)


def _tie_constexprs(dtype: torch.dtype, block_e: int, block_f: int) -> dict:
    return dict(ACC=TL_DTYPE[accumulator_dtype(dtype)], BLOCK_E=block_e, BLOCK_F=block_f)


def variants():
    """The kernels of this module (the segment routes' are ``segment_reduce.variants``): the atomic route's two,
    for every dtype and the reductions with an atomic form; the tie backward, for every floating dtype."""
    for dtype in DTYPES:
        data, acc = POINTER[dtype], POINTER[accumulator_dtype(dtype)]
        scatter = dict(src=data, index="*i64", acc=acc, counts="*i64", n=INT, m=INT, S=INT, inner=INT)
        for block_e, block_f in scatter_kernels.tile_shapes():
            yield Variant.of(
                scatter_kernels.atomic_scatter_kernel,
                scatter,
                dict(BLOCK_E=block_e, BLOCK_F=block_f),
                aligned=("inner",) if block_f >= 16 else (),
            )
        finish = dict(
            acc=acc,
            counts="*i64",
            base=data,
            out=data,
            S=INT,
            inner=INT,
            total=INT,
            has_base=FLAG,
            include_self=FLAG,
            divide=FLAG,
        )
        for red in (r for r in KERNEL_REDUCTIONS if r.atomic):
            yield Variant.of(scatter_kernels.finish_kernel, finish, _finish_constexprs(red, dtype))
    for dtype in DTYPES:
        data = POINTER[dtype]
        ties = dict(
            src=data,
            perm="*i64",
            ptr="*i64",
            result=data,
            grad=data,
            base=data,
            grad_src=data,
            ties=data,
            n=INT,
            S=INT,
            inner=INT,
            gather=FLAG,
            include_self=FLAG,
        )
        for block_e, block_f in tile_shapes():
            yield Variant.of(
                backward_kernels.index_scatter_reduce_backward_kernel,
                ties,
                _tie_constexprs(dtype, block_e, block_f),
                aligned=("inner",) if block_f >= 16 else (),
            )
