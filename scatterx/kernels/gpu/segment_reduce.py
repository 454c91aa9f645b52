"""Segment (CSR) kernel: each program reduces one segment of rows for one block of features, with no atomics.

The sorted path of ``index_scatter_reduce``, ``segment_reduce``, ``gather_segment_reduce`` and the deterministic
unsorted path (rows gathered through a stable sort's permutation) all run ``segment_reduce_kernel``. Tensors are seen
as 3-D ``(outer, rows, inner)`` with the reduced dim in the middle, as in ``kernels/cpu``; programs and tiles as in
``_tiles.py``.
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._codegen import combine, finalize, reduce_rows
from ._tiles import load_tile, program_coordinates


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
    o, s, f, fmask = program_coordinates(S, inner, BLOCK_F)
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    acc = tl.full([BLOCK_E, BLOCK_F], IDENTITY, ACC)
    src_slice = src + o * n * inner
    for e0 in range(start, end, BLOCK_E):
        x, rows, mask = load_tile(src_slice, perm, e0, end, f, fmask, inner, IDENTITY, GATHER, BLOCK_E)
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
