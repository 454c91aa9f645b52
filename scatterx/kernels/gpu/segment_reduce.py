"""The balanced segment reduction: every sorted reduction of the GPU backend runs here, whatever its segments'
lengths (the sorted path of ``index_scatter_reduce``, its sort route, ``segment_reduce``, the plain
``gather_segment_reduce``).

Two launches. ``segment_reduce_kernel`` runs a fixed grid of programs, each over an equal share of the rows and
segment ends (``_balance.py``): it walks its rows in ``[BLOCK_E, BLOCK_F]`` tiles, reduces each tile's segments
with a segmented scan, carries the last segment's running value into the next tile, and writes every segment that
ends in its share -- an empty one gets 0, or ``base``'s row. A segment that crosses a share's edges leaves one
partial value per program it touches; ``segment_fixup_kernel`` then combines those in program order, so the result
is the same from run to run (no atomics), and writes them. It also turns the programs' index checks into one flag
for the caller's ``torch._assert_async``: a sorted index that is out of range or decreases is caught by the pass
that reads it, with no launch of its own.

Tensors are seen as 3-D ``(outer, n, inner)`` with the reduced dim in the middle, as in ``kernels/cpu``. The grid is
``P x feature blocks x outer slices``, flattened into axis 0; row ``r`` of the segment order belongs to segment
``index[r]`` and reads src row ``perm[r]`` (``gather``) or ``r``.

``partials`` holds ``[2, outer, P, inner]`` values in the accumulator type: per program, the part of its first
segment that began in an earlier program (the *head*) and the part of its last segment that goes on in a later one
(the *tail*). ``meta`` holds ``1 + 3P`` int64: the flag (1: the index was good), then per program the head's
segment (-1: none), the tail's, and whether the program found a bad index entry.
"""

import triton
import triton.language as tl

from ._balance import SEARCH_WIDTH, program_share, scan_segments
from ._codegen import combine, finalize, flag, reduce_rows


