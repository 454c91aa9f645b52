"""Index -> segments on the CPU, validated in the pass that builds them: the output size, value checks, CSR offsets
of a sorted index, and the stable permutation (a counting sort) of an unsorted one.

The op layer has checked every argument except the *values* of indices and offsets; they are checked here, before
anything is written, in the pass that needs them anyway: the kernels count the entries they reject, and only on a
failure is the culprit looked for (``explain_bad_index``).
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np
import torch

from ...kernels.cpu import launch
from ...kernels.cpu import segments as kernels
from .._common import explain_bad_index
from . import routes
from ._arguments import index64

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["check_index", "check_ptr", "index_to_ptr", "output_size", "segments"]

# The value checks below are serial Numba passes, not torch ops: a parallel torch op just before a kernel launch
# leaves torch's OpenMP workers spinning on the cores the launch wants (docs/decisions/cpu-parallelism.md).


def output_size(index: torch.Tensor, sorted: Optional[bool]) -> Tuple[int, bool]:
    """``(index.max() + 1, validated)`` for a caller without ``dim_size`` (a non-empty index). A sorted index
    ends with its maximum (no scan); the values are validated later, in the segments pass."""
    last = int(index[-1]) if sorted else int(kernels.index_extremes(index64(index))[1])
    return max(last + 1, 0), False


def check_index(index: torch.Tensor, size: int, name: str = "index", size_name: str = "size") -> None:
    """IndexError unless every entry of ``index`` is in ``[0, size)`` (for an index no kernel pass checks)."""
    if index.numel() == 0:
        return
    low, high = kernels.index_extremes(index64(index.reshape(-1)))
    if low < 0 or high >= size:
        raise explain_bad_index(index, size, False, name, size_name)


def index_fits(index_np: np.ndarray, num_segments: int, sorted: bool) -> bool:
    """Whether every entry of the int64 ``index_np`` is in ``[0, num_segments)`` and, when ``sorted``, none is
    smaller than its predecessor: the kernels' check, for a call whose output is empty (``num_segments`` or
    another dim 0), where no kernel runs to make it. Those degenerate paths only: the others check in the pass
    that builds their segments."""
    if index_np.shape[0] == 0:
        return True
    low, high = kernels.index_extremes(index_np)
    if low < 0 or high >= num_segments:
        return False
    return not sorted or kernels.first_decrease(index_np) < 0


def check_ptr(ptr: torch.Tensor, length: int, what: str) -> torch.Tensor:
    """Validated CSR offsets (int64, contiguous) over ``length`` positions (``what`` names that length)."""
    if ptr.numel() == 0:
        raise ValueError("ptr must have at least one entry (ptr[0] == 0)")
    ptr = ptr.to(torch.int64).contiguous()
    first, last = int(ptr[0]), int(ptr[-1])
    if first != 0:
        raise ValueError(f"ptr must start at 0, got ptr[0]={first}")
    if last != length:
        raise ValueError(f"ptr must end at {what}={length}, got ptr[-1]={last}")
    i = int(kernels.first_decrease(ptr.numpy()))
    if i >= 0:
        raise ValueError(f"ptr must be non-decreasing: ptr[{i}]={int(ptr[i])} < ptr[{i - 1}]={int(ptr[i - 1])}")
    return ptr


def _position_chunks(m: int, threads: int) -> Tuple[int, int]:
    """``(chunks, step)``: work items of ``step`` positions over an index of length ``m`` (one per thread)."""
    chunks = max(1, min(threads, m))
    return chunks, -(-m // chunks) if m else 1


def sorted_ptr(index: torch.Tensor, num_segments: int) -> Optional[torch.Tensor]:
    """CSR offsets of ``index`` if it is non-decreasing and in ``[0, num_segments)``, else None."""
    index_np = index64(index)
    m = index_np.shape[0]
    threads = routes.threads_for(m, torch.get_num_threads(), routes.tuning())
    chunks, step = _position_chunks(m, threads)
    ptr = np.full(num_segments + 1, -1, np.int64)
    if launch(kernels.sorted_index_to_ptr, None, chunks, threads, index_np, ptr, step):
        return None
    kernels.fill_empty_starts(ptr, m)
    return torch.from_numpy(ptr)


def index_to_ptr(
    index: torch.Tensor,
    num_segments: int,
    name: str = "index",
    size_name: str = "dim_size",
    unsorted_hint: str = "pass sorted=False for an unsorted index",
) -> torch.Tensor:
    """CSR offsets of a non-decreasing index, validated in the same single pass (raises on any bad value)."""
    ptr = sorted_ptr(index, num_segments)
    if ptr is None:
        raise explain_bad_index(index, num_segments, True, name, size_name, unsorted_hint)
    return ptr


def head_sorted(index: torch.Tensor) -> bool:
    """Whether the first entries of ``index`` are non-decreasing: a shuffled index is told apart by them before
    a full pass is spent finding out."""
    head = index64(index[: routes.tuning().sorted_probe])
    # (one kernel call: the same test in torch ops took ~20 us, and was a sixth of a 10,000 x 64 drop-in sum)
    return int(kernels.first_decrease(head)) < 0


def histograms(index_np: np.ndarray, num_segments: int, check_order: bool = False):
    """``(counts, bad)``: per chunk of positions, how often each target occurs (``(chunks, S)`` int64), and the
    number of bad entries. One histogram row of ``num_segments`` per chunk, so more chunks than one only while
    that memory stays proportional to the index."""
    m = index_np.shape[0]
    threads = routes.threads_for(m, torch.get_num_threads(), routes.tuning())
    if threads > 1 and threads * num_segments > 4 * m + (1 << 16):
        threads = 1
    chunks, step = _position_chunks(m, threads)
    counts = np.empty((chunks, num_segments), np.int64)
    bad = launch(kernels.histograms, None, chunks, threads, index_np, counts, step, check_order)
    return counts, bad, threads, step


def count_index(index: torch.Tensor, num_segments: int, name: str = "index", size_name: str = "dim_size"):
    """``(index_np, counts)``: the index as the kernels take it and how often each target occurs (int64),
    validated in the counting pass."""
    index_np = index64(index)
    counts, bad, _, _ = histograms(index_np, num_segments)
    if bad:
        raise explain_bad_index(index, num_segments, False, name, size_name)
    return index_np, counts.sum(axis=0) if counts.shape[0] > 1 else counts.reshape(-1)


def segments(
    index: torch.Tensor, num_segments: int, sorted: bool, name: str = "index", size_name: str = "dim_size"
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """``(ptr, perm)`` of an index, validated in the pass that builds them: CSR offsets, and for an unsorted
    index the stable permutation grouping positions by target (a parallel counting sort), else None."""
    if sorted:
        return index_to_ptr(index, num_segments, name, size_name), None
    index_np = index64(index)
    counts, bad, threads, step = histograms(index_np, num_segments)
    if bad:
        raise explain_bad_index(index, num_segments, False, name, size_name)
    ptr = np.empty(num_segments + 1, np.int64)
    kernels.prefix_offsets(counts, ptr)
    perm = np.empty(index_np.shape[0], np.int64)
    # (the chunks the histograms counted, claimed by one thread while the permutation fits in L2)
    place = 1 if perm.nbytes <= routes.tuning().positions_serial_max_bytes else threads
    launch(kernels.stable_positions, None, counts.shape[0], place, index_np, counts, perm, step)
    return torch.from_numpy(ptr), torch.from_numpy(perm)
