"""Numba CPU kernel for the backward of ``index_scatter_reduce``'s amax/amin: the gradient split evenly among the
members equal to the result (ties; where the result is NaN, the NaN members, which made it), over the forward's
segments (``segment_reduce.py``'s arrays, work items and ``gather``)."""

from __future__ import annotations

from numba import njit

from ._codegen import Kernel, acc_buffer, claim, load, store


@njit(inline="always")
def is_tie(x, result):
    """Whether member ``x`` ties ``result``: equal, or both NaN (always False for integers)."""
    return (x == result) | ((x != x) & (result != result))


@njit(cache=True, nogil=True, error_model="numpy")
def index_scatter_reduce_backward_kernel(
    counter, src, perm, ptr, bounds, result, grad, base, grad_src, ties, storage, gather, include_self
):
    """ties[o, s, :]: how many members of segment s tie its result (``is_tie``: equal, or both NaN;
    ``base[o, s, :]`` counts with include_self); grad_src[o, r, :]: grad[o, s, :] / ties where src[o, r, :] ties
    the result, else 0. Two passes over each segment's rows (the second from cache for typical degrees).
    src, grad_src: (outer, n, inner); result, grad, base, ties: (outer, S, inner); perm: int64, read only when
    ``gather``; work items: ``outer * (len(bounds) - 1)``; storage: literal code.
    """
    nchunks = bounds.shape[0] - 1
    count = acc_buffer(storage, src, src.shape[2])
    while True:
        item = claim(counter)
        if item < 0:
            break
        o = item // nchunks
        _chunk(
            o,
            item - o * nchunks,
            src,
            perm,
            ptr,
            bounds,
            result,
            grad,
            base,
            grad_src,
            ties,
            count,
            storage,
            gather,
            include_self,
        )
    return 0


@njit(cache=True, nogil=True, error_model="numpy")
def _chunk(o, c, src, perm, ptr, bounds, result, grad, base, grad_src, ties, count, storage, gather, include_self):
    """One work item: the segments of chunk ``c`` in outer slice ``o``. (A function of its own, not the body of
    the claim loop: compiled apart, its loops ran faster; see docs/decisions/compile-budget.md.)"""
    inner = src.shape[2]
    for s in range(bounds[c], bounds[c + 1]):
        lo = ptr[s]
        hi = ptr[s + 1]
        for j in range(inner):
            same = include_self and is_tie(load(storage, base[o, s, j]), load(storage, result[o, s, j]))
            count[j] = 1 if same else 0
        for i in range(lo, hi):
            r = perm[i] if gather else i
            for j in range(inner):
                if is_tie(load(storage, src[o, r, j]), load(storage, result[o, s, j])):
                    count[j] += 1
        for j in range(inner):
            ties[o, s, j] = store(storage, count[j])  # (half types: the count as a half, not its bits)
        for i in range(lo, hi):
            r = perm[i] if gather else i
            for j in range(inner):
                if is_tie(load(storage, src[o, r, j]), load(storage, result[o, s, j])):
                    grad_src[o, r, j] = store(storage, load(storage, grad[o, s, j]) / count[j])
                else:
                    grad_src[o, r, j] = 0


index_scatter_reduce_backward = Kernel(index_scatter_reduce_backward_kernel, literal=("storage",))
