"""The owner and lanes kernels (``kernels/cpu/index_scatter_reduce_owner.py``) called directly: the segment kernel's
bits for every reduction x dtype x sorted/unsorted x include_self/fill_empty x empty-target rule (counts or the
accumulator's bits), on one thread checking the index itself or on several with counts given; statuses before any
write on a bad index; and plain loops for the slices route's ``out=``."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import SENTINEL, bits, segment_kernel
from strategies import REDUCES, SUPPORTED_DTYPES, random_values

from scatterx._reductions import BY_NAME, REDUCTIONS
from scatterx.kernels.cpu import NATIVE, launch, numpy_view, storage_code
from scatterx.kernels.cpu.index_scatter_reduce_owner import (
    AMBIGUOUS,
    LANES,
    MARKS_EMPTY,
    NOT_SORTED,
    OK,
    OUT_OF_RANGE,
    index_scatter_reduce_lanes,
    index_scatter_reduce_owner,
)


def launch_owner(src, index, counts, base, out, *, threads, lanes, marks=False, **flags):
    """The owner kernel on ``threads`` threads, or with ``lanes`` the lanes kernel (rows of one element, groups of
    ``LANES`` slices; no ``counts`` nor ``marks``); NumPy arrays, ``flags`` by name. The kernel's status."""
    if lanes:
        assert not marks
        return launch(
            index_scatter_reduce_lanes, None, -(-src.shape[0] // LANES), threads, src, index, base, out, **flags
        )
    return launch(
        index_scatter_reduce_owner, None, src.shape[0], threads, src, index, counts, base, out, marks=marks, **flags
    )


def run_owner(
    src3,
    index,
    base,
    reduce,
    *,
    sorted=False,
    include_self=False,
    fill_empty=True,
    marks=False,
    check=True,
    threads=1,
    lanes=False,
):
    """The kernel into a new output (``SENTINEL``-filled): ``(status, out)``. With ``check`` the kernel counts the
    entries itself (one thread); otherwise they are given. ``lanes``: the lanes kernel (rows of one element,
    groups of ``LANES`` slices)."""
    out = torch.full_like(base, SENTINEL)
    num_targets = base.size(1)
    counts = (
        np.empty(num_targets, np.int64) if check else np.bincount(index.numpy(), minlength=num_targets).astype(np.int64)
    )
    status = launch_owner(
        numpy_view(src3.contiguous()),
        index.long().numpy(),
        counts,
        numpy_view(base),
        numpy_view(out),
        threads=1 if check else threads,
        lanes=lanes,
        marks=marks,
        reduce=BY_NAME[reduce].code,
        storage=storage_code(src3.dtype),
        check=check,
        sorted=sorted,
        include_self=include_self,
        fill_empty=fill_empty,
    )
    return status, out


@settings(max_examples=80)
@given(
    reduce=st.sampled_from(REDUCES),
    dtype=st.sampled_from(SUPPORTED_DTYPES),
    n=st.integers(0, 12),
    num_targets=st.integers(1, 6),
    outer=st.integers(1, 3),
    inner=st.integers(1, 4),
    include_self=st.booleans(),
    fill_empty=st.booleans(),
    sorted=st.booleans(),
    check=st.booleans(),
    lanes=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
)
def test_gives_the_segment_kernel_s_bits(
    reduce, dtype, n, num_targets, outer, inner, include_self, fill_empty, sorted, check, lanes, seed
):
    """Slice by slice, or (rows of one element) ``LANES`` slices at a time: with more slices, so that groups are
    full, partial, or several."""
    lanes = lanes and inner == 1
    if lanes:
        outer = 1 + seed % (2 * LANES + 3)
    g = torch.Generator().manual_seed(seed)
    src = random_values((outer, n, inner), dtype, g, reduce)
    if dtype.is_floating_point and n:
        src[torch.rand(src.shape, generator=g) < 0.2] = -0.0  # signed zeros: an identity of +0.0 would show
    base = random_values((outer, num_targets, inner), dtype, g, reduce)
    index = torch.randint(0, num_targets, (n,), generator=g)
    if sorted:
        index = index.sort().values
    fill_empty = fill_empty and not include_self
    status, got = run_owner(
        src,
        index,
        base,
        reduce,
        sorted=sorted,
        include_self=include_self,
        fill_empty=fill_empty,
        check=check,
        threads=2,
        lanes=lanes,
    )
    assert status == OK
    want = segment_kernel(
        src, index, num_targets, reduce, base=None if fill_empty else base, include_self=include_self, gather=True
    )
    assert torch.equal(bits(got), bits(want))


def special_values(dtype):
    """Values that have an identity's bits (the ones the empty-target rule by bits must not take for empty)."""
    if dtype.is_floating_point:
        return [-0.0, 0.0, float("inf"), -float("inf"), float("nan")]
    info = torch.iinfo(dtype)
    return [0, info.min, info.max]


@settings(max_examples=80)
@given(
    reduce=st.sampled_from(sorted(MARKS_EMPTY)),
    dtype=st.sampled_from(SUPPORTED_DTYPES),
    n=st.integers(0, 16),
    num_targets=st.integers(1, 8),
    inner=st.sampled_from([1, 3]),
    special=st.floats(0, 1),
    seed=st.integers(0, 2**31 - 1),
)
def test_empty_targets_told_by_their_bits_or_reported_ambiguous(reduce, dtype, n, num_targets, inner, special, seed):
    """Identity-valued members (-0.0 sums, -inf maxima, integer extremes) and targets that receive nothing both
    come out as with counts -- or the kernel says it cannot tell them apart."""
    g = torch.Generator().manual_seed(seed)
    src = random_values((1, n, inner), dtype, g, reduce)
    if n:
        choices = torch.tensor(special_values(dtype), dtype=dtype)
        pick = torch.randint(0, len(choices), src.shape, generator=g)
        mask = torch.rand(src.shape, generator=g) < special
        src[mask] = choices[pick][mask]
    index = torch.randint(0, num_targets, (n,), generator=g)
    base = torch.zeros(1, num_targets, inner, dtype=dtype)
    status, got = run_owner(src, index, base, reduce, marks=True)
    _, want = run_owner(src, index, base, reduce)
    # ambiguous exactly when a value has the identity's bits (an integer sum's identity is what an empty target
    # gets anyway: never ambiguous)
    identity = torch.tensor(BY_NAME[reduce].identity(dtype), dtype=dtype)
    ambiguous = not (reduce == "sum" and not dtype.is_floating_point) and bool((bits(src) == bits(identity)).any())
    assert status == (AMBIGUOUS if ambiguous else OK)
    if not ambiguous:
        assert torch.equal(bits(got), bits(want)), (src, index)


@pytest.mark.parametrize(
    "index, sorted, status",
    [
        ([0, 3, 1], False, OUT_OF_RANGE),
        ([0, -1, 1], False, OUT_OF_RANGE),
        ([0, 2, 1], True, NOT_SORTED),
        ([0, 1, 5], True, OUT_OF_RANGE),
        ([-1, 0, 1], True, OUT_OF_RANGE),  # (a sorted index is checked at its ends: the first below 0)
        ([0, 5, 1], True, OUT_OF_RANGE),  # decreasing and out of range: the bad entry is named first
    ],
)
@pytest.mark.parametrize("marks, lanes", [(False, False), (True, False), (False, True)])
def test_a_bad_index_returns_its_status_before_writing(index, sorted, status, marks, lanes):
    shape = (LANES, 3, 1) if lanes else (1, 3, 2)
    src = torch.ones(shape)
    base = torch.zeros(shape)
    got, out = run_owner(src, torch.tensor(index), base, "sum", sorted=sorted, marks=marks, lanes=lanes)
    assert got == status
    assert torch.equal(out, torch.full(shape, float(SENTINEL)))  # untouched


@pytest.mark.parametrize("index", [[0, 3, 1], [0, -1, 1], [2**40, 0, 0]])
@pytest.mark.parametrize("reduce, marks", [("sum", True), ("sum", False), ("mean", False)])
def test_the_check_in_the_reducing_loop_writes_nothing_outside_the_output(index, reduce, marks):
    """One slice of rows of one element at an unsorted index is checked in its reducing loop (the serial route's
    new output, dropped on failure): a bad entry is reported, and its update is clamped into the output -- the
    memory on either side of it is untouched."""
    margin, targets = 4, 3
    memory = torch.full((1, targets + 2 * margin, 1), float(SENTINEL))
    out = memory[:, margin : margin + targets]
    status = launch_owner(
        numpy_view(torch.ones(1, len(index), 1)),
        np.array(index, np.int64),
        np.empty(targets, np.int64),
        numpy_view(out),
        numpy_view(out),
        threads=1,
        lanes=False,
        marks=marks,
        reduce=BY_NAME[reduce].code,
        storage=NATIVE,
        check=True,
        sorted=False,
        include_self=False,
        fill_empty=True,
    )
    assert status == OUT_OF_RANGE
    assert torch.equal(memory[:, :margin], torch.full((1, margin, 1), float(SENTINEL)))
    assert torch.equal(memory[:, margin + targets :], torch.full((1, margin, 1), float(SENTINEL)))


def _loop(src, rows, base, name, include_self):
    """out[t] = reduce(base[t] (include_self), src[i] for rows[i] == t, in order); untouched targets keep base."""
    out = base.copy()
    reduce = {"sum": np.sum, "mean": np.mean, "prod": np.prod, "amax": np.max, "amin": np.min}[name]
    for t in range(base.size):
        members = [src[i] for i in range(rows.size) if rows[i] == t]
        if members:
            out[t] = reduce(np.array(([base[t]] if include_self else []) + members, np.float64))
    return out


@given(
    st.lists(st.integers(0, 4), max_size=12),
    st.integers(1, 3),
    st.integers(1, 3),
    st.sampled_from([r.name for r in REDUCTIONS]),
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_into_out_matches_a_loop(index, outer, inner, name, include_self, seed):
    """The slices route's ``out=``: ``base`` the old values, the accumulators in ``out`` itself."""
    g = np.random.default_rng(seed)
    index = np.array(index, dtype=np.int64)
    n, num_targets = index.size + 1, 5  # one more row than the index: it takes no part
    src = g.integers(-4, 5, (outer, n, inner)).astype(np.float64)
    out = g.integers(-4, 5, (outer, num_targets, inner)).astype(np.float64)
    base = out.copy()
    want = out.copy()
    for o in range(outer):
        for j in range(inner):
            want[o, :, j] = _loop(src[o, : index.size, j], index, out[o, :, j], name, include_self)
    counts = np.bincount(index, minlength=num_targets).astype(np.int64)
    lanes = inner == 1 and seed % 2 == 1  # rows of one element: either mode
    launch_owner(
        src,
        index,
        counts,
        out if include_self else base,
        out,
        threads=2,
        lanes=lanes,
        reduce=BY_NAME[name].code,
        storage=NATIVE,
        check=False,
        sorted=False,
        include_self=include_self,
        fill_empty=False,
    )
    np.testing.assert_allclose(out, want)
