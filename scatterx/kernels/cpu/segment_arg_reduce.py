"""Numba CPU kernel for arg-reductions over segments: the best member of each segment *and its row*, in one pass.

It serves ``ops/segment_arg_reduce.py`` (torch_scatter's ``scatter_max``/``segment_max_csr``/... with their
``argmax``). Arrays, work items and ``gather`` are those of ``segment_reduce.py``; segment ``s`` covers positions
``ptr[s]:ptr[s+1]``, read through ``perm`` when ``gather`` is true.

Selection is the table's ``prefers`` (``_reductions.py``): a member replaces the current best only if it strictly
beats it, so the first of tied members (in position order; a stable sort keeps row order inside a segment) wins,
and NaN never wins. The start value of every output element is ``base[o, s, j]`` (``has_base``) or ``start``.
Each segment is reduced by one thread, so the result does not depend on the number of threads. No bounds checks:
the backend has validated ``ptr``/``perm``.
"""

from __future__ import annotations

from numba import njit

from ._codegen import Kernel, accumulator, choose, claim, in_place, load, prefers, rows_buffer, store

#: what ``fill`` asks for, after the selection: nothing; 0 where no member was selected; 0 for empty segments
FILL_NONE, FILL_UNSELECTED, FILL_EMPTY = 0, 1, 2


@njit(cache=True, nogil=True, error_model="numpy")
def segment_arg_reduce_kernel(
    counter, src, perm, ptr, bounds, base, start, out, arg, reduce, storage, gather, has_base, fill, none
):
    """out[o, s, j], arg[o, s, j] = the member of segment s (over rows r) that ``prefers`` selects, and its row r.

    src: (outer, n, inner); base, out: (outer, S, inner), same element type (``base`` may be ``out``: in place);
    arg: int64 (outer, S, inner). Where no member beats the start value, ``arg`` gets ``none`` and ``out`` the
    start value (then ``fill``: FILL_UNSELECTED writes 0 there, FILL_EMPTY writes 0 for segments with no member).
    start: the start value, in the accumulator type; reduce, storage: literal codes.
    Native types keep the best values in ``out``'s rows themselves, half types in a float32 scratch row.
    """
    inner = src.shape[2]
    nchunks = bounds.shape[0] - 1
    direct = in_place(storage, False)
    scratch = rows_buffer(storage, src, 0 if direct else 1, inner)
    while True:
        item = claim(counter)
        if item < 0:
            break
        o = item // nchunks
        c = item - o * nchunks
        if inner == 1:
            # rows of one element: the best value and its row in registers, stored once a segment -- through the
            # output's row every member waited for the stores of the one before (segment-kernel.md, "Rows of one
            # element")
            for s in range(bounds[c], bounds[c + 1]):
                lo = ptr[s]
                hi = ptr[s + 1]
                v = load(storage, base[o, s, 0]) if has_base else start
                a = none
                for i in range(lo, hi):
                    r = perm[i] if gather else i
                    x = load(storage, src[o, r, 0])
                    take = prefers(reduce, x, v)
                    v = choose(take, x, v)
                    a = choose(take, r, a)
                zero = (fill == FILL_UNSELECTED and a == none) or (fill == FILL_EMPTY and hi == lo)
                out[o, s, 0] = store(storage, choose(zero, 0, v))
                arg[o, s, 0] = a
            continue
        best = accumulator(storage, out[o], scratch, direct)
        for s in range(bounds[c], bounds[c + 1]):
            lo = ptr[s]
            hi = ptr[s + 1]
            b = s if direct else 0
            for j in range(inner):
                best[b, j] = load(storage, base[o, s, j]) if has_base else start
                arg[o, s, j] = none
            for i in range(lo, hi):
                r = perm[i] if gather else i
                for j in range(inner):
                    x = load(storage, src[o, r, j])
                    take = prefers(reduce, x, best[b, j])  # (unconditional stores: ``choose``)
                    best[b, j] = choose(take, x, best[b, j])
                    arg[o, s, j] = choose(take, r, arg[o, s, j])
            for j in range(inner):
                zero = (fill == FILL_UNSELECTED and arg[o, s, j] == none) or (fill == FILL_EMPTY and hi == lo)
                best[b, j] = choose(zero, 0, best[b, j])
                if not direct:
                    out[o, s, j] = store(storage, best[b, j])
    return 0


segment_arg_reduce = Kernel(segment_arg_reduce_kernel, literal=("reduce", "storage"))
