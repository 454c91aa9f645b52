"""Numba CPU kernel for random walks on a CSR graph ``(rowptr, col)``: uniform, or node2vec's second-order walk.

It serves ``pyg_lib.random_walk`` (PyG's ``Node2Vec``, ``RootedRWSubgraph``, ``dropout_path``). Walk ``w`` starts
at ``seed[w]``; each step moves from the current node ``v`` along one of its out-edges ``col[rowptr[v]:rowptr[v +
1]]``, and a node with no out-edge keeps the walk where it is (pyg-lib's rule: the rest of the walk repeats it).

**node2vec** (``p``, ``q`` not both 1): after the first step, which is uniform, the walk that came from ``t`` to
``v`` takes the edge ``v -> x`` with a weight of ``1 / p`` if ``x == t`` (a return), ``1`` if ``t -> x`` is an edge
(``x`` is a neighbour of ``t``: distance 1), and ``1 / q`` otherwise (further out). The step is drawn by rejection:
a round draws a uniform edge of ``v`` and accepts it with probability ``weight / m``, ``m = max(1, 1 / q)``. Where
returns weigh more than that (``1 / p > m``: a small ``p``), they are folded out of the envelope instead: with ``c``
edges ``v -> t`` among ``v``'s ``d`` (two binary searches in ``v``'s row), a round picks a return with probability
``(c / p) / G``, ``G = c / p + (d - c) m``, and otherwise a uniform non-returning edge, accepted with probability
``weight / m``. Either way a round accepts with probability at least the smallest weight over the largest, and with
``q == 1`` a non-returning edge is accepted outright (no neighbour test). After ``TRIALS`` rejected rounds the step
is drawn exactly from the weights of all ``d`` edges (two passes over them): every round gives each edge the same
conditional probability, so mixing the two is exact, and a pathological ``p`` or ``q`` costs ``d`` neighbour tests
per step instead of an unbounded loop. Neighbour tests are binary searches in ``sorted_col``, whose rows are
``col``'s rows each sorted (``col`` itself when they already are). node2vec's steps, its first one included, draw
from it: its walks do not depend on the order of the edges within a row.

**Random numbers** come from the counter-based generator of ``_random.py``: the ``k``-th draw of walk ``w`` is
``draw(substream(base, w), k)``, where ``base`` is drawn by the caller from torch's default generator once per
call. A walk's numbers depend on nothing but ``(base, w, k)``, and
each walk is computed by one thread in order, so the walks do not depend on the thread count nor on how they were
chunked, and ``torch.manual_seed`` makes a call reproducible.

Work items are chunks of ``step`` walks (``_codegen.claim``). Every array is int64 (the caller converts other
index dtypes once: one compiled variant in all). No bounds checks: the caller validated the graph and the seeds.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._codegen import Kernel, claim
from ._random import below, draw, substream, unit

#: node2vec: rejection rounds before a step is drawn exactly from all of the node's edges
TRIALS = 32


@njit(inline="always", cache=True)
def _lower_bound(values, lo, hi, x):
    """The first position in ``values[lo:hi]`` (sorted) holding a value ``>= x``; ``hi`` if none."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(inline="always", cache=True)
def _weight(rowptr, sorted_col, t, x, inv_p, inv_q):
    """node2vec's unnormalised weight of the step to ``x`` by a walk that came from ``t``."""
    if x == t:
        return inv_p
    lo = rowptr[t]
    hi = rowptr[t + 1]
    i = _lower_bound(sorted_col, lo, hi, x)
    return 1.0 if i < hi and sorted_col[i] == x else inv_q


