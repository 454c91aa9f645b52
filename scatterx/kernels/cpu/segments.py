"""Numba CPU kernels that turn a 1-D index into segments, validating it in the same pass.

- ``sorted_index_to_ptr``: a non-decreasing index -> CSR offsets ``ptr`` (``ptr[s]`` = first position with index >= s),
  finished by ``fill_empty_starts``;
- ``histograms``: per chunk of positions, how often each target occurs; ``prefix_offsets`` and
  ``stable_positions`` turn that into a *stable* permutation ``perm`` grouping positions by target (a counting
  sort), or the counts are simply summed (``count_index`` in the backend);
- ``balanced_bounds``: chunks of segments of about equal work, the work items of the segment kernels;
- ``index_bound``: ``max(index) + 1``, the output size of a call without one; ``index_extremes`` and
  ``first_decrease``: the value checks of indices and offsets no other pass makes.

The kernels that read an index return the number of bad entries (out of ``[0, num_segments)``; for the sorted
ones, decreases) and never write outside their own buffers whatever the index holds; on a failure the backend
finds the culprit itself and raises a precise error. Indices are int64 (the backend converts others once).
Work items are chunks of ``step`` positions (see ``kernels/cpu/__init__.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._codegen import Kernel, claim


@njit(cache=True, nogil=True, error_model="numpy")
def sorted_index_to_ptr_kernel(counter, index, ptr, step):
    """Writes ``ptr[v] = i`` for the first position ``i`` of each value ``v`` of the non-decreasing ``index``;
    ``ptr`` holds -1 for values that never occur (the caller filled it so). Each chunk walks its positions
    backwards, so the first position of each value wins with no branch on segment boundaries; values that continue
    from the previous chunk are left to it. Returns the number of bad entries."""
    m = index.shape[0]
    num_segments = ptr.shape[0] - 1
    nbad = 0
    while True:
        c = claim(counter)
        if c < 0:
            break
        lo = c * step
        hi = min(m, lo + step)
        owned_before = index[lo - 1] if 0 < lo < m else np.int64(-1)
        following = index[hi] if hi < m else np.int64(num_segments - 1)
        for i in range(hi - 1, lo - 1, -1):
            v = index[i]
            ok = (v >= 0) & (v < num_segments) & (v <= following)
            nbad += not ok
            if ok and v != owned_before:
                ptr[v] = i
            following = v
    return nbad


@njit(cache=True, nogil=True, error_model="numpy")
def fill_empty_starts_kernel(ptr, m):
    """After ``sorted_index_to_ptr`` found no bad entry: ``ptr[num_segments] = m``, and each value that never
    occurs starts where the next one does."""
    num_segments = ptr.shape[0] - 1
    ptr[num_segments] = m
    for k in range(num_segments - 1, -1, -1):
        if ptr[k] < 0:
            ptr[k] = ptr[k + 1]


@njit(cache=True, nogil=True, error_model="numpy")
def histograms_kernel(counter, index, counts, step, check_order):
    """``counts[c, s]``: how often chunk ``c`` of the positions holds ``s``. Returns the number of entries out of
    ``[0, num_segments)`` (not counted), plus, with ``check_order``, the number of decreases (the first entry of a
    chunk is compared with the last of the previous one)."""
    m = index.shape[0]
    num_segments = counts.shape[1]
    nbad = 0
    while True:
        c = claim(counter)
        if c < 0:
            break
        row = counts[c]
        for s in range(num_segments):
            row[s] = 0
        lo = c * step
        hi = min(m, lo + step)
        for i in range(lo, hi):
            v = index[i]
            if v < 0 or v >= num_segments:
                nbad += 1
            else:
                row[v] += 1
        if check_order:
            for i in range(max(lo, 1), hi):
                nbad += index[i] < index[i - 1]
    return nbad


@njit(cache=True, nogil=True, error_model="numpy")
def prefix_offsets_kernel(counts, ptr):
    """The exclusive prefix over (segment, chunk), in place: ``counts[c, s]`` becomes where chunk ``c`` writes its
    first position of ``s``; ``ptr`` gets the CSR offsets."""
    nchunks, num_segments = counts.shape
    running = 0
    for s in range(num_segments):
        ptr[s] = running
        for c in range(nchunks):
            n = counts[c, s]
            counts[c, s] = running
            running += n
    ptr[num_segments] = running


@njit(cache=True, nogil=True, error_model="numpy")
def stable_positions_kernel(counter, index, offsets, perm, step):
    """``perm[offsets[c, v]++] = i`` for the positions ``i`` of chunk ``c`` in order: the stable permutation.
    The index was checked by ``histograms``."""
    m = index.shape[0]
    while True:
        c = claim(counter)
        if c < 0:
            break
        row = offsets[c]
        for i in range(c * step, min(m, (c + 1) * step)):
            v = index[i]
            perm[row[v]] = i
            row[v] += 1
    return 0


@njit(cache=True, nogil=True, error_model="numpy")
def balanced_bounds_kernel(ptr, nchunks):
    """Split segments ``0..S`` into ``nchunks`` contiguous chunks of about equal ``rows + segments``: int64
    ``(nchunks + 1,)`` bounds, a binary search over ``ptr`` per chunk (in Numba: in Python it was a large share of
    a mid-sized call; see docs/decisions/index-to-segments.md)."""
    num_segments = ptr.shape[0] - 1
    total = np.int64(ptr[num_segments]) + num_segments
    bounds = np.empty(nchunks + 1, np.int64)
    bounds[0] = 0
    for c in range(1, nchunks):
        target = total * c // nchunks
        lo = bounds[c - 1]
        hi = np.int64(num_segments)
        while lo < hi:  # first s with ptr[s] + s >= target
            mid = (lo + hi) // 2
            if ptr[mid] + mid < target:
                lo = mid + 1
            else:
                hi = mid
        bounds[c] = lo
    bounds[nchunks] = num_segments
    return bounds


@njit(cache=True, nogil=True, error_model="numpy")
def index_bound_kernel(index):
    """``max(index) + 1`` (0 for an empty index), or -1 if some entry is negative: the output size a call
    without ``dim_size`` gets."""
    top = np.int64(-1)
    for i in range(index.shape[0]):
        v = index[i]
        if v < 0:
            return np.int64(-1)
        if v > top:
            top = v
    return top + 1


@njit(cache=True, nogil=True, error_model="numpy")
def index_extremes_kernel(index):
    """``(min, max)`` of a non-empty index (one serial pass: torch's parallel reduction would leave its OpenMP
    workers spinning on the cores the kernel launched next wants; ``docs/decisions/cpu-parallelism.md``)."""
    low = index[0]
    high = index[0]
    for i in range(1, index.shape[0]):
        v = index[i]
        low = min(low, v)
        high = max(high, v)
    return low, high


@njit(cache=True, nogil=True, error_model="numpy")
def first_decrease_kernel(values):
    """The first position ``i`` with ``values[i] < values[i - 1]``, or -1."""
    for i in range(1, values.shape[0]):
        if values[i] < values[i - 1]:
            return i
    return -1


sorted_index_to_ptr = Kernel(sorted_index_to_ptr_kernel)
fill_empty_starts = Kernel(fill_empty_starts_kernel)
histograms = Kernel(histograms_kernel)
prefix_offsets = Kernel(prefix_offsets_kernel)
stable_positions = Kernel(stable_positions_kernel)
balanced_bounds = Kernel(balanced_bounds_kernel)
index_bound = Kernel(index_bound_kernel)
index_extremes = Kernel(index_extremes_kernel)
first_decrease = Kernel(first_decrease_kernel)
