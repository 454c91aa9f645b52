"""Atomic scatter kernels: the unsorted path of sum and mean when results need not be bit-reproducible.

``atomic_scatter_kernel`` adds every src row into its target row of an accumulator with ``tl.atomic_add`` (and
counts the rows per target for mean); ``finish_kernel`` then applies the reduction's finalize step, ``base`` and
the empty-row fill elementwise. Floating-point atomics add in whatever order the hardware runs them, so the result
may differ in the last bits between runs: ``torch.use_deterministic_algorithms(True)`` makes
``backends/gpu/routes.py`` choose the sort + segment path instead.
"""

import triton
import triton.language as tl

from ._codegen import combine, finalize, flag


@triton.jit(do_not_specialize=["n", "m", "S"])
def atomic_scatter_kernel(
    src,
    index,
    acc,
    counts,
    n,
    m,
    S,
    inner,
    BLOCK_E: tl.constexpr,
    BLOCK_F: tl.constexpr,
):
    """acc[o, index[e], :] += src[o, e, :] for e < m; counts[index[e]] += 1, and counts[S] += the entries outside
    [0, S), which are skipped (the caller asserts on the count: the index is checked in the pass that reads it).

    The atomics are relaxed: each adds to its own address and nothing orders it against another (the finish kernel
    reads the results after this launch), so the acquire-release default would only cost its fences."""
    pid = tl.program_id(0).to(tl.int64)
    fblocks = tl.cdiv(inner, BLOCK_F)
    eblocks = tl.cdiv(m, BLOCK_E)
    fb = pid % fblocks
    rest = pid // fblocks
    eb = rest % eblocks
    o = rest // eblocks
    f = fb * BLOCK_F + tl.arange(0, BLOCK_F)
    e = eb * BLOCK_E + tl.arange(0, BLOCK_E)
    t = tl.load(index + e, mask=e < m, other=0).to(tl.int64)
    inside = (t >= 0) & (t < S)
    valid = (e < m) & inside
    mask = valid[:, None] & (f < inner)[None, :]
    x = tl.load(src + o * n * inner + e[:, None] * inner + f[None, :], mask=mask)
    at = acc + o * S * inner + t[:, None] * inner + f[None, :]
    tl.atomic_add(at, x.to(acc.dtype.element_ty), mask=mask, sem="relaxed")
    if (fb == 0) & (o == 0):  # one program per rows block counts them
        tl.atomic_add(counts + t, tl.full([BLOCK_E], 1, tl.int64), mask=valid, sem="relaxed")
        bad = (e < m) & ((t < 0) | (t >= S))
        tl.atomic_add(
            counts + S + tl.zeros([BLOCK_E], tl.int64), tl.full([BLOCK_E], 1, tl.int64), mask=bad, sem="relaxed"
        )


@triton.jit(do_not_specialize=["S", "total", "has_base", "include_self", "divide"])
def finish_kernel(
    acc,
    counts,
    base,
    out,
    S,
    inner,
    total,
    has_base,
    include_self,
    divide,
    REDUCE: tl.constexpr,
    IS_INT: tl.constexpr,
    BLOCK: tl.constexpr,
):
    """out = finalize(acc (+ base with ``include_self``), count) where the row received something; else base (with
    ``has_base``) or 0. ``include_self`` implies ``has_base``; both, and mean's ``divide``, are run-time flags.
    ``acc`` may be ``out`` itself (same type): each element is read before it is written. Program 0 also sets
    counts[S + 1] to 1 if the scatter skipped no entry (counts[S] == 0), else 0: the caller's assert."""
    has_base = flag(has_base)
    include_self = flag(include_self)
    divide = flag(divide)
    pid = tl.program_id(0).to(tl.int64)
    i = pid * BLOCK + tl.arange(0, BLOCK)
    mask = i < total
    s = (i // inner) % S
    count = tl.load(counts + s, mask=mask, other=0)
    a = tl.load(acc + i, mask=mask)
    b = tl.load(base + i, mask=mask & has_base, other=0)  # 0: an empty row's value without a base
    a = tl.where(include_self, combine(b.to(a.dtype), a, REDUCE), a)
    value = finalize(a, count + include_self.to(count.dtype), divide, IS_INT).to(out.dtype.element_ty)
    tl.store(out + i, tl.where(count > 0, value, b), mask=mask)
    if pid == 0:
        tl.store(counts + S + 1, (tl.load(counts + S) == 0).to(tl.int64))


def launch_config(inner: int):
    """(BLOCK_E, BLOCK_F) of the atomic kernel: 8 to 128 features per program, 512 elements a tile (one shape per
    power of two of the row width; narrower rows take the 8-wide tile, as ``_tiles.launch_config``)."""
    block_f = min(max(triton.next_power_of_2(max(inner, 1)), 8), 128)
    return 512 // block_f, block_f


def tile_shapes():
    """Every tile shape ``launch_config`` returns."""
    return sorted({launch_config(1 << k) for k in range(8)}, key=lambda shape: shape[1])
