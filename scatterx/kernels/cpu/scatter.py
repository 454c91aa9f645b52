"""Numba CPU kernel for the *slice-owner* strategy of the unsorted path.

When the reduced dimension is not the last one that matters -- rows are tiny (a few elements along ``inner``) and
there are many outer slices, as when reducing the last dim of a ``(features, edges)`` tensor -- gathering rows
through a permutation reads memory at random for a few bytes each. Instead each work item owns whole outer slices:
it streams ``src[o]`` and the index in order and combines each row into an accumulator buffer of the slice's
output (``num_segments * inner`` values, cache-resident for typical sizes), started at the reduction's identity.

Each output element is combined in position order, from the identity, which is exact (``combine(identity, x)`` is
``x`` bit for bit, see ``_reductions``): results are bit-identical to the sorted path on the stably sorted input,
whatever the number of threads. No bounds checks: the op layer validated ``index`` (and got ``counts``) first.
"""

from __future__ import annotations

import numpy as np
from numba import literally, njit, prange

from ._codegen import PRANGE_ONLY, LiteralKernel, acc_buffer, combine, finalize, identity, load, store


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def slice_scatter_kernel(src, index, counts, out, reduce, storage, include_self, fill_empty):
    """out[o, index[i], :] (+)= src[o, i, :] for i in order, one work item per outer slice ``o``.

    src: (outer, n, inner); index: (m,) with m <= n; counts: int64 (S,) occurrences of each segment in ``index``;
    out: (outer, S, inner). include_self / fill_empty as in ``segment.segment_reduce_kernel``.
    """
    literally(reduce)
    literally(storage)
    outer = src.shape[0]
    inner = src.shape[2]
    num_segments = out.shape[1]
    m = index.shape[0]
    for o in prange(outer):
        acc = acc_buffer(storage, src, num_segments * inner)
        neutral = identity(reduce, acc)
        for s in range(num_segments):
            base = s * inner
            if include_self:
                for j in range(inner):
                    acc[base + j] = load(storage, out[o, s, j])
            else:
                for j in range(inner):
                    acc[base + j] = neutral
        if inner == 1:  # a loop of its own, on a 1-D view: the loop over one element cost ~2x
            values = src[o].reshape(src.shape[1])
            for i in range(m):
                t = np.uint64(index[i])
                acc[t] = combine(reduce, acc[t], load(storage, values[i]))
        else:
            rows = acc.reshape(num_segments, inner)  # at an unsigned row: no wraparound, the loop vectorises
            for i in range(m):
                t = np.uint64(index[i])
                for j in range(inner):
                    rows[t, j] = combine(reduce, rows[t, j], load(storage, src[o, i, j]))
        for s in range(num_segments):
            count = counts[s]
            if count == 0:
                if fill_empty:
                    for j in range(inner):
                        out[o, s, j] = 0
                continue
            count += 1 if include_self else 0
            base = s * inner
            for j in range(inner):
                out[o, s, j] = store(storage, finalize(reduce, acc[base + j], count))


slice_scatter = LiteralKernel(slice_scatter_kernel, ("reduce", "storage"))