@triton.jit(
    do_not_specialize=["n", "E", "S", "C", "K", "P", "gather", "weighted", "has_base", "include_self", "divide"]
)
def segment_reduce_kernel(
    src,
    perm,
    weight,
    index,
    ptr,
    base,
    out,
    partials,
    meta,
    n,
    E,
    S,
    inner,
    C,
    K,
    P,
    gather,
    weighted,
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
    """out[o, s, :] = reduce(src[o, row(r), :] for r with index[r] == s), over the ``E`` rows of ``index``, for the
    segments that end in this program's share (``K`` events of ``E + S``); empty ones get 0, or base[o, s, :] with
    ``has_base``, and ``include_self`` makes base[o, s, :] a member. With ``weighted`` (``outer == 1``) each
    member is first scaled by weight[r, f // C]: the rows are ``inner / C`` heads of ``C`` channels, and ``weight``
    holds one value per (row of the order, head). ACC: the accumulator type (float32 for half types). ``gather``,
    ``weighted``, ``has_base``, ``include_self`` and ``divide`` (mean: ``REDUCE`` is sum's code,
    ``_codegen.kernel_code``) are run-time flags."""
    gather = flag(gather)
    weighted = flag(weighted)
    has_base = flag(has_base)
    include_self = flag(include_self)
    divide = flag(divide)
    pid = tl.program_id(0).to(tl.int64)
    fblocks = tl.cdiv(inner, BLOCK_F)
    outer = tl.num_programs(0) // (P * fblocks)
    p = pid % P
    rest = pid // P
    fb = rest % fblocks
    o = rest // fblocks
    f = fb * BLOCK_F + tl.arange(0, BLOCK_F)
    fmask = f < inner
    head_of = f // C  # each feature's head, and the heads a row has (once, here: no 64-bit division in a loop)
    heads = inner // C
    lanes = tl.arange(0, BLOCK_E).to(tl.int64)
    s_begin, s_end, r_begin, r_end = program_share(ptr, S, E, K, p, SEARCH_WIDTH)
    # The first segment began in an earlier program: its rows here, a prefix of the share, reduce to a partial
    # value (the head), which the fix-up finishes. The last segment goes on in a later program: its rows here
    # reduce to the tail, the carry the rows loop ends with.
    started = (s_begin < S) & (tl.load(ptr + s_begin, mask=s_begin < S, other=0) < r_begin)
    has_head = started & (s_begin < s_end)
    head_end = tl.where(has_head, tl.load(ptr + s_begin + 1, mask=has_head, other=0), r_begin)
    has_tail = (s_end < S) & (r_end > tl.maximum(head_end, tl.load(ptr + s_end, mask=s_end < S, other=0)))
    src_slice = src + o * n * inner
    bad = tl.zeros([BLOCK_E], tl.int32)
    acc = tl.full([BLOCK_E, BLOCK_F], IDENTITY, ACC)
    for r0 in range(r_begin, head_end, BLOCK_E):
        r = r0 + lanes
        x, ids, prev, wrong = _members(
            src_slice,
            perm,
            weight,
            index,
            r,
            r < head_end,
            f,
            fmask,
            head_of,
            heads,
            n,
            S,
            inner,
            gather,
            weighted,
            IDENTITY,
            ACC,
        )
        bad |= wrong
        acc = combine(acc, x, REDUCE)
    tl.store(partials + (o * P + p) * inner + f, reduce_rows(acc, REDUCE), mask=tl.where(has_head, fmask, False))
    joined = include_self & has_base
    carry = tl.full([BLOCK_F], IDENTITY, ACC)
    carry_id = tl.zeros([], tl.int64) - 1
    for r0 in range(head_end, r_end, BLOCK_E):
        r = r0 + lanes
        valid = r < r_end
        x, ids, prev, wrong = _members(
            src_slice,
            perm,
            weight,
            index,
            r,
            valid,
            f,
            fmask,
            head_of,
            heads,
            n,
            S,
            inner,
            gather,
            weighted,
            IDENTITY,
            ACC,
        )
        bad |= wrong
        y = scan_segments(tl.broadcast_to(((r == r0) | (ids != prev))[:, None], (BLOCK_E, BLOCK_F)), x, REDUCE)
        y = tl.where((ids == carry_id)[:, None], combine(carry[None, :], y, REDUCE), y)
        # the segments that end in the tile, before the share's end: their value, with base and the divide
        nxt = tl.load(index + r + 1, mask=(r + 1) < r_end, other=-1)
        done = valid & (nxt != ids) & (ids < s_end) & (ids >= 0)
        at = (o * S + ids)[:, None] * inner + f[None, :]
        done_mask = done[:, None] & fmask[None, :]
        count = tl.load(ptr + ids + 1, mask=done, other=1) - tl.load(ptr + ids, mask=done, other=0)
        b = tl.load(base + at, mask=done_mask & has_base, other=0)
        value = tl.where(joined, combine(b.to(ACC), y, REDUCE), y)
        value = _finish(value, count[:, None] + joined.to(tl.int64), divide, IS_INT)
        tl.store(out + at, value.to(out.dtype.element_ty), mask=done_mask)
        # the running value of the tile's last segment, for the next tile
        last = tl.minimum(r0 + BLOCK_E, r_end) - 1
        carry = reduce_rows(tl.where((r == last)[:, None], y, IDENTITY), REDUCE)
        carry_id = tl.load(index + last)
    tl.store(partials + ((outer + o) * P + p) * inner + f, carry, mask=tl.where(has_tail, fmask, False))
    # the empty segments of the share
    for s0 in range(s_begin, s_end, BLOCK_E):
        s = s0 + lanes
        inside = s < s_end
        empty = inside & (tl.load(ptr + s, mask=inside, other=0) == tl.load(ptr + s + 1, mask=inside, other=0))
        at = (o * S + s)[:, None] * inner + f[None, :]
        empty_mask = empty[:, None] & fmask[None, :]
        tl.store(out + at, tl.load(base + at, mask=empty_mask & has_base, other=0), mask=empty_mask)
    # the bookkeeping of the share, once (by its first feature block of the first outer slice)
    if rest == 0:
        tl.store(meta + 1 + p, tl.where(has_head, s_begin, -1))
        tl.store(meta + 1 + P + p, tl.where(has_tail, s_end, -1))
        tl.store(meta + 1 + 2 * P + p, tl.max(bad, 0).to(tl.int64))


@triton.jit
def _finish(value, count, divide, IS_INT: tl.constexpr):
    """The table's finalize for floats; integers are left undivided here -- their mean's floor division, a long
    64-bit sequence on a GPU, would sit in the rows loop -- and divided by the backend after the kernels
    (``backends/gpu/segment_reduce.py``)."""
    if IS_INT:
        return value
    else:
        return finalize(value, count, divide, IS_INT)


@triton.jit
def _members(
    src_slice,
    perm,
    weight,
    index,
    r,
    valid,
    f,
    fmask,
    head_of,
    heads,
    n,
    S,
    inner,
    gather,
    weighted,
    IDENTITY: tl.constexpr,
    ACC: tl.constexpr,
):
    """The tile of members at positions ``r`` of the segment order (``valid`` ones; others hold the identity), as
    ``(x, ids, prev, wrong)``: values in ACC (scaled by their weights with ``weighted``), their segments, the
    segment of the position before each, and which positions hold an entry out of ``[0, S)`` or below the one
    before it."""
    ids = tl.load(index + r, mask=valid, other=0)
    prev = tl.load(index + r - 1, mask=valid & (r > 0), other=0)
    wrong = (valid & ((ids < 0) | (ids >= S) | ((r > 0) & (ids < prev)))).to(tl.int32)
    rows = tl.where(gather, tl.load(perm + r, mask=valid & gather, other=0), r)
    mask = (valid & (rows >= 0) & (rows < n))[:, None] & fmask[None, :]
    x = tl.load(src_slice + rows[:, None] * inner + f[None, :], mask=mask, other=IDENTITY).to(ACC)
    if weighted:  # (a run-time branch, uniform over the program)
        w = tl.load(weight + r[:, None] * heads + head_of[None, :], mask=mask, other=0).to(ACC)
        x = tl.where(mask, x * w, x)  # (a masked-off member stays the identity)
    return x, ids, prev, wrong


@triton.jit(do_not_specialize=["S", "P", "has_base", "include_self", "divide"])
def segment_fixup_kernel(
    ptr,
    base,
    out,
    partials,
    meta,
    S,
    inner,
    P,
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
    """After ``segment_reduce_kernel`` on the same grid: program ``p`` finishes the segment whose end is in share
    ``p`` but which began in an earlier one, combining the tails of the shares before (in order, ``BLOCK_E`` at a
    time) with its head. Program 0 also sets ``meta[0]``: 1 when no share found a bad index entry, else 0."""
    has_base = flag(has_base)
    include_self = flag(include_self)
    divide = flag(divide)
    pid = tl.program_id(0).to(tl.int64)
    fblocks = tl.cdiv(inner, BLOCK_F)
    outer = tl.num_programs(0) // (P * fblocks)
    p = pid % P
    rest = pid // P
    fb = rest % fblocks
    o = rest // fblocks
    f = fb * BLOCK_F + tl.arange(0, BLOCK_F)
    fmask = f < inner
    lanes = tl.arange(0, BLOCK_E).to(tl.int64)
    if pid == 0:
        found = tl.zeros([BLOCK_E], tl.int64)
        for q0 in range(0, P, BLOCK_E):
            found += tl.load(meta + 1 + 2 * P + q0 + lanes, mask=(q0 + lanes) < P, other=0)
        tl.store(meta, (tl.sum(found, 0) == 0).to(tl.int64))
    seg = tl.load(meta + 1 + p)
    if seg >= 0:
        acc = tl.full([BLOCK_F], IDENTITY, ACC)
        hi = p  # the shares before ``hi`` are still to read
        more = hi > 0
        while more:
            q = hi - BLOCK_E + lanes
            match = (q >= 0) & (tl.load(meta + 1 + P + q, mask=q >= 0, other=-1) == seg)
            at = ((outer + o) * P + q)[:, None] * inner + f[None, :]
            tails = tl.load(partials + at, mask=match[:, None] & fmask[None, :], other=IDENTITY)
            acc = combine(reduce_rows(tails, REDUCE), acc, REDUCE)
            more = (tl.sum(match.to(tl.int32), 0) == BLOCK_E) & (hi > BLOCK_E)
            hi -= BLOCK_E
        acc = combine(acc, tl.load(partials + (o * P + p) * inner + f, mask=fmask, other=IDENTITY), REDUCE)
        at = (o * S + seg) * inner + f
        b = tl.load(base + at, mask=fmask & has_base, other=0)
        joined = include_self & has_base
        acc = tl.where(joined, combine(b.to(ACC), acc, REDUCE), acc)
        count = tl.load(ptr + seg + 1) - tl.load(ptr + seg) + joined.to(tl.int64)
        tl.store(out + at, _finish(acc, count, divide, IS_INT).to(out.dtype.element_ty), mask=fmask)
