"""Segment (CSR) softmax kernels and their backward: each program handles one segment for one block of features.

Tensors are seen as 3-D ``(outer, n, inner)`` with the softmax dim in the middle, as in ``kernels/cpu``; segment
``s`` covers positions ``ptr[s]:ptr[s+1]``, position ``i`` naming row ``perm[i]`` (``gather``) or row ``i``. Every row
belongs to exactly one segment, so every output element is written exactly once (empty segments write nothing).
For every ``(o, s, j)``, over the rows ``r`` of segment ``s``::

    m = max src[o, r, j]                        (NaN propagates: the amax combine of ``_codegen``)
    out[o, r, j] = exp(src[o, r, j] - m) / sum exp(src[o, r, j] - m)

which equals ``torch.softmax`` of each segment on its own, NaN/inf included: a segment whose maximum is not finite
(+inf, NaN, or -inf because every member is -inf) is NaN throughout, and a -inf next to finite values gives 0.

Grid: one program per ``(outer slice, segment, feature block)``, flattened into axis 0 (``_tiles.py``'s
``program_coordinates``; block sizes from its ``launch_config``). The forward is the "online" softmax: the rows
are read twice, not three times (a pass is a trip to memory here, and ``exp`` is cheap). The first loop keeps a
``[BLOCK_E, BLOCK_F]`` tile of running maxima and of sums of ``exp(x - running maximum)``, a sum rescaled by
``exp(old - new)`` whenever its maximum grows; the tile is combined over its rows at the end (each row of the tile
rescaled to the segment's maximum), and the second loop writes the outputs. (The CPU kernel makes three passes
instead: there ``exp`` is the cost, see ``kernels/cpu/segment_softmax.py``.)
"""

import triton
import triton.language as tl

from ._codegen import AMAX, combine, flag, reduce_rows
from ._tiles import load_tile, program_coordinates

MINUS_INF = tl.constexpr(float("-inf"))


@triton.jit
def _finite_or_zero(m):
    """``m`` with -inf replaced by 0: the maximum to subtract while every value seen is -inf, so that the
    exponentials of those values are exp(-inf - 0) = 0 instead of exp(-inf - -inf) = NaN."""
    return tl.where(m == MINUS_INF, tl.zeros_like(m), m)


@triton.jit(do_not_specialize=["gather"])
def segment_softmax_kernel(
    src,
    perm,
    ptr,
    out,
    n,
    S,
    inner,
    gather,
    ACC: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """out[o, r, :] = softmax of src[o, :, :] over the rows of r's segment, r = perm[i] (``gather``, a run-time flag)
    or i for i in ptr[s]:ptr[s+1]. ACC: the accumulator type (float32 for half types)."""
    gather = flag(gather)
    o, s, f, fmask = program_coordinates(S, inner, BLOCK_F)
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    src_slice = src + o * n * inner
    out_slice = out + o * n * inner
    # Loop 1, online: every lane (tile row e, feature j) of the tile sees the rows e, e + BLOCK_E, ... of the
    # segment and keeps their running maximum and the sum of their exp(x - that maximum). Masked-off entries
    # load as -inf: they change neither (exp(-inf - anything) = 0).
    top = tl.full([BLOCK_E, BLOCK_F], MINUS_INF, ACC)
    total = tl.zeros([BLOCK_E, BLOCK_F], ACC)
    for e0 in range(start, end, BLOCK_E):
        x, rows, mask = load_tile(src_slice, perm, e0, end, f, fmask, inner, MINUS_INF, gather, BLOCK_E)
        x = x.to(ACC)
        new = combine(top, x, AMAX)  # NaN-propagating maximum
        shift = _finite_or_zero(new)
        # the old sum was relative to `top`: rescale it to `new` (a factor of 1 when the maximum did not grow).
        # A NaN x, or a +inf maximum (exp(inf - inf) for x = +inf), makes this lane's sum NaN: as torch, NaN.
        total = total * tl.exp(top - shift) + tl.exp(x - shift)
        top = new
    # Combine the tile's rows: the segment's maximum, and every lane's sum rescaled to it. torch's rules follow
    # from the arithmetic: a lane that saw +inf or NaN has a NaN sum (above), hence the segment; every value -inf
    # gives m = -inf and below exp(-inf - -inf) = NaN.
    m = reduce_rows(top, AMAX)
    shift = _finite_or_zero(m)
    total = tl.sum(total * tl.exp(top - shift[None, :]), 0)
    # Loop 2: write every output once (for half types: one rounding, from the ACC quotient).
    for e0 in range(start, end, BLOCK_E):
        x, rows, mask = load_tile(src_slice, perm, e0, end, f, fmask, inner, MINUS_INF, gather, BLOCK_E)
        y = tl.exp(x.to(ACC) - m[None, :]) / total[None, :]
        tl.store(out_slice + rows[:, None] * inner + f[None, :], y.to(out.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["gather"])
def segment_softmax_backward_kernel(
    out,
    grad,
    perm,
    ptr,
    grad_src,
    n,
    S,
    inner,
    gather,
    ACC: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """Backward of ``segment_softmax_kernel`` over the same segments: with y = out (the forward's result) and
    g = grad (the gradient with respect to it),

        grad_src[o, r, :] = y[o, r, :] * (g[o, r, :] - dot),  dot = sum over the segment's rows of g * y.

    Two loops over the segment's rows, the second mostly from cache."""
    gather = flag(gather)
    o, s, f, fmask = program_coordinates(S, inner, BLOCK_F)
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    out_slice = out + o * n * inner
    grad_slice = grad + o * n * inner
    grad_src_slice = grad_src + o * n * inner
    dot = tl.zeros([BLOCK_E, BLOCK_F], ACC)
    for e0 in range(start, end, BLOCK_E):
        y, rows, mask = load_tile(out_slice, perm, e0, end, f, fmask, inner, 0, gather, BLOCK_E)
        at = rows[:, None] * inner + f[None, :]
        g = tl.load(grad_slice + at, mask=mask, other=0)
        dot += y.to(ACC) * g.to(ACC)  # masked-off entries are 0 * 0
    d = tl.sum(dot, 0)
    for e0 in range(start, end, BLOCK_E):
        y, rows, mask = load_tile(out_slice, perm, e0, end, f, fmask, inner, 0, gather, BLOCK_E)
        at = rows[:, None] * inner + f[None, :]
        g = tl.load(grad_slice + at, mask=mask, other=0)
        value = y.to(ACC) * (g.to(ACC) - d[None, :])
        tl.store(grad_src_slice + at, value.to(grad_src.dtype.element_ty), mask=mask)
