"""``index_scatter_reduce``: reduce slices of ``src`` along ``dim`` into the output slices a 1-D index names."""

from __future__ import annotations

from typing import Tuple

import torch

from .._reductions import Reduction, resolve
from ..kernels.cpu import index as index_kernels
from ..kernels.cpu import numpy_view, storage_code, use_torch_threads
from ..kernels.cpu.scatter import slice_scatter
from ._checks import (
    check_dim_size,
    check_integer_vector,
    check_out,
    check_src,
    explain_bad_index,
    normalize_dim,
)
from .gpu import uses_triton
from .library import index_scatter_reduce_op, needs_op
from .segment import (
    finish_output,
    histogram_chunks,
    prepare_output,
    run_segments,
    segments,
    shape3,
    try_sorted_segments,
)

#: How the unsorted path runs: "auto" chooses per call (``_slices_pay``); tests force "gather" or "slices".
UNSORTED_STRATEGY = "auto"
# slice owner: rows of at most this many bytes along the reduced dim ...
_SLICES_MAX_ROW_BYTES = 32
# ... and an accumulator buffer per outer slice of at most this many bytes
_SLICES_MAX_BUFFER_BYTES = 8 << 20


def index_scatter_reduce(
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor,
    reduce: str = "sum",
    sorted: bool = True,
    *,
    dim_size=None,
    out=None,
    include_self: bool = True,
) -> torch.Tensor:
    """``dst[index[i]] (+)= src[i]`` along ``dim``, for the first ``index.numel()`` slices of ``src``.

    Args:
        dim: the dimension of ``src`` that ``index`` runs along (negative counts from the end).
        index: 1-D int32/int64, ``index.numel() <= src.size(dim)``; non-decreasing when ``sorted=True``.
        src: float32/float64/float16/bfloat16/int32/int64 tensor of any shape and strides.
        reduce: ``"sum"``, ``"mean"``, ``"prod"``, ``"amax"``, ``"amin"`` (aliases add, mul, max, min).
        sorted: promise that ``index`` is non-decreasing (checked): contiguous segments, the fastest path.
            ``sorted=False`` accepts any order.
        dim_size: size of the output along ``dim``; default ``out.size(dim)``, else ``index.max() + 1``
            (the last element for a sorted index).
        out: reduce into this tensor in place and return it; ``include_self`` says whether its values take part
            (mean counts them). Its rows that receive nothing keep their values.

    Without ``out`` the result is a new tensor whose rows that receive nothing are 0.

    >>> index_scatter_reduce(0, torch.tensor([0, 0, 2]), torch.tensor([1., 2., 3.]))
    tensor([3., 0., 3.])
    """
    if not needs_op(src, out):
        # the same kernels, called directly: no copy of out and of the result (the op is functional), and no
        # first-call import of torch._dynamo (~1.5 s) that torch's custom-op machinery does
        return _index_scatter_reduce_eager(
            dim, index, src, reduce, sorted, dim_size=dim_size, out=out, include_self=include_self
        )
    _, dim, num_segments = _resolve_call(dim, index, src, reduce, sorted, dim_size, out)
    # the op reads out's values (base) and may save them for backward: give it a copy, since out is then
    # overwritten with the result
    base = None if out is None else out.clone()
    result = index_scatter_reduce_op(src, index, dim, reduce, sorted, num_segments, base, include_self)
    return result if out is None else out.copy_(result)


def _index_scatter_reduce_eager(
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor,
    reduce: str = "sum",
    sorted: bool = True,
    *,
    dim_size=None,
    out=None,
    include_self: bool = True,
    base=None,
) -> torch.Tensor:
    """``index_scatter_reduce`` called directly: what the custom op runs (see ``library.py``).

    ``base`` (instead of ``out``): return a new tensor, computed as if ``out`` were a copy of ``base``; the sorted
    and gather paths read ``base`` and write the result in one pass, without the copy."""
    red, dim, num_segments = _resolve_call(dim, index, src, reduce, sorted, dim_size, out if base is None else base)
    if uses_triton(src):
        from . import gpu

        # without dim_size or out, _resolve_call read the index on the host and validated it there
        checked = dim_size is None and out is None and base is None
        if sorted is None:  # internal callers (the planner), which sync anyway: one read picks the path
            sorted = index.numel() < 2 or bool((index[1:] >= index[:-1]).all())
        result = gpu.index_scatter_reduce(
            src, index, dim, red, bool(sorted), num_segments, out if base is None else base, include_self, checked
        )
        return result if out is None else out.copy_(result)

    # only the first index.numel() slices of src take part: ptr/perm/index never name a later one
    if sorted is None:  # unknown (internal callers): the sorted path if the index turns out to be sorted
        ptr = try_sorted_segments(index, num_segments)
        if ptr is not None:
            return run_segments(src, dim, ptr, None, red, out, include_self, base)
        sorted = False
    if not sorted:
        strategy = UNSORTED_STRATEGY
        if strategy == "auto":
            strategy = "slices" if _slices_pay(src, dim, num_segments) else "gather"
        if strategy == "slices":
            if base is not None:
                out = base.clone()
            return _run_slices(src, dim, index, num_segments, red, out, include_self)
    ptr, perm = segments(index, num_segments, sorted)
    return run_segments(src, dim, ptr, perm, red, out, include_self, base)


