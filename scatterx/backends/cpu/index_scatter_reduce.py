"""``index_scatter_reduce`` on the CPU: the route (``routes.choose_route``), then its kernel; and the backward of
amax/amin (the gradient split among ties).

Terms: tensors are seen as ``(outer, n, inner)`` with the reduced dim in the middle (``shape3``); ``ptr`` are CSR
offsets (segment ``s`` covers positions ``ptr[s]:ptr[s+1]``); ``perm`` names the row of each position when rows
are gathered (a stable sort of an unsorted index), else positions are rows.

Why this module is long: every route of the op (serial, runs, segments, gather, slices) has its host side here,
beside the one function that chooses among them and falls back from one to another; they share the argument
handling and are read together.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from ..._reductions import SUPPORTED_DTYPES, Reduction
from ...kernels.cpu import NATIVE, launch, numpy_view, storage_code
from ...kernels.cpu import index_scatter_reduce_owner as owner
from ...kernels.cpu.index_scatter_reduce_backward import index_scatter_reduce_backward as tie_kernel
from ...kernels.cpu.index_scatter_reduce_runs import CHUNK_POSITIONS, index_scatter_reduce_runs
from ...kernels.cpu.segments import index_bound
from .._common import explain_bad_index, is_tie, shape3
from .._outputs import empty, new_result
from . import routes
from ._arguments import chunks, dense_order, finish, index64, perm_np, streams, target, unpermuted, view3
from .routes import Route
from .segment_reduce import reduce_segments
from .segments import count_index, head_sorted, index_fits, segments, sorted_ptr

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["index_scatter_reduce", "small_index_scatter_reduce", "tie_backward"]

_NO_COUNTS = np.empty(0, np.int64)
_SMALL_DTYPES = frozenset(SUPPORTED_DTYPES)
_INDEX_DTYPES = (torch.int64, torch.int32)


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
    """Reduce ``src``'s first ``index.numel()`` slices along ``dim`` into ``num_segments`` slices.

    Without ``base`` and ``out``: a new tensor, empty slices 0. ``base``: a new tensor computed as if ``out``
    were a copy of ``base`` (without the copy). ``out``: written in place and returned. ``base``'s / ``out``'s
    values take part when ``include_self``; their slices that receive nothing keep their values.
    ``sorted=None``: not known -- a sorted route if the index's head is sorted, and an unsorted one if the whole
    index turns out not to be. The index is validated here (``index_checked`` is the GPU's business: its host
    read may have done it)."""
    into_new = out is None and base is None
    order = dense_order(src) if into_new else None
    if order is not None:  # a permuted view (a transpose): reduced as it lies, not through a copy
        permuted = index_scatter_reduce(
            src.permute(order), index, order.index(dim), red, sorted, num_segments, index_checked=index_checked
        )
        return unpermuted(permuted, order)
    t = routes.tuning()
    # the serial route computes ``out=`` as a new tensor from it, then copies that in: a narrow or small call
    # gains more from the serial kernel than the copy of its output costs (small-calls.md, "Into out=")
    from_base = base is not None or out is not None
    outer, n, inner = shape3(src, dim)
    m = index.numel()
    forced = routes.forced()
    if forced is not None:
        why = routes.refusal(forced, sorted=sorted, into_new=into_new, from_base=from_base)
        if why:
            raise ValueError(f"cannot force the CPU route {forced.value!r} of index_scatter_reduce: {why}")
        route = forced
    else:
        # (a small call into a new tensor is serial whatever the order: its index's head is not probed)
        small = (into_new or from_base) and routes.small(
            outer=outer, n=n, inner=inner, segments=num_segments, threads=torch.get_num_threads(), t=t
        )
        guess = bool(sorted) if small or sorted is not None else head_sorted(index)
        route = routes.choose_route(
            sorted=guess,
            into_new=into_new,
            outer=outer,
            n=n,
            inner=inner,
            m=m,
            segments=num_segments,
            itemsize=src.element_size(),
            threads=torch.get_num_threads(),
            t=t,
            from_base=from_base,
        )

    def serial(is_sorted: bool) -> torch.Tensor:
        start = base if out is None else out
        result = _serial(
            src, index64(index), index, red, is_sorted, num_segments, outer, n, inner, dim, start, include_self
        )
        return result if out is None else finish(out, result)

    if route is Route.SERIAL:
        return serial(bool(sorted))
    if route in (Route.RUNS, Route.SEGMENTS):
        result = (
            _runs(src, index, red, num_segments, outer, n, inner, dim, t)
            if route is Route.RUNS
            else _segments(src, index, dim, red, num_segments, out, base, include_self)
        )
        if result is not None:
            return result
        if sorted:
            raise explain_bad_index(index, num_segments, True)
        if forced is not None:
            raise ValueError(
                f"cannot force the CPU route {forced.value!r} of index_scatter_reduce: it needs a sorted "
                "index in range, and this one (order not given) is not"
            )
        # not known to be sorted, and it is not (or it is bad: the unsorted route explains that)
        route = routes.choose_route(
            sorted=False,
            into_new=into_new,
            outer=outer,
            n=n,
            inner=inner,
            m=m,
            segments=num_segments,
            itemsize=src.element_size(),
            threads=torch.get_num_threads(),
            t=t,
            from_base=from_base,
        )
        if route is Route.SERIAL:
            return serial(False)
    if route is Route.SLICES:
        return _slices(src, index, dim, red, num_segments, out, base, include_self, t)
    ptr, perm = segments(index, num_segments, False)
    return reduce_segments(src, dim, ptr, perm, red, out, include_self, base, index, route=Route.GATHER)


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
    """``index_scatter_reduce`` of a small call into a new tensor on the serial route; None when the call is not
    small (or another route is forced), or not plainly valid (the caller then takes the general path, which
    explains any bad input). ``src`` is a tensor, ``index`` a 1-D tensor no longer than ``src.size(dim)``, ``dim
    >= 0`` (the caller checked); ``num_segments`` None: ``index.max() + 1``; ``base``: the new tensor starts from
    it (``num_segments`` is then its size along ``dim``, checked by the caller). Written for per-call cost: every
    line here is paid by calls of a few microseconds (see docs/decisions/small-calls.md)."""
    forced = routes.forced()
    if forced is not None and forced is not Route.SERIAL:
        return None
    t = routes.tuning()
    numel = src.numel()
    if forced is None and numel > t.small_call_elements * t.small_wide_factor:
        return None
    if src.dtype not in _SMALL_DTYPES or index.dtype not in _INDEX_DTYPES or not (src.is_cpu and index.is_cpu):
        return None
    if base is None and not src.is_contiguous():
        order = dense_order(src)
        if order is not None:  # a permuted view: reduced as it lies (``index_scatter_reduce``)
            permuted = small_index_scatter_reduce(
                src.permute(order), index, order.index(dim), red, sorted, num_segments
            )
            return None if permuted is None else unpermuted(permuted, order)
    index_np = index64(index)
    if num_segments is None:
        # sorted: the last entry is the largest -- if the promise holds, which the kernel checks before writing
        # (an entry above it is then out of range, and the general path explains the broken promise)
        num_segments = (int(index_np[-1]) + 1 if index_np.shape[0] else 0) if sorted else int(index_bound(index_np))
        if num_segments <= 0:
            return None
    shape = src.shape
    n = shape[dim]
    row = numel // n if n else 0  # outer * inner
    if row == 0 or num_segments == 0:
        return None
    outer = 1
    for size in shape[:dim]:
        outer *= size
    inner = row // outer
    if forced is None and not routes.small_path(
        sorted=sorted,
        from_base=base is not None,
        outer=outer,
        n=n,
        inner=inner,
        segments=num_segments,
        threads=torch.get_num_threads(),
        t=t,
    ):
        return None
    result, status = _serial_run(src, index_np, red, sorted, num_segments, outer, n, inner, dim, base, include_self)
    return result if status == owner.OK else None


def _serial(src, index_np, index, red, sorted, num_segments, outer, n, inner, dim, base=None, include_self=True):
    """The serial route: a new tensor (computed from ``base`` where given), or the error the kernel's checks
    found."""
    result, status = _serial_run(src, index_np, red, sorted, num_segments, outer, n, inner, dim, base, include_self)
    if status != owner.OK:
        # a broken sorted promise is named first: without dim_size, the size was read from the last entry
        raise explain_bad_index(index, num_segments, sorted or status == owner.NOT_SORTED)
    return result


def _serial_run(src, index_np, red, sorted, num_segments, outer, n, inner, dim, base=None, include_self=True):
    """``(result, status)`` of the owner kernel on the calling thread, checking the index itself first. ``base``:
    the new tensor starts from it (``include_self``: its values take part), and its targets that receive nothing
    keep its values. Written for per-call cost, as ``small_index_scatter_reduce``: each NumPy view of a tensor and
    each allocation is a microsecond or more of a call of ten (docs/decisions/small-calls.md)."""
    routes.record(Route.SERIAL)
    shape = list(src.shape)
    shape[dim] = num_segments
    result = empty(shape, src.dtype, "cpu")
    if outer * num_segments * inner == 0:
        # no kernel runs, so none checks the index: checked here as the kernel would (``_serial``'s message names
        # a broken order first when ``sorted``)
        return result, owner.OK if index_fits(index_np, num_segments, sorted) else owner.OUT_OF_RANGE
    storage = storage_code(src.dtype)
    if storage == NATIVE:  # (the views ``numpy_view`` makes, without its checks: native, fresh, no grad)
        out3 = result.numpy().reshape(outer, num_segments, inner)
        src3 = (src.detach() if src.requires_grad else src).contiguous().numpy().reshape(outer, n, inner)
    else:
        out3 = numpy_view(result).reshape(outer, num_segments, inner)
        src3 = view3(src, outer, n, inner)
    base3 = out3 if base is None else view3(base, outer, num_segments, inner)
    # rows of one element: several slices reduced together (the lanes kernel), or the empty targets of one slice by
    # their bits (no counting pass); wider rows count (the pass over every value that looks for identity bits would
    # cost more than the counting pass saves)
    lanes = base is None and routes.lanes_pay(
        outer=outer, inner=inner, segments=num_segments, itemsize=src.element_size(), threads=1, t=routes.tuning()
    )
    marks = not lanes and routes.marks_pay(red.name, inner=inner, into_new=base is None)
    # on the calling thread: the kernel's entry called directly, without ``launch``'s bookkeeping
    # (see docs/decisions/small-calls.md)
    key = owner.owner_key(src3, red.code, storage)
    flags = dict(reduce=red.code, storage=storage, check=True, sorted=sorted, fill_empty=base is None)
    if lanes:
        groups = np.array([0, -(-outer // owner.LANES)], np.int64)
        status = owner.index_scatter_reduce_lanes.keyed(
            key, groups, src3, index_np, base3, out3, include_self=False, **flags
        )
        return result, status
    while True:
        counts = _NO_COUNTS if marks else np.empty(num_segments, np.int64)
        status = owner.index_scatter_reduce_owner.keyed(
            key,
            np.array([0, outer], np.int64),
            src3,
            index_np,
            counts,
            base3,
            out3,
            include_self=base is not None and include_self,
            marks=marks,
            **flags,
        )
        if status != owner.AMBIGUOUS:
            return result, status
        marks = False  # a value with the identity's bits: count the entries instead


def _runs(src, index, red, num_segments, outer, n, inner, dim, t):
    """The runs route: a new tensor, or None if the index is not non-decreasing and in range."""
    m = index.numel()
    result = new_result(src, dim, num_segments)
    if outer * inner * m * num_segments == 0:  # (the kernel needs an entry and a target; the index is checked here)
        return result.zero_() if index_fits(index64(index), num_segments, True) else None
    threads = routes.threads_for(
        outer * (m + num_segments) * inner,
        torch.get_num_threads(),
        t,
        routes.reduce_minimum(t) if inner > 1 else None,
    )
    nchunks = 1 if threads == 1 else t.chunks_per_thread * threads
    if outer > 1 or inner > 1:  # chunks small enough to balance hubs (and, with outer > 1, to keep the index in L2)
        nchunks = max(nchunks, -(-m // CHUNK_POSITIONS))
    nchunks = min(m, nchunks)
    stream = inner > 1 and streams(src, result, inner, t)
    routes.record(Route.RUNS, stream)
    bad = launch(
        index_scatter_reduce_runs,
        ("runs", red.code, src.dtype),
        nchunks,
        threads,
        view3(src, outer, n, inner),
        index64(index),
        numpy_view(result).reshape(outer, num_segments, inner),
        step=-(-m // nchunks),
        reduce=red.code,
        storage=storage_code(src.dtype),
        stream=stream,
    )
    return None if bad else result


def _segments(src, index, dim, red, num_segments, out, base, include_self):
    """The segments route: CSR offsets, then the segment kernel; None if the index is not non-decreasing and in
    range."""
    ptr = sorted_ptr(index, num_segments)
    if ptr is None:
        return None
    return reduce_segments(src, dim, ptr, None, red, out, include_self, base, index, route=Route.SEGMENTS)


def _slices(src, index, dim, red, num_segments, out, base, include_self, t):
    """The slices route: each work item owns whole outer slices of the output (``LANES`` of them together for
    rows of one element where that pays, which count their own entries: the index is only checked here)."""
    outer, n, inner = shape3(src, dim)
    threads = routes.threads_for(
        outer * (n + num_segments) * inner,
        torch.get_num_threads(),
        t,
        routes.reduce_minimum(t) if inner > 1 else None,
    )
    lanes = routes.lanes_pay(
        outer=outer, inner=inner, segments=num_segments, itemsize=src.element_size(), threads=threads, t=t
    )
    # empty targets told by their bits, as on the serial route, instead of a counting pass -- which took as long as
    # a slice's own reduction (element-scatter.md, "Few slices")
    marks = not lanes and routes.marks_pay(red.name, inner=inner, into_new=out is None and base is None)
    if lanes or marks:
        index_np, counts = index64(index), _NO_COUNTS
        if index_np.shape[0] and not index_fits(index_np, num_segments, False):
            raise explain_bad_index(index, num_segments, False)
    else:
        index_np, counts = count_index(index, num_segments)
    result = new_result(src, dim, num_segments) if out is None else out
    written = result if out is None else target(out, src, index)
    if base is not None:
        initial = base.contiguous()
    elif out is not None and not include_self and storage_code(src.dtype) == NATIVE:
        initial = written.clone()  # native types accumulate in ``written``: keep the values empty targets get
    else:
        initial = written
    if outer * inner * num_segments > 0:
        routes.record(Route.SLICES)
        src3 = view3(src, outer, n, inner)
        storage = storage_code(src.dtype)
        initial3 = numpy_view(initial).reshape(outer, num_segments, inner)
        written3 = numpy_view(written).reshape(outer, num_segments, inner)
        flags = dict(
            reduce=red.code,
            storage=storage,
            check=False,
            sorted=False,
            include_self=bool(include_self) and (out is not None or base is not None),
            fill_empty=out is None and base is None,
        )
        key = owner.owner_key(src3, red.code, storage)
        if lanes:
            launch(
                owner.index_scatter_reduce_lanes,
                key,
                -(-outer // owner.LANES),
                threads,
                src3,
                index_np,
                initial3,
                written3,
                **flags,
            )
        else:
            while True:
                ambiguous = launch(
                    owner.index_scatter_reduce_owner,
                    key,
                    outer,
                    threads,
                    src3,
                    index_np,
                    counts,
                    initial3,
                    written3,
                    marks=marks,
                    **flags,
                )
                if not ambiguous:  # (the work items' statuses summed: the index is checked, so only AMBIGUOUS)
                    break
                # a value with the identity's bits (a -0.0 in a sum): count the entries, and write every slice again
                marks = False
                index_np, counts = count_index(index, num_segments)
    return result if out is None else finish(out, written)


def tie_backward(grad, src, index, result, base, dim: int, sorted: bool, count_base: bool):
    """amax/amin backward on the forward's segments: ``(grad_src, ties)``, ``ties`` being the number of members
    equal to each result (``base``'s value counted when ``count_base``). ``index`` was validated by the forward."""
    num_segments = result.size(dim)
    outer, n, inner = shape3(src, dim)
    grad_src = torch.empty_like(src, memory_format=torch.contiguous_format)
    grad_src.narrow(dim, index.numel(), n - index.numel()).zero_()  # slices that take no part
    ties = torch.empty_like(result, memory_format=torch.contiguous_format)
    if outer * inner * num_segments == 0 or index.numel() == 0:  # no members: only base's value can be a tie
        counted = base is not None and bool(count_base)
        return grad_src.zero_(), is_tie(base, result).to(ties.dtype) if counted else ties.zero_()
    ptr, perm = segments(index, num_segments, sorted)
    ptr_np = ptr.numpy()
    bounds, threads = chunks(ptr_np, outer, n, inner, routes.tuning())
    launch(
        tie_kernel,
        None,
        outer * (len(bounds) - 1),
        threads,
        view3(src, outer, n, inner),
        perm_np(perm),
        ptr_np,
        bounds,
        view3(result, outer, num_segments, inner),
        view3(grad, outer, num_segments, inner),
        view3(result if base is None else base, outer, num_segments, inner),
        numpy_view(grad_src).reshape(outer, n, inner),
        numpy_view(ties).reshape(outer, num_segments, inner),
        storage=storage_code(src.dtype),
        gather=perm is not None,
        include_self=base is not None and bool(count_base),
    )
    return grad_src, ties
