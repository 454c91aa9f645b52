"""Runs of a sorted index: where a run starts, and the loop that reduces rows of one element run by run without a
branch per run. Shared by the runs route's kernel (``index_scatter_reduce_runs.py``) and the owner kernel's sorted
one-element path (``index_scatter_reduce_owner.py``), which writes a small call's result with the same loop
(docs/decisions/small-calls.md). A building block, not a kernel: compiled into both, so it is one of the files the
test suite's Numba cache is keyed on (``tests/conftest.py``)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ._codegen import acc_buffer, combine, finalize, identity, load, store


@njit(cache=True, nogil=True, error_model="numpy")
def run_start(index, low, p):
    """The first position of the run holding position ``p``: the first ``q`` in ``[low, p]`` with ``index[q] >=
    index[p]`` (binary search). On an index that is not sorted this is some position in ``[low, p]``; the
    kernel's checks then reject the index."""
    v = index[p]
    lo = np.int64(low)
    hi = np.int64(p)
    while lo < hi:
        mid = (lo + hi) // 2
        if index[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True, error_model="numpy")
def reduce_runs(src, index, out, lo, hi, first, last, reduce, storage):
    """One outer slice of one chunk (checked), one-element rows, without a branch per run: its targets are zeroed
    (gaps stay 0), then every position rewrites its target with its run's value so far (the last write is the
    whole run's), as two interleaved streams -- the chunk's halves, split at a run start. A mispredicted branch per
    run was most of the time at a few rows per run, and each stream's accumulator is a chain of dependent
    operations that two independent streams overlap (branching per run, branch-free and two streams measured in
    docs/decisions/narrow-rows.md). ``src``, ``out``: the slice's rows, 1-D."""
    for t in range(first, last):
        out[t] = 0
    if hi == lo:
        return
    start = identity(reduce, acc_buffer(storage, src, 0))
    mid = run_start(index, lo, (lo + hi) // 2)
    # Each position: a new run restarts the accumulator (a select once compiled, not a branch), then the
    # position's value is combined in and the run's value so far written to its target.
    a, count_a, previous_a = start, 0, index[lo]
    b, count_b, previous_b = start, 0, index[mid]
    both = min(mid - lo, hi - mid)
    for k in range(both):
        i = lo + k
        j = mid + k
        va = index[i]
        vb = index[j]
        if va != previous_a:
            a = start
            count_a = 0
        if vb != previous_b:
            b = start
            count_b = 0
        a = combine(reduce, a, load(storage, src[i]))
        b = combine(reduce, b, load(storage, src[j]))
        count_a += 1
        count_b += 1
        out[va] = store(storage, finalize(reduce, a, count_a))
        out[vb] = store(storage, finalize(reduce, b, count_b))
        previous_a = va
        previous_b = vb
    # the longer stream's rest, alone
    if mid - lo > hi - mid:
        rest, end, acc, count, previous = lo + both, mid, a, count_a, previous_a
    else:
        rest, end, acc, count, previous = mid + both, hi, b, count_b, previous_b
    for i in range(rest, end):
        v = index[i]
        if v != previous:
            acc = start
            count = 0
        acc = combine(reduce, acc, load(storage, src[i]))
        count += 1
        out[v] = store(storage, finalize(reduce, acc, count))
        previous = v
