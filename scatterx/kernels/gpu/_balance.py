"""How the balanced segment kernels share out their work, whatever the segments' lengths.

A CSR layout -- ``ptr`` over ``S`` segments and the ``E`` rows they cover -- is read as one sequence of
``E + S`` *events*: each segment's rows, then its end. A fixed grid of ``P`` programs takes ``K`` consecutive
events each (merge path: Merrill and Garland, "Merge-based parallel sparse matrix-vector multiplication", SC'16).
A program's work is then its share of rows plus its share of segments, the same for every program: a hub node of
20,000 rows is cut into many programs' shares, and a run of empty segments costs its programs what rows would.

Event ``d`` of the sequence is row ``d - s`` when ``s`` segments end before it. ``segments_before`` finds ``s`` by
a search over ``ptr`` whose every step compares a whole vector of candidates, so ``S = 170,000`` segments take
three dependent loads, not eighteen. The program then walks its rows ``[r_begin, r_end)`` in tiles, with a
segmented scan per tile (``scan_segments``) and the running value of the last segment carried from tile to tile;
segments that end in the program are written by it, and a segment that crosses the program's edges leaves a
partial value that ``segment_reduce.segment_fixup_kernel`` combines, in program order, once every program is done.

The host's side -- the grid, the tile, the shares computed on the host for a report -- is ``_grid.py`` (no Triton
there). The design and what was measured of it: docs/decisions/gpu-segment-kernel.md.
"""

import triton
import triton.language as tl

from ._codegen import AMAX, AMIN, PROD, _max, _min

#: candidates compared per step of ``segments_before``
SEARCH_WIDTH = tl.constexpr(128)


@triton.jit
def segments_before(ptr, S, d, WIDTH: tl.constexpr):
    """How many segments end before event ``d``: the number of ``s`` in ``[0, S)`` with ``ptr[s + 1] + s < d``
    (``ptr[s + 1] + s`` is the event of segment ``s``'s end, strictly increasing when ``ptr`` is non-decreasing).

    Each step loads ``WIDTH`` evenly spaced candidates of the range still open and keeps the stretch between the
    last one before ``d`` and the first one not: the range shrinks ``WIDTH``-fold a step. With a ``ptr`` that is not
    non-decreasing the answer is some count in ``[0, S]`` and the loop still ends (the range shrinks regardless)."""
    lo = tl.zeros([], tl.int64)
    hi = tl.zeros([], tl.int64) + S
    lanes = tl.arange(0, WIDTH).to(tl.int64)
    while lo < hi:
        step = (hi - lo + WIDTH - 1) // WIDTH
        c = lo + lanes * step
        open_ = c < hi
        ends = tl.load(ptr + c + 1, mask=open_, other=0) + c
        below = tl.sum((open_ & (ends < d)).to(tl.int32), 0).to(tl.int64)
        new_lo = tl.where(below > 0, lo + (below - 1) * step + 1, lo)
        hi = tl.minimum(lo + below * step, hi)
        lo = new_lo
    return lo


@triton.jit
def program_share(ptr, S, E, K, p, WIDTH: tl.constexpr):
    """Program ``p``'s share of the events ``[p * K, (p + 1) * K)``: ``(s_begin, s_end, r_begin, r_end)``. The
    segments ``s_begin <= s < s_end`` end in it; its rows are ``[r_begin, r_end)``, of segments ``s_begin`` to
    ``s_end`` (``s_begin``'s may have begun in an earlier program, ``s_end``'s continue in a later one)."""
    total = (tl.zeros([], tl.int64) + E) + S  # in 64 bits: E and S each fit 32 bits, their sum may not
    d0 = tl.minimum(p * K, total)
    d1 = tl.minimum(d0 + K, total)
    s_begin = segments_before(ptr, S, d0, WIDTH)
    s_end = segments_before(ptr, S, d1, WIDTH)
    # (clamped for a ptr that is not what it should be: the rows stay inside [0, E) whatever it holds)
    r_begin = tl.minimum(tl.maximum(d0 - s_begin, 0), E)
    r_end = tl.maximum(tl.minimum(d1 - s_end, E), r_begin)
    return s_begin, s_end, r_begin, r_end


# ------------------------------------------------------------------------------------------- segmented scan
# The combine of a segmented inclusive scan over (starts, value) pairs: a row that starts a segment takes its own
# value, any other row its predecessor's running value combined with its own. Associative for any associative
# combine; one function per combine, because Triton's scan takes its combine as a function of the operands only.


@triton.jit
def _scan_add(start_a, a, start_b, b):
    return start_a | start_b, tl.where(start_b, b, a + b)


@triton.jit
def _scan_mul(start_a, a, start_b, b):
    return start_a | start_b, tl.where(start_b, b, a * b)


@triton.jit
def _scan_max(start_a, a, start_b, b):
    return start_a | start_b, tl.where(start_b, b, _max(a, b))


@triton.jit
def _scan_min(start_a, a, start_b, b):
    return start_a | start_b, tl.where(start_b, b, _min(a, b))


@triton.jit
def scan_segments(starts, x, REDUCE: tl.constexpr):
    """The running reduction down the rows (axis 0) of the tile ``x``, restarting at every row where ``starts``
    (same shape) is true: a row that ends its segment holds the segment's value over the tile."""
    if REDUCE == PROD:
        _, y = tl.associative_scan((starts, x), 0, _scan_mul)
    elif REDUCE == AMAX:
        _, y = tl.associative_scan((starts, x), 0, _scan_max)
    elif REDUCE == AMIN:
        _, y = tl.associative_scan((starts, x), 0, _scan_min)
    else:
        _, y = tl.associative_scan((starts, x), 0, _scan_add)
    return y
