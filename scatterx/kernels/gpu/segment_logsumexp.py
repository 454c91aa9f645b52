"""Triton kernel for segment log-sum-exp (the GPU twin of ``kernels/cpu/segment_logsumexp.py``; same arguments, same
``flavour`` rules; here ``log_softmax`` is the run-time flag for flavour 1). One program per ``(outer slice, segment,
feature block)``, two loops over the segment's rows in tiles of ``BLOCK_E``: the strict maximum, then the sum of
``exp(x - top)``."""

import triton
import triton.language as tl

from ._codegen import flag
from ._tiles import load_tile, program_coordinates


@triton.jit(do_not_specialize=["gather", "log_softmax"])
def segment_logsumexp_kernel(
    src,
    perm,
    ptr,
    out,
    n,
    S,
    inner,
    eps,
    eps_low,
    gather,
    log_softmax,
    LOWEST: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """out[o, s, :] = top + log(sum exp(src[o, r, :] - top) + eps) over segment s, where ``top`` starts at -inf, or
    at ``LOWEST`` (the finite minimum of src's dtype) with ``log_softmax``. ``eps + eps_low``: the caller's eps in
    two float32 parts (a float argument is a float32 scalar when compiled: float64's eps needs both)."""
    gather = flag(gather)
    log_softmax = flag(log_softmax)
    o, s, f, fmask = program_coordinates(S, inner, BLOCK_F)
    lo = tl.load(ptr + s)
    hi = tl.load(ptr + s + 1)
    start = tl.where(log_softmax, tl.full([], LOWEST, ACC), tl.full([], float("-inf"), ACC))
    eps = (tl.zeros([], ACC) + eps) + eps_low  # each part exact in ACC; float64 holds their sum to ~48 bits
    src_slice = src + o * n * inner
    top = tl.zeros([BLOCK_F], ACC) + start
    for e0 in range(lo, hi, BLOCK_E):
        x, _rows, mask = load_tile(src_slice, perm, e0, hi, f, fmask, inner, 0, gather, BLOCK_E)
        x = x.to(ACC)
        x = tl.where(mask & (x == x), x, float("-inf"))  # NaN and masked lanes are never selected
        tile_top = tl.max(x, 0)
        top = tl.where(tile_top > top, tile_top, top)
    top = tl.where(log_softmax & (top == start), tl.zeros_like(top), top)
    total = tl.zeros([BLOCK_E, BLOCK_F], ACC)
    for e0 in range(lo, hi, BLOCK_E):
        x, _rows, mask = load_tile(src_slice, perm, e0, hi, f, fmask, inner, 0, gather, BLOCK_E)
        d = x.to(ACC) - top[None, :]
        keep = mask & ((d == d) | log_softmax)
        total += tl.where(keep, tl.exp(tl.where(keep, d, 0.0)), 0.0)
        # log-softmax's NaN propagates: tl.where above dropped it, add it back
        total += tl.where(log_softmax & mask & (d != d), d, 0.0)
    result = top + tl.log(tl.sum(total, 0) + eps)
    tl.store(out + o * S * inner + s * inner + f, result.to(out.dtype.element_ty), mask=fmask)
