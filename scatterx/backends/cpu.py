"""The CPU backend: checked arguments in, Numba kernel launches (``kernels/cpu``) out.

``backends/gpu.py`` has the same functions with the same signatures; ``backends.backend_for(tensor)`` picks one.
The op layer has checked every argument except the *values* of indices and offsets. Those are checked here,
before anything is written, in the pass that needs them anyway: the index kernels count the entries they reject
while they build the segments, and only on a failure is the culprit looked for (``explain_bad_index``).

Terms: tensors are seen as ``(outer, n, inner)`` with the reduced dim in the middle (``shape3``); ``ptr`` are CSR
offsets (segment ``s`` covers positions ``ptr[s]:ptr[s+1]``); ``perm`` names the row of each position when rows
are gathered (a stable sort of an unsorted index, or a list of source rows), else positions are rows.

Why this module is long: it is the whole CPU side of the backend interface (``backends/__init__.py`` lists it),
one function per entry, each a thin launch; splitting it would put the CPU backend's entries in several files
while the GPU's stay in one.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import torch

from .._reductions import BY_NAME, Reduction, accumulator_dtype
from ..kernels.cpu import index as index_kernels
from ..kernels.cpu.arg_reduce import segment_arg_reduce as arg_reduce_kernel
from ..kernels.cpu.logsumexp import segment_logsumexp as logsumexp_kernel
from ..kernels.cpu import NATIVE, launches, numpy_view, storage_code, use_torch_threads
from ..kernels.cpu import element as element_kernels
from ..kernels.cpu.gatv2 import gatv2_grad as gatv2_grad_kernel
from ..kernels.cpu.gatv2 import gatv2_logits as gatv2_logits_kernel
from ..kernels.cpu import runs as runs_kernels
from ..kernels.cpu.runs import sorted_rows, sorted_runs
from ..kernels.cpu.scatter import slice_scatter
from ..kernels.cpu._memory import STREAM_ALIGN
from ..kernels.cpu.segment import segment_reduce as segment_kernel
from ..kernels.cpu.segment import segment_tie_backward
from ..kernels.cpu.serial import OK as SERIAL_OK
from ..kernels.cpu.serial import MARKS_EMPTY, index_bound, narrow_scatter, serial_scatter
from ..kernels.cpu.softmax import segment_softmax as softmax_kernel
from ..kernels.cpu.softmax import segment_softmax_backward as softmax_backward_kernel
from ..kernels.cpu.weighted import SDDMM_OPS
from ..kernels.cpu.weighted import sddmm as sddmm_kernel
from ..kernels.cpu.weighted import weighted_gather_segment
from ._common import empty, explain_bad_index, new_result, overlaps, segment_of_entries, shape3

NAME = "cpu"

#: How the unsorted path runs: "auto" chooses per call (``_slices_pay``); tests force "gather" or "slices".
UNSORTED_STRATEGY = "auto"
# slice owner: rows of at most this many bytes along the reduced dim ...
_SLICES_MAX_ROW_BYTES = 32
# ... and an accumulator buffer per outer slice of at most this many bytes
_SLICES_MAX_BUFFER_BYTES = 8 << 20
# Chunks of segments per thread: more than one evens out hubs (a few huge segments) under static scheduling.
_CHUNKS_PER_THREAD = 4
# The gather of the unsorted path prefetches rows about this many bytes ahead (measured: 8 KB, i.e. 32 rows of
# 64 float32, is at the flat bottom of the curve at the default shape).
_PREFETCH_BYTES = 8192
# A caller that does not know whether its index is sorted looks at this many entries before a full sorted pass.
_SORTED_PROBE = 1024

# ``perm`` is int32 unless the index is too long for it; the sorted path passes an empty one of the same type.
_NO_PERM = np.empty(0, dtype=np.int32)
_PERM_INT64 = np.empty(0, dtype=np.int64)


# ------------------------------------------------------------------------------------------ index -> segments
def output_size(index: torch.Tensor, sorted: Optional[bool]) -> Tuple[int, bool]:
    """``(index.max() + 1, validated)`` for a caller without ``dim_size`` (a non-empty index). A sorted index
    ends with its maximum (no scan); the values are validated later, in the segments pass."""
    last = int(index[-1]) if sorted else int(index.max())
    return max(last + 1, 0), False


def check_index(index: torch.Tensor, size: int, name: str = "index", size_name: str = "size") -> None:
    """IndexError unless every entry of ``index`` is in ``[0, size)`` (for an index no kernel pass checks)."""
    if index.numel() == 0:
        return
    low, high = torch.aminmax(index)
    if int(low) < 0 or int(high) >= size:
        raise explain_bad_index(index, size, False, name, size_name)


def check_ptr(ptr: torch.Tensor, length: int, what: str) -> torch.Tensor:
    """Validated CSR offsets (int64, contiguous) over ``length`` positions (``what`` names that length)."""
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


@launches
def index_to_ptr(
    index: torch.Tensor, num_segments: int, name: str = "index", size_name: str = "dim_size",
    unsorted_hint: str = "pass sorted=False for an unsorted index",
) -> torch.Tensor:
    """CSR offsets of a non-decreasing index, validated in the same single pass (raises on any bad value)."""
    threads = use_torch_threads(index.numel())
    ptr, bad = index_kernels.sorted_index_to_ptr(numpy_view(index.contiguous()), num_segments, threads)
    if bad:
        raise explain_bad_index(index, num_segments, True, name, size_name, unsorted_hint)
    return torch.from_numpy(ptr)


def _histogram_chunks(m: int, num_segments: int) -> int:
    """Chunks (threads) for a histogram of an index of length ``m``: one histogram row of ``num_segments`` per
    chunk, so more than one only while that memory stays proportional to the index."""
    chunks = use_torch_threads(m)
    if chunks > 1 and chunks * num_segments > 4 * m + (1 << 16):
        chunks = 1
        use_torch_threads(0)
    return chunks


def _head_sorted(index: torch.Tensor) -> bool:
    """Whether the first entries of ``index`` are non-decreasing: a shuffled index is told apart by them before
    a full pass is spent finding out."""
    head = index[:_SORTED_PROBE]
    return not bool((head[1:] < head[:-1]).any())


def _sorted_or_none(index: torch.Tensor, num_segments: int) -> Optional[torch.Tensor]:
    """CSR offsets if ``index`` is non-decreasing and in range, else None (the caller takes the unsorted path,
    whose own pass explains a bad value)."""
    if not _head_sorted(index):
        return None
    threads = use_torch_threads(index.numel())
    ptr, bad = index_kernels.sorted_index_to_ptr(numpy_view(index.contiguous()), num_segments, threads)
    return None if bad else torch.from_numpy(ptr)


@launches
def segments(
    index: torch.Tensor, num_segments: int, sorted: bool, name: str = "index", size_name: str = "dim_size"
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """``(ptr, perm)`` of an index, validated in the pass that builds them: CSR offsets, and for an unsorted
    index the stable permutation grouping positions by target (a parallel counting sort), else None."""
    if sorted:
        return index_to_ptr(index, num_segments, name, size_name), None
    chunks = _histogram_chunks(index.numel(), num_segments)
    perm_like = _NO_PERM if index.numel() < 2**31 else _PERM_INT64
    ptr, perm, bad = index_kernels.counting_sort(numpy_view(index.contiguous()), num_segments, chunks, perm_like)
    if bad:
        raise explain_bad_index(index, num_segments, False, name, size_name)
    return torch.from_numpy(ptr), torch.from_numpy(perm)


def _bounds(ptr_np: np.ndarray, outer: int, n: int, inner: int) -> np.ndarray:
    """Chunks of segments for a segment kernel over ``outer`` slices (sets Numba's thread count for it)."""
    num_segments = len(ptr_np) - 1
    threads = use_torch_threads(outer * (n + num_segments) * inner)
    chunks = 1 if threads == 1 else min(num_segments, -(-_CHUNKS_PER_THREAD * threads // outer))
    return balanced_bounds(ptr_np, chunks)


#: Split segments ``0..S`` into contiguous chunks of about equal ``rows + segments`` (``kernels/cpu/index.py``).
balanced_bounds = index_kernels.balanced_bounds


def _perm_np(perm: Optional[torch.Tensor]) -> np.ndarray:
    return _NO_PERM if perm is None else numpy_view(perm.contiguous())


def _view3(t: torch.Tensor, outer: int, rows: int, inner: int) -> np.ndarray:
    return numpy_view(t.contiguous()).reshape(outer, rows, inner)


# ------------------------------------------------------------------------------------------------ reductions
def _target(out: torch.Tensor, *inputs: Optional[torch.Tensor]) -> torch.Tensor:
    """The C-contiguous buffer a kernel writes for ``out``: ``out`` itself, or a copy when ``out`` is not
    contiguous or its memory overlaps an input (the kernel must read the inputs as they were; an index that
    changes under the kernel would send writes anywhere). ``_finish`` copies it back."""
    if out.is_contiguous() and not any(overlaps(out, t) for t in inputs):
        return out
    return out.clone(memory_format=torch.contiguous_format)


def _finish(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    if target is not out:
        out.copy_(target)
    return out


@launches
def index_scatter_reduce(
    src: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction, sorted: Optional[bool], num_segments: int,
    base: Optional[torch.Tensor] = None, out: Optional[torch.Tensor] = None, include_self: bool = True,
    index_checked: bool = False,
) -> torch.Tensor:
    """Reduce ``src``'s first ``index.numel()`` slices along ``dim`` into ``num_segments`` slices.

    Without ``base`` and ``out``: a new tensor, empty slices 0. ``base``: a new tensor computed as if ``out``
    were a copy of ``base`` (without the copy). ``out``: written in place and returned. ``base``'s / ``out``'s
    values take part when ``include_self``; their slices that receive nothing keep their values.
    ``sorted=None``: not known -- the sorted path if the index turns out sorted. The index is validated here
    (``index_checked`` is the GPU's business: its host read may have done it)."""
    if sorted is not False and out is None and base is None and _runs_pay(src, dim, index, num_segments) \
            and (sorted or _head_sorted(index)):  # (sorted=None: probed only where the runs kernels would run)
        result = _sorted_runs(src, index, dim, red, num_segments)
        if result is not None:
            return result
        if sorted:
            raise explain_bad_index(index, num_segments, True)
        sorted = False  # not known and not sorted (or bad: the unsorted path's checks explain it)
    if sorted is False and out is None and base is None:
        result = _serial_unsorted(src, index, dim, red, num_segments)
        if result is not None:
            return result
    if sorted is None:
        ptr = _sorted_or_none(index, num_segments)
        if ptr is not None:
            return _reduce_segments(src, dim, ptr, None, red, out, include_self, base, index)
        sorted = False
    if not sorted:
        strategy = UNSORTED_STRATEGY
        if strategy == "auto":
            strategy = "slices" if _slices_pay(src, dim, num_segments) else "gather"
        if strategy == "slices":
            return _run_slices(src, dim, index, num_segments, red, out if base is None else base.clone(), include_self)
    ptr, perm = segments(index, num_segments, sorted)
    return _reduce_segments(src, dim, ptr, perm, red, out, include_self, base, index)


#: Calls whose ``src`` and output together hold at most this many elements take the serial kernel
#: (``kernels/cpu/serial.py``: the same bits, no offsets, no thread pool). Crossover measured in DESIGN.md.
SMALL_CALL_ELEMENTS = 81_920
#: ... and ``SMALL_WIDE_FACTOR`` times as many with rows of at least ``SMALL_WIDE_ROW`` elements, whose inner loop
#: vectorises (on 2 threads; the factor shrinks as threads are added, since the general path scales with them and
#: this one does not: an extrapolation, this VM has 2 cores). Measured: 1000 x 256 sorted sum 66 us serial, 116 us
#: general; 4000 x 64 73 against 117 us; near even at 2000 x 256 and 8000 x 64 (~512k); 4x (327,680) lets
#: 1000 x 256 and its output in.
SMALL_WIDE_FACTOR = 4
SMALL_WIDE_ROW = 16
_SERIAL_STORAGE = {t: storage_code(t) for t in (torch.float32, torch.float64, torch.int32, torch.int64)}
_SERIAL_STORAGE.update({t: storage_code(t) for t in (torch.float16, torch.bfloat16)})
_INDEX_DTYPES = (torch.int64, torch.int32)


def small_index_scatter_reduce(
    src: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction, sorted: bool, num_segments: Optional[int]
) -> Optional[torch.Tensor]:
    """``index_scatter_reduce`` of a small call into a new tensor, on the serial kernel; None when the call is
    not small, or not plainly valid (the caller then takes the general path, which explains any bad input).
    ``src`` is a tensor, ``index`` a 1-D tensor no longer than ``src.size(dim)``, ``dim >= 0`` (the caller
    checked); ``num_segments`` None: ``index.max() + 1``. Written for per-call cost: every line here is paid by
    calls of ~10 us."""
    storage = _SERIAL_STORAGE.get(src.dtype)
    numel = src.numel()
    if storage is None or numel > SMALL_CALL_ELEMENTS * SMALL_WIDE_FACTOR * 2 or not (src.is_cpu and index.is_cpu):
        return None
    if index.dtype not in _INDEX_DTYPES:
        return None
    index_np = index.contiguous().numpy()
    if num_segments is None:
        num_segments = int(index_bound(index_np))
        if num_segments < 0:
            return None
    shape = list(src.shape)
    n = shape[dim]
    row = numel // n if n else 0  # outer * inner
    if row == 0 or num_segments == 0:
        return None
    outer = 1
    for size in shape[:dim]:
        outer *= size
    inner = row // outer
    limit = SMALL_CALL_ELEMENTS
    if inner >= SMALL_WIDE_ROW:
        limit = max(limit, limit * SMALL_WIDE_FACTOR * 2 // max(torch.get_num_threads(), 1))
    if row * num_segments + numel > limit:
        return None
    return _serial_into_new(src, index, index_np, dim, red, sorted, num_segments, outer, n, inner, storage)


def _serial_into_new(src, index, index_np, dim, red, sorted, num_segments, outer, n, inner, storage):
    """The serial kernel into a new tensor; None if the index is bad (nothing was computed)."""
    shape = list(src.shape)
    shape[dim] = num_segments
    out = empty(shape, src.dtype, "cpu")
    src = src.detach() if src.requires_grad else src
    if storage != NATIVE:
        src, out_view = src.view(torch.int16), out.view(torch.int16)
    else:
        out_view = out
    if not sorted and outer == 1 and inner == 1 and red.name in MARKS_EMPTY:
        # one-element rows of an unsorted index: the same bits without a record of the targets seen
        out_np = out_view.numpy().reshape(num_segments)
        status = narrow_scatter.keyed(
            ("narrow", red.code, storage, src.dtype, index.dtype),
            src.contiguous().numpy().reshape(n), index_np, out_np, red.code, storage,
        )
        return out if status == SERIAL_OK else None
    out_np = out_view.numpy().reshape(outer, num_segments, inner)
    status = serial_scatter.keyed(
        ("serial", red.code, storage, src.dtype, index.dtype),
        src.contiguous().numpy().reshape(outer, n, inner), index_np, out_np, out_np,
        red.code, storage, sorted, False, True,
    )
    return out if status == SERIAL_OK else None


#: An unsorted index into a new tensor with one outer slice and rows of ``inner`` elements takes the serial
#: kernel at any size while ``inner x threads`` is at most this: sorting positions by target and then gathering
#: costs more than one thread's direct scatter there. Measured on 2 threads (1M entries into 100k targets: x 1:
#: 11.5 ms sorted + gathered, 2.6 ms serial; x 4: 15.6 against 13.1 ms; x 16: the sort wins, 26.8 against 42.9
#: ms); the sort scales with threads and the serial kernel does not, hence the product (an extrapolation beyond
#: 2 threads: DESIGN.md "Unsorted narrow rows").
SERIAL_UNSORTED_MAX_WORK = 8


def _serial_unsorted(src, index, dim: int, red: Reduction, num_segments: int) -> Optional[torch.Tensor]:
    """``index_scatter_reduce`` of an unsorted index on the serial kernel when it pays (see above), else None;
    None too on a bad index (the general path explains it)."""
    storage = _SERIAL_STORAGE.get(src.dtype)
    outer, n, inner = shape3(src, dim)
    if storage is None or outer != 1 or inner == 0 or num_segments == 0:
        return None
    if inner * torch.get_num_threads() > SERIAL_UNSORTED_MAX_WORK:
        return None
    if index.dtype not in _INDEX_DTYPES:
        return None
    index = index.contiguous()
    return _serial_into_new(src, index, index.numpy(), dim, red, False, num_segments, outer, n, inner, storage)


def _reduce_segments(src, dim, ptr, perm, red: Reduction, out, include_self: bool, base=None, index=None):
    """The segment kernel over validated ``ptr`` (rows ``perm[...]`` when given): into ``out`` in place, or a new
    tensor (empty segments 0, or ``base``'s values)."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    result = new_result(src, dim, num_segments) if out is None else out
    target = result if out is None else _target(out, src, index)
    fill_empty = out is None and base is None
    include_self = bool(include_self) and not fill_empty
    initial = target if base is None else base.contiguous()
    if outer * inner * num_segments > 0:
        ptr_np = ptr.numpy()
        row_bytes = max(inner * src.element_size(), 1)
        perm_np = _perm_np(perm)
        # every array here is C-contiguous, aligned and writable (``_view3``, ``numpy_view`` of contiguous
        # tensors, fresh arrays): the dtypes and literals determine the Numba signature
        segment_kernel.keyed(
            ("segment", red.code, src.dtype, initial.dtype, target.dtype, perm_np.dtype, perm is not None),
            _view3(src, outer, n, inner),
            perm_np,
            ptr_np,
            _bounds(ptr_np, outer, n, inner),
            numpy_view(initial).reshape(outer, num_segments, inner),
            numpy_view(target).reshape(outer, num_segments, inner),
            red.code,
            storage_code(src.dtype),
            perm is not None,
            include_self,
            fill_empty,
            min(max(_PREFETCH_BYTES // row_bytes, 8), 32),  # rows of prefetch lookahead
            perm is None and _streams(src, target, inner),
        )
    elif base is not None:
        target.copy_(base)
    return result if out is None else _finish(out, target)


#: Outputs of at least this many bytes are written with non-temporal stores (``stream_row`` in
#: ``kernels/cpu/_memory.py``) by the kernels that read ``src`` in order (sorted index, ``ptr``), for rows of up
#: to ``STREAM_MAX_ROW_BYTES``. Below it a plain store leaves the result in cache for the op that reads it next;
#: above it the result outgrows the caches anyway, and the read of each line before it is overwritten is saved.
#: Measured in docs/DESIGN.md ("Streaming stores"): 3-13% at rows of 128-256 bytes, neutral at 64 and 512, 4%
#: slower at 1 KiB; on the unsorted path's gather 9% slower (the stores hold the line-fill buffers that its
#: cache misses wait for), so it never streams. Tests set it to 0.
STREAM_MIN_BYTES = 4 << 20
STREAM_MAX_ROW_BYTES = 512


def _streams(src: torch.Tensor, target: torch.Tensor, inner: int) -> bool:
    """Whether a kernel reading ``src`` in order writes ``target`` (C-contiguous, ``(outer, S, inner)``) by
    ``stream_row``: large enough, native type (that of ``src``: the scratch row is ``src``'s type), rows of whole
    64-byte blocks starting at 64-byte boundaries -- what the aligned non-temporal stores need (they fault
    otherwise) -- and not longer than ``STREAM_MAX_ROW_BYTES``."""
    row_bytes = inner * target.element_size()
    return (
        target.numel() * target.element_size() >= STREAM_MIN_BYTES
        and target.dtype == src.dtype
        and storage_code(target.dtype) == NATIVE
        and 0 < row_bytes <= STREAM_MAX_ROW_BYTES
        and row_bytes % STREAM_ALIGN == 0
        and target.data_ptr() % STREAM_ALIGN == 0
    )


#: Sorted index into a new tensor with single-element rows: the one-pass runs kernel (``kernels/cpu/runs.py``);
#: tests switch it off to compare with the segment kernel.
SORTED_RUNS = True


#: Rows of at least this many bytes take ``sorted_rows`` (below it and above one element, the segment kernel).
RUNS_MIN_ROW_BYTES = 64


def _runs_pay(src: torch.Tensor, dim: int, index: torch.Tensor, num_segments: int) -> bool:
    """The runs kernels where they were measured faster than offsets + the segment kernel (docs/DESIGN.md):
    rows of one element (1M edges x 1 feature, 2 threads: 1.1 ms against 3.0 ms; the last dim of a (16, 1M)
    tensor: 17 ms against 33 ms), and rows of a cache line or more (4-17% at 1M edges x 16-64 float32 features,
    the most at few rows a target) with at least one position per target (the chunks own the empty targets
    between their runs, so an index much shorter than the output would leave the zero-filling to few threads;
    the segment kernel balances rows and segments). Rows of 2-15 float32 lost 6-11% at 10 rows a target."""
    if not (SORTED_RUNS and index.numel() > 0 and num_segments > 0):
        return False
    inner = shape3(src, dim)[2]
    return inner == 1 or (inner * src.element_size() >= RUNS_MIN_ROW_BYTES and index.numel() >= num_segments)


def _sorted_runs(src, index, dim: int, red: Reduction, num_segments: int) -> Optional[torch.Tensor]:
    """``index_scatter_reduce`` of a sorted index into a new tensor in one pass; None if the index is not
    non-decreasing and in range (the new tensor is then dropped, half written)."""
    outer, n, inner = shape3(src, dim)
    m = index.numel()
    result = new_result(src, dim, num_segments)
    if outer * inner == 0:
        return result
    threads = use_torch_threads(outer * (m + num_segments) * inner)
    nchunks = 1 if threads == 1 else _CHUNKS_PER_THREAD * threads
    if outer > 1 or inner > 1:  # chunks small enough to balance hubs (and, with outer > 1, to keep the index in L2)
        nchunks = max(nchunks, -(-m // runs_kernels.CHUNK_POSITIONS))
    nchunks = min(m, nchunks)
    index_np = numpy_view(index.contiguous())
    if inner == 1:
        bad = sorted_runs.keyed(
            ("runs", red.code, src.dtype, index_np.dtype),
            numpy_view(src.contiguous()).reshape(outer, n), index_np, numpy_view(result).reshape(outer, num_segments),
            red.code, storage_code(src.dtype), nchunks,
        )
    else:
        bad = sorted_rows.keyed(
            ("rows", red.code, src.dtype, index_np.dtype),
            _view3(src, outer, n, inner), index_np, numpy_view(result).reshape(outer, num_segments, inner),
            red.code, storage_code(src.dtype), nchunks, _streams(src, result, inner),
        )
    return None if bad else result


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
    """The slice-owner kernel: each work item owns whole outer slices (see ``kernels/cpu/scatter.py``)."""
    index_np = numpy_view(index.contiguous())
    counts, bad = index_kernels.count_index(index_np, num_segments, _histogram_chunks(index.numel(), num_segments))
    if bad:
        raise explain_bad_index(index, num_segments, False)
    outer, n, inner = shape3(src, dim)
    result = new_result(src, dim, num_segments) if out is None else out
    target = result if out is None else _target(out, src, index)
    if outer * inner * num_segments > 0:
        use_torch_threads(outer * (n + num_segments) * inner)
        slice_scatter(
            _view3(src, outer, n, inner),
            index_np,
            counts,
            numpy_view(target).reshape(outer, num_segments, inner),
            red.code,
            storage_code(src.dtype),
            bool(include_self) and out is not None,
            out is None,
        )
    return result if out is None else _finish(out, target)


@launches
def segment_arg_reduce(
    src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int, red: Reduction,
    base: Optional[torch.Tensor], start: float, fill: int, none: int,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(values, arg)`` of the selecting reduction ``red`` over the validated segments ``ptr`` (rows ``perm[...]``
    when given), each a new tensor: see ``kernels/cpu/arg_reduce.py`` for ``base``, ``start``, ``fill``, ``none``."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    values = new_result(src, dim, num_segments)
    arg = empty(values.shape, torch.int64, "cpu")
    if values.numel() > 0:
        ptr_np = ptr.numpy()
        acc = np.dtype(str(accumulator_dtype(src.dtype)).replace("torch.", "")).type
        initial = values if base is None else base.contiguous()
        perm_np = _perm_np(perm)
        arg_reduce_kernel.keyed(
            ("arg", red.code, src.dtype, perm_np.dtype, perm is not None),
            _view3(src, outer, n, inner),
            perm_np,
            ptr_np,
            _bounds(ptr_np, outer, n, inner),
            numpy_view(initial).reshape(outer, num_segments, inner),
            acc(start),
            numpy_view(values).reshape(outer, num_segments, inner),
            arg.numpy().reshape(outer, num_segments, inner),
            red.code,
            storage_code(src.dtype),
            perm is not None,
            base is not None,
            fill,
            none,
        )
    return values, arg


@launches
def segment_logsumexp(
    src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int, flavour: int, eps: float
) -> torch.Tensor:
    """``top + log(sum exp(x - top) + eps)`` per validated segment (``kernels/cpu/logsumexp.py``): a new tensor."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    out = new_result(src, dim, num_segments)
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        acc = np.dtype(str(accumulator_dtype(src.dtype)).replace("torch.", "")).type
        start = -np.inf if flavour == 0 else torch.finfo(src.dtype).min
        perm_np = _perm_np(perm)
        logsumexp_kernel.keyed(
            ("logsumexp", src.dtype, perm_np.dtype, perm is not None, flavour),
            _view3(src, outer, n, inner), perm_np, ptr_np, _bounds(ptr_np, outer, n, inner), acc(start), acc(eps),
            numpy_view(out).reshape(outer, num_segments, inner), storage_code(src.dtype), perm is not None, flavour,
        )
    return out


@launches
def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, dim: int, red: Reduction) -> torch.Tensor:
    """Reduce ``src`` over the CSR segments ``ptr`` (checked by ``check_ptr``) along ``dim``: a new tensor."""
    return _reduce_segments(src, dim, ptr, None, red, None, include_self=False)


@launches
def gather_segment_reduce(src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction):
    """Segment ``s`` reduces the rows ``index[ptr[s]:ptr[s+1]]`` of ``src`` (both checked): a new tensor."""
    return _reduce_segments(src, dim, ptr, index, red, None, include_self=False)


@launches
def weighted_gather_segment_reduce(
    src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, weight: torch.Tensor, red: Reduction
) -> torch.Tensor:
    """Segment ``s`` reduces ``weight[k, h] * src[index[k], h, :]`` over its edges ``k``: src ``(N, H, C)``,
    weight ``(E, H)``, both checked, as are ``ptr`` and ``index``. A new ``(S, H, C)`` tensor."""
    n, heads, channels = src.shape
    out = empty((ptr.numel() - 1, heads, channels), src.dtype, "cpu")
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        weighted_gather_segment(
            numpy_view(src.contiguous()), numpy_view(weight.contiguous()), numpy_view(index.contiguous()), ptr_np,
            _bounds(ptr_np, 1, index.numel(), heads * channels), numpy_view(out), red.code, storage_code(src.dtype),
        )
    return out


@launches
def sddmm(ptr: torch.Tensor, index: torch.Tensor, a: torch.Tensor, b: torch.Tensor, op: str) -> torch.Tensor:
    """Per edge ``k`` of segment ``s``: ``a[index[k]] op b[s]`` over ``(H, C)`` rows (``(E, H, C)``), or the dot
    product over ``C`` (``(E, H, 1)``). Everything checked."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = empty((edges, heads, 1 if op == "dot" else channels), a.dtype, "cpu")
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        sddmm_kernel(
            numpy_view(a.contiguous()), numpy_view(b.contiguous()), numpy_view(index.contiguous()), ptr_np,
            _bounds(ptr_np, 1, edges, heads * channels), numpy_view(out), SDDMM_OPS[op], storage_code(a.dtype),
        )
    return out


@launches
def gatv2_logits(ptr, index, a, b, att, slope: float) -> torch.Tensor:
    """GATv2's logits per edge ``k`` of segment ``s``: ``sum_c att[h, c] * leaky_relu(a[index[k], h, c] + b[s, h,
    c])``, ``(E, H)``; a, b ``(N, H, C)``, att ``(H, C)``. Everything checked."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = empty((edges, heads), a.dtype, "cpu")
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        gatv2_logits_kernel(
            numpy_view(a.contiguous()), numpy_view(b.contiguous()), numpy_view(att.contiguous()),
            numpy_view(index.contiguous()), ptr_np, _bounds(ptr_np, 1, edges, heads * channels), float(slope),
            numpy_view(out), storage_code(a.dtype),
        )
    return out


@launches
def gatv2_grad(seg, other, att, ptr, index, grad, slope: float, want_att: bool):
    """``(grad_seg (S, H, C), grad_att (H, C))`` of GATv2's logits on segments ``ptr`` of the ``seg`` side, each
    entry reading ``other[index[k]]`` (``kernels/cpu/gatv2.py``); grad_att is zeros unless ``want_att``."""
    _, heads, channels = seg.shape
    out = empty(seg.shape, seg.dtype, "cpu")
    acc_dtype = torch.float32 if storage_code(seg.dtype) != NATIVE else seg.dtype
    ptr_np = ptr.to(torch.int64).contiguous().numpy()
    bounds = _bounds(ptr_np, 1, index.numel(), heads * channels)
    parts = torch.zeros((max(len(bounds) - 1, 0) if want_att else 1, heads, channels), dtype=acc_dtype)
    if out.numel() > 0:
        gatv2_grad_kernel(
            numpy_view(seg.contiguous()), numpy_view(other.contiguous()), numpy_view(att.contiguous()),
            numpy_view(index.contiguous()), ptr_np, bounds, numpy_view(grad.contiguous()), float(slope),
            numpy_view(out), parts.numpy(), bool(want_att), storage_code(seg.dtype),
        )
    return out, parts.sum(0).to(seg.dtype)


@launches
def tie_backward(grad, src, index, result, base, dim: int, sorted: bool, count_base: bool):
    """amax/amin backward on the forward's segments: ``(grad_src, ties)``, ``ties`` being the number of members
    equal to each result (``base``'s value counted when ``count_base``). ``index`` was validated by the forward."""
    num_segments = result.size(dim)
    outer, n, inner = shape3(src, dim)
    grad_src = torch.empty_like(src, memory_format=torch.contiguous_format)
    grad_src.narrow(dim, index.numel(), n - index.numel()).zero_()  # slices that take no part
    ties = torch.empty_like(result, memory_format=torch.contiguous_format)
    if outer * inner * num_segments == 0 or index.numel() == 0:
        return grad_src.zero_(), ties.zero_()
    ptr, perm = segments(index, num_segments, sorted)
    ptr_np = ptr.numpy()
    segment_tie_backward(
        _view3(src, outer, n, inner),
        _perm_np(perm),
        ptr_np,
        _bounds(ptr_np, outer, n, inner),
        _view3(result, outer, num_segments, inner),
        _view3(grad, outer, num_segments, inner),
        _view3(result if base is None else base, outer, num_segments, inner),
        numpy_view(grad_src).reshape(outer, n, inner),
        numpy_view(ties).reshape(outer, num_segments, inner),
        storage_code(src.dtype),
        perm is not None,
        base is not None and bool(count_base),
    )
    return grad_src, ties


@launches
def csr_transpose(ptr: torch.Tensor, index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(ptr_t, index_t)``: the entries grouped by the row they read (a stable counting sort of ``index``, which
    validates it against ``num_rows``), each naming its segment. ``ptr`` was checked."""
    segment_of = segment_of_entries(ptr, index.numel())
    ptr_t, perm = segments(index, num_rows, sorted=False, size_name="num_rows")
    return ptr_t, segment_of[perm.long()]


@launches
def element_scatter(
    src: torch.Tensor, index: torch.Tensor, base: torch.Tensor, dim: Optional[int], reduce: str, include_self: bool
) -> torch.Tensor:
    """The element plan (``ops/element_scatter.py``): a new tensor, ``base`` with ``src[u]`` reduced into the
    target the caller's ``index`` names for ``u`` -- along ``dim``, or by coordinate vectors (``dim=None``).
    ``reduce``: a name of the table or ``"assign"`` (the last write wins). IndexError for a bad entry, raised
    after the kernel counted it (the kernel writes only the new tensor, never ``base``).

    Along a dim with at least two carried lanes (``outer * inner``) work items own lanes and walk the index in
    order; otherwise (one lane, or coordinates) each thread owns a range of targets and streams the whole index
    (``kernels/cpu/element.py``)."""
    # int64 indices only: each index dtype doubles the element kernels' compiled variants, whose cold compile
    # dominated the test suite; an int32 general index is rare, and its copy costs one pass
    index = index.long()
    assign = reduce == "assign"
    code = 0 if assign else BY_NAME[reduce].code
    storage = element_kernels.NATIVE if assign else storage_code(src.dtype)  # assign moves bits: no conversion
    include_self = include_self and not assign
    out = empty(base.shape, base.dtype, "cpu")
    if dim is not None and base.numel() // max(base.size(dim), 1) > 1:
        bad = _along_scatter(src, index, base, out, dim, code, storage, assign, include_self)
    else:
        coords, sizes, strides = _coordinates(index, base, dim)
        bad = element_kernels.coords_scatter(
            numpy_view(coords), sizes, strides, _flat(src, False), _flat(base), numpy_view(out).reshape(-1),
            code, storage, assign, include_self, use_torch_threads(coords.size(0)),
        )
    if bad:
        raise _explain_element(index, base.shape, dim)
    return out


@launches
def element_gather(data: torch.Tensor, index: torch.Tensor, dim: Optional[int]) -> torch.Tensor:
    """``out[u] = data[t(u)]`` for the map of ``element_scatter``: a new tensor of ``index``'s shape (``dim``
    given) or ``index.shape[:-1]`` (coordinates). Parallel over positions (an int64 index along the last dim:
    torch's own gather); IndexError for a bad entry."""
    index = index.long()  # int64 only, as element_scatter
    if dim is not None:
        outer, S, inner = shape3(data, dim)
        n = index.size(dim)
        if S == 0 and index.numel():  # nothing to read: every entry is bad (the kernels read row 0 for one)
            raise _explain_element(index, data.shape, dim)
        if inner == 1 and index.dtype == torch.int64:
            # along the last dim torch's gather is the faster (64 x 200k from 64 x 50k float32: 15 ms against 20 ms
            # for ``row_gather``, both into an existing output); it takes the index as it is, and checks it
            try:
                return torch.gather(data, dim, index)
            except RuntimeError:
                if not bool(((index < 0) | (index >= S)).any()):
                    raise
                raise _explain_element(index, data.shape, dim) from None
        out = empty(index.shape, data.dtype, "cpu")
        threads = use_torch_threads(outer * n * inner)
        nchunks = max(1, min(n, -(-_GATHER_ITEMS_PER_THREAD * threads // max(outer, 1))))
        data3, index3 = _strided3(data, outer, S, inner), _strided3(index, outer, n, inner)
        if inner == 1:  # along the last dim: rows
            rows_out = numpy_view(out).reshape(outer, n)
            bad = element_kernels.row_gather(data3[:, :, 0], index3[:, :, 0], rows_out, nchunks)
        else:
            bad = element_kernels.along_gather(data3, index3, numpy_view(out).reshape(outer, n, inner), nchunks)
    else:
        coords, sizes, strides = _coordinates(index, data, None)
        out = empty(index.shape[:-1], data.dtype, "cpu")
        bad = element_kernels.coords_gather(
            _flat(data), numpy_view(coords), sizes, strides, numpy_view(out).reshape(-1),
            use_torch_threads(coords.size(0)),
        )
    if bad:
        raise _explain_element(index, data.shape, dim)
    return out


# Work items of the along-dim kernels: a scatter item owns whole blocks of this many columns when a row is wider
# (so that no cache line of the output is written by two threads); a gather makes this many items per thread.
_LANE_BLOCK = 16
_GATHER_ITEMS_PER_THREAD = 4
# A scatter item whose accumulator block is larger than _RANGE_BYTES buffers its hits by target range (ranges of
# at most _RANGE_BYTES, up to _MAX_RANGES of them, _BUFFER_BYTES of buffers in all) and applies a range's buffer
# when it is full, the range then being in cache. Measured at 200k x 64 float32 into 50k x 64 (2 threads, CPU
# time): direct 150-200 ms, buffered 110-130 ms with ranges of 512 KB; see DESIGN.md.
_RANGE_BYTES = 512 << 10
_MAX_RANGES = 32
_BUFFER_BYTES = 4 << 20


def _along_scatter(src, index, base, out, dim, code, storage, assign, include_self) -> int:
    outer, S, inner = shape3(base, dim)
    n = index.size(dim)
    threads = use_torch_threads(outer * n * inner)
    nblocks = min(inner, -(-threads // outer))
    block = -(-inner // nblocks)
    if block > _LANE_BLOCK:
        block = -(-block // _LANE_BLOCK) * _LANE_BLOCK
        nblocks = -(-inner // block)
    out_np = numpy_view(out).reshape(outer, S, inner)
    acc = out_np if storage == element_kernels.NATIVE else np.empty((outer, S, inner), np.float32)
    mean = code == BY_NAME["mean"].code and not assign
    if mean:
        track, seen = element_kernels.TRACK_COUNT, np.empty((outer, S, inner), np.int32 if n < 2**31 else np.int64)
    elif assign or include_self:
        track, seen = element_kernels.TRACK_NONE, np.empty((outer, 0, 0), np.uint8)
    else:
        track, seen = element_kernels.TRACK_FLAG, np.empty((outer, S, inner), np.uint8)
    entry = acc.itemsize + seen.itemsize * (track != element_kernels.TRACK_NONE)
    rows = max(1, _RANGE_BYTES // (block * entry))
    shift = rows.bit_length() - 1  # ranges of 2**shift target rows
    ranges = -(-S // (1 << shift))
    capacity = 1
    if 1 < ranges <= _MAX_RANGES and not assign:  # assign writes without reading: direct stores are faster
        capacity = max(1, min(_BUFFER_BYTES // (ranges * (4 + acc.itemsize)), n * block))
    else:
        shift = 62  # one range: direct updates (the block fits in cache, or the buffers would not pay)
    return element_kernels.along_scatter(
        _strided3(index, outer, n, inner), _strided3(src, outer, n, inner), _strided3(base, outer, S, inner),
        out_np, acc, seen, code, storage, assign, include_self, track, nblocks, block, shift, capacity,
    )


def _strided3(t: torch.Tensor, outer: int, rows: int, inner: int) -> np.ndarray:
    """``t`` as a 3-D NumPy array, strided as it is when its dims merge that way (else a copy)."""
    return numpy_view(t.reshape(outer, rows, inner))


def _flat(t: torch.Tensor, contiguous: bool = True) -> np.ndarray:
    """``t`` as a 1-D NumPy array in row-major order: C-contiguous (a copy if need be), or strided if allowed."""
    return numpy_view(t.contiguous().view(-1) if contiguous else t.reshape(-1))


def _coordinates(index: torch.Tensor, data: torch.Tensor, dim: Optional[int]):
    """``(coords, sizes, strides)`` of the coordinate kernels: ``index`` as ``(n, k)`` rows of coordinates, the
    sizes of the dims they index and those dims' strides in the flat (C-contiguous) data. An index along ``dim``
    with a single lane is a coordinate into the flat data."""
    if dim is not None:
        return index.reshape(-1, 1), np.array([data.numel()], np.int64), np.ones(1, np.int64)
    strides = np.cumprod([1] + list(data.shape[:0:-1]), dtype=np.int64)[::-1].copy()
    return index.reshape(-1, index.size(-1)), np.array(data.shape, np.int64), strides


def _explain_element(index: torch.Tensor, shape, dim: Optional[int]) -> IndexError:
    """The IndexError for an element-plan index a kernel rejected: the first bad entry, at its position in
    ``index`` (the failure path only)."""
    if dim is not None:
        bad, sizes = (index < 0) | (index >= shape[dim]), None
    else:
        sizes = torch.tensor(list(shape), dtype=torch.int64)
        bad = (index < 0) | (index >= sizes)
    where = tuple(int(i) for i in torch.nonzero(bad)[0])
    d = dim if dim is not None else where[-1]
    return IndexError(f"index{list(where)} = {int(index[where])} is out of bounds for dimension {d} with size "
                      f"{shape[d]}")


@launches
def segment_softmax(src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int) -> torch.Tensor:
    """Softmax of ``src`` along ``dim`` within each segment (rows ``perm[ptr[s]:ptr[s+1]]``, or positions): a
    new tensor of ``src``'s shape."""
    outer, n, inner = shape3(src, dim)
    out = empty(src.shape, src.dtype, "cpu")
    if out.numel() > 0:
        ptr_np = ptr.numpy()
        softmax_kernel(
            _view3(src, outer, n, inner), _perm_np(perm), ptr_np, _bounds(ptr_np, outer, n, inner),
            numpy_view(out).reshape(outer, n, inner), storage_code(src.dtype), perm is not None,
        )
    return out


@launches
def segment_softmax_backward(
    out: torch.Tensor, grad: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int
) -> torch.Tensor:
    """``out * (grad - sum over the segment of grad * out)``: the gradient of ``segment_softmax``."""
    outer, n, inner = shape3(out, dim)
    grad_src = empty(out.shape, out.dtype, "cpu")
    if grad_src.numel() > 0:
        ptr_np = ptr.numpy()
        softmax_backward_kernel(
            _view3(out, outer, n, inner), _view3(grad, outer, n, inner), _perm_np(perm), ptr_np,
            _bounds(ptr_np, outer, n, inner), numpy_view(grad_src).reshape(outer, n, inner),
            storage_code(out.dtype), perm is not None,
        )
    return grad_src
