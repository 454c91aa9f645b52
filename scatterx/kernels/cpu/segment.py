"""Numba CPU kernel for segment (CSR) reductions.

One kernel serves ``segment_reduce``, the sorted path of ``index_scatter_reduce`` and, through a row permutation,
its unsorted path. Arrays are 3-D C-contiguous views ``(outer, rows, inner)`` of the torch tensors, the reduced
dimension in the middle; segment ``s`` reduces rows ``ptr[s]:ptr[s+1]`` (or ``perm[ptr[s]:ptr[s+1]]``).

Parallel work items are ``(outer slice, chunk of segments)``; chunks are balanced by rows + segments
(``backends.cpu.balanced_bounds``). Each segment is reduced by exactly one thread, in row order, so the result does
not depend on the number of threads. No bounds checks are made here: the op layer has validated ``ptr``/``perm``
before calling.

Outputs are written in one of two ways, with the same bits. Native types accumulate in ``out``'s row itself
(no scratch row to copy out). Large outputs (``backends.cpu.STREAM_MIN_BYTES``) with rows of whole cache lines
accumulate in a scratch row and write each finished row with non-temporal stores (``_memory.stream_row``).
That skips reading ``out``'s lines from memory before overwriting them: the sorted sum at the bench shape (1M
x 64 float32 into 100k rows), bound by memory traffic, went from ~1.25x to ~1.1x the time of reading ``src``
once (docs/DESIGN.md, "Streaming stores").
"""

from __future__ import annotations

from numba import literally, njit, prange

from ._codegen import NATIVE, PRANGE_ONLY, LiteralKernel, acc_buffer, combine, finalize, load, store, write_row
from ._memory import prefetch_row, store_fence


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def segment_reduce_kernel(
    src, perm, ptr, bounds, base, out, reduce, storage, gather, include_self, fill_empty, lookahead, stream
):
    """out[o, s, :] = reduce(src[o, row, :] for row in segment s) for every segment s.

    src: (outer, n, inner); base, out: (outer, S, inner), same element type (``base`` may be ``out`` itself:
    in place); ptr: int64 (S + 1); perm: int64 row permutation, read only when ``gather`` (literal) is true;
    bounds: chunks of segments.
    include_self: ``base``'s value takes part (and counts for mean).
    fill_empty: segments with no row are set to 0; otherwise they get ``base``'s value.
    lookahead: with ``gather``, prefetch the row that many positions ahead.
    stream: native types only; each segment is reduced in a scratch row and written once by ``stream_row``
    (non-temporal stores: no read of ``out``'s lines before they are overwritten), whose conditions the caller
    has checked. The same operations in the same order as without: the same bits.
    reduce, storage: literal codes, see ``_reductions`` and ``_codegen``.
    (Rows are indexed as ``src[o, r, j]``: taking a 1-D row view per row costs ~20% at 64 features.)
    """
    literally(reduce)
    literally(storage)
    literally(gather)
    outer = src.shape[0]
    inner = src.shape[2]
    m = perm.shape[0]
    nchunks = bounds.shape[0] - 1
    for item in prange(outer * nchunks):
        o = item // nchunks
        c = item - o * nchunks
        if storage == NATIVE and not stream:
            # the accumulators are out's row itself (the element type is the accumulator type): no scratch row
            # to copy out, and ~20% less time at 64 features than with one
            for s in range(bounds[c], bounds[c + 1]):
                lo = ptr[s]
                hi = ptr[s + 1]
                if lo == hi:
                    if fill_empty:
                        for j in range(inner):
                            out[o, s, j] = 0
                    else:
                        for j in range(inner):
                            out[o, s, j] = base[o, s, j]
                    continue
                start = lo
                if include_self:
                    for j in range(inner):
                        out[o, s, j] = base[o, s, j]
                else:
                    r = perm[lo] if gather else lo
                    for j in range(inner):
                        out[o, s, j] = src[o, r, j]
                    start = lo + 1
                for i in range(start, hi):
                    if gather:
                        if i + lookahead < m:
                            prefetch_row(src, o, perm[i + lookahead])
                        r = perm[i]
                    else:
                        r = i
                    for j in range(inner):
                        out[o, s, j] = combine(reduce, out[o, s, j], src[o, r, j])
                count = hi - lo + (1 if include_self else 0)
                for j in range(inner):
                    out[o, s, j] = finalize(reduce, out[o, s, j], count)
        else:  # half types (float32 accumulators), and native types streamed: a scratch row, written once
            acc = acc_buffer(storage, src, inner)
            for s in range(bounds[c], bounds[c + 1]):
                lo = ptr[s]
                hi = ptr[s + 1]
                if lo == hi:
                    if stream:
                        for j in range(inner):
                            acc[j] = 0 if fill_empty else load(storage, base[o, s, j])
                        write_row(storage, out, o, s, acc, True)
                    elif fill_empty:
                        for j in range(inner):
                            out[o, s, j] = 0
                    else:
                        for j in range(inner):
                            out[o, s, j] = base[o, s, j]
                    continue
                start = lo
                if include_self:
                    for j in range(inner):
                        acc[j] = load(storage, base[o, s, j])
                else:
                    r = perm[lo] if gather else lo
                    for j in range(inner):
                        acc[j] = load(storage, src[o, r, j])
                    start = lo + 1
                for i in range(start, hi):
                    if gather:
                        if i + lookahead < m:
                            prefetch_row(src, o, perm[i + lookahead])
                        r = perm[i]
                    else:
                        r = i
                    for j in range(inner):
                        acc[j] = combine(reduce, acc[j], load(storage, src[o, r, j]))
                count = hi - lo + (1 if include_self else 0)
                for j in range(inner):
                    acc[j] = finalize(reduce, acc[j], count)
                write_row(storage, out, o, s, acc, stream)
            if stream:
                store_fence()


