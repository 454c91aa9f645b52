"""Numba CPU kernels that turn a 1-D index into CSR segments, validating it in the same single pass.

``sorted_index_to_ptr``: a non-decreasing index -> offsets ``ptr`` (``ptr[s]`` = first position with index >= s).
``counting_sort``: any index -> ``ptr`` and a *stable* permutation ``perm`` of positions grouped by target.

Both return the first offending position (or -1): an index value out of ``[0, num_segments)`` or, for the sorted
kernel, a decrease. They never write outside their own buffers whatever the index holds; the op layer turns a
reported position into a precise error message. Work is split into ``nchunks`` contiguous position ranges.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True, nogil=True)
def sorted_index_to_ptr(index, num_segments, nchunks):
    m = index.shape[0]
    ptr = np.empty(num_segments + 1, np.int64)
    first_bad = np.full(nchunks, m, np.int64)
    step = (m + nchunks - 1) // nchunks
    for c in prange(nchunks):
        for i in range(c * step, min(m, (c + 1) * step)):
            v = np.int64(index[i])
            prev = np.int64(index[i - 1]) if i > 0 else np.int64(-1)
            if v < 0 or v >= num_segments or v < prev:
                first_bad[c] = i
                break
            for k in range(max(prev + 1, 0), v + 1):
                ptr[k] = i
    bad = first_bad.min()
    if bad < m:
        return ptr, bad
    last = np.int64(index[m - 1]) if m > 0 else np.int64(-1)
    for k in range(last + 1, num_segments + 1):
        ptr[k] = m
    return ptr, np.int64(-1)


@njit(parallel=True, cache=True, nogil=True)
def counting_sort(index, num_segments, nchunks):
    m = index.shape[0]
    step = (m + nchunks - 1) // nchunks
    counts = np.zeros((nchunks, num_segments), np.int64)
    first_bad = np.full(nchunks, m, np.int64)
    for c in prange(nchunks):
        for i in range(c * step, min(m, (c + 1) * step)):
            v = np.int64(index[i])
            if v < 0 or v >= num_segments:
                first_bad[c] = i
                break
            counts[c, v] += 1
    bad = first_bad.min()
    ptr = np.empty(num_segments + 1, np.int64)
    perm = np.empty(m if bad == m else 0, np.int64)
    if bad < m:
        return ptr, perm, bad
    # exclusive prefix over (segment, chunk): counts[c, s] becomes where chunk c writes its first row of s
    running = np.int64(0)
    for s in range(num_segments):
        ptr[s] = running
        for c in range(nchunks):
            n = counts[c, s]
            counts[c, s] = running
            running += n
    ptr[num_segments] = running
    for c in prange(nchunks):
        for i in range(c * step, min(m, (c + 1) * step)):
            v = index[i]
            perm[counts[c, v]] = i
            counts[c, v] += 1
    return ptr, perm, np.int64(-1)
