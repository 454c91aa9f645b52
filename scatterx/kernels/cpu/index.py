"""Numba CPU kernels that turn a 1-D index into CSR segments, validating it in the same single pass.

``sorted_index_to_ptr``: a non-decreasing index -> offsets ``ptr`` (``ptr[s]`` = first position with index >= s).
``counting_sort``: any index -> ``ptr`` and a *stable* permutation ``perm`` of positions grouped by target.

Both also return the number of bad entries: values out of ``[0, num_segments)`` or, for the sorted kernel,
decreases. They never write outside their own buffers whatever the index holds; on a failure the op layer finds
the culprit itself and raises a precise error. Work is split into ``nchunks`` contiguous position ranges.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._codegen import PRANGE_ONLY


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def sorted_index_to_ptr(index, num_segments, nchunks):
    """Returns (ptr, number of bad entries). Each chunk walks its positions backwards writing ``ptr[v] = i``, so
    the first position of each value wins with no branch on segment boundaries; values that continue from the
    previous chunk are left to it. Values that never occur are filled afterwards from the right."""
    m = index.shape[0]
    ptr = np.empty(num_segments + 1, np.int64)
    for k in range(num_segments + 1):
        ptr[k] = -1
    bad = np.empty(nchunks, np.int64)
    step = (m + nchunks - 1) // nchunks
    for c in prange(nchunks):
        lo = c * step
        hi = min(m, lo + step)
        owned_before = np.int64(index[lo - 1]) if 0 < lo < m else np.int64(-1)
        following = np.int64(index[hi]) if hi < m else np.int64(num_segments - 1)
        nbad = 0
        for i in range(hi - 1, lo - 1, -1):
            v = np.int64(index[i])
            ok = (v >= 0) & (v < num_segments) & (v <= following)
            nbad += not ok
            if ok and v != owned_before:
                ptr[v] = i
            following = v
        bad[c] = nbad
    total_bad = 0
    for c in range(nchunks):
        total_bad += bad[c]
    if total_bad == 0:
        ptr[num_segments] = m
        for k in range(num_segments - 1, -1, -1):
            if ptr[k] < 0:
                ptr[k] = ptr[k + 1]
    return ptr, total_bad


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def chunk_histograms(index, num_segments, nchunks, like):
    """counts[c, s]: how often chunk ``c`` of the positions holds ``s`` (dtype of ``like``), and the number of
    entries out of ``[0, num_segments)`` (not counted)."""
    m = index.shape[0]
    step = (m + nchunks - 1) // nchunks
    counts = np.empty((nchunks, num_segments), like.dtype)
    bad = np.empty(nchunks, np.int64)
    for c in prange(nchunks):
        row = counts[c]
        for s in range(num_segments):
            row[s] = 0
        bad[c] = 0
        for i in range(c * step, min(m, (c + 1) * step)):
            v = index[i]
            if v < 0 or v >= num_segments:
                bad[c] += 1
            else:
                row[v] += 1
    total_bad = 0
    for c in range(nchunks):
        total_bad += bad[c]
    return counts, total_bad


@njit(cache=True, nogil=True)
def count_index(index, num_segments, nchunks):
    """(counts per segment as int64, number of bad entries)."""
    counts, bad = chunk_histograms(index, num_segments, nchunks, np.empty(0, np.int64))
    total = np.empty(num_segments, np.int64)
    for s in range(num_segments):
        total[s] = 0
        for c in range(nchunks):
            total[s] += counts[c, s]
    return total, bad


@njit(cache=True, nogil=True)
def counting_sort(index, num_segments, nchunks, perm_like):
    """Returns (ptr, perm, number of bad entries); ``perm`` has the dtype of ``perm_like`` (int32 when the index
    is short enough: half the memory traffic of int64). One histogram row per chunk, then an exclusive prefix over
    (segment, chunk) gives each chunk its write position for each segment: a stable sort."""
    m = index.shape[0]
    step = (m + nchunks - 1) // nchunks
    counts, total_bad = chunk_histograms(index, num_segments, nchunks, perm_like)
    ptr = np.empty(num_segments + 1, np.int64)
    perm = np.empty(m if total_bad == 0 else 0, perm_like.dtype)
    if total_bad:
        return ptr, perm, total_bad
    # exclusive prefix over (segment, chunk): counts[c, s] becomes where chunk c writes its first row of s
    running = 0
    for s in range(num_segments):
        ptr[s] = running
        for c in range(nchunks):
            n = counts[c, s]
            counts[c, s] = running
            running += n
    ptr[num_segments] = running
    _scatter_positions(index, counts, perm, step)
    return ptr, perm, total_bad


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def _scatter_positions(index, offsets, perm, step):
    m = index.shape[0]
    for c in prange(offsets.shape[0]):
        row = offsets[c]
        for i in range(c * step, min(m, (c + 1) * step)):
            v = index[i]
            perm[row[v]] = i
            row[v] += 1


@njit(cache=True, nogil=True)
def balanced_bounds(ptr, nchunks):
    """Split segments ``0..S`` into ``nchunks`` contiguous chunks of about equal ``rows + segments``: int64
    ``(nchunks + 1,)`` bounds, a binary search over ``ptr`` per chunk (in Python this cost ~25 us a call, a
    quarter of a 64k-edge call)."""
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
