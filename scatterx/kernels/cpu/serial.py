"""A serial Numba kernel for small ``index_scatter_reduce`` calls: validate, then scatter in one thread.

For a call of a few thousand elements the parallel path's fixed costs dominate: building CSR offsets, balancing
chunks, setting Numba's thread count, a literal-dispatch lookup over a dozen arguments, a kernel launch through
the thread pool. This kernel takes the index as it is and reduces ``src``'s rows into an accumulator per target
in position order, so it needs no offsets and no permutation.

**Bit for bit the segment kernel's result.** For every target the rows are combined in position order (the
segment kernel's order for a sorted index, and for an unsorted one after its *stable* sort), starting from the
table's identity (which the table guarantees is bit for bit the same as starting from the first row) or from
``base`` with ``include_self``, with the same ``combine``, ``finalize`` (mean's divide by ``rows +
include_self``) and float32 accumulation of half types rounded once on store. So the choice between the
two paths, made by size only, never changes a result; ``tests/kernels/test_cpu_serial.py`` checks it bitwise.

**Nothing written on bad input.** A first pass over the index checks every value against ``[0, S)`` and, when
``sorted``, that it never decreases; on failure the kernel returns before writing, and the caller takes the
general path, whose checks explain the failure.
"""

from __future__ import annotations

import numpy as np
from numba import literally, njit

from ._codegen import LiteralKernel, acc_buffer, combine, finalize, identity, load, store

OK, OUT_OF_RANGE, NOT_SORTED = 0, 1, 2


@njit(cache=True, nogil=True)
def index_bound(index):
    """``max(index) + 1`` (0 for an empty index), or -1 if some entry is negative: the output size a call
    without ``dim_size`` gets."""
    top = np.int64(-1)
    for i in range(index.shape[0]):
        v = np.int64(index[i])
        if v < 0:
            return np.int64(-1)
        if v > top:
            top = v
    return top + 1


@njit(cache=True, nogil=True)
def serial_scatter_kernel(src, index, base, out, reduce, storage, sorted, include_self, fill_empty):
    """out[o, t, :] = reduce(src[o, i, :] for i with index[i] == t), for every target t; returns a status.

    src: (outer, n, inner) with n >= len(index); base, out: (outer, S, inner), same element type (``base`` is read
    only with ``include_self`` or when not ``fill_empty``); index: int32/int64 (m,).
    include_self: ``base``'s value takes part (and counts for mean). fill_empty: targets that receive nothing are
    set to 0, else to ``base``'s value. reduce, storage: literal codes (``_reductions``, ``_codegen``).
    Returns OK, or OUT_OF_RANGE / NOT_SORTED (``sorted``: the index must not decrease) before writing anything.
    """
    literally(reduce)
    literally(storage)
    outer = src.shape[0]
    inner = src.shape[2]
    num_targets = out.shape[1]
    m = index.shape[0]
    counts = np.zeros(num_targets, np.int64)
    previous = np.int64(0)
    for i in range(m):
        t = np.int64(index[i])
        if t < 0 or t >= num_targets:
            return OUT_OF_RANGE
        if sorted and t < previous:
            return NOT_SORTED
        previous = t
        counts[t] += 1  # t was checked: a private buffer, written in bounds
    acc = acc_buffer(storage, src, num_targets * inner)
    for o in range(outer):
        if include_self:
            for t in range(num_targets):
                for j in range(inner):
                    acc[t * inner + j] = load(storage, base[o, t, j])
        else:
            # the table's identity: combine(identity, x) == x bit for bit, so starting from it equals starting
            # from the first row -- without a branch per row on whether the target has started
            start = identity(reduce, acc)
            for k in range(num_targets * inner):
                acc[k] = start
        for i in range(m):
            row = index[i] * inner
            for j in range(inner):
                acc[row + j] = combine(reduce, acc[row + j], load(storage, src[o, i, j]))
        for t in range(num_targets):
            if counts[t] == 0:
                for j in range(inner):
                    out[o, t, j] = 0 if fill_empty else base[o, t, j]
            else:
                count = counts[t] + (1 if include_self else 0)
                for j in range(inner):
                    out[o, t, j] = store(storage, finalize(reduce, acc[t * inner + j], count))
    return OK


serial_scatter = LiteralKernel(serial_scatter_kernel, ("reduce", "storage"))
