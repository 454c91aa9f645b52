"""SDDMM on the GPU (``kernels/cpu/sddmm.py`` has the definition and the CPU twin): one program per ``(edge block,
feature block)`` for add/mul, per ``(edge block, head)`` for dot (the channels of a head in blocks, summed in the
accumulator type). ``targets[e]`` is the segment of edge ``e`` (``repeat_interleave`` of the segment lengths,
computed by the backend with no host sync).
"""

import triton
import triton.language as tl

from ._codegen import flag


@triton.jit(do_not_specialize=["mul"])
def sddmm_kernel(
    a,
    b,
    index,
    targets,
    out,
    E,
    H,
    C,
    mul,
    DOT: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """Without DOT: out[e, f] = a[index[e], f] * b[targets[e], f] (``mul``, a run-time flag) or + (add) over
    f < H * C; with DOT: out[e, h] = sum over c of a[index[e], h, c] * b[targets[e], h, c]."""
    mul = flag(mul)
    pid = tl.program_id(0).to(tl.int64)
    inner = H * C
    per_edge_block = H if DOT else tl.cdiv(inner, BLOCK_F)
    eb = pid // per_edge_block
    rest = pid % per_edge_block
    e = eb * BLOCK_E + tl.arange(0, BLOCK_E)
    emask = e < E
    src_rows = tl.load(index + e, mask=emask, other=0).to(tl.int64)
    dst_rows = tl.load(targets + e, mask=emask, other=0).to(tl.int64)
    if DOT:
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
        value = tl.where(mul, x * y, x + y)
        tl.store(out + e[:, None] * inner + f[None, :], value.to(out.dtype.element_ty), mask=mask)