@njit(cache=True, nogil=True, error_model="numpy")
def random_walk_kernel(counter, rowptr, col, sorted_col, seed, out, step, base, p, q):
    """out[w, 0] = seed[w], and out[w, j] = the node walk ``w`` stands on after ``j`` steps.

    rowptr: (N + 1,) CSR offsets; col: (E,) targets, read by uniform walks; sorted_col: ``col`` with each row
    sorted, read by node2vec's (``col`` itself when its rows are sorted, or when ``p == q == 1``); seed: (B,); out:
    (B, L + 1); all int64. step: walks per work item; base: the call's random key (int64); p, q: node2vec's return
    and in-out parameters (> 0, finite).
    """
    walks = out.shape[0]
    length = out.shape[1] - 1
    uniform = p == 1.0 and q == 1.0
    inv_p = 1.0 / p
    inv_q = 1.0 / q
    envelope = max(1.0, inv_q)  # bounds every non-returning weight
    fold = inv_p > envelope  # returns weigh more than the envelope: drawn apart (the count of returns needed)
    key0 = np.uint64(base)
    while True:
        c = claim(counter)
        if c < 0:
            break
        for w in range(c * step, min(walks, (c + 1) * step)):
            key = substream(key0, w)
            k = np.uint64(0)  # draws made so far
            v = seed[w]
            t = np.int64(-1)  # where the walk came from (-1: nowhere yet)
            out[w, 0] = v
            j = 1
            while j <= length:
                lo = rowptr[v]
                d = rowptr[v + 1] - lo
                if d == 0:
                    break  # a node with no out-edge: the walk stays (filled below)
                if uniform:
                    x = col[lo + below(draw(key, k), d)]
                    k += np.uint64(1)
                elif t < 0:  # node2vec's first step: uniform too, from the sorted row
                    x = sorted_col[lo + below(draw(key, k), d)]
                    k += np.uint64(1)
                else:
                    x = np.int64(-1)
                    if fold:
                        # the edges v -> t are one run [a, b) of v's sorted row
                        a = _lower_bound(sorted_col, lo, lo + d, t)
                        b = _lower_bound(sorted_col, a, lo + d, t + 1)
                        back = (b - a) * inv_p
                        total = back + (d - (b - a)) * envelope
                        for _ in range(TRIALS):
                            u = unit(draw(key, k)) * total
                            k += np.uint64(1)
                            if u < back or b - a == d:
                                x = t
                                break
                            i = below(draw(key, k), d - (b - a))  # a uniform edge of v that does not return
                            k += np.uint64(1)
                            y = sorted_col[lo + i if lo + i < a else lo + i + (b - a)]
                            if q == 1.0:
                                x = y  # every non-returning weight is 1 == envelope
                                break
                            accept = unit(draw(key, k)) * envelope
                            k += np.uint64(1)
                            if accept < _weight(rowptr, sorted_col, t, y, inv_p, inv_q):
                                x = y
                                break
                    else:
                        for _ in range(TRIALS):
                            y = sorted_col[lo + below(draw(key, k), d)]  # a uniform edge of v
                            k += np.uint64(1)
                            if q == 1.0 and y != t:
                                x = y  # weight 1 == envelope
                                break
                            accept = unit(draw(key, k)) * envelope
                            k += np.uint64(1)
                            if accept < _weight(rowptr, sorted_col, t, y, inv_p, inv_q):
                                x = y
                                break
                    if x < 0:  # exact: the step drawn from the weights of all d edges
                        whole = 0.0
                        for e in range(lo, lo + d):
                            whole += _weight(rowptr, sorted_col, t, sorted_col[e], inv_p, inv_q)
                        u = unit(draw(key, k)) * whole
                        k += np.uint64(1)
                        x = sorted_col[lo + d - 1]  # (where rounding leaves u at the very end)
                        for e in range(lo, lo + d):
                            u -= _weight(rowptr, sorted_col, t, sorted_col[e], inv_p, inv_q)
                            if u < 0.0:
                                x = sorted_col[e]
                                break
                t = v
                v = x
                out[w, j] = v
                j += 1
            while j <= length:
                out[w, j] = v
                j += 1
    return 0


random_walk = Kernel(random_walk_kernel)
