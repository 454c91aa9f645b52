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

Why this module is long: the two forms of map each need a scatter and a gather kernel, and the coordinate
scatter's target-range buffering (``_drain``) is shared; they are read together, one family of kernels.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import overload

from ._codegen import NATIVE, Kernel, acc_buffer, claim, combine, finalize, identity, load, store
from ._memory import prefetch_write

__all__ = ["NATIVE", "along_gather", "along_scatter", "coords_gather", "coords_scatter", "row_gather"]

# ``track`` of the along-dim scatter: what it records per target besides the accumulator
TRACK_NONE, TRACK_FLAG, TRACK_COUNT = 0, 1, 2


def _track(seen, k, track):
    """Record a hit on the (flat) position ``k`` in ``seen``: a flag, or a count (see ``along_scatter_kernel``)."""


@overload(_track, inline="always")
def _ov_track(seen, k, track):
    def impl(seen, k, track):
        if track == TRACK_FLAG:
            seen[k] = 1
        elif track == TRACK_COUNT:
            seen[k] += 1

    return impl


@njit(cache=True, nogil=True, error_model="numpy")
def _drain(flat, seen, start, where, what, count, reduce, assign, track):
    """Apply the first ``count`` buffered hits of one target range (positions ``start + where[e]``, values
    ``what[e]``, in order) to the accumulator. A function of its own, not inlined: it runs once per full buffer."""
    for e in range(count):
        k = start + where[e]
        if assign:
            flat[k] = what[e]
        else:
            flat[k] = combine(reduce, flat[k], what[e])
        _track(seen, k, track)


# The hits of a work item: direct (a row; a block of columns) or buffered by target range (``_drain``). Each is a
# function of its own, called once per item or per full buffer, rather than a loop of the kernel: a kernel with
# two inlined copies of ``combine`` upsets Numba's SSA check (NumbaIRAssumptionWarning) for amax/amin.
@njit(cache=True, nogil=True, error_model="numpy")
def _row_hits(flat, seen, idx, val, reduce, storage, assign, track):
    """flat[idx[i]] (+)= val[i] in order of i; returns the number of entries outside ``flat``."""
    nbad = 0
    S = flat.shape[0]
    for i in range(idx.shape[0]):
        t = idx[i]
        if t < 0 or t >= S:
            nbad += 1
            continue
        x = load(storage, val[i])
        if assign:
            flat[t] = x
        else:
            flat[t] = combine(reduce, flat[t], x)
        _track(seen, t, track)
    return nbad


@njit(cache=True, nogil=True, error_model="numpy")
def _block_hits(flat, seen, idx, val, j0, j1, reduce, storage, assign, track, prefetch):
    """flat[idx[i, j] * inner + j] (+)= val[i, j] for the columns ``j0 <= j < j1``, in order of i; returns the
    number of entries outside ``[0, flat.size / inner)``. ``prefetch``: ask for the next row's targets ahead (for
    an accumulator block larger than the cache; on one that fits, the prefetches cost a third of the time)."""
    nbad = 0
    inner = idx.shape[1]
    S = flat.shape[0] // inner
    n = idx.shape[0]
    for i in range(n):
        if prefetch and i + 1 < n:  # the next row's targets, for writing
            for j in range(j0, j1):
                prefetch_write(flat, np.int64(idx[i + 1, j]) * inner + j)  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
        for j in range(j0, j1):
            t = idx[i, j]
            if t < 0 or t >= S:
                nbad += 1
                continue
            k = t * inner + j
            x = load(storage, val[i, j])
            if assign:
                flat[k] = x
            else:
                flat[k] = combine(reduce, flat[k], x)
            _track(seen, k, track)
    return nbad


@njit(cache=True, nogil=True, error_model="numpy")
def _buffered_hits(flat, seen, idx, val, j0, j1, shift, capacity, reduce, storage, assign, track):
    """As ``_block_hits``, through buffers: each hit is appended to the buffer of its target range (``2**shift``
    rows, positions relative to the range, values loaded); a full buffer is applied by ``_drain`` while its range
    is in cache, and what is left at the end likewise. Buffers are applied in order: so are each target's hits."""
    nbad = 0
    inner = idx.shape[1]
    S = flat.shape[0] // inner
    ranges = ((S - 1) >> shift) + 1
    where = np.empty((ranges, capacity), np.int32)  # position in the range's block: local row * inner + j
    what = acc_buffer(storage, val, ranges * capacity).reshape(ranges, capacity)
    filled = np.zeros(ranges, np.int64)
    for i in range(idx.shape[0]):
        for j in range(j0, j1):
            t = idx[i, j]
            if t < 0 or t >= S:
                nbad += 1
                continue
            r = t >> shift
            f = filled[r]
            where[r, f] = (t - (r << shift)) * inner + j
            what[r, f] = load(storage, val[i, j])
            f += 1
            if f == capacity:
                _drain(flat, seen, (r << shift) * inner, where[r], what[r], f, reduce, assign, track)
                f = 0
            filled[r] = f
    for r in range(ranges):
        _drain(flat, seen, (r << shift) * inner, where[r], what[r], filled[r], reduce, assign, track)
    return nbad


