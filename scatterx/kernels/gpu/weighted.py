"""Weighted message passing on the GPU: the weighted gather-segment reduce and SDDMM (``kernels/cpu/weighted.py``
has the definitions and the CPU twins).

Rows are ``(N, H, C)`` flattened to ``N x inner`` with ``inner = H * C``; feature ``f`` belongs to head
``f // C``; per-edge weights are ``(E, H)``.

- ``weighted_segment_kernel``: one program per ``(segment, feature block)``, as ``segment.py``'s kernel, with each
  loaded tile of rows ``src[index[e]]`` scaled by ``weight[e, head]`` before the combine. No atomics.
- ``sddmm_kernel``: one program per ``(edge block, feature block)`` for add/mul, per ``(edge block, head)`` for dot
  (the channels of a head in blocks, summed in the accumulator type). ``targets[e]`` is the segment of edge ``e``
  (``repeat_interleave`` of the segment lengths, computed by the backend with no host sync).
"""

from __future__ import annotations

import triton
import triton.language as tl

from ._codegen import combine, finalize, reduce_rows


@triton.jit
def weighted_segment_kernel(
    src, index, weight, ptr, out,
    S, H, C,
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
    value = finalize(result, end - start, REDUCE, IS_INT).to(out.dtype.element_ty)
    value = tl.where(end > start, value, tl.zeros_like(value))
    tl.store(out + s * inner + f, value, mask=fmask)


@triton.jit
def sddmm_kernel(
    a, b, index, targets, out,
    E, H, C,
    OP: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """OP 0 (add) / 1 (mul): out[e, f] = a[index[e], f] op b[targets[e], f] over f < H * C;
    OP 2 (dot): out[e, h] = sum over c of a[index[e], h, c] * b[targets[e], h, c]."""
    pid = tl.program_id(0).to(tl.int64)
    inner = H * C
    if OP == 2:
        per_edge_block = H
    else:
        per_edge_block = tl.cdiv(inner, BLOCK_F)
    eb = pid // per_edge_block
    rest = pid % per_edge_block
    e = eb * BLOCK_E + tl.arange(0, BLOCK_E)
    emask = e < E
    src_rows = tl.load(index + e, mask=emask, other=0).to(tl.int64)
    dst_rows = tl.load(targets + e, mask=emask, other=0).to(tl.int64)
    if OP == 2:
        total = tl.zeros([BLOCK_E, BLOCK_F], ACC)
        for c0 in range(0, C, BLOCK_F):
            c = c0 + tl.arange(0, BLOCK_F)
            mask = emask[:, None] & (c < C)[None, :]
            col = rest * C + c
            x = tl.load(a + src_rows[:, None] * inner + col[None, :], mask=mask, other=0).to(ACC)
            y = tl.load(b + dst_rows[:, None] * inner + col[None, :], mask=mask, other=0).to(ACC)
            total += x * y
        tl.store(out + e * H + rest, tl.sum(total, 1).to(out.dtype.element_ty), mask=emask)
    else:
        f = rest * BLOCK_F + tl.arange(0, BLOCK_F)
        mask = emask[:, None] & (f < inner)[None, :]
        x = tl.load(a + src_rows[:, None] * inner + f[None, :], mask=mask, other=0).to(ACC)
        y = tl.load(b + dst_rows[:, None] * inner + f[None, :], mask=mask, other=0).to(ACC)
        if OP == 1:
            value = x * y
        else:
            value = x + y
        tl.store(out + e[:, None] * inner + f[None, :], value.to(out.dtype.element_ty), mask=mask)
