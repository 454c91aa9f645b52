"""Numba CPU kernel for ``index_scatter_reduce``'s runs route: a sorted index into a new tensor, no CSR offsets,
one pass over the data.

Rows of one element (a 1-D ``src`` or feature, or the last dim of a ``(features, edges)`` tensor) are where the
segment kernel (``segment_reduce.py``) spends most of its time on bookkeeping: a first pass over the index for the
offsets ``ptr`` and a few loops per segment, several times what reading the data costs. For wider rows, the
separate pass that builds the offsets, and the wait for it, were a noticeable share of a sorted sum (see
docs/decisions/narrow-rows.md and docs/decisions/streaming-stores.md).
Here the index is read once more to check it (a loop that vectorises) and once to reduce.

**Work items** are chunks of positions. Chunk ``c`` nominally starts at position ``c * step`` and is moved back to
the start of the run holding that position (a binary search), so no run of equal entries is split and chunk ``c``
owns exactly the targets ``[index[start_c], index[start_{c+1}])`` (chunk 0 from 0, the last one up to ``S``): it
writes every one of them, runs and gaps (0), and no other.

**Checked before written.** Each chunk first checks its entries: non-decreasing, the first not below its own first
target (nor 0), the last below the next chunk's first (and ``S``). A chunk that passes writes only its own targets
whatever the other chunks hold, and an index that passes every chunk is non-decreasing and in range. On a failure
the caller raises and drops the new tensor (the kernel only writes a result nobody else holds).

**Three ways to reduce a chunk**, by shape: one-element rows of one outer slice (``_runs.reduce_runs``: each
position rewrites its target with its run's value so far, no branch per run, in two interleaved streams);
one-element rows of several outer slices with long runs (``_reduce_lanes``: eight slices at once, run by run); wider
rows (the segment kernel's loop, run by run).

**The same bits as the segment kernel.** Each run is combined in position order (one-element rows: from the
table's identity, which the table guarantees is bit for bit the same as starting from the first row; wide rows:
from the first row, as the segment kernel), with the same ``combine``, ``finalize`` and float32 accumulation of half
types rounded once on store; ``tests/kernels/test_cpu_index_scatter_reduce_runs.py`` checks it bitwise. One thread
reduces each run, so the result does not depend on the number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._codegen import (
    Kernel,
    acc_buffer,
    accumulator,
    claim,
    combine,
    finalize,
    identity,
    in_place,
    load,
    rows_buffer,
    store,
    write_row,
)
from ._memory import store_fence
from ._runs import reduce_runs, run_start

#: Outer slices reduced together (``_reduce_lanes``), when runs are this long on average.
LANES = 8
LANES_MIN_RUN = 4
#: Positions per chunk at most, when there are several outer slices: each chunk reduces every slice in turn, and
#: its part of the index (8 bytes a position) stays in L2 for all of them instead of being read again from memory.
CHUNK_POSITIONS = 1 << 15


@njit(cache=True, nogil=True, error_model="numpy")
def index_scatter_reduce_runs_kernel(counter, src, index, out, step, reduce, storage, stream):
    """out[o, t, :] = reduce(src[o, i, :] for i with index[i] == t) for every target t, 0 where none; returns the
    number of chunks that found a bad entry (0: the index is non-decreasing and in ``[0, S)``).

    src: (outer, n, inner), n >= m; index: int64 (m,), m >= 1; out: (outer, S, inner), S >= 1, fresh; work items:
    chunks of about ``step`` positions (``counter[1]`` of them, at most m). ``stream``: wide native rows are
    written by ``stream_row`` (conditions checked by the caller). reduce, storage: literal codes.
    """
    outer = src.shape[0]
    inner = src.shape[2]
    m = index.shape[0]
    num_targets = out.shape[1]
    nchunks = counter[1]
    direct = in_place(storage, stream)
    scratch = rows_buffer(storage, src, 0 if direct else 1, inner)
    bad = 0
    while True:
        c = claim(counter)
        if c < 0:
            break
        lo = _chunk_start(index, c, nchunks, step)
        hi = _chunk_start(index, c + 1, nchunks, step)
        first = np.int64(0) if c == 0 else index[lo]
        last = np.int64(num_targets) if hi == m else min(index[hi], np.int64(num_targets))
        if hi < lo or _bad_entries(index, lo, hi, first, last):
            bad += 1
            continue
        first = max(first, 0)
        if inner > 1:
            for o in range(outer):
                acc = accumulator(storage, out[o], scratch, direct)
                _reduce_rows(src, index, out, acc, o, lo, hi, first, last, direct, stream, reduce, storage)
        elif outer == 1 or m < LANES_MIN_RUN * num_targets:
            # one-element rows: the slices as C-contiguous 1-D arrays (strided views would not vectorise)
            values = src.reshape(outer, src.shape[1] * inner)
            results = out.reshape(outer, num_targets * inner)
            for o in range(outer):
                reduce_runs(values[o], index, results[o], lo, hi, first, last, reduce, storage)
        else:
            for o in range(0, outer, LANES):
                _reduce_lanes(src, index, out, o, min(LANES, outer - o), lo, hi, first, last, reduce, storage)
    if stream:
        store_fence()  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
    return bad


@njit(cache=True, nogil=True, error_model="numpy")
def _chunk_start(index, c, nchunks, step):
    """The first position of chunk ``c`` (``m`` for ``c == nchunks``): ``c * step`` moved back to the start of its
    run, so that no run is split."""
    m = index.shape[0]
    if c == 0:
        return np.int64(0)
    if c >= nchunks:
        return np.int64(m)
    return run_start(index, 0, min(c * step, m - 1))


@njit(cache=True, nogil=True, error_model="numpy")
def _bad_entries(index, lo, hi, first, last):
    """Whether a chunk's entries are bad: decreasing, the first below ``max(first, 0)``, or the last not below
    ``last`` (a loop that vectorises). A chunk that passes writes only its own targets ``[first, last)``; an empty
    chunk owns none, except chunk 0 before a hub."""
    if hi == lo:
        return False
    nbad = (index[lo] < max(first, 0)) | (index[hi - 1] >= last)
    # unsigned positions: a signed one from a run-time start may be negative as far as Numba knows, and its
    # wraparound made every load a gather once vectorised for AVX-512 (docs/decisions/streaming-stores.md)
    one = np.uint64(1)
    for i in range(np.uint64(lo) + one, np.uint64(hi)):
        nbad += index[i] < index[i - one]
    return nbad > 0


@njit(cache=True, nogil=True, error_model="numpy")
def _reduce_rows(src, index, out, acc, o, lo, hi, first, last, direct, stream, reduce, storage):
    """Outer slice ``o`` of one chunk (checked), rows wider than one element, run by run, as the segment kernel
    reduces a segment: in ``out``'s rows themselves (``direct``) or in the scratch row ``acc``, written once."""
    inner = src.shape[2]
    done = first - 1  # the last target written
    i = lo
    while i < hi:
        v = index[i]
        for t in range(done + 1, v):  # gaps: empty targets
            for j in range(inner):
                out[o, t, j] = 0
        a = v if direct else 0
        for j in range(inner):
            acc[a, j] = load(storage, src[o, i, j])
        k = i + 1
        while k < hi and index[k] == v:
            for j in range(inner):
                acc[a, j] = combine(reduce, acc[a, j], load(storage, src[o, k, j]))
            k += 1
        for j in range(inner):
            acc[a, j] = finalize(reduce, acc[a, j], k - i)
        if not direct:
            write_row(storage, out, o, v, acc, 0, stream)
        done = v
        i = k
    for t in range(done + 1, last):
        for j in range(inner):
            out[o, t, j] = 0