@njit(cache=True, nogil=True, error_model="numpy")
def along_scatter_kernel(
    counter,
    index,
    src,
    base,
    out,
    acc,
    seen,
    reduce,
    storage,
    assign,
    include_self,
    track,
    nblocks,
    block,
    shift,
    capacity,
):
    """out[o, t, j] = reduce(base[o, t, j] with include_self, then src[o, i, j] for every i with index[o, i, j]
    == t, in order of i); ``assign`` keeps the last src value instead. Targets that receive nothing keep base.

    index, src: (outer, n, inner), any strides; base: (outer, S, inner), any strides; out: (outer, S, inner).
    acc: the C-contiguous accumulator, (outer, S, inner) -- ``out`` itself for native storage, float32 scratch
    for half types. seen: like acc when ``track`` is TRACK_FLAG (set to 1 on a hit: only "received something"
    matters) or TRACK_COUNT (the number of hits, for mean), else (outer, 0, 0). Work items: ``outer * nblocks``;
    item ``w`` owns ``o = w // nblocks`` and columns ``[b * block, (b + 1) * block)`` with ``b = w % nblocks``.

    ``shift``: targets are grouped in ranges of ``2**shift`` rows. With more than one range, an item does not
    update its accumulator block at random (every hit a cache miss once the block outgrows the cache): it appends
    each hit to its range's buffer of ``capacity`` entries, and applies a full buffer in one go, its range's block
    then being in cache. Buffers are applied in order, so every target still sees its values in order of i.
    ``shift`` 62 or 63: one range, updated directly; 63 says the block outgrows the cache (the updates then
    prefetch the next row's targets).
    Returns the number of index entries outside ``[0, S)``; they are skipped. reduce, storage: literal codes.
    """
    _outer, _n, inner = index.shape
    S = out.shape[1]
    ranges = ((S - 1) >> shift) + 1 if S > 0 else 1
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
        flat, seen_flat = acc_o.reshape(acc_o.size), seen_o.reshape(seen_o.size)
        for s in range(S):
            for j in range(j0, j1):
                acc_o[s, j] = load(storage, base_o[s, j]) if include_self or assign else neutral
        if track != TRACK_NONE:
            for s in range(S):
                for j in range(j0, j1):
                    seen_o[s, j] = 0
        if ranges == 1 and inner == 1:  # along the last dim: one loop over the row (twice as fast as the 2-D one)
            nbad += _row_hits(flat, seen_flat, idx[:, 0], val[:, 0], reduce, storage, assign, track)
        elif ranges == 1:
            nbad += _block_hits(flat, seen_flat, idx, val, j0, j1, reduce, storage, assign, track, shift == 63)
        else:
            nbad += _buffered_hits(flat, seen_flat, idx, val, j0, j1, shift, capacity, reduce, storage, assign, track)
        if assign or (track == TRACK_NONE and storage == NATIVE):
            continue  # the accumulator is the output, and every target already holds its final value
        out_o = out[o]
        for s in range(S):  # (one ``store`` in the kernel: two inlined copies upset Numba's SSA check)
            for j in range(j0, j1):
                count = seen_o[s, j] if track != TRACK_NONE else 1
                if count == 0 and not include_self:
                    out_o[s, j] = base_o[s, j]
                else:
                    out_o[s, j] = store(storage, finalize(reduce, acc_o[s, j], count + (1 if include_self else 0)))
    return nbad


along_scatter = Kernel(along_scatter_kernel, literal=("reduce", "storage"), strided=("index", "src", "base"))


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
        for i in range(i0, i1):
            for j in range(inner):
                t = idx[i, j]
                ok = t >= 0 and t < S
                dst[i, j] = src[t if ok else 0, j] if ok else 0  # selects, no branch
                nbad += not ok
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