def index_scatter_reduce_from(
    dim: int, index: torch.Tensor, src: torch.Tensor, reduce: str, sorted: bool, base: torch.Tensor,
    include_self: bool = True,
) -> torch.Tensor:
    """Functional ``index_scatter_reduce(..., out=base.clone())``: a new tensor, ``base`` untouched, and no copy
    of ``base`` made on the way (the planner's entry point). Differentiable w.r.t. ``src`` and ``base``.
    ``sorted=None``: not known; the sorted path is taken if the index is sorted (found in the pass that builds
    its segments, so free)."""
    if not needs_op(src, base):
        return _index_scatter_reduce_eager(dim, index, src, reduce, sorted, include_self=include_self, base=base)
    if sorted is None:
        sorted = index.numel() < 2 or bool((index[1:] >= index[:-1]).all())
    _, dim, num_segments = _resolve_call(dim, index, src, reduce, sorted, None, base)
    return index_scatter_reduce_op(src, index, dim, reduce, sorted, num_segments, base, include_self)


def _resolve_call(dim, index, src, reduce, sorted, dim_size, out) -> Tuple[Reduction, int, int]:
    """The checks that need no index values, and the output size: (reduction, dim >= 0, num_segments)."""
    red = resolve(reduce)
    check_src(src)
    dim = normalize_dim(dim, src.dim())
    check_integer_vector(index, "index", src)
    if index.numel() > src.size(dim):
        raise ValueError(
            f"index has {index.numel()} entries but src.size({dim}) is {src.size(dim)}; "
            "index may not be longer than src along dim"
        )
    dim_size = check_dim_size(dim_size)
    if out is not None:
        check_out(out, src, dim, dim_size)
        return red, dim, out.size(dim)
    if dim_size is not None:
        return red, dim, dim_size
    if index.numel() == 0:
        return red, dim, 0
    # reads the index: a host sync (a graph break under torch.compile); passing dim_size avoids it. A sorted index
    # ends with its maximum (validated later, with everything else); otherwise one scan.
    if uses_triton(src):
        return red, dim, _read_and_check_on_host(index, bool(sorted))
    return red, dim, max(int(index[-1] if sorted else index.max()) + 1, 0)


def _read_and_check_on_host(index: torch.Tensor, sorted: bool) -> int:
    """Output size of a device index read on the host, validated in the same read (one sync): the kernels
    then need no device-side check, and a bad index raises here, before anything runs."""
    stats = [index.min(), index.max()]
    if sorted and index.numel() > 1:
        stats.append((index[1:] < index[:-1]).any().to(index.dtype))
    lo, hi, *unsorted = torch.stack(stats).tolist()
    if lo < 0 or (unsorted and unsorted[0]):
        raise explain_bad_index(index, hi + 1, sorted)
    return hi + 1


def _slices_pay(src: torch.Tensor, dim: int, num_segments: int) -> bool:
    """Slice owner instead of sort + gather: when rows along ``dim`` are tiny (a gather would fetch a cache line
    for a few bytes) and there are enough outer slices to keep every thread busy. Measured on a (64, 1M) float32
    ``src`` reduced along its last dim into 100k segments: 228 ms gathering, against 145 ms for torch."""
    outer, _, inner = shape3(src, dim)
    acc_bytes = 8 if src.element_size() == 8 else 4
    return (
        inner * src.element_size() <= _SLICES_MAX_ROW_BYTES
        and outer >= torch.get_num_threads()
        and num_segments * inner * acc_bytes <= _SLICES_MAX_BUFFER_BYTES
    )


def _run_slices(src, dim, index, num_segments: int, red: Reduction, out, include_self: bool) -> torch.Tensor:
    index_np = numpy_view(index.contiguous())
    counts, bad = index_kernels.count_index(index_np, num_segments, histogram_chunks(index.numel(), num_segments))
    if bad:
        raise explain_bad_index(index, num_segments, sorted=False)
    outer, n, inner = shape3(src, dim)
    result, target = prepare_output(src, dim, num_segments, out)
    if outer * inner * num_segments > 0:
        use_torch_threads(outer * (n + num_segments) * inner)
        slice_scatter(
            numpy_view(src.contiguous()).reshape(outer, n, inner),
            index_np,
            counts,
            numpy_view(target).reshape(outer, num_segments, inner),
            red.code,
            storage_code(src.dtype),
            bool(include_self) and out is not None,
            out is None,
        )
    return finish_output(result, target)
