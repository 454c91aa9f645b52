"""Numba CPU kernel for ``index_scatter_reduce``'s owner routes: each work item owns a whole outer slice of the
output and scatters the rows of its slice of ``src`` into accumulators in position order. No CSR offsets, no
permutation.

It serves three routes (``backends/cpu/routes.py``):

- **serial**: a small call, or narrow rows, into a new tensor (or one from ``base``: ``out=`` too), on the calling
  thread alone.
  For a call of a few thousand elements the other routes' fixed costs dominate (offsets, chunks, waking threads).
  The kernel then checks the index itself first (``check``: range, and order when ``sorted``), before writing
  anything, and counts the entries of each target;
- **slices**: an unsorted index with tiny rows and many outer slices (the last dim of a ``(features, edges)``
  tensor), one work item per slice, on every thread: gathering rows through a permutation would read memory at
  random for a few bytes each, while here each item streams its slice in order into a cache-resident accumulator.
  The backend checked the index and counted its entries (``segments.histograms``).

Rows of one element from half a group of slices on, on either route, take the **lanes kernel**
(``index_scatter_reduce_lanes``): a work item is a group of ``LANES`` slices reduced together, one index read for
the group; it counts its own entries (docs/decisions/element-scatter.md). It is a kernel of its own, not a mode of
the owner kernel, so that a first call compiles only the one it runs: nested in the owner kernel, it was a third of
the owner kernel's compile, paid by every first call of the serial route (docs/decisions/compile-budget.md, "The
lanes kernel on its own").

**Empty targets.** A target that receives nothing is 0 in a new result (``base``'s value otherwise). The kernel
tells them by ``counts`` -- or, for the reductions whose result has the identity's bits only if every member has
them (``MARKS_EMPTY``: sum, amax, amin; not prod, 2 * 0.5 == 1, nor mean) into a new result with rows of one
element, by the accumulator's bits alone (``marks``): no counting pass, whose scattered increments were half the
time of a 1M-entry call into 500k targets. (For wider rows the pass over every value below costs more than the
counting pass it saves; both measured in docs/decisions/narrow-rows.md.) A value that itself has the identity's
bits (a -0.0 in a sum, a -inf in a max) would be mistaken for "nothing": a vectorised pass over the slice finds
such values first, and the kernel then returns ``AMBIGUOUS`` for the caller to run it again with counts.

**Bit for bit the segment kernel's result.** Each target's rows are combined in position order (the segment
kernel's order for a sorted index, and for an unsorted one after its *stable* sort), starting from the table's
identity (which the table guarantees is bit for bit the same as starting from the first row) or from ``base`` with
``include_self``, with the same ``combine``, ``finalize`` (mean's divide by ``rows + include_self``) and float32
accumulation of half types rounded once on store. So the route, chosen by shape, never changes a result;
``tests/kernels/test_cpu_index_scatter_reduce_owner.py`` checks it bitwise.

Why this module is long: the owner kernel's routes (serial, slices; checked, counted, told by bits) and the lanes
kernel share their steps and their rules for empty targets, and the check and the steps that only they use
(``looks_empty``, ``divides``) sit beside them; apart, each would need the other's reasoning repeated.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, types
from numba.extending import overload

from ..._reductions import BY_CODE, REDUCTIONS
from ._codegen import (
    STEP_OPTIONS,
    Kernel,
    accumulator_for,
    claim,
    combine,
    finalize,
    identity,
    in_place,
    load,
    rows_buffer,
    store,
)
from ._runs import reduce_runs

OK, OUT_OF_RANGE, NOT_SORTED, AMBIGUOUS = 0, 1, 2, 3

#: The reductions whose empty targets ``marks`` tells from the accumulator's bits: the result has the identity's
#: bits only if every member has them -- those that select a member (amax, amin) and the plain sum.
MARKS_EMPTY = frozenset(r.name for r in REDUCTIONS if r.selects or (r.linear and not r.divide_by_count))


@njit(cache=True, nogil=True, error_model="numpy")
def index_scatter_reduce_owner_kernel(
    counter, src, index, counts, base, out, reduce, storage, check, sorted, include_self, fill_empty, marks
):
    """out[o, t, :] = reduce(src[o, i, :] for i with index[i] == t) for every target t and every outer slice o
    (the work items, ``counter[1] == outer``); returns a status (OK, OUT_OF_RANGE, NOT_SORTED, AMBIGUOUS).

    src: (outer, n, inner) with n >= len(index); base, out: (outer, S, inner), same element type (``base`` read
    only with ``include_self`` or when not ``fill_empty``; native types accumulate in ``out``, so ``base`` may be
    ``out`` only with ``include_self`` or ``fill_empty``); index: int64 (m,).
    counts: int64 (S,), the entries of each target -- counted here with ``check`` (the caller passes a buffer),
    else given; unused with ``marks``, and with ``include_self`` for a reduction that does not divide. check: the
    index is verified (range; order with ``sorted``) and a failure is returned -- for a launch on one thread only,
    into an output nobody else holds: one outer slice of rows of one element at an unsorted index is checked in its
    reducing loop (below), whose targets are clamped into range, so such an output may hold partial sums when the
    status is not OK; otherwise nothing is written before the check. include_self: ``base``'s value takes part
    (and counts for mean). fill_empty: targets that receive nothing are 0, else ``base``'s value. marks: empty
    targets told by their bits (``MARKS_EMPTY``, into a new result); AMBIGUOUS if a value could be mistaken.
    reduce, storage: literal codes.
    """
    inner = src.shape[2]
    num_targets = out.shape[1]
    m = index.shape[0]
    # one slice of rows of one element at an unsorted index: the check (and the count) in the reducing loop, which
    # reads the index anyway -- a separate pass over it was a fifth of the call (docs/decisions/narrow-rows.md,
    # "The check in the loop")
    in_loop = check and inner == 1 and not sorted and src.shape[0] == 1
    # rows of one element at a sorted index (checked) into a new result: the runs route's loop writes the result
    # itself (each run's value in a register, two runs at a time; gaps 0): no accumulators to fill, no count, no
    # last pass (docs/decisions/small-calls.md, "Sorted rows of one element")
    runs = check and inner == 1 and sorted and not include_self and fill_empty
    # starting from ``base``'s values, a reduction that does not divide needs no count: a target that receives
    # nothing keeps its start, which is ``base``'s value, and the others their accumulators as they are (the ``out=``
    # of torch_scatter's ``scatter``, ``index_add_``'s accumulation: docs/decisions/small-calls.md, "Into out=")
    counted = not (include_self and not divides(reduce))
    # the entries counted per target: for the divisor and the empty targets, unless told by bits or not needed
    tally = counted and not marks
    if in_loop and num_targets == 0 and m > 0:
        return OUT_OF_RANGE
    if check and not in_loop:
        status = _check(index, num_targets, sorted)
        if status != OK:
            return status
        if tally and not runs:
            for t in range(num_targets):
                counts[t] = 0
            if sorted:
                # (checked: non-decreasing) each position stores its run's count so far, kept in a register, so
                # the last store of a run leaves the whole count: ``counts[t] += 1`` waited at every position for
                # the store of the one before, to the same target (as the runs loop stores values)
                run = 0
                previous = -1
                for i in range(m):
                    t = index[i]
                    run = run + 1 if t == previous else 1
                    counts[np.uint64(t)] = run
                    previous = t
            else:
                for i in range(m):
                    counts[index[i]] += 1
    while True:
        o = claim(counter)
        if o < 0:
            break
        values = src[o]
        if runs:
            reduce_runs(
                values.reshape(values.shape[0]),
                index,
                out[o].reshape(num_targets),
                0,
                m,
                0,
                num_targets,
                reduce,
                storage,
            )
            continue
        if marks:
            ambiguous = False
            members = values.reshape(values.shape[0] * inner)
            for k in range(m * inner):  # a vectorised pass, no stores
                ambiguous |= looks_empty(reduce, load(storage, members[k]))
            if ambiguous:
                return AMBIGUOUS
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
        if in_loop:
            flat = values.reshape(values.shape[0])
            last = np.uint64(num_targets - 1)
            bad = False
            if tally:
                for t in range(num_targets):
                    counts[t] = 0
            # two loops, not one with a branch on ``tally`` per entry: LLVM kept the branch, 20% of a 100,000-entry
            # sum (docs/decisions/narrow-rows.md, "The check in the loop")
            if not tally:
                for i in range(m):
                    t = np.uint64(index[i])  # (unsigned: a negative entry is above ``last`` too)
                    bad |= t > last
                    t = min(t, last)  # in bounds whatever the entry: the status tells
                    acc[t] = combine(reduce, acc[t], load(storage, flat[i]))
            else:
                for i in range(m):
                    t = np.uint64(index[i])
                    bad |= t > last
                    t = min(t, last)
                    counts[t] += 1
                    acc[t] = combine(reduce, acc[t], load(storage, flat[i]))
            if bad:
                return OUT_OF_RANGE
        elif inner == 1:  # a loop of its own, on 1-D views: the loop over one feature cost 2x at 1M rows
            flat = values.reshape(values.shape[0])
            for i in range(m):
                t = np.uint64(index[i])  # checked: in bounds (unsigned: no wraparound)
                acc[t] = combine(reduce, acc[t], load(storage, flat[i]))
        else:
            # rows of a 2-D view at an unsigned target: with ``acc[t * inner + j]`` Numba cannot tell the offset
            # is not negative, wraps it around, and the loop does not vectorise (docs/decisions/narrow-rows.md)
            rows = acc.reshape(num_targets, inner)
            for i in range(m):
                t = np.uint64(index[i])
                for j in range(inner):
                    rows[t, j] = combine(reduce, rows[t, j], load(storage, values[i, j]))
        if marks:  # a new result, a reduction that does not divide: a select per element (it vectorises)
            results = out[o].reshape(num_targets * inner)
            for k in range(num_targets * inner):
                a = acc[k]
                results[k] = 0 if looks_empty(reduce, a) else store(storage, a)
            continue
        if not counted:  # every target's value is its accumulator, which native types keep in ``out`` itself
            if not in_place(storage, False):
                rows = acc.reshape(num_targets, inner)
                for t in range(num_targets):
                    for j in range(inner):
                        out[o, t, j] = store(storage, rows[t, j])
            continue
        # a row at a time, indexed in place: a view of a row per target (``out[o, t]``, a slice of ``acc``) costs
        # two atomic updates of the array's reference count, and those were most of this loop (small-calls.md)
        rows = acc.reshape(num_targets, inner)
        for t in range(num_targets):
            ut = np.uint64(t)
            received = counts[ut]
            if received == 0:
                for j in range(inner):
                    out[o, ut, j] = 0 if fill_empty else base[o, ut, j]
            else:
                total = received + (1 if include_self else 0)
                if in_place(storage, False):  # ``rows`` are ``out[o]``'s own: one array, or LLVM's overlap check fails
                    for j in range(inner):
                        rows[ut, j] = finalize(reduce, rows[ut, j], total)
                else:
                    for j in range(inner):
                        out[o, ut, j] = store(storage, finalize(reduce, rows[ut, j], total))
    return OK


#: The lanes kernel: slices reduced together, one index read for this many (a group's accumulators: a row of this
#: many values per target, 32 bytes of float32)
LANES = 8


@njit(cache=True, nogil=True, error_model="numpy")
def index_scatter_reduce_lanes_kernel(
    counter, src, index, base, out, reduce, storage, check, sorted, include_self, fill_empty
):
    """The owner kernel's routes for rows of one element (``inner == 1``) of several outer slices; returns a
    status (OK, OUT_OF_RANGE, NOT_SORTED). The arguments are the owner kernel's, less ``counts`` and ``marks``.

    A work item is a group of ``LANES`` outer slices (``counter[1] == ceil(outer / LANES)``), reduced together
    position by position -- one read of ``index[i]`` for the group, and the group's values of a target side by
    side in one scratch row (``acc[t, :]``) instead of in ``LANES`` rows far apart. The slice by slice loop read the
    index once per slice and spent a cache line per value: 3 ns an element against 0.7 here (one thread, 16 x
    62,500 into 15,625; docs/decisions/element-scatter.md). Counts its own entries per target (the empty targets,
    mean's divisor); each target's values combine in position order, from the table's identity or ``base``, so the
    bits are the slice by slice loop's."""
    if check:
        status = _check(index, out.shape[1], sorted)
        if status != OK:
            return status
    outer, n, _inner = src.shape
    num_targets = out.shape[1]
    m = index.shape[0]
    acc = rows_buffer(storage, src, num_targets, LANES)
    counts = np.empty(num_targets, np.int64)
    start = identity(reduce, acc)
    values = src.reshape(outer * n)
    rows = np.empty(LANES, np.uint64)
    while True:
        g = claim(counter)
        if g < 0:
            break
        o0 = g * LANES
        used = min(LANES, outer - o0)
        # lane l reads slice o0 + l; the lanes past the last slice read slice o0 again and are never written out
        for lane in range(LANES):
            rows[lane] = np.uint64((o0 + lane if lane < used else o0) * n)
        for t in range(num_targets):
            counts[t] = 0
            for lane in range(LANES):
                acc[t, lane] = start
        if include_self:
            for lane in range(used):
                for t in range(num_targets):
                    acc[t, lane] = load(storage, base[o0 + lane, t, 0])
        for i in range(m):
            ui = np.uint64(i)
            t = np.uint64(index[ui])
            counts[t] += 1
            row = acc[t]
            for lane in range(LANES):  # (a constant trip count: unrolled, one index read for all)
                row[lane] = combine(reduce, row[lane], load(storage, values[rows[lane] + ui]))
        for lane in range(used):
            o = o0 + lane
            for t in range(num_targets):
                received = counts[t]
                if received == 0:
                    out[o, t, 0] = 0 if fill_empty else base[o, t, 0]
                else:
                    total = received + (1 if include_self else 0)
                    out[o, t, 0] = store(storage, finalize(reduce, acc[t, lane], total))
    return OK


@njit(cache=True, nogil=True, error_model="numpy")
def _check(index, num_targets, sorted):
    """OK, or OUT_OF_RANGE / NOT_SORTED (an index that must not decrease does; a bad entry is named first): loops
    without stores that vectorise -- counts, not ``|=`` of bools, which did not (two passes over 10,000 entries
    3.3 us, one 0.9 us)."""
    m = index.shape[0]
    if sorted:
        one = np.uint64(1)
        decreases = 0
        for i in range(one, np.uint64(m)):
            decreases += index[i] < index[i - one]
        if decreases == 0:  # non-decreasing: in range if its ends are
            return OK if m == 0 or (index[0] >= 0 and index[m - 1] < num_targets) else OUT_OF_RANGE
    bad = 0
    limit = np.uint64(max(num_targets, 0))
    for i in range(m):
        bad += np.uint64(index[i]) >= limit  # (unsigned: a negative entry is above any limit)
    if bad > 0:
        return OUT_OF_RANGE
    return NOT_SORTED if sorted else OK


def divides(reduce):
    """Whether the reduction's result divides by its count of members (mean)."""


@overload(divides, jit_options=STEP_OPTIONS)
def _ov_divides(reduce):
    if not isinstance(reduce, types.IntegerLiteral):
        return None
    flag = BY_CODE[reduce.literal_value].divide_by_count
    return lambda reduce: flag


def looks_empty(reduce, x):
    """Whether an accumulator value ``x`` has the bits of the reduction's identity *and* that identity is not
    what an empty target gets (0): always False for an integer sum, whose empty targets are right as they are."""


@overload(looks_empty, jit_options=STEP_OPTIONS)
def _ov_looks_empty(reduce, x):
    code = reduce.literal_value if isinstance(reduce, types.IntegerLiteral) else None
    if code is None:
        return None
    red = BY_CODE[code]
    if isinstance(x, types.Integer):
        value = red.identity({32: torch.int32, 64: torch.int64}[x.bitwidth])  # type: ignore[attr-defined]  # Numba's stub omits Integer.bitwidth
        if value == 0:
            return lambda reduce, x: False
        typed = np.dtype(str(x)).type(value)
        return lambda reduce, x: x == typed
    typed = np.dtype(str(x)).type(red.identity_float)
    # -0.0 and +0.0 compare equal: the sign tells them apart -- in x's own type (a float64 1.0 converted every
    # float32 x, and the pass over a slice ran at half the speed)
    one = np.dtype(str(x)).type(1.0)
    sign = np.dtype(str(x)).type(math.copysign(1.0, red.identity_float))
    return lambda reduce, x: (x == typed) & (math.copysign(one, x) == sign)


index_scatter_reduce_owner = Kernel(index_scatter_reduce_owner_kernel, literal=("reduce", "storage"))
index_scatter_reduce_lanes = Kernel(index_scatter_reduce_lanes_kernel, literal=("reduce", "storage"))


def owner_key(src, reduce: int, storage: int) -> tuple:
    """The key of the owner (or the lanes) kernel's variant for a call (``Kernel.entry``), derived from what
    determines it: the codes and the element type (the arrays are C-contiguous (outer, rows, inner) views, the index
    int64, ``counts`` int64). Their flags and codes are passed by name."""
    return ("owner", reduce, storage, src.dtype.num)
