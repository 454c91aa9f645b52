"""The backward of ``index_scatter_reduce``'s amax/amin: the gradient split evenly among the members equal to the
result (ties; where the result is NaN, the NaN members, which made it), over the forward's segments (programs and
tiles as in ``_tiles.py``)."""

import triton
import triton.language as tl

from ._codegen import flag
from ._tiles import load_tile, program_coordinates


@triton.jit
def is_tie(x, result):
    """Whether ``x`` ties ``result`` (broadcast): equal, or both NaN (never for integers)."""
    return (x == result) | ((x != x) & (result != result))


@triton.jit(do_not_specialize=["gather", "include_self"])
def index_scatter_reduce_backward_kernel(
    src,
    perm,
    ptr,
    result,
    grad,
    base,
    grad_src,
    ties,
    n,
    S,
    inner,
    gather,
    include_self,
    ACC: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """Backward of amax/amin over the segments of ``segment_reduce_kernel``: ties[o, s, :] = how many members tie
    the result (equal, or both NaN; base[o, s, :] counts with ``include_self``, a run-time flag); grad_src[o, r, :]
    = grad[o, s, :] / ties where src[o, r, :] ties the result, else 0. Two passes over the segment's rows, the
    second mostly from cache."""
    gather = flag(gather)
    include_self = flag(include_self)
    o, s, f, fmask = program_coordinates(S, inner, BLOCK_F)
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    at = o * S * inner + s * inner + f
    # values compare in the accumulator type (half types widened: Triton's interpreter compares bfloat16 by its bits,
    # so that -0.0 != 0.0 there; widening changes nothing on a GPU)
    r = tl.load(result + at, mask=fmask).to(ACC)
    g = tl.load(grad + at, mask=fmask).to(ACC)
    count = tl.zeros([BLOCK_E, BLOCK_F], tl.int32)
    src_slice = src + o * n * inner
    out_slice = grad_src + o * n * inner
    for e0 in range(start, end, BLOCK_E):
        x, rows, mask = load_tile(src_slice, perm, e0, end, f, fmask, inner, 0, gather, BLOCK_E)
        count += (mask & is_tie(x.to(ACC), r[None, :])).to(tl.int32)
    ties_here = tl.sum(count, 0)
    b = tl.load(base + at, mask=fmask & include_self, other=0)
    ties_here += (include_self & is_tie(b.to(ACC), r)).to(tl.int32)
    # (through float32: an integer converted straight to bfloat16 lands as its bits in Triton's interpreter)
    tl.store(ties + at, ties_here.to(tl.float32).to(ties.dtype.element_ty), mask=fmask)
    share = g / tl.maximum(ties_here, 1).to(g.dtype)
    for e0 in range(start, end, BLOCK_E):
        x, rows, mask = load_tile(src_slice, perm, e0, end, f, fmask, inner, 0, gather, BLOCK_E)
        value = tl.where(is_tie(x.to(ACC), r[None, :]), share[None, :], tl.zeros_like(share)[None, :])
        tl.store(out_slice + rows[:, None] * inner + f[None, :], value.to(grad_src.dtype.element_ty), mask=mask)
