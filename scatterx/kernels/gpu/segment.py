"""Segment (CSR) kernels: each program reduces one segment of rows for one block of features, with no atomics.

The sorted path of ``index_scatter_reduce``, ``segment_reduce`` and the deterministic unsorted path (rows gathered
through a stable sort's permutation) all run ``segment_reduce_kernel``; the amax/amin backward runs
``segment_tie_backward_kernel`` over the same segments. Tensors are seen as 3-D ``(outer, rows, inner)`` with the
reduced dim in the middle, as in ``kernels/cpu``.

Grid: one program per ``(outer slice, segment, feature block)``, flattened into axis 0 (axes 1 and 2 stop at 65,535).
A program loads ``BLOCK_E`` rows x ``BLOCK_F`` features at a time and keeps a tile of partial results, reduced over
its rows once at the end: several rows in flight per program, and no cross-lane work inside the loop.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._codegen import MEAN, combine, finalize, reduce_rows


@triton.jit
def _program_coordinates(S, inner, BLOCK_F: tl.constexpr):
    """(outer slice, segment, feature offsets, feature mask) of this program."""
    pid = tl.program_id(0).to(tl.int64)
    fblocks = tl.cdiv(inner, BLOCK_F)
    fb = pid % fblocks
    rest = pid // fblocks
    s = rest % S
    o = rest // S
    f = fb * BLOCK_F + tl.arange(0, BLOCK_F)
    return o, s, f, f < inner


@triton.jit
def _rows(perm, e, emask, GATHER: tl.constexpr):
    """The src rows of positions ``e`` of the segment order: through the permutation, or the positions."""
    if GATHER:
        return tl.load(perm + e, mask=emask, other=0).to(tl.int64)
    else:
        return e


@triton.jit
def _load_tile(src_slice, perm, e0, end, f, fmask, inner, other, GATHER: tl.constexpr, BLOCK_E: tl.constexpr):
    """Rows ``e0 .. e0+BLOCK_E`` (those before ``end``) of the segment order, features ``f``: (tile, rows, mask);
    masked-off entries hold ``other``."""
    e = e0 + tl.arange(0, BLOCK_E)
    emask = e < end
    rows = _rows(perm, e, emask, GATHER)
    mask = emask[:, None] & fmask[None, :]
    x = tl.load(src_slice + rows[:, None] * inner + f[None, :], mask=mask, other=other)
    return x, rows, mask


@triton.jit
def segment_reduce_kernel(
    src, perm, ptr, base, out,
    n, S, inner,
    REDUCE: tl.constexpr,
    IDENTITY: tl.constexpr,
    ACC: tl.constexpr,
    IS_INT: tl.constexpr,
    GATHER: tl.constexpr,
    HAS_BASE: tl.constexpr,
    INCLUDE_SELF: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """out[o, s, :] = reduce(src[o, r, :] for r in segment s), r = perm[i] (GATHER) or i for i in ptr[s]:ptr[s+1].

    With HAS_BASE, a segment that receives nothing gets base[o, s, :] and INCLUDE_SELF makes base[o, s, :] a
    member; without it, an empty segment gets 0. ACC: the accumulator type (float32 for half types)."""
    o, s, f, fmask = _program_coordinates(S, inner, BLOCK_F)
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    acc = tl.full([BLOCK_E, BLOCK_F], IDENTITY, ACC)
    src_slice = src + o * n * inner
    for e0 in range(start, end, BLOCK_E):
        x, rows, mask = _load_tile(src_slice, perm, e0, end, f, fmask, inner, IDENTITY, GATHER, BLOCK_E)
        acc = combine(acc, x.to(ACC), REDUCE)
    result = reduce_rows(acc, REDUCE)
    count = end - start
    at = o * S * inner + s * inner + f
    if HAS_BASE:
        b = tl.load(base + at, mask=fmask)
        if INCLUDE_SELF:
            result = combine(b.to(ACC), result, REDUCE)
            count += 1
        value = finalize(result, count, REDUCE, IS_INT).to(out.dtype.element_ty)
        value = tl.where(end > start, value, b)
    else:
        value = finalize(result, count, REDUCE, IS_INT).to(out.dtype.element_ty)
        value = tl.where(end > start, value, tl.zeros_like(value))
    tl.store(out + at, value, mask=fmask)


@triton.jit
def segment_tie_backward_kernel(
    src, perm, ptr, result, grad, base, grad_src, ties,
    n, S, inner,
    ACC: tl.constexpr,
    GATHER: tl.constexpr,
    INCLUDE_SELF: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """Backward of amax/amin over the segments of ``segment_reduce_kernel``: ties[o, s, :] = how many members equal
    the result (base[o, s, :] counts with INCLUDE_SELF); grad_src[o, r, :] = grad[o, s, :] / ties where
    src[o, r, :] equals the result, else 0. Two passes over the segment's rows, the second mostly from cache."""
    o, s, f, fmask = _program_coordinates(S, inner, BLOCK_F)
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    at = o * S * inner + s * inner + f
    r = tl.load(result + at, mask=fmask)
    g = tl.load(grad + at, mask=fmask).to(ACC)
    count = tl.zeros([BLOCK_E, BLOCK_F], tl.int32)
    src_slice = src + o * n * inner
    out_slice = grad_src + o * n * inner
    for e0 in range(start, end, BLOCK_E):
        x, rows, mask = _load_tile(src_slice, perm, e0, end, f, fmask, inner, 0, GATHER, BLOCK_E)
        count += (mask & (x == r[None, :])).to(tl.int32)
    ties_here = tl.sum(count, 0)
    if INCLUDE_SELF:
        b = tl.load(base + at, mask=fmask)
        ties_here += (b == r).to(tl.int32)
    tl.store(ties + at, ties_here.to(ties.dtype.element_ty), mask=fmask)
    share = g / tl.maximum(ties_here, 1).to(g.dtype)
    for e0 in range(start, end, BLOCK_E):
        x, rows, mask = _load_tile(src_slice, perm, e0, end, f, fmask, inner, 0, GATHER, BLOCK_E)
        value = tl.where(x == r[None, :], share[None, :], tl.zeros_like(share)[None, :])
        tl.store(out_slice + rows[:, None] * inner + f[None, :], value.to(grad_src.dtype.element_ty), mask=mask)


def launch_config(rows: int, segments: int, inner: int):
    """(BLOCK_E, BLOCK_F) for segments of ``rows / segments`` rows on average, ``inner`` features each.

    A program's tile holds at most 2,048 elements; features are covered first (up to 128 per program, coalesced
    loads), then rows up to the average segment length rounded up to a power of two, so that short segments do
    not leave most of the tile masked off. A starting point, not measured on a GPU (none was lent while it was
    written): see ``scatterx bench --device cuda``."""
    block_f = min(triton.next_power_of_2(max(inner, 1)), 128)
    average = -(-rows // max(segments, 1))
    block_e = max(1, min(triton.next_power_of_2(max(average, 1)), 2048 // block_f, 64))
    return block_e, block_f
