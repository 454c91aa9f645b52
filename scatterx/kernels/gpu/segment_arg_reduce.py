"""Triton kernel for arg-reductions over segments: the best member of each segment and its row, in one pass
(the GPU twin of ``kernels/cpu/segment_arg_reduce.py``; same arguments, same rule).

Grid and tiles as ``_tiles.py``: one program per ``(outer slice, segment, feature block)``, reading
``BLOCK_E`` rows at a time. Per tile, the best value of each feature column is found among the members that are
not NaN, then the first position holding it; it replaces the running best only if it strictly beats it (the table's
``prefers``). Tiles are taken in position order, so the first of tied members wins, as on the CPU.
"""

import triton
import triton.language as tl

from ._codegen import AMIN, flag, prefers
from ._tiles import load_tile, program_coordinates

FILL_NONE = tl.constexpr(0)
FILL_UNSELECTED = tl.constexpr(1)
FILL_EMPTY = tl.constexpr(2)


@triton.jit(do_not_specialize=["gather", "has_base"])
def segment_arg_reduce_kernel(
    src,
    perm,
    ptr,
    base,
    start,
    out,
    arg,
    n,
    S,
    inner,
    none,
    gather,
    has_base,
    fill,
    REDUCE: tl.constexpr,
    WORST: tl.constexpr,
    ACC: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """out[o, s, :], arg[o, s, :] = the member of segment s that ``prefers`` selects over its start value
    (base[o, s, :] with ``has_base``, else the one-element tensor ``start``), and its row; ``none`` where nothing
    beats the start value. WORST: a value no member is preferred to (-inf/+inf, or the integer extreme), filling
    masked lanes. ``fill`` as in the CPU kernel; ``gather``, ``has_base`` and ``fill`` are run-time values."""
    gather = flag(gather)
    has_base = flag(has_base)
    o, s, f, fmask = program_coordinates(S, inner, BLOCK_F)
    lo = tl.load(ptr + s)
    hi = tl.load(ptr + s + 1)
    at = o * S * inner + s * inner + f
    from_base = tl.load(base + at, mask=fmask & has_base, other=WORST).to(ACC)
    best = tl.where(has_base, from_base, tl.load(start).to(ACC))
    which = tl.zeros([BLOCK_F], tl.int64) + none
    src_slice = src + o * n * inner
    for e0 in range(lo, hi, BLOCK_E):
        x, _rows, mask = load_tile(src_slice, perm, e0, hi, f, fmask, inner, WORST, gather, BLOCK_E)
        x = x.to(ACC)
        x = tl.where(mask & (x == x), x, WORST)  # NaN and masked lanes never win
        top = tl.min(x, 0) if REDUCE == AMIN else tl.max(x, 0)
        at_top = mask & (x == top[None, :])
        e = e0 + tl.arange(0, BLOCK_E)
        first = tl.min(tl.where(at_top, e[:, None], hi), 0)  # the first position holding the tile's best
        found = first < hi
        better = prefers(top, best, REDUCE) & found
        row = tl.where(gather, tl.load(perm + first, mask=better & gather, other=0).to(tl.int64), first.to(tl.int64))
        best = tl.where(better, top, best)
        which = tl.where(better, row, which)
    value = best
    value = tl.where((fill == FILL_UNSELECTED) & (which == none), tl.zeros_like(value), value)
    value = tl.where((fill == FILL_EMPTY) & (hi <= lo), tl.zeros_like(value), value)
    tl.store(out + at, value.to(out.dtype.element_ty), mask=fmask)
    tl.store(arg + at, which, mask=fmask)
