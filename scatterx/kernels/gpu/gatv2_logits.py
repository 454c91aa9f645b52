"""GATv2's attention logits and their gradient on the GPU (``kernels/cpu/gatv2_logits.py`` has the definitions and the
CPU twins).

Rows are ``(N, H, C)`` flattened to ``N x inner`` with ``inner = H * C``; feature ``f`` belongs to head ``f // C``;
per-edge values are ``(E, H)``; ``att`` is ``inner`` long.

- ``gatv2_logits_kernel``: one program per ``(edge block, head)``, the head's channels in blocks, the dot product
  summed in the accumulator type. ``targets[e]`` is the segment of edge ``e`` (``repeat_interleave`` of the
  segment lengths, computed by the backend with no host sync).
- ``gatv2_grad_kernel``: one program per ``(segment, feature block)``, as the segment kernel: the edges of its
  segment in blocks, no atomics. With ``want_att`` (a run-time flag) it also writes the segment's part of the
  ``att`` gradient, ``att_part[s, f]``, which the backend sums over segments.
"""

import triton
import triton.language as tl

from ._codegen import flag


@triton.jit
def gatv2_logits_kernel(
    a,
    b,
    att,
    index,
    targets,
    out,
    E,
    H,
    C,
    slope_ptr,
    ACC: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    """out[e, h] = sum over c of att[h, c] * leaky_relu(a[index[e], h, c] + b[targets[e], h, c], slope); the slope
    is read from a 1-element tensor of the accumulator type (a Python float would be passed as fp32)."""
    pid = tl.program_id(0).to(tl.int64)
    slope = tl.load(slope_ptr).to(ACC)
    inner = H * C
    eb = pid // H
    h = pid % H
    e = eb * BLOCK_E + tl.arange(0, BLOCK_E)
    emask = e < E
    src_rows = tl.load(index + e, mask=emask, other=0).to(tl.int64)
    dst_rows = tl.load(targets + e, mask=emask, other=0).to(tl.int64)
    total = tl.zeros([BLOCK_E, BLOCK_C], ACC)
    for c0 in range(0, C, BLOCK_C):
        c = c0 + tl.arange(0, BLOCK_C)
        cmask = c < C
        mask = emask[:, None] & cmask[None, :]
        col = h * C + c
        x = tl.load(a + src_rows[:, None] * inner + col[None, :], mask=mask, other=0).to(ACC)
        y = tl.load(b + dst_rows[:, None] * inner + col[None, :], mask=mask, other=0).to(ACC)
        w = tl.load(att + col, mask=cmask, other=0).to(ACC)
        z = x + y
        z = tl.where(z > 0, z, z * slope)
        total += tl.where(mask, z * w[None, :], 0)
    tl.store(out + e * H + h, tl.sum(total, 1).to(out.dtype.element_ty), mask=emask)


@triton.jit(do_not_specialize=["want_att"])
def gatv2_grad_kernel(
    seg,
    other,
    att,
    index,
    ptr,
    grad,
    out,
    att_part,
    H,
    C,
    slope_ptr,
    want_att,
    ACC: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """out[s, f] = att[f] * sum over e in ptr[s]:ptr[s+1] of grad[e, f // C] * leaky_relu'(z), z = seg[s, f] +
    other[index[e], f]; with ``want_att``, att_part[s, f] = the same sum of grad[e, f // C] * leaky_relu(z)."""
    want_att = flag(want_att)
    pid = tl.program_id(0).to(tl.int64)
    slope = tl.load(slope_ptr).to(ACC)
    inner = H * C
    fblocks = tl.cdiv(inner, BLOCK_F)
    s = pid // fblocks
    f = (pid % fblocks) * BLOCK_F + tl.arange(0, BLOCK_F)
    fmask = f < inner
    head = f // C
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    row = tl.load(seg + s * inner + f, mask=fmask, other=0).to(ACC)
    acc = tl.zeros([BLOCK_E, BLOCK_F], ACC)
    part = tl.zeros([BLOCK_E, BLOCK_F], ACC)
    for e0 in range(start, end, BLOCK_E):
        e = e0 + tl.arange(0, BLOCK_E)
        emask = e < end
        rows = tl.load(index + e, mask=emask, other=0).to(tl.int64)
        mask = emask[:, None] & fmask[None, :]
        x = tl.load(other + rows[:, None] * inner + f[None, :], mask=mask, other=0).to(ACC)
        g = tl.load(grad + e[:, None] * H + head[None, :], mask=mask, other=0).to(ACC)
        z = x + row[None, :]
        d = tl.where(z > 0, g, g * slope)
        acc += tl.where(mask, d, 0)
        part += tl.where(mask & want_att, d * z, 0)
    w = tl.load(att + f, mask=fmask, other=0).to(ACC)
    value = tl.where(end > start, tl.sum(acc, 0) * w, 0)  # no edge: 0, not 0 * att (NaN for an infinite att)
    tl.store(out + s * inner + f, value.to(out.dtype.element_ty), mask=fmask)
    tl.store(att_part + s * inner + f, tl.sum(part, 0), mask=fmask & want_att)
