"""A serial Numba kernel for small ``index_scatter_reduce`` calls: validate, then scatter in one thread.

For a call of a few thousand elements the parallel path's fixed costs dominate: building CSR offsets, balancing
chunks, setting Numba's thread count, a literal-dispatch lookup over a dozen arguments, a kernel launch through
the thread pool. This kernel takes the index as it is and reduces ``src``'s rows into an accumulator per target
in position order, so it needs no offsets and no permutation.

**Bit for bit the segment kernel's result.** For every target the rows are combined in position order (the
segment kernel's order for a sorted index, and for an unsorted one after its *stable* sort), starting from the
table's identity (which the table guarantees is bit for bit the same as starting from the first row) or from
``base`` with ``include_self``, with the same ``combine``, ``finalize`` (mean's divide by ``rows +
include_self``) and float32 accumulation of half types rounded once on store. So the choice between the
two paths, made by size only, never changes a result; ``tests/kernels/test_cpu_serial.py`` checks it bitwise.

**Nothing written on bad input.** A first pass over the index checks every value against ``[0, S)`` and, when
``sorted``, that it never decreases; on failure the kernel returns before writing, and the caller takes the
general path, whose checks explain the failure.

``narrow_scatter_kernel`` is the same kernel for one case that large unsorted calls hit: rows of one element into
a new result, for sum, amax and amin (``MARKS_EMPTY``). It tells empty targets by their accumulator's bits instead
of a record of targets seen (docs/DESIGN.md, "Narrow rows").
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import literally, njit, types
from numba.extending import overload

from ..._reductions import BY_CODE, REDUCTIONS
from ._codegen import LiteralKernel, accumulator_for, combine, finalize, identity, load, store

OK, OUT_OF_RANGE, NOT_SORTED = 0, 1, 2


@njit(cache=True, nogil=True)
def index_bound(index):
    """``max(index) + 1`` (0 for an empty index), or -1 if some entry is negative: the output size a call
    without ``dim_size`` gets."""
    top = np.int64(-1)
    for i in range(index.shape[0]):
        v = np.int64(index[i])
        if v < 0:
            return np.int64(-1)
        if v > top:
            top = v
    return top + 1


@njit(cache=True, nogil=True)
def serial_scatter_kernel(src, index, base, out, reduce, storage, sorted, include_self, fill_empty):
    """out[o, t, :] = reduce(src[o, i, :] for i with index[i] == t), for every target t; returns a status.

    src: (outer, n, inner) with n >= len(index); base, out: (outer, S, inner), same element type (``base`` is read
    only with ``include_self`` or when not ``fill_empty``); index: int32/int64 (m,).
    include_self: ``base``'s value takes part (and counts for mean). fill_empty: targets that receive nothing are
    set to 0, else to ``base``'s value. reduce, storage: literal codes (``_reductions``, ``_codegen``).
    Returns OK, or OUT_OF_RANGE / NOT_SORTED (``sorted``: the index must not decrease) before writing anything.
    Native types accumulate in ``out``: ``base`` may be ``out`` itself only with ``include_self`` or
    ``fill_empty``.
    """
    literally(reduce)
    literally(storage)
    outer = src.shape[0]
    inner = src.shape[2]
    num_targets = out.shape[1]
    m = index.shape[0]
    previous = np.int64(0)
    bad = False
    for i in range(m):  # checks first, in a loop without stores
        t = np.int64(index[i])
        bad |= (t < 0) | (t >= num_targets)
        if sorted:
            bad |= t < previous
            previous = t
    if bad:
        return NOT_SORTED if sorted and _in_range(index, num_targets) else OUT_OF_RANGE
    tallies = tally_buffer(reduce, num_targets)
    for o in range(outer):
        # native types accumulate in ``out`` itself (no buffer to allocate and copy); half types in float32
        acc = accumulator_for(storage, out[o])
        if include_self:
            for t in range(num_targets):
                for j in range(inner):
                    acc[t * inner + j] = load(storage, base[o, t, j])
        else:
            # the table's identity: combine(identity, x) == x bit for bit, so starting from it equals starting
            # from the first row -- without a branch per row on whether the target has started
            start = identity(reduce, acc)
            for k in range(num_targets * inner):
                acc[k] = start
        if inner == 1:  # a loop of its own, on 1-D views: the loop over one feature cost 2x at 1M rows
            values = src[o].reshape(src.shape[1])
            for i in range(m):
                t = np.uint64(index[i])  # checked above: in bounds (unsigned: no wraparound)
                if o == 0:
                    tally(reduce, tallies, np.int64(t))
                acc[t] = combine(reduce, acc[t], load(storage, values[i]))
        else:
            # rows of a 2-D view at an unsigned target: with ``acc[t * inner + j]`` Numba cannot tell the offset
            # is not negative, wraps it around, and the loop does not vectorise (1000 x 64: 58 -> 11 us)
            rows = acc.reshape(num_targets, inner)
            for i in range(m):
                t = np.uint64(index[i])
                if o == 0:
                    tally(reduce, tallies, np.int64(t))
                for j in range(inner):
                    rows[t, j] = combine(reduce, rows[t, j], load(storage, src[o, i, j]))
        rows = acc.reshape(num_targets, inner)
        for t in range(num_targets):
            received = tallied(reduce, tallies, t)
            if received == 0:
                for j in range(inner):
                    out[o, t, j] = 0 if fill_empty else base[o, t, j]
            else:
                count = received + (1 if include_self else 0)
                for j in range(inner):
                    out[o, t, j] = store(storage, finalize(reduce, rows[t, j], count))
    return OK


def tally_buffer(reduce, n):
    """What the kernel records of the targets it saw: a count per target for a reduction that divides by it
    (mean), else one bit per target (a byte array of counts cost 2x at 1M rows into 500k targets: the bits of
    a cache line cover 512 targets)."""


def tally(reduce, tallies, t):
    """Record one entry for target ``t``."""


def tallied(reduce, tallies, t):
    """Entries recorded for target ``t`` (mean), or 1 / 0 for seen / not seen."""


def _divides(reduce):
    code = reduce.literal_value if isinstance(reduce, types.IntegerLiteral) else None
    return None if code is None else BY_CODE[code].divide_by_count


@overload(tally_buffer, inline="always")
def _ov_tally_buffer(reduce, n):
    divides = _divides(reduce)
    if divides is None:
        return None
    if divides:
        return lambda reduce, n: np.zeros(n, np.int64)
    return lambda reduce, n: np.zeros((n >> 6) + 1, np.uint64)


@overload(tally, inline="always")
def _ov_tally(reduce, tallies, t):
    divides = _divides(reduce)
    if divides is None:
        return None
    if divides:
        def count(reduce, tallies, t):
            tallies[t] += 1
        return count

    def mark(reduce, tallies, t):
        tallies[t >> 6] |= np.uint64(1) << np.uint64(t & 63)
    return mark


@overload(tallied, inline="always")
def _ov_tallied(reduce, tallies, t):
    divides = _divides(reduce)
    if divides is None:
        return None
    if divides:
        return lambda reduce, tallies, t: np.int64(tallies[t])
    return lambda reduce, tallies, t: np.int64((tallies[t >> 6] >> np.uint64(t & 63)) & np.uint64(1))


@njit(cache=True, nogil=True)
def narrow_scatter_kernel(values, index, out, reduce, storage):
    """out[t] = reduce(values[i] for i with index[i] == t), 0 for targets that receive nothing; returns a status.

    The serial kernel's bits for one outer slice, rows of one element, a new result, and a reduction that can
    tell an empty target from its accumulator alone (``marks_empty``: sum, amax, amin). It needs no record of
    the targets seen: a target left at the identity's bits received nothing -- unless some value has those bits
    (a sum of only -0.0s is -0.0; a max of only -infs is -inf), which a vectorised pass over the values finds
    first; only then is a bitmap of the targets seen built. 1M entries into 500k targets: 2.9 ms, against 5.5 ms
    for the serial kernel with its bitmap (whose update was on every entry's path).
    values: (m,) or longer; index: int32/int64 (m,); out: (S,). reduce, storage: literal codes.
    Returns OK, or OUT_OF_RANGE before writing anything.
    """
    literally(reduce)
    literally(storage)
    num_targets = out.shape[0]
    m = index.shape[0]
    bad = False
    for i in range(m):  # checks first, in loops without stores (they vectorise)
        t = np.int64(index[i])
        bad |= (t < 0) | (t >= num_targets)
    if bad:
        return OUT_OF_RANGE
    ambiguous = False
    for i in range(m):
        ambiguous |= looks_empty(reduce, load(storage, values[i]))
    acc = accumulator_for(storage, out)
    start = identity(reduce, acc)
    for t in range(num_targets):
        acc[t] = start
    for i in range(m):
        t = np.uint64(index[i])  # checked above: in bounds (unsigned: no wraparound)
        acc[t] = combine(reduce, acc[t], load(storage, values[i]))
    if ambiguous:
        seen = np.zeros((num_targets >> 6) + 1, np.uint64)
        for i in range(m):
            t = np.uint64(index[i])
            seen[t >> np.uint64(6)] |= np.uint64(1) << (t & np.uint64(63))
        for t in range(num_targets):
            if (seen[t >> 6] >> np.uint64(t & 63)) & np.uint64(1):
                out[t] = store(storage, acc[t])
            else:
                out[t] = 0
    else:
        for t in range(num_targets):
            a = acc[t]
            out[t] = 0 if looks_empty(reduce, a) else store(storage, a)
    return OK


#: The reductions ``narrow_scatter_kernel`` takes: the result has the identity's bits only if every member has
#: them -- those that select a member (amax, amin) and the plain sum; not prod (2 * 0.5 == 1), not mean (it needs
#: counts).
MARKS_EMPTY = frozenset(r.name for r in REDUCTIONS if r.selects or (r.linear and not r.divide_by_count))


def looks_empty(reduce, x):
    """Whether an accumulator value ``x`` has the bits of the reduction's identity *and* that identity is not
    what an empty target gets (0): always False for an integer sum, whose empty targets are right as they are."""


@overload(looks_empty, inline="always")
def _ov_looks_empty(reduce, x):
    code = reduce.literal_value if isinstance(reduce, types.IntegerLiteral) else None
    if code is None:
        return None
    red = BY_CODE[code]
    if isinstance(x, types.Integer):
        value = red.identity({32: torch.int32, 64: torch.int64}[x.bitwidth])
        if value == 0:
            return lambda reduce, x: False
        typed = np.dtype(str(x)).type(value)
        return lambda reduce, x: x == typed
    typed = np.dtype(str(x)).type(red.identity_float)
    sign = math.copysign(1.0, red.identity_float)  # -0.0 and +0.0 compare equal: the sign tells them apart
    return lambda reduce, x: (x == typed) & (math.copysign(1.0, x) == sign)


@njit(cache=True, nogil=True)
def _in_range(index, num_targets):
    for i in range(index.shape[0]):
        if index[i] < 0 or index[i] >= num_targets:
            return False
    return True


serial_scatter = LiteralKernel(serial_scatter_kernel, ("reduce", "storage"))
narrow_scatter = LiteralKernel(narrow_scatter_kernel, ("reduce", "storage"))
