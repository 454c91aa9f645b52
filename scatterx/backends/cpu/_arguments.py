"""What the CPU backend's modules share on the way to a kernel: tensors as the kernels' NumPy views, the work items
of the segment kernels, the buffer a kernel writes for ``out``, and whether it may stream its stores."""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import torch

from ...kernels.cpu import NATIVE, numpy_view, storage_code
from ...kernels.cpu._memory import STREAM_ALIGN
from ...kernels.cpu.segments import balanced_bounds
from .._common import overlaps
from .._outputs import empty
from . import routes

#: ``perm`` of a call without one (the segment kernels read it only when gathering)
NO_PERM = np.empty(0, dtype=np.int64)


def index64(index: torch.Tensor) -> np.ndarray:
    """``index`` as the kernels take every index: a C-contiguous int64 NumPy array (one copy for another dtype or
    layout: each index dtype would double the variants compiled; docs/decisions/compile-budget.md)."""
    if index.dtype != torch.int64:
        index = index.to(torch.int64)
    return index.contiguous().numpy()


def dense_order(t: torch.Tensor) -> Optional[Tuple[int, ...]]:
    """The order of ``t``'s dims, outermost first, in which its memory is C-contiguous -- ``t`` a transposed or
    otherwise permuted view of a contiguous tensor -- when ``t`` is not contiguous itself; None when it is, or when
    its memory has gaps or overlaps (a slice, an expanded view: then only a copy makes it contiguous).

    A kernel reads such a ``src`` as it lies, reducing along the permuted dim, instead of reading it through
    ``contiguous()``: torch's transposing copy of a 1,000,000 x 16 float32 took 33 ms, three times the whole
    reduction (docs/decisions/permuted-inputs.md)."""
    if t.dim() < 2 or t.is_contiguous():
        return None
    strides = t.stride()
    order = tuple(sorted(range(t.dim()), key=lambda d: -strides[d]))  # (stable: ties are dims of size 1)
    return order if t.permute(order).is_contiguous() else None


def unpermuted(t: torch.Tensor, order: Tuple[int, ...]) -> torch.Tensor:
    """A new C-contiguous tensor holding ``t.permute(inverse of order)``: the result of a kernel that read a
    ``src`` permuted by ``order`` (``dense_order``), in the caller's order of dims. Copied by NumPy: torch's
    transposing copy took twice as long or more (100,000 x 16 float32: 1.26 against 0.53 ms)."""
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    result = empty(list(t.permute(inverse).shape), t.dtype, "cpu")
    np.copyto(numpy_view(result), numpy_view(t).transpose(inverse))
    return result


def view3(t: torch.Tensor, outer: int, rows: int, inner: int) -> np.ndarray:
    """``t`` as a C-contiguous ``(outer, rows, inner)`` NumPy array (a copy if ``t`` is not contiguous)."""
    return numpy_view(t.contiguous()).reshape(outer, rows, inner)


def perm_np(perm: Optional[torch.Tensor]) -> np.ndarray:
    return NO_PERM if perm is None else index64(perm)


def chunks(ptr_np: np.ndarray, outer: int, n: int, inner: int, t: routes.Tuning, minimum: Optional[int] = None):
    """``(bounds, threads)`` of a segment kernel over ``outer`` slices: chunks of segments of about equal work
    (``outer * len(bounds - 1)`` work items in all), and the threads to run them on."""
    num_segments = len(ptr_np) - 1
    threads = routes.threads_for(outer * (n + num_segments) * inner, torch.get_num_threads(), t, minimum)
    nchunks = 1 if threads == 1 else max(1, min(num_segments, -(-t.chunks_per_thread * threads // outer)))
    return balanced_bounds(ptr_np, nchunks), threads


def target(out: torch.Tensor, *inputs: Optional[torch.Tensor]) -> torch.Tensor:
    """The C-contiguous buffer a kernel writes for ``out``: ``out`` itself, or a copy when ``out`` is not
    contiguous or its memory overlaps an input (the kernel must read the inputs as they were; an index that
    changes under the kernel would send writes anywhere). ``finish`` copies it back."""
    if out.is_contiguous() and not any(overlaps(out, t) for t in inputs):
        return out
    return out.clone(memory_format=torch.contiguous_format)


def finish(out: torch.Tensor, written: torch.Tensor) -> torch.Tensor:
    """``out`` holding what the kernel wrote into ``written`` (``target``'s buffer). A kernel's write into ``out``
    itself goes through NumPy, which torch does not see: its version counter is bumped here, as an in-place torch op
    bumps it, so that autograd refuses a backward that saved ``out``'s old values rather than using the new ones."""
    if written is not out:
        out.copy_(written)
    else:
        torch.autograd.graph.increment_version(out)
    return out


def streams(src: torch.Tensor, written: torch.Tensor, inner: int, t: routes.Tuning) -> bool:
    """Whether a kernel reading ``src`` in order writes ``written`` (C-contiguous, ``(outer, S, inner)``) by
    ``stream_row``: large enough, native type (that of ``src``: the scratch row is ``src``'s type), rows of whole
    64-byte blocks starting at 64-byte boundaries -- what the aligned non-temporal stores need (they fault
    otherwise) -- and not longer than ``stream_max_row_bytes``."""
    row_bytes = inner * written.element_size()
    return (
        written.numel() * written.element_size() >= t.stream_min_bytes
        and written.dtype == src.dtype
        and storage_code(written.dtype) == NATIVE
        and 0 < row_bytes <= t.stream_max_row_bytes
        and row_bytes % STREAM_ALIGN == 0
        and written.data_ptr() % STREAM_ALIGN == 0
    )
