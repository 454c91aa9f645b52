"""Numba CPU kernel for segment (CSR) reductions.

One kernel serves ``segment_reduce``, ``gather_segment_reduce`` and two routes of ``index_scatter_reduce``: the
sorted index (its CSR offsets) and the unsorted one (offsets and a row permutation from a counting sort). Arrays
are 3-D C-contiguous views ``(outer, rows, inner)`` of the torch tensors, the reduced dimension in the middle;
segment ``s`` reduces rows ``ptr[s]:ptr[s+1]`` (or ``perm[ptr[s]:ptr[s+1]]``).

Work items are ``(outer slice, chunk of segments)``; chunks are balanced by rows + segments
(``segments.balanced_bounds``). Each segment is reduced by exactly one thread, in row order, so the result does not
depend on the number of threads. No bounds checks are made here: the backend has validated ``ptr``/``perm``.

Native types accumulate in ``out``'s row itself (no scratch row to copy out: docs/decisions/segment-kernel.md). Half
types, and
large outputs with rows of whole cache lines, accumulate in a scratch row written once at the end of the segment --
the latter by non-temporal stores (``_memory.stream_row``), which skip reading ``out``'s lines from memory before
overwriting them (``docs/decisions/streaming-stores.md``). Both ways run the same operations in the same order:
the same bits.
"""

from __future__ import annotations

from numba import njit

from ._codegen import Kernel, accumulator, claim, combine, finalize, in_place, load, rows_buffer, store, write_row
from ._memory import prefetch_row, store_fence


@njit(cache=True, nogil=True, error_model="numpy")
def segment_reduce_kernel(
    counter, src, perm, ptr, bounds, base, out, reduce, storage, gather, include_self, fill_empty, lookahead, stream
):
    """out[o, s, :] = reduce(src[o, row, :] for row in segment s) for every segment s.

    src: (outer, n, inner); base, out: (outer, S, inner), same element type (``base`` may be ``out`` itself:
    in place); ptr: int64 (S + 1); perm: int64 row permutation, read only when ``gather``; bounds: chunks of
    segments; work items: ``outer * (len(bounds) - 1)``.
    include_self: ``base``'s value takes part (and counts for mean).
    fill_empty: segments with no row are set to 0; otherwise they get ``base``'s value.
    lookahead: with ``gather``, prefetch the row that many positions ahead.
    stream: native types only; rows written by ``stream_row`` (conditions checked by the caller).
    reduce, storage: literal codes, see ``_reductions`` and ``_codegen``.
    (Rows are indexed as ``src[o, r, j]``: a 1-D row view per row is slower; docs/decisions/segment-kernel.md.)
    """
    inner = src.shape[2]
    m = perm.shape[0]
    nchunks = bounds.shape[0] - 1
    direct = in_place(storage, stream)
    scratch = rows_buffer(storage, src, 0 if direct else 1, inner)
    while True:
        item = claim(counter)
        if item < 0:
            break
        o = item // nchunks
        c = item - o * nchunks
        if inner == 1:
            # rows of one element: each segment's value in a register, stored once -- through its row in memory,
            # every row waited for the store of the one before (2x the time at 100,000 rows in 10,000 segments;
            # docs/decisions/segment-kernel.md, "Rows of one element")
            for s in range(bounds[c], bounds[c + 1]):
                lo = ptr[s]
                hi = ptr[s + 1]
                if lo == hi:
                    out[o, s, 0] = 0 if fill_empty else base[o, s, 0]
                    continue
                start = lo
                if include_self:
                    a = load(storage, base[o, s, 0])
                else:
                    a = load(storage, src[o, perm[lo] if gather else lo, 0])
                    start = lo + 1
                for i in range(start, hi):
                    r = i
                    if gather:
                        if i + lookahead < m:
                            prefetch_row(src, o, perm[i + lookahead])  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
                        r = perm[i]
                    a = combine(reduce, a, load(storage, src[o, r, 0]))
                out[o, s, 0] = store(storage, finalize(reduce, a, hi - lo + (1 if include_self else 0)))
            continue
        acc = accumulator(storage, out[o], scratch, direct)
        for s in range(bounds[c], bounds[c + 1]):
            lo = ptr[s]
            hi = ptr[s + 1]
            if lo == hi:
                for j in range(inner):
                    out[o, s, j] = 0 if fill_empty else base[o, s, j]
                continue
            a = s if direct else 0  # the accumulators' row
            start = lo
            if include_self:
                for j in range(inner):
                    acc[a, j] = load(storage, base[o, s, j])
            else:
                r = perm[lo] if gather else lo
                for j in range(inner):
                    acc[a, j] = load(storage, src[o, r, j])
                start = lo + 1
            for i in range(start, hi):
                r = i
                if gather:
                    if i + lookahead < m:
                        prefetch_row(src, o, perm[i + lookahead])  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
                    r = perm[i]
                for j in range(inner):
                    acc[a, j] = combine(reduce, acc[a, j], load(storage, src[o, r, j]))
            count = hi - lo + (1 if include_self else 0)
            for j in range(inner):
                acc[a, j] = finalize(reduce, acc[a, j], count)
            if not direct:
                write_row(storage, out, o, s, acc, 0, stream)
    if stream:
        store_fence()  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
    return 0


segment_reduce = Kernel(segment_reduce_kernel, literal=("reduce", "storage"))
