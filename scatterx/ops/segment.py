"""Segment (CSR) reductions and the conversions between a sorted index and CSR offsets.

``run_segments`` is where validated arguments meet the segment kernel: ``segment_reduce``, the sorted path of
``index_scatter_reduce`` and its unsorted sort + gather strategy end there (the slice-owner strategy has its own
runner in ``index_scatter.py``). ``prepare_output``/``finish_output`` handle ``out`` for both.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import numpy as np
import torch

from .._reductions import Reduction, resolve
from ..kernels.cpu import numpy_view, storage_code, use_torch_threads
from ..kernels.cpu import index as index_kernels
from ..kernels.cpu.segment import segment_reduce as segment_kernel
from ..kernels.cpu.segment import segment_tie_backward
from .gpu import uses_triton
from ._checks import (
    check_dim_size,
    check_integer_vector,
    check_src,
    explain_bad_index,
    normalize_dim,
)

# ``perm`` is int32 unless the index is too long for it; the sorted path passes an empty one of the same type.
_PERM_INT32 = torch.empty(0, dtype=torch.int32).numpy()
_PERM_INT64 = torch.empty(0, dtype=torch.int64).numpy()

# Chunks of segments per thread: more than one evens out hubs (a few huge segments) under static scheduling.
_CHUNKS_PER_THREAD = 4
# The gather of the unsorted path prefetches rows about this many bytes ahead (measured: 8 KB, i.e. 32 rows of
# 64 float32, is at the flat bottom of the curve at the default shape).
_PREFETCH_BYTES = 8192


def segments_from_sorted_index(index: torch.Tensor, num_segments: int, name: str = "index") -> torch.Tensor:
    """CSR offsets of a non-decreasing index, validated in the same pass (raises on any bad value)."""
    threads = use_torch_threads(index.numel())
    ptr, bad = index_kernels.sorted_index_to_ptr(numpy_view(index.contiguous()), num_segments, threads)
    if bad:
        raise explain_bad_index(index, num_segments, sorted=True, name=name)
    return torch.from_numpy(ptr)


_SORTED_PROBE = 1024


def try_sorted_segments(index: torch.Tensor, num_segments: int) -> Optional[torch.Tensor]:
    """CSR offsets if ``index`` is non-decreasing and in range, else None (the caller takes the unsorted path,
    whose own pass explains a bad value). For callers that do not know whether the index is sorted; a shuffled
    index is told apart by its first entries, before a full pass."""
    head = index[:_SORTED_PROBE]
    if bool((head[1:] < head[:-1]).any()):
        return None
    threads = use_torch_threads(index.numel())
    ptr, bad = index_kernels.sorted_index_to_ptr(numpy_view(index.contiguous()), num_segments, threads)
    return None if bad else torch.from_numpy(ptr)


def histogram_chunks(m: int, num_segments: int) -> int:
    """Chunks (threads) for a histogram of an index of length ``m``: one histogram row of ``num_segments`` per
    chunk, so more than one only while that memory stays proportional to the index."""
    chunks = use_torch_threads(m)
    if chunks > 1 and chunks * num_segments > 4 * m + (1 << 16):
        chunks = 1
        use_torch_threads(0)
    return chunks


def segments_from_unsorted_index(index: torch.Tensor, num_segments: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """CSR offsets and the stable permutation that groups positions by target (a parallel counting sort)."""
    chunks = histogram_chunks(index.numel(), num_segments)
    perm_like = _PERM_INT32 if index.numel() < 2**31 else _PERM_INT64
    ptr, perm, bad = index_kernels.counting_sort(numpy_view(index.contiguous()), num_segments, chunks, perm_like)
    if bad:
        raise explain_bad_index(index, num_segments, sorted=False)
    return torch.from_numpy(ptr), torch.from_numpy(perm)


def segments(index: torch.Tensor, num_segments: int, sorted: bool):
    """``(ptr, perm)`` of an index: CSR offsets, and for an unsorted index the stable permutation (else None)."""
    if sorted:
        return segments_from_sorted_index(index, num_segments), None
    return segments_from_unsorted_index(index, num_segments)


def launch_bounds(ptr_np: np.ndarray, outer: int, n: int, inner: int) -> np.ndarray:
    """Chunks of segments for a segment kernel over ``outer`` slices (sets Numba's thread count for it)."""
    num_segments = len(ptr_np) - 1
    threads = use_torch_threads(outer * (n + num_segments) * inner)
    chunks = 1 if threads == 1 else min(num_segments, -(-_CHUNKS_PER_THREAD * threads // outer))
    return balanced_bounds(ptr_np, chunks)


def balanced_bounds(ptr: np.ndarray, nchunks: int) -> np.ndarray:
    """Split segments ``0..S`` into ``nchunks`` contiguous chunks of about equal ``rows + segments``.

    Plain Python: a few binary searches over ``ptr`` (microseconds), not worth a Numba compile (0.2 s cold)."""
    num_segments = len(ptr) - 1
    total = int(ptr[num_segments]) + num_segments
    bounds = [0]
    for c in range(1, nchunks):
        target = total * c // nchunks
        lo, hi = bounds[-1], num_segments
        while lo < hi:  # first s with ptr[s] + s >= target
            mid = (lo + hi) // 2
            if int(ptr[mid]) + mid < target:
                lo = mid + 1
            else:
                hi = mid
        bounds.append(lo)
    bounds.append(num_segments)
    return np.array(bounds, dtype=np.int64)


def shape3(src: torch.Tensor, dim: int) -> Tuple[int, int, int]:
    """``(outer, n, inner)``: src seen as 3-D with ``dim`` in the middle (what every kernel takes)."""
    shape = src.shape
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])


def prepare_output(src: torch.Tensor, dim: int, num_segments: int, out: Optional[torch.Tensor]):
    """``(result, target)``: what the op returns, and the C-contiguous buffer the kernel writes (``result`` itself
    unless ``out`` is not contiguous or shares memory with ``src``; then a copy, see ``finish_output``)."""
    if out is None:
        shape = list(src.shape)
        shape[dim] = num_segments
        result = torch.empty(shape, dtype=src.dtype)
        return result, result
    shares_memory = out.untyped_storage().data_ptr() == src.untyped_storage().data_ptr()
    target = out if out.is_contiguous() and not shares_memory else out.contiguous().clone()
    return out, target


def finish_output(result: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if target is not result:
        result.copy_(target)
    return result


def run_segments(
    src: torch.Tensor,
    dim: int,
    ptr: torch.Tensor,
    perm: Optional[torch.Tensor],
    red: Reduction,
    out: Optional[torch.Tensor],
    include_self: bool,
    base: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Reduce the validated segments ``ptr`` (rows ``perm[...]`` when given) of ``src`` along ``dim``.

    With ``out=None`` a new tensor is returned and empty segments are 0. Otherwise the result is written into
    ``out``, which takes part when ``include_self``; its rows that receive nothing keep their values.
    ``base`` (with ``out=None``): a new tensor as if ``out`` were a copy of ``base`` -- without making the copy.
    """
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    result, target = prepare_output(src, dim, num_segments, out)
    if out is None and base is None:
        include_self = False
    initial = target if base is None else base.contiguous()

    if outer * inner * num_segments > 0:
        row_bytes = max(inner * src.element_size(), 1)
        lookahead = min(max(_PREFETCH_BYTES // row_bytes, 8), 32)
        ptr_np = ptr.numpy()
        segment_kernel(
            numpy_view(src.contiguous()).reshape(outer, n, inner),
            _PERM_INT32 if perm is None else perm.numpy(),
            ptr_np,
            launch_bounds(ptr_np, outer, n, inner),
            numpy_view(initial).reshape(outer, num_segments, inner),
            numpy_view(target).reshape(outer, num_segments, inner),
            red.code,
            storage_code(src.dtype),
            perm is not None,
            bool(include_self),
            out is None and base is None,
            lookahead,
        )
    elif base is not None:
        target.copy_(base)
    return finish_output(result, target)


def tie_backward(grad, src, index, result, base, dim: int, sorted: bool, include_self: bool):
    """amax/amin backward on the segment kernel's segments: (grad_src, ties), ``ties`` being the number of members
    equal to each result (``base`` counted with include_self). ``index`` was validated by the forward."""
    if uses_triton(src):
        from . import gpu

        return gpu.tie_backward(grad, src, index, result, base, dim, sorted, include_self)
    num_segments = result.size(dim)
    ptr, perm = segments(index, num_segments, sorted)
    outer, n, inner = shape3(src, dim)
    grad_src = torch.empty_like(src, memory_format=torch.contiguous_format)
    grad_src.narrow(dim, index.numel(), n - index.numel()).zero_()  # slices that take no part
    ties = torch.empty_like(result, memory_format=torch.contiguous_format)
    if outer * inner * num_segments > 0 and index.numel() > 0:
        ptr_np = ptr.numpy()
        view = lambda t, rows: numpy_view(t.contiguous()).reshape(outer, rows, inner)  # noqa: E731
        segment_tie_backward(
            view(src, n),
            _PERM_INT32 if perm is None else perm.numpy(),
            ptr_np,
            launch_bounds(ptr_np, outer, n, inner),
            view(result, num_segments),
            view(grad, num_segments),
            view(result if base is None else base, num_segments),
            numpy_view(grad_src).reshape(outer, n, inner),
            numpy_view(ties).reshape(outer, num_segments, inner),
            storage_code(src.dtype),
            perm is not None,
            base is not None and include_self,
        )
    else:
        ties.zero_()
    return grad_src, ties


def check_ptr(ptr, src: torch.Tensor, length: int, what: str) -> torch.Tensor:
    """Validated CSR offsets (int64, contiguous) over ``length`` rows (``what`` names that length in messages)."""
    check_integer_vector(ptr, "ptr", src)
    if ptr.numel() == 0:
        raise ValueError("ptr must have at least one entry (ptr[0] == 0)")
    first, last = int(ptr[0]), int(ptr[-1])
    if first != 0:
        raise ValueError(f"ptr must start at 0, got ptr[0]={first}")
    if last != length:
        raise ValueError(f"ptr must end at {what}={length}, got ptr[-1]={last}")
    decreases = torch.nonzero(ptr[1:] < ptr[:-1])
    if decreases.numel():
        i = int(decreases[0]) + 1
        raise ValueError(f"ptr must be non-decreasing: ptr[{i}]={int(ptr[i])} < ptr[{i - 1}]={int(ptr[i - 1])}")
    return ptr.to(torch.int64).contiguous()


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, reduce: str = "sum", dim: int = 0) -> torch.Tensor:
    """Reduce ``src`` along ``dim`` over the CSR segments ``ptr``: segment ``s`` covers ``ptr[s]:ptr[s+1]``.

    ``ptr`` has ``num_segments + 1`` non-decreasing entries with ``ptr[0] == 0`` and ``ptr[-1] == src.size(dim)``.
    The result has ``num_segments`` along ``dim``; empty segments give 0. Differentiable w.r.t. ``src``.

    >>> segment_reduce(torch.tensor([1., 2., 3.]), torch.tensor([0, 2, 2, 3]))
    tensor([3., 0., 3.])
    """
    resolve(reduce)
    check_src(src)
    dim = normalize_dim(dim, src.dim())
    check_integer_vector(ptr, "ptr", src)
    from .library import needs_op, segment_reduce_op

    if not needs_op(src):
        return _segment_reduce_eager(src, ptr, reduce, dim)
    return segment_reduce_op(src, ptr, reduce, dim)


def _segment_reduce_eager(src: torch.Tensor, ptr: torch.Tensor, reduce: str, dim: int) -> torch.Tensor:
    """What ``torch.ops.scatterx.segment_reduce`` runs: the checks that read ``ptr``'s values, then the kernel."""
    red = resolve(reduce)
    check_src(src)
    dim = normalize_dim(dim, src.dim())
    check_integer_vector(ptr, "ptr", src)
    if uses_triton(src):
        from . import gpu

        if ptr.numel() == 0:
            raise ValueError("ptr must have at least one entry (ptr[0] == 0)")
        return gpu.segment_reduce(src, ptr, red, dim)
    ptr = check_ptr(ptr, src, src.size(dim), f"src.size({dim})")
    return run_segments(src, dim, ptr, None, red, None, include_self=False)


def index_to_ptr(index: torch.Tensor, dim_size: int) -> torch.Tensor:
    """CSR offsets (int64, ``dim_size + 1`` entries) of a sorted (non-decreasing) index.

    >>> index_to_ptr(torch.tensor([0, 0, 2]), 4)
    tensor([0, 2, 2, 3, 3])
    """
    check_integer_vector(index, "index", torch.empty(0))
    dim_size = check_dim_size(dim_size)
    if dim_size is None:
        raise TypeError("dim_size must be an int")
    return segments_from_sorted_index(index, dim_size)


def ptr_to_index(ptr: torch.Tensor) -> torch.Tensor:
    """The sorted index (int64) that CSR offsets ``ptr`` describe: segment ``s`` repeated ``ptr[s+1]-ptr[s]`` times.

    >>> ptr_to_index(torch.tensor([0, 2, 2, 3]))
    tensor([0, 0, 2])
    """
    check_integer_vector(ptr, "ptr", torch.empty(0))
    if ptr.numel() == 0 or int(ptr[0]) != 0:
        raise ValueError(f"ptr must start at 0, got {ptr[:1].tolist()}")
    counts = ptr[1:] - ptr[:-1]
    if bool((counts < 0).any()):
        i = int(torch.nonzero(counts < 0)[0]) + 1
        raise ValueError(f"ptr must be non-decreasing: ptr[{i}]={int(ptr[i])} < ptr[{i - 1}]={int(ptr[i - 1])}")
    return torch.repeat_interleave(torch.arange(counts.numel()), counts.to(torch.int64))
