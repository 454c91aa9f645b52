"""The weighted gather-segment reduce on the GPU (``kernels/cpu/gather_segment_reduce.py`` has the definition and
the CPU twin): one program per ``(segment, feature block)``, as ``segment_reduce.py``'s kernel, with each loaded tile
of rows ``src[index[e]]`` scaled by ``weight[e, head]`` before the combine. No atomics.

Rows are ``(N, H, C)`` flattened to ``N x inner`` with ``inner = H * C``; feature ``f`` belongs to head ``f // C``;
per-edge weights are ``(E, H)``.
"""

import triton
import triton.language as tl

from ._codegen import combine, finalize, reduce_rows

# Half the segment kernel's tile: a program here holds three tiles (rows, weights, and the gathered rows' 64-bit
# addresses) where the segment kernel holds one. At 2,048 elements it took up to 108 registers a thread under
# Triton 3.9 and 204 under Triton 3.0 (``scatterx gpu-report``; docs/decisions/gpu-variants.md).
MAX_ELEMENTS = 1024


@triton.jit
def weighted_gather_segment_reduce_kernel(
    src,
    index,
    weight,
    ptr,
    out,
    S,
    H,
    C,
    divide,
    REDUCE: tl.constexpr,
    IDENTITY: tl.constexpr,
    ACC: tl.constexpr,
    IS_INT: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """out[s, f] = reduce(weight[e, f // C] * src[index[e], f] for e in ptr[s]:ptr[s+1]); 0 for empty segments."""
    pid = tl.program_id(0).to(tl.int64)
    inner = H * C
    fblocks = tl.cdiv(inner, BLOCK_F)
    s = pid // fblocks
    f = (pid % fblocks) * BLOCK_F + tl.arange(0, BLOCK_F)
    fmask = f < inner
    head = f // C
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    acc = tl.full([BLOCK_E, BLOCK_F], IDENTITY, ACC)
    for e0 in range(start, end, BLOCK_E):
        e = e0 + tl.arange(0, BLOCK_E)
        emask = e < end
        rows = tl.load(index + e, mask=emask, other=0).to(tl.int64)
        mask = emask[:, None] & fmask[None, :]
        x = tl.load(src + rows[:, None] * inner + f[None, :], mask=mask, other=0).to(ACC)
        w = tl.load(weight + e[:, None] * H + head[None, :], mask=mask, other=0).to(ACC)
        acc = combine(acc, tl.where(mask, w * x, IDENTITY), REDUCE)
    result = reduce_rows(acc, REDUCE)
    value = finalize(result, end - start, divide, IS_INT).to(out.dtype.element_ty)
    value = tl.where(end > start, value, tl.zeros_like(value))
    tl.store(out + s * inner + f, value, mask=fmask)
