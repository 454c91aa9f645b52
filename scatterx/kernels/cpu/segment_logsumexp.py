"""Numba CPU kernel for segment log-sum-exp: ``top + log(sum exp(x - top) + eps)`` per segment and feature, the
normaliser of torch_scatter's ``scatter_logsumexp`` and ``scatter_log_softmax`` (``ops/segment_logsumexp.py``).

Arrays, work items and ``gather`` are those of ``segment_reduce.py``; segment ``s`` covers positions
``ptr[s]:ptr[s+1]`` (rows ``perm[...]`` when ``gather``). Two passes over each segment's rows: ``top``, then the
sum of ``exp(x - top)``; the result is one value per ``(o, s, j)`` (no output of ``src``'s size, unlike a
composition of torch ops).

``flavour`` is what ``top`` is and what NaN does, as torch_scatter computes each:

- ``LOGSUMEXP``: ``top`` is the largest member strictly above -inf (NaN never selected), -inf if none, and a member
  whose ``x - top`` is NaN adds nothing (torch_scatter masks it to -inf);
- ``LOG_SOFTMAX``: ``top`` is the largest member strictly above the dtype's lowest finite value, 0 if none
  (``scatter_max``'s result), and NaN propagates through the sum.

Each segment is reduced by one thread in row order: the result does not depend on the number of threads.
"""

from __future__ import annotations

import math

from numba import njit

from ..._reductions import BY_NAME
from ._codegen import Kernel, acc_buffer, claim, identity, load, prefers, store
from ._exp import VECTOR_EXP_MIN_INNER, exp

AMAX = BY_NAME["amax"].code
SUM = BY_NAME["sum"].code
LOGSUMEXP, LOG_SOFTMAX = 0, 1


@njit(cache=True, nogil=True, error_model="numpy")
def segment_logsumexp_kernel(counter, src, perm, ptr, bounds, start, eps, out, storage, gather, flavour):
    """out[o, s, j] = top + log(sum over the rows r of segment s of exp(src[o, r, j] - top) + eps).

    src: (outer, n, inner); out: (outer, S, inner), same element type; start: ``top``'s start value in the
    accumulator type (-inf for LOGSUMEXP, the lowest finite value for LOG_SOFTMAX); eps: the accumulator type.
    storage: literal code."""
    inner = src.shape[2]
    nchunks = bounds.shape[0] - 1
    top = acc_buffer(storage, src, inner)
    total = acc_buffer(storage, src, inner)
    zero = identity(SUM, top)
    wide = inner >= VECTOR_EXP_MIN_INNER  # (which exp: see _exp.py)
    while True:
        item = claim(counter)
        if item < 0:
            break
        o = item // nchunks
        c = item - o * nchunks
        if inner == 1:
            # rows of one element: the maximum and the sum in registers, not in ``top[0]``/``total[0]`` where each
            # row waited for the store of the one before (the same operations: the same bits; segment-kernel.md)
            for s in range(bounds[c], bounds[c + 1]):
                lo = ptr[s]
                hi = ptr[s + 1]
                m = start
                for i in range(lo, hi):
                    x = load(storage, src[o, perm[i] if gather else i, 0])
                    if prefers(AMAX, x, m):
                        m = x
                if flavour == LOG_SOFTMAX and m == start:  # nothing selected: scatter_max's 0
                    m = zero
                t = zero
                for i in range(lo, hi):
                    d = load(storage, src[o, perm[i] if gather else i, 0]) - m
                    if flavour == LOGSUMEXP and d != d:
                        continue
                    t += math.exp(d)
                out[o, s, 0] = store(storage, m + math.log(t + eps))
            continue
        for s in range(bounds[c], bounds[c + 1]):
            lo = ptr[s]
            hi = ptr[s + 1]
            for j in range(inner):
                top[j] = start
                total[j] = zero
            for i in range(lo, hi):
                r = perm[i] if gather else i
                for j in range(inner):
                    x = load(storage, src[o, r, j])
                    if prefers(AMAX, x, top[j]):
                        top[j] = x
            if flavour == LOG_SOFTMAX:
                for j in range(inner):
                    if top[j] == start:  # nothing selected: scatter_max's 0
                        top[j] = zero
            for i in range(lo, hi):
                r = perm[i] if gather else i
                for j in range(inner):
                    d = load(storage, src[o, r, j]) - top[j]
                    if flavour == LOGSUMEXP and d != d:
                        continue
                    total[j] += exp(d) if wide else math.exp(d)
            for j in range(inner):
                out[o, s, j] = store(storage, top[j] + math.log(total[j] + eps))
    return 0


segment_logsumexp = Kernel(segment_logsumexp_kernel, literal=("storage",))
