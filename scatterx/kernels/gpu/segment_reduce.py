"""Segment (CSR) kernel: each program reduces one segment of rows for one block of features, with no atomics.

The sorted path of ``index_scatter_reduce``, ``segment_reduce``, ``gather_segment_reduce`` and the deterministic
unsorted path (rows gathered through a stable sort's permutation) all run ``segment_reduce_kernel``. Tensors are seen
as 3-D ``(outer, rows, inner)`` with the reduced dim in the middle, as in ``kernels/cpu``; programs and tiles as in
``_tiles.py``.
"""

import triton
import triton.language as tl

from ._codegen import combine, finalize, reduce_rows
from ._tiles import load_tile, program_coordinates


@triton.jit
def segment_reduce_kernel(
    src,
    perm,
    ptr,
    base,
    out,
    n,
    S,
    inner,
    gather,
    has_base,
    include_self,
    divide,
    REDUCE: tl.constexpr,
    IDENTITY: tl.constexpr,
    ACC: tl.constexpr,
    IS_INT: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """out[o, s, :] = reduce(src[o, r, :] for r in segment s), r = perm[i] (``gather``) or i for i in ptr[s]:ptr[s+1].

    With ``has_base``, a segment that receives nothing gets base[o, s, :], and ``include_self`` makes base[o, s, :] a
    member; without it, an empty segment gets 0. ACC: the accumulator type (float32 for half types). ``gather``,
    ``has_base``, ``include_self`` and ``divide`` (mean: ``REDUCE`` is sum's code, ``_codegen.kernel_code``) are
    run-time flags (each read once per program, or a masked-off load)."""
    o, s, f, fmask = program_coordinates(S, inner, BLOCK_F)
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    acc = tl.full([BLOCK_E, BLOCK_F], IDENTITY, ACC)
    src_slice = src + o * n * inner
    for e0 in range(start, end, BLOCK_E):
        x, _rows, _mask = load_tile(src_slice, perm, e0, end, f, fmask, inner, IDENTITY, gather, BLOCK_E)
        acc = combine(acc, x.to(ACC), REDUCE)
    result = reduce_rows(acc, REDUCE)
    at = o * S * inner + s * inner + f
    b = tl.load(base + at, mask=fmask & has_base, other=0)  # 0: an empty segment's value without a base
    joined = include_self & has_base
    result = tl.where(joined, combine(b.to(ACC), result, REDUCE), result)
    count = end - start + joined.to(tl.int64)
    value = finalize(result, count, divide, IS_INT).to(out.dtype.element_ty)
    tl.store(out + at, tl.where(end > start, value, b), mask=fmask)
