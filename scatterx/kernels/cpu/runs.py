"""Numba CPU kernels for a sorted index into a new tensor: no CSR offsets, one pass over the data.

``sorted_runs_kernel`` takes rows of one element: a 1-D ``src`` or feature, or the last dim of a ``(features,
edges)`` tensor. There the segment kernel (``segment.py``) spends most of its time on bookkeeping: a first pass
over the index for the offsets ``ptr`` and a few loops per segment (at 1M edges x 1 feature 3-8 ms, where reading
the data costs ~1 ms). It reads the index once more to check it (a loop that vectorises) and once to reduce.

``sorted_rows_kernel`` takes wider rows, with the segment kernel's loops but no offsets: the separate pass that
builds them, and the kernel's wait for it, were ~15% of a 1M x 64 sorted sum (docs/DESIGN.md, "Streaming
stores"). Large outputs are written with non-temporal stores, as the segment kernel writes them.

**Work items** are chunks of positions. Chunk ``c`` nominally starts at position ``c * step`` and is moved back to
the start of the run holding that position (a binary search), so no run of equal entries is split and chunk ``c``
owns exactly the targets ``[index[start_c], index[start_{c+1}])`` (chunk 0 from 0, the last one up to ``S``): it
writes every one of them, runs and gaps (0), and no other. A chunk reduces every outer slice in turn, so its part
of the index is read from cache after the first.

**Checked before written.** Each chunk first checks its entries: non-decreasing, the first not below its own first
target (nor 0), the last below the next chunk's first (and ``S``). A chunk that passes writes only its own targets
whatever the other chunks hold, and an index that passes every chunk is non-decreasing and in range. On a failure
the caller raises and drops the new tensor (the kernel only writes results nobody else holds: no ``out``, no
``base``).

**Reducing without a branch per run** (``_reduce_runs``): each position rewrites its target with its run's value
so far, the last write being the whole run's, in two interleaved streams; with several outer slices and long
runs, ``_reduce_lanes`` reduces eight slices at once, run by run.

**The same bits as the segment kernel.** Each run is combined in position order (one-element rows: from the
table's identity, which the table guarantees is bit for bit the same as starting from the first row; wide rows:
from the first row, as the segment kernel), with the same ``combine``,
``finalize`` and float32 accumulation of half types rounded once on store; ``tests/kernels/test_cpu_runs.py``
checks it bitwise. One thread reduces each run, so the result does not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import literally, njit, prange

from ._codegen import (NATIVE, PRANGE_ONLY, LiteralKernel, acc_buffer, combine, finalize, identity, load, store,
                       write_row)
from ._memory import store_fence


@njit(cache=True, nogil=True)
def _run_start(index, low, p):
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


#: Outer slices reduced together (``_reduce_lanes``), when runs are this long on average.
LANES = 8
LANES_MIN_RUN = 4
#: Positions per chunk at most, when there are several outer slices: each chunk reduces every slice in turn, and
#: its part of the index (8 bytes a position) stays in L2 for all of them instead of being read again from memory.
CHUNK_POSITIONS = 1 << 15


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def sorted_runs_kernel(src, index, out, reduce, storage, nchunks):
    """out[o, t] = reduce(src[o, i] for i with index[i] == t) for every target t, 0 where none; returns the
    number of chunks that found a bad entry (0: the index is non-decreasing and in ``[0, S)``).

    src: (outer, n) with n >= m; index: int32/int64 (m,), m >= 1; out: (outer, S), S >= 1, fresh; nchunks:
    chunks of positions, 1 <= nchunks <= m. reduce, storage: literal codes.
    """
    literally(reduce)
    literally(storage)
    outer = src.shape[0]
    m = index.shape[0]
    num_targets = out.shape[1]
    starts = _chunk_starts(index, nchunks)
    bad = np.zeros(nchunks, np.int64)
    for c in prange(nchunks):
        lo, hi, first, last, ok = _checked_chunk(index, starts, c, num_targets)
        if not ok:
            bad[c] = 1
            continue
        if outer == 1 or m < LANES_MIN_RUN * num_targets:
            for o in range(outer):
                _reduce_runs(src, index, out, o, lo, hi, first, last, reduce, storage)
        else:
            for o in range(0, outer, LANES):
                _reduce_lanes(src, index, out, o, min(LANES, outer - o), lo, hi, first, last, reduce, storage)
    total = 0
    for c in range(nchunks):
        total += bad[c]
    return total


@njit(cache=True, nogil=True)
def _chunk_starts(index, nchunks):
    """The first position of each of ``nchunks`` chunks (and ``m`` after the last): ``c * step`` moved back to
    the start of its run, so that no run is split."""
    m = index.shape[0]
    step = (m + nchunks - 1) // nchunks
    starts = np.empty(nchunks + 1, np.int64)
    starts[0] = 0
    for c in range(1, nchunks):
        starts[c] = _run_start(index, 0, min(c * step, m - 1))
    starts[nchunks] = m
    return starts


@njit(cache=True, nogil=True)
def _checked_chunk(index, starts, c, num_targets):
    """Chunk ``c``: its positions ``[lo, hi)``, the targets it owns ``[first, last)`` -- from its first entry (0
    for chunk 0) to the next chunk's first entry (``num_targets`` for the last chunk); an empty chunk owns none,
    except chunk 0 before a hub -- and whether its entries passed ``_bad_entries`` (then it may write exactly its
    own targets)."""
    m = index.shape[0]
    lo = starts[c]
    hi = starts[c + 1]
    first = np.int64(0) if c == 0 else np.int64(index[lo])
    last = np.int64(num_targets) if hi == m else min(np.int64(index[hi]), np.int64(num_targets))
    ok = hi >= lo and not _bad_entries(index, lo, hi, first, last)
    return lo, hi, first, last, ok


@njit(cache=True, nogil=True)
def _bad_entries(index, lo, hi, first, last):
    """Whether a chunk's entries are bad: decreasing, the first below ``max(first, 0)``, or the last not below
    ``last`` (a loop that vectorises). A chunk that passes writes only its own targets."""
    if hi == lo:
        return False
    nbad = (np.int64(index[lo]) < max(first, 0)) | (np.int64(index[hi - 1]) >= last)
    for i in range(lo + 1, hi):
        nbad += index[i] < index[i - 1]
    return nbad > 0


@njit(cache=True, nogil=True)
def _reduce_runs(src, index, out, o, lo, hi, first, last, reduce, storage):
    """Row ``o`` of one chunk (checked), without a branch per run: its targets are zeroed (gaps stay 0), then
    every position rewrites its target with its run's value so far (the last write is the whole run's), as two
    interleaved streams -- the chunk's halves, split at a run start. A mispredicted branch per run was most of
    the time at a few rows per run, and each stream's accumulator is a chain of dependent operations that two
    independent streams overlap (1M rows, one thread: 6.1 ms branching per run at 2 rows a run, 2.6 ms
    branch-free, 1.6 ms in two streams)."""
    literally(reduce)
    literally(storage)
    src = src[o]
    out = out[o]
    for t in range(max(first, 0), last):
        out[t] = 0
    if hi == lo:
        return
    start = identity(reduce, acc_buffer(storage, src, 0))
    mid = _run_start(index, lo, (lo + hi) // 2)
    # Each position: a new run restarts the accumulator (a select once compiled, not a branch), then the
    # position's value is combined in and the run's value so far written to its target.
    a, count_a, previous_a = start, 0, np.int64(index[lo])
    b, count_b, previous_b = start, 0, np.int64(index[mid])
    both = min(mid - lo, hi - mid)
    for k in range(both):
        i = lo + k
        j = mid + k
        va = np.int64(index[i])
        vb = np.int64(index[j])
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
        v = np.int64(index[i])
        if v != previous:
            acc = start
            count = 0
        acc = combine(reduce, acc, load(storage, src[i]))
        count += 1
        out[v] = store(storage, finalize(reduce, acc, count))
        previous = v


@njit(cache=True, nogil=True)
def _reduce_lanes(src, index, out, o, lanes, lo, hi, first, last, reduce, storage):
    """Rows ``o .. o + lanes - 1`` of one chunk (checked) together, run by run: one index read per position for
    all of them, and their accumulators are independent chains. Pays a few branches per run, shared by the
    lanes: faster than ``_reduce_runs`` row by row from about 4 positions a run (a (16, 1M) tensor, 2 threads:
    11 ms against 17 ms at 10 a run, 20 ms against 16 ms at 2)."""
    literally(reduce)
    literally(storage)
    acc = acc_buffer(storage, src, lanes)
    start = identity(reduce, acc)
    done = max(first, 0) - 1  # the last target written
    i = lo
    while i < hi:
        v = np.int64(index[i])
        for t in range(done + 1, v):
            for lane in range(lanes):
                out[o + lane, t] = 0
        for lane in range(lanes):
            acc[lane] = start
        k = i
        while k < hi and index[k] == v:
            for lane in range(lanes):
                acc[lane] = combine(reduce, acc[lane], load(storage, src[o + lane, k]))
            k += 1
        for lane in range(lanes):
            out[o + lane, v] = store(storage, finalize(reduce, acc[lane], k - i))
        done = v
        i = k
    for t in range(done + 1, last):
        for lane in range(lanes):
            out[o + lane, t] = 0


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def sorted_rows_kernel(src, index, out, reduce, storage, nchunks, stream):
    """out[o, t, :] = reduce(src[o, i, :] for i with index[i] == t) for every target t, 0 where none: the wide
    rows' counterpart of ``sorted_runs_kernel``, with its chunks, checks and return value (bad chunks).

    src: (outer, n, inner), n >= m; index: int32/int64 (m,), m >= 1; out: (outer, S, inner), S >= 1, fresh;
    1 <= nchunks <= m. Each run is reduced from its first row on, in the segment kernel's order and ways (the
    same bits as ``segment.py``): native types in ``out``'s row itself; half types, and native types with
    ``stream`` (whose conditions the caller has checked), in a scratch row written once.
    """
    literally(reduce)
    literally(storage)
    outer = src.shape[0]
    inner = src.shape[2]
    num_targets = out.shape[1]
    starts = _chunk_starts(index, nchunks)
    bad = np.zeros(nchunks, np.int64)
    for c in prange(nchunks):
        lo, hi, first, last, ok = _checked_chunk(index, starts, c, num_targets)
        if not ok:
            bad[c] = 1
            continue
        # the scratch row, where one is used (half types; streamed rows)
        acc = acc_buffer(storage, src, inner if storage != NATIVE or stream else 0)
        for o in range(outer):
            done = max(first, 0) - 1  # the last target written
            i = lo
            while i < hi:
                v = np.int64(index[i])
                if v > done + 1:  # guarded here: a call per run costs ~30% of a streamed sum
                    _zero_rows(out, o, done + 1, v, acc, storage, stream)
                k = i + 1
                if storage == NATIVE and not stream:  # accumulate in out's row (no scratch row to copy out)
                    for j in range(inner):
                        out[o, v, j] = src[o, i, j]
                    while k < hi and index[k] == v:
                        for j in range(inner):
                            out[o, v, j] = combine(reduce, out[o, v, j], src[o, k, j])
                        k += 1
                    for j in range(inner):
                        out[o, v, j] = finalize(reduce, out[o, v, j], k - i)
                else:
                    for j in range(inner):
                        acc[j] = load(storage, src[o, i, j])
                    while k < hi and index[k] == v:
                        for j in range(inner):
                            acc[j] = combine(reduce, acc[j], load(storage, src[o, k, j]))
                        k += 1
                    for j in range(inner):
                        acc[j] = finalize(reduce, acc[j], k - i)
                    write_row(storage, out, o, v, acc, stream)
                done = v
                i = k
            _zero_rows(out, o, done + 1, last, acc, storage, stream)
        if stream:
            store_fence()
    total = 0
    for c in range(nchunks):
        total += bad[c]
    return total


@njit(cache=True, nogil=True)
def _zero_rows(out, o, start, stop, acc, storage, stream):
    """Rows ``out[o, start:stop, :]`` = 0 (empty targets): directly for native types written in place, else
    through the scratch row ``acc`` and ``write_row``."""
    literally(storage)
    if stop <= start:
        return
    if storage == NATIVE and not stream:
        for t in range(start, stop):
            for j in range(out.shape[2]):
                out[o, t, j] = 0
    else:
        for j in range(acc.shape[0]):
            acc[j] = 0
        for t in range(start, stop):
            write_row(storage, out, o, t, acc, stream)


sorted_runs = LiteralKernel(sorted_runs_kernel, ("reduce", "storage"))
sorted_rows = LiteralKernel(sorted_rows_kernel, ("reduce", "storage"))