@njit(cache=True, nogil=True, error_model="numpy")
def _reduce_lanes(src, index, out, o, lanes, lo, hi, first, last, reduce, storage):
    """Outer slices ``o .. o + lanes - 1`` of one chunk (checked), one-element rows, together, run by run: one
    index read per position for all of them, and their accumulators are independent chains. Pays a few branches
    per run, shared by the lanes: faster than ``reduce_runs`` slice by slice from about 4 positions a run (see
    docs/decisions/narrow-rows.md)."""
    acc = acc_buffer(storage, src, lanes)
    start = identity(reduce, acc)
    done = first - 1  # the last target written
    i = lo
    while i < hi:
        v = index[i]
        for t in range(done + 1, v):
            for lane in range(lanes):
                out[o + lane, t, 0] = 0
        for lane in range(lanes):
            acc[lane] = start
        k = i
        while k < hi and index[k] == v:
            for lane in range(lanes):
                acc[lane] = combine(reduce, acc[lane], load(storage, src[o + lane, k, 0]))
            k += 1
        for lane in range(lanes):
            out[o + lane, v, 0] = store(storage, finalize(reduce, acc[lane], k - i))
        done = v
        i = k
    for t in range(done + 1, last):
        for lane in range(lanes):
            out[o + lane, t, 0] = 0


index_scatter_reduce_runs = Kernel(index_scatter_reduce_runs_kernel, literal=("reduce", "storage"))