segment_reduce = LiteralKernel(segment_reduce_kernel, ("reduce", "storage", "gather"))


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def segment_tie_backward_kernel(src, perm, ptr, bounds, result, grad, base, grad_src, ties, storage, gather, include_self):
    """Backward of amax/amin over the same segments as ``segment_reduce_kernel``.

    ties[o, s, :]: how many members of segment s equal its result (``base[o, s, :]`` counts with include_self);
    grad_src[o, r, :]: grad[o, s, :] / ties where src[o, r, :] equals the result, else 0 -- the gradient split
    evenly among ties. Two passes over each segment's rows (the second from cache for typical degrees).
    src, grad_src: (outer, n, inner); result, grad, base, ties: (outer, S, inner); storage/gather as above.
    """
    literally(storage)
    literally(gather)
    outer = src.shape[0]
    inner = src.shape[2]
    nchunks = bounds.shape[0] - 1
    for item in prange(outer * nchunks):
        o = item // nchunks
        c = item - o * nchunks
        count = acc_buffer(storage, src, inner)
        for s in range(bounds[c], bounds[c + 1]):
            lo = ptr[s]
            hi = ptr[s + 1]
            for j in range(inner):
                same = include_self and load(storage, base[o, s, j]) == load(storage, result[o, s, j])
                count[j] = 1 if same else 0
            for i in range(lo, hi):
                r = perm[i] if gather else i
                for j in range(inner):
                    if load(storage, src[o, r, j]) == load(storage, result[o, s, j]):
                        count[j] += 1
            for j in range(inner):
                ties[o, s, j] = count[j]
            for i in range(lo, hi):
                r = perm[i] if gather else i
                for j in range(inner):
                    if load(storage, src[o, r, j]) == load(storage, result[o, s, j]):
                        grad_src[o, r, j] = store(storage, load(storage, grad[o, s, j]) / count[j])
                    else:
                        grad_src[o, r, j] = 0


segment_tie_backward = LiteralKernel(segment_tie_backward_kernel, ("storage", "gather"))
