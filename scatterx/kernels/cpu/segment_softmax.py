"""Numba CPU kernels for segment (CSR) softmax and its backward.

Arrays are 3-D C-contiguous views ``(outer, n, inner)`` of the torch tensors, the softmax dimension in the middle;
segment ``s`` covers positions ``ptr[s]:ptr[s+1]``, position ``i`` naming row ``perm[i]`` (``gather``) or row ``i``.
Every row belongs to exactly one segment, so every element of the output is written exactly once (empty segments
write nothing). For every ``(o, s, j)``, over the rows ``r`` of segment ``s``::

    m = max src[o, r, j]                       (NaN propagates, as the table's amax combine)
    out[o, r, j] = exp(src[o, r, j] - m) / sum exp(src[o, r, j] - m)

This equals ``torch.softmax`` of each segment on its own, NaN/inf included: a segment whose maximum is not finite
(+inf, NaN, or -inf because every member is -inf) is NaN throughout, and a -inf next to finite values gives 0.
Half types (int16 views, see ``_codegen``) are widened to float32 on load and rounded once on store; the
accumulators are float32 for them and the element type otherwise.

The forward makes three passes over each segment's rows: the maximum, the sum of ``exp(x - max)``, the outputs.
Only the first reads from memory for typical segment sizes (the rows are then in cache), and it has no ``exp``, so
it vectorises. The ``exp`` calls dominated while they were libm's, one call an element (Numba has no vectorised
``exp`` without SVML); ``_exp.exp`` is ours, in operations that vectorise (3x faster for float32), which rows of
``VECTOR_EXP_MIN_INNER`` features or more take -- a row's loop over its features is the one that vectorises, and
for narrower rows libm's scalar call is the faster (the two differ by at most an ulp). Pass 2 keeps its
``exp(x - max)`` in a per-work-item scratch buffer (``EXP_SCRATCH_ELEMENTS``) for pass 3
when the segment fits, so one ``exp`` per element instead of two, with bit-identical results.

The "online" softmax of the segment-softmax literature (one pass with a running maximum and a rescaled running
sum, then the writing pass) was measured against it and is slower here: it saves a pass over cached rows but not an
``exp``, and its bookkeeping sits in the scalar loop around the ``exp``. The GPU kernel, where a pass is a trip to
memory and ``exp`` is cheap, is online. The measurements: see docs/decisions/segment-softmax.md.

Work items are ``(outer slice, chunk of segments)`` from ``bounds`` (``segments.balanced_bounds``), as in
``segment_reduce.py``. Each segment is reduced by exactly one thread, in row order, so the result does not depend on the
number of threads or on the chunks. No bounds checks are made here: the op layer has validated ``ptr``/``perm``.
"""

from __future__ import annotations

import math

from numba import njit

from ..._reductions import BY_NAME
from ._codegen import Kernel, acc_buffer, claim, combine, identity, load, store
from ._exp import VECTOR_EXP_MIN_INNER, exp

# Table codes, used as compile-time literals: the amax combine (the NaN rule of the maximum), and the identities of
# amax and sum as the accumulators' -inf and 0 (typed like the accumulator: a Python float would promote float32
# arithmetic to float64).
AMAX = BY_NAME["amax"].code
SUM = BY_NAME["sum"].code

# The forward keeps the exp(x - max) of a segment of up to this many elements (rows x features) in a scratch buffer
# per work item (64 KiB of float32) instead of computing them twice; longer segments recompute them.
EXP_SCRATCH_ELEMENTS = 1 << 14


@njit(cache=True, nogil=True, error_model="numpy")
def segment_softmax_kernel(counter, src, perm, ptr, bounds, out, storage, gather):
    """out[o, r, :] = softmax of src[o, :, :] over the rows of r's segment, for every row r.

    src, out: (outer, n, inner), same element type; ptr: int64 (S + 1); perm: int64 row permutation, read only
    when ``gather``; bounds: int64 chunks of segments; work items: ``outer * (len(bounds) - 1)``; storage: literal
    code (``_codegen``). (Rows are indexed as ``src[o, r, j]``, as in ``segment_reduce.py``.)
    """
    inner = src.shape[2]
    nchunks = bounds.shape[0] - 1
    # segments of at most `cap` rows keep their exp(x - max) in `kept` between passes 2 and 3
    cap = EXP_SCRATCH_ELEMENTS // max(inner, 1)
    top = acc_buffer(storage, src, inner)  # the segment's maximum, per feature
    total = acc_buffer(storage, src, inner)  # the segment's sum of exp(x - top), per feature
    kept = acc_buffer(storage, src, cap * inner)  # exp(x - top) of row lo + k at kept[k * inner + j]
    while True:
        item = claim(counter)
        if item < 0:
            break
        o = item // nchunks
        _softmax_chunk(o, item - o * nchunks, src, perm, ptr, bounds, out, top, total, kept, cap, storage, gather)
    return 0


