"""Numba CPU kernel for arg-reductions over segments: the best member of each segment *and its row*, in one pass.

It serves ``ops/segment_arg_reduce.py`` (torch_scatter's ``scatter_max``/``segment_max_csr``/... with their
``argmax``). Arrays are the 3-D C-contiguous ``(outer, rows, inner)`` views of ``kernels/cpu/segment.py``; segment
``s`` covers positions ``ptr[s]:ptr[s+1]``, read through ``perm`` when ``gather`` is true.

Selection is the table's ``prefers`` (``_reductions.py``): a member replaces the current best only if it strictly
beats it, so the first of tied members (in position order; a stable sort keeps row order inside a segment) wins,
and NaN never wins. The start value of every output element is ``base[o, s, j]`` (``has_base``) or ``start``.
Each segment is reduced by one thread, so the result does not depend on the number of threads. No bounds checks:
the op layer has validated ``ptr``/``perm``.
"""

from __future__ import annotations

import numpy as np
from numba import literally, njit, prange

from ._codegen import NATIVE, PRANGE_ONLY, LiteralKernel, acc_buffer, load, prefers, store

#: what ``fill`` asks for, after the selection: nothing; 0 where no member was selected; 0 for empty segments
FILL_NONE, FILL_UNSELECTED, FILL_EMPTY = 0, 1, 2


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def segment_arg_reduce_kernel(
    src, perm, ptr, bounds, base, start, out, arg, reduce, storage, gather, has_base, fill, none
):
    """out[o, s, j], arg[o, s, j] = the member of segment s (over rows r) that ``prefers`` selects, and its row r.

    src: (outer, n, inner); base, out: (outer, S, inner), same element type (``base`` may be ``out``: in place);
    arg: int64 (outer, S, inner). Where no member beats the start value, ``arg`` gets ``none`` and ``out`` the
    start value (then ``fill``: FILL_UNSELECTED writes 0 there, FILL_EMPTY writes 0 for segments with no member).
    start: the start value, in the accumulator type; reduce, storage, gather: literals, as in ``segment.py``.
    """
    literally(reduce)
    literally(storage)
    literally(gather)
    outer = src.shape[0]
    inner = src.shape[2]
    nchunks = bounds.shape[0] - 1
    for item in prange(outer * nchunks):
        o = item // nchunks
        c = item - o * nchunks
        if storage == NATIVE:
            # the best values and rows so far live in out's and arg's rows themselves (no scratch rows to copy
            # out), as in segment.py
            for s in range(bounds[c], bounds[c + 1]):
                lo = ptr[s]
                hi = ptr[s + 1]
                for j in range(inner):
                    out[o, s, j] = base[o, s, j] if has_base else start
                    arg[o, s, j] = none
                for i in range(lo, hi):
                    r = perm[i] if gather else i
                    for j in range(inner):
                        x = src[o, r, j]
                        if prefers(reduce, x, out[o, s, j]):
                            out[o, s, j] = x
                            arg[o, s, j] = r
                if fill == FILL_UNSELECTED:
                    for j in range(inner):
                        if arg[o, s, j] == none:
                            out[o, s, j] = 0
                elif fill == FILL_EMPTY and hi == lo:
                    for j in range(inner):
                        out[o, s, j] = 0
        else:  # half types: float32 scratch rows
            best = acc_buffer(storage, src, inner)
            which = np.empty(inner, np.int64)
            for s in range(bounds[c], bounds[c + 1]):
                lo = ptr[s]
                hi = ptr[s + 1]
                for j in range(inner):
                    best[j] = load(storage, base[o, s, j]) if has_base else start
                    which[j] = none
                for i in range(lo, hi):
                    r = perm[i] if gather else i
                    for j in range(inner):
                        x = load(storage, src[o, r, j])
                        if prefers(reduce, x, best[j]):
                            best[j] = x
                            which[j] = r
                for j in range(inner):
                    value = best[j]
                    if (fill == FILL_UNSELECTED and which[j] == none) or (fill == FILL_EMPTY and hi == lo):
                        value = 0
                    out[o, s, j] = store(storage, value)
                    arg[o, s, j] = which[j]


segment_arg_reduce = LiteralKernel(segment_arg_reduce_kernel, ("reduce", "storage", "gather"))
