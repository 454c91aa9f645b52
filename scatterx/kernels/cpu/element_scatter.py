"""Numba CPU kernels for the planner's *element plans*: scatters and gathers whose index names a target per
element, read straight from the caller's index (no tensor of flat offsets is ever built).

Two forms of map, two pairs of kernels:

- **Along a dim** (``torch.scatter``/``gather``, ONNX ``*Elements``, Paddle ``put_along_axis``): with ``index``,
  ``src`` seen as ``(outer, n, inner)`` and the data as ``(outer, S, inner)``, position ``(o, i, j)`` goes to
  ``(o, index[o, i, j], j)``. Positions that differ in ``o`` or ``j`` (the carried coordinates) never meet, so
  each work item owns ``o`` and a block of ``j`` columns and walks ``i`` in order: no conflicts, no atomics,
  and every target sees its values in ``u``'s row-major order (assign: the last write wins). Each index and
  ``src`` entry is read once in all; the accumulator is the output itself (float32 scratch for half types).
- **By coordinates** (ScatterND/GatherND with full coordinates, and any other element map as flat offsets):
  ``index`` is ``(n, k)``, position ``i`` goes to ``sum_j index[i, j] * strides[j]`` of the flat data. Targets can
  collide anywhere, so the scatter splits the *targets* into one range per work item; each streams all of
  ``index`` and combines the hits of its range into a private buffer, in position order.

Both scatters are deterministic whatever the thread count, count the entries outside their dim (``0 <= c <
size``) instead of writing them, and never touch memory outside their arrays. The gathers write 0 for a bad
entry and count it. The caller raises on a non-zero count; the data it was given is never written.

Why this module is long: the two forms of map each need a scatter and a gather kernel, and the along-dim scatter
has one loop per shape of the index (a row of positions, rows of columns); they are read together, one family of
kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._codegen import NATIVE, Kernel, acc_buffer, claim, combine, finalize, identity, load, store

__all__ = ["NATIVE", "along_gather", "along_scatter", "coords_gather", "coords_scatter", "row_gather"]

# ``track`` of the along-dim scatter: what it records per target besides the accumulator
TRACK_NONE, TRACK_FLAG, TRACK_COUNT = 0, 1, 2


#: ``_row_hits`` checks the index this many positions at a time (a vectorised pass, the chunk then in L1)
ROW_CHUNK = 512


# The hits of a work item, one function per shape of the index (a row of positions; rows of a block of columns).
# Every index, target and column is used unsigned: with a signed one Numba adds its wraparound of negative indices
# to every access, and the loops neither vectorise nor unroll. A chunk of positions (a row of columns) is checked
# in a vectorised pass first, then updated without a branch per entry; one with a bad entry is redone entry by
# entry, skipping those. Each loop is written out for ``track`` none or not: a branch on it around a store cost
# 70%. The entry-by-entry path is inline, not a call: a call in the loop, or a return from it, cost 60% even when
# never taken. Measured in docs/decisions/element-scatter.md.
@njit(cache=True, nogil=True, error_model="numpy")
def _row_hits(acc, seen, idx, val, reduce, storage, assign, track):
    """acc[idx[i]] (+)= val[i] in order of i (1-D, C-contiguous); returns the number of entries outside ``acc``."""
    S = np.uint64(acc.shape[0])
    n = idx.shape[0]
    nbad = 0
    for p0 in range(0, n, ROW_CHUNK):
        p1 = min(n, p0 + ROW_CHUNK)
        bad = False
        for p in range(p0, p1):
            bad |= np.uint64(idx[np.uint64(p)]) >= S
        if bad:
            for p in range(p0, p1):
                up = np.uint64(p)
                t = np.uint64(idx[up])
                if t >= S:
                    nbad += 1
                    continue
                x = load(storage, val[up])
                acc[t] = x if assign else combine(reduce, acc[t], x)
                if track != TRACK_NONE:
                    seen[t] = (seen[t] if track == TRACK_COUNT else 0) + 1
        elif track == TRACK_NONE:
            for p in range(p0, p1):
                up = np.uint64(p)
                t = np.uint64(idx[up])
                x = load(storage, val[up])
                acc[t] = x if assign else combine(reduce, acc[t], x)
        else:
            for p in range(p0, p1):
                up = np.uint64(p)
                t = np.uint64(idx[up])
                acc[t] = combine(reduce, acc[t], load(storage, val[up]))  # (assign tracks nothing)
                seen[t] = (seen[t] if track == TRACK_COUNT else 0) + 1
    return nbad


@njit(cache=True, nogil=True, error_model="numpy")
def _block_hits(acc, seen, idx, val, j0, j1, reduce, storage, assign, track):
    """acc[idx[i, j], j] (+)= val[i, j] for the columns ``j0 <= j < j1``, in order of i (2-D, C-contiguous; ``seen``
    flat); returns the number of entries outside ``[0, acc.shape[0])``."""
    S = np.uint64(acc.shape[0])
    inner = np.uint64(acc.shape[1])
    nbad = 0
    for i in range(idx.shape[0]):
        irow, vrow = idx[np.uint64(i)], val[np.uint64(i)]
        bad = False
        for c in range(j0, j1):
            bad |= np.uint64(irow[np.uint64(c)]) >= S
        if bad:
            for c in range(j0, j1):
                uc = np.uint64(c)
                t = np.uint64(irow[uc])
                if t >= S:
                    nbad += 1
                    continue
                x = load(storage, vrow[uc])
                acc[t, uc] = x if assign else combine(reduce, acc[t, uc], x)
                if track != TRACK_NONE:
                    k = t * inner + uc
                    seen[k] = (seen[k] if track == TRACK_COUNT else 0) + 1
        elif track == TRACK_NONE:
            for c in range(j0, j1):
                uc = np.uint64(c)
                t = np.uint64(irow[uc])
                x = load(storage, vrow[uc])
                acc[t, uc] = x if assign else combine(reduce, acc[t, uc], x)
        else:
            for c in range(j0, j1):
                uc = np.uint64(c)
                t = np.uint64(irow[uc])
                acc[t, uc] = combine(reduce, acc[t, uc], load(storage, vrow[uc]))  # (assign tracks nothing)
                k = t * inner + uc
                seen[k] = (seen[k] if track == TRACK_COUNT else 0) + 1
    return nbad


@njit(cache=True, nogil=True, error_model="numpy")
def along_scatter_kernel(
    counter, index, src, base, out, acc, seen, reduce, storage, assign, include_self, track, nblocks, block
):
    """out[o, t, j] = reduce(base[o, t, j] with include_self, then src[o, i, j] for every i with index[o, i, j]
    == t, in order of i); ``assign`` keeps the last src value instead. Targets that receive nothing keep base.

    index, src: (outer, n, inner), C-contiguous; base: (outer, S, inner), any strides; out: (outer, S, inner).
    acc: the C-contiguous accumulator, (outer, S, inner) -- ``out`` itself for native storage, float32 scratch
    for half types. seen: like acc when ``track`` is TRACK_FLAG (set to 1 on a hit: only "received something"
    matters) or TRACK_COUNT (the number of hits, for mean), else (outer, 0, 0). Work items: ``outer * nblocks``;
    item ``w`` owns ``o = w // nblocks`` and columns ``[b * block, (b + 1) * block)`` with ``b = w % nblocks``,
    and updates its block of the accumulator directly, row by row of the index (docs/decisions/element-scatter.md).
    Returns the number of index entries outside ``[0, S)``; they are skipped. reduce, storage: literal codes.
    """
    _outer, n, inner = index.shape
    S = out.shape[1]
    neutral = identity(reduce, acc)
    nbad = 0
    while True:
        w = claim(counter)
        if w < 0:
            break
        o = w // nblocks
        j0 = (w - o * nblocks) * block
        j1 = min(inner, j0 + block)
        idx, val, base_o = index[o], src[o], base[o]
        acc_o, seen_o = acc[o], seen[o]
        seen_flat = seen_o.reshape(seen_o.size)
        if inner == 1:  # (a loop over one column: its own loop, as the hits')
            first = base_o[:, 0]
            for s in range(S):
                us = np.uint64(s)
                acc_o[us, 0] = load(storage, first[us]) if include_self or assign else neutral
        else:
            for s in range(S):
                us = np.uint64(s)
                for j in range(j0, j1):
                    uj = np.uint64(j)
                    acc_o[us, uj] = load(storage, base_o[us, uj]) if include_self or assign else neutral
        if track != TRACK_NONE:  # (this block's columns only: the other blocks of ``o`` are other items')
            for s in range(S):
                for j in range(j0, j1):
                    seen_o[np.uint64(s), np.uint64(j)] = 0
        if inner == 1:  # along the last dim: one loop over the row (twice as fast as the 2-D one)
            flat = acc_o.reshape(S)
            nbad += _row_hits(flat, seen_flat, idx.reshape(n), val.reshape(n), reduce, storage, assign, track)
        else:
            nbad += _block_hits(acc_o, seen_flat, idx, val, j0, j1, reduce, storage, assign, track)
        if assign or (track == TRACK_NONE and storage == NATIVE):
            continue  # the accumulator is the output, and every target already holds its final value
        out_o = out[o]
        for s in range(S):
            us = np.uint64(s)
            for j in range(j0, j1):
                uj = np.uint64(j)
                count = seen_o[us, uj] if track != TRACK_NONE else 1
                if count == 0 and not include_self:
                    out_o[us, uj] = base_o[us, uj]
                else:
                    out_o[us, uj] = store(storage, finalize(reduce, acc_o[us, uj], count + (1 if include_self else 0)))
    return nbad


along_scatter = Kernel(along_scatter_kernel, literal=("reduce", "storage"), strided=("base",))


@njit(cache=True, nogil=True, error_model="numpy")
def along_gather_kernel(counter, base, index, out, nchunks):
    """out[o, i, j] = base[o, index[o, i, j], j] (0 for an entry outside ``[0, S)``, which is counted).

    base: (outer, S, inner); index: (outer, n, inner); out: like index, of base's element type. Work items:
    ``outer * nchunks``, each ``o`` and one of ``nchunks`` ranges of ``i``. Returns the number of bad entries."""
    _outer, n, inner = index.shape
    S = base.shape[1]
    step = (n + nchunks - 1) // nchunks
    nbad = 0
    while True:
        w = claim(counter)
        if w < 0:
            break
        o = w // nchunks
        i0 = min(n, (w - o * nchunks) * step)
        i1 = min(n, i0 + step)
        idx, src, dst = index[o], base[o], out[o]
        uS = np.uint64(S)
        for i in range(i0, i1):
            ui = np.uint64(i)
            irow, orow = idx[ui], dst[ui]
            bad = False  # a row's entries checked in one vectorised pass, then gathered without a branch
            for j in range(inner):
                bad |= np.uint64(irow[np.uint64(j)]) >= uS  # unsigned: no wraparound (see ``_block_hits``)
            if bad:
                for j in range(inner):
                    uj = np.uint64(j)
                    t = np.uint64(irow[uj])
                    ok = t < uS
                    orow[uj] = src[t if ok else np.uint64(0), uj] if ok else 0
                    nbad += not ok
            else:
                for j in range(inner):
                    uj = np.uint64(j)
                    orow[uj] = src[np.uint64(irow[uj]), uj]
    return nbad


@njit(cache=True, nogil=True, error_model="numpy")
def row_gather_kernel(counter, base, index, out, nchunks):
    """``along_gather_kernel`` without ``inner`` (gathers along the last dim): out[o, i] = base[o, index[o, i]].
    base: (outer, S); index, out: (outer, n). Rows given C-contiguous make a loop that LLVM vectorises, unlike
    the 3-D kernel with inner = 1 (see docs/decisions/element-scatter.md)."""
    _outer, n = index.shape
    S = base.shape[1]
    step = (n + nchunks - 1) // nchunks
    nbad = 0
    while True:
        w = claim(counter)
        if w < 0:
            break
        o = w // nchunks
        i0 = min(n, (w - o * nchunks) * step)
        i1 = min(n, i0 + step)
        idx, src, dst = index[o], base[o], out[o]
        for i in range(i0, i1):
            t = idx[i]
            ok = t >= 0 and t < S
            dst[i] = src[t if ok else 0] if ok else 0
            nbad += not ok
    return nbad


# typed by their actual layout (contiguous or not): a gather's loop vectorises when its rows are contiguous
along_gather = Kernel(along_gather_kernel)
row_gather = Kernel(row_gather_kernel)


@njit(cache=True, nogil=True, error_model="numpy")
def coords_scatter_kernel(counter, index, sizes, strides, src, base, out, reduce, storage, assign, include_self, step):
    """out[t] = reduce(base[t] with include_self, then src[i] for every i whose coordinates ``index[i, :]`` name t,
    in order of i); ``assign`` keeps the last src[i] instead. Targets that receive nothing get base[t].

    index: (n, k), any strides; sizes, strides: int64 (k,) -- the dims the coordinates index and their strides in
    the flat data; src: (n,); base, out: (S,). Work items: ranges of ``step`` targets; each streams all of
    ``index`` and combines the hits in its own range into a private buffer. Returns the number of rows with a
    coordinate outside its dim (never written), counted by the item of the first range. reduce, storage: literal
    codes."""
    n, ncoords = index.shape
    S = out.shape[0]
    acc = acc_buffer(storage, src, step)
    count = np.empty(step, np.int64)
    neutral = identity(reduce, acc)
    nbad = 0
    while True:
        c = claim(counter)
        if c < 0:
            break
        lo = min(S, c * step)
        hi = min(S, lo + step)
        for k in range(hi - lo):
            acc[k] = load(storage, base[lo + k]) if include_self else neutral
            count[k] = 0
        for i in range(n):
            # the flat offset, -1 when a coordinate is outside its dim (as in the gather)
            t = 0
            for j in range(ncoords):
                v = index[i, j]
                t = -1 if t < 0 or v < 0 or v >= sizes[j] else t + v * strides[j]
            if t >= lo and t < hi:
                k = t - lo
                if assign:
                    acc[k] = load(storage, src[i])
                else:
                    acc[k] = combine(reduce, acc[k], load(storage, src[i]))
                count[k] += 1
            elif t < 0 and c == 0:
                nbad += 1
        for k in range(hi - lo):
            if count[k] == 0:
                out[lo + k] = base[lo + k]
            else:  # assign passes a reduction that does not divide: finalize keeps the last value
                out[lo + k] = store(storage, finalize(reduce, acc[k], count[k] + (1 if include_self else 0)))
    return nbad


coords_scatter = Kernel(coords_scatter_kernel, literal=("reduce", "storage"), strided=("index", "src"))


@njit(cache=True, nogil=True, error_model="numpy")
def coords_gather_kernel(counter, base, index, sizes, strides, out, step):
    """out[i] = base[flat offset of index[i, :]] (0 for a row with a coordinate outside its dim, counted).

    base: (S,); index: (n, k); sizes, strides: int64 (k,); out: (n,); work items: ranges of ``step`` rows.
    Returns the number of bad rows."""
    n, ncoords = index.shape
    nbad = 0
    while True:
        c = claim(counter)
        if c < 0:
            break
        for i in range(min(n, c * step), min(n, (c + 1) * step)):
            t = 0
            for j in range(ncoords):  # as in coords_scatter_kernel
                v = index[i, j]
                t = -1 if t < 0 or v < 0 or v >= sizes[j] else t + v * strides[j]
            if t < 0:
                nbad += 1
                out[i] = 0
            else:
                out[i] = base[t]
    return nbad


coords_gather = Kernel(coords_gather_kernel)