@njit(cache=True, nogil=True, error_model="numpy")
def _softmax_chunk(o, c, src, perm, ptr, bounds, out, top, total, kept, cap, storage, gather):
    """One work item of ``segment_softmax_kernel``: the segments of chunk ``c`` in outer slice ``o``. (A function
    of its own, not the claim loop's body: compiled apart, its loops ran faster; see
    docs/decisions/compile-budget.md.)"""
    inner = src.shape[2]
    minus_inf = identity(AMAX, top)  # constants in the accumulator type
    zero = identity(SUM, top)
    wide = inner >= VECTOR_EXP_MIN_INNER
    if inner == 1:
        # rows of one element: the segment's maximum and sum in registers -- in ``top[0]`` and ``total[0]`` every
        # row waited for the store of the one before (the same operations in the same order: the same bits;
        # docs/decisions/segment-kernel.md, "Rows of one element")
        for s in range(bounds[c], bounds[c + 1]):
            lo = ptr[s]
            hi = ptr[s + 1]
            keep = hi - lo <= cap
            m = minus_inf
            for i in range(lo, hi):
                m = combine(AMAX, m, load(storage, src[o, perm[i] if gather else i, 0]))
            t = zero
            for i in range(lo, hi):
                e = math.exp(load(storage, src[o, perm[i] if gather else i, 0]) - m)
                t += e
                if keep:
                    kept[i - lo] = e
            for i in range(lo, hi):
                r = perm[i] if gather else i
                e = kept[i - lo] if keep else math.exp(load(storage, src[o, r, 0]) - m)
                out[o, r, 0] = store(storage, e / t)
        return
    for s in range(bounds[c], bounds[c + 1]):
        lo = ptr[s]
        hi = ptr[s + 1]
        if lo == hi:
            continue  # an empty segment has no rows to write
        keep = hi - lo <= cap
        # pass 1: the maximum (NaN-propagating). The first pass over the rows, the only one from memory for
        # typical segment sizes; no exp in it, so it vectorises.
        for j in range(inner):
            top[j] = minus_inf
        for i in range(lo, hi):
            r = perm[i] if gather else i
            for j in range(inner):
                top[j] = combine(AMAX, top[j], load(storage, src[o, r, j]))
        # pass 2: the sum of exp(x - top). The NaN/inf rules follow from the arithmetic, as in torch: a +inf
        # or NaN maximum makes every exp(x - top) with x = top NaN, hence the sum; a maximum of -inf
        # (every value -inf) gives exp(-inf - -inf) = NaN; a -inf next to a finite maximum gives exp(-inf) = 0.
        for j in range(inner):
            total[j] = zero
        for i in range(lo, hi):
            r = perm[i] if gather else i
            at = (i - lo) * inner
            for j in range(inner):
                d = load(storage, src[o, r, j]) - top[j]
                e = exp(d) if wide else math.exp(d)
                total[j] += e
                if keep:
                    kept[at + j] = e
        # pass 3: write every output once (for half types: one rounding, from the float32 quotient). The
        # recomputed exp equals the kept one bit for bit: keeping only saves the time.
        for i in range(lo, hi):
            r = perm[i] if gather else i
            at = (i - lo) * inner
            for j in range(inner):
                if keep:
                    e = kept[at + j]
                else:
                    d = load(storage, src[o, r, j]) - top[j]
                    e = exp(d) if wide else math.exp(d)
                out[o, r, j] = store(storage, e / total[j])


segment_softmax = Kernel(segment_softmax_kernel, literal=("storage",))


@njit(cache=True, nogil=True, error_model="numpy")
def segment_softmax_backward_kernel(counter, out, grad, perm, ptr, bounds, grad_src, storage, gather):
    """Backward of ``segment_softmax_kernel`` over the same segments: with y = out (the forward's result) and
    g = grad (the gradient with respect to it),

        grad_src[o, r, j] = y[o, r, j] * (g[o, r, j] - dot[j]),  dot[j] = sum over the segment's rows of g * y.

    out, grad, grad_src: (outer, n, inner), same element type; perm/ptr/bounds/storage/gather as in the forward.
    Two passes over each segment's rows (the second from cache for typical segment sizes).
    """
    inner = out.shape[2]
    nchunks = bounds.shape[0] - 1
    dot = acc_buffer(storage, out, inner)
    zero = identity(SUM, dot)
    while True:
        item = claim(counter)
        if item < 0:
            break
        o = item // nchunks
        c = item - o * nchunks
        if inner == 1:  # rows of one element: the dot product in a register (as the forward)
            for s in range(bounds[c], bounds[c + 1]):
                lo = ptr[s]
                hi = ptr[s + 1]
                d = zero
                for i in range(lo, hi):
                    r = perm[i] if gather else i
                    d += load(storage, grad[o, r, 0]) * load(storage, out[o, r, 0])
                for i in range(lo, hi):
                    r = perm[i] if gather else i
                    y = load(storage, out[o, r, 0])
                    grad_src[o, r, 0] = store(storage, y * (load(storage, grad[o, r, 0]) - d))
            continue
        for s in range(bounds[c], bounds[c + 1]):
            lo = ptr[s]
            hi = ptr[s + 1]
            for j in range(inner):
                dot[j] = zero
            for i in range(lo, hi):
                r = perm[i] if gather else i
                for j in range(inner):
                    dot[j] += load(storage, grad[o, r, j]) * load(storage, out[o, r, j])
            for i in range(lo, hi):
                r = perm[i] if gather else i
                for j in range(inner):
                    y = load(storage, out[o, r, j])
                    grad_src[o, r, j] = store(storage, y * (load(storage, grad[o, r, j]) - dot[j]))
    return 0


segment_softmax_backward = Kernel(segment_softmax_backward_kernel, literal=("storage",))
