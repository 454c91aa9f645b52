"""The one-pass kernels for a sorted index (``kernels/cpu/runs.py``: ``sorted_runs`` for single-element rows,
``sorted_rows`` for wider ones), called directly and through the backend: the segment kernel's bits for every
reduction x dtype x chunking x outer slices (the row-by-row streams and the lanes; wide rows plain and streamed),
nothing written outside the output on a bad index, and bad input rejected."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import scatterx
from scatterx import backends
from scatterx._reductions import BY_NAME
from scatterx.kernels.cpu import numpy_view, storage_code
from scatterx.kernels.cpu import runs
from scatterx.kernels.cpu._memory import STREAM_ALIGN
from scatterx.kernels.cpu.segment import segment_reduce
from strategies import REDUCES, SUPPORTED_DTYPES, count_launches, random_values

GUARD = 16  # sentinel elements on each side of the output


def bits(t: torch.Tensor) -> torch.Tensor:
    if t.dtype.is_floating_point:
        return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def run_runs(src, index, num_targets, reduce, nchunks):
    """The kernel into an output with sentinel guards around it: ``(bad chunks, out, guards untouched)``."""
    outer = src.size(0)
    buffer = torch.full((outer * num_targets + 2 * GUARD,), 7, dtype=src.dtype)
    out = buffer[GUARD:GUARD + outer * num_targets].view(outer, num_targets)
    bad = runs.sorted_runs(numpy_view(src.contiguous()), numpy_view(index), numpy_view(out),
                           BY_NAME[reduce].code, storage_code(src.dtype), nchunks)
    guards = torch.cat([buffer[:GUARD], buffer[-GUARD:]])
    return bad, out, bool((guards == 7).all())


def run_segments(src, index, num_targets, reduce):
    """The segment kernel over the offsets of the same index, empty targets 0: the general path's result."""
    outer, n = src.shape
    ptr = torch.zeros(num_targets + 1, dtype=torch.int64)
    ptr[1:] = torch.bincount(index, minlength=num_targets).cumsum(0)
    out = torch.full((outer, num_targets), 7, dtype=src.dtype)
    segment_reduce(
        numpy_view(src.contiguous()).reshape(outer, n, 1), np.empty(0, np.int32), ptr.numpy(),
        np.array([0, num_targets]), numpy_view(out).reshape(outer, num_targets, 1),
        numpy_view(out).reshape(outer, num_targets, 1), BY_NAME[reduce].code, storage_code(src.dtype), False,
        False, True, 8, False,
    )
    return out


@settings(max_examples=80, deadline=None)
@given(
    reduce=st.sampled_from(REDUCES), dtype=st.sampled_from(SUPPORTED_DTYPES), n=st.integers(1, 60),
    num_targets=st.integers(1, 12), outer=st.sampled_from([1, 2, 9, 17]), hubs=st.booleans(),
    index_dtype=st.sampled_from([torch.int64, torch.int32]), data=st.data(), seed=st.integers(0, 2**31 - 1),
)
def test_kernel_gives_the_segment_kernel_s_bits(reduce, dtype, n, num_targets, outer, hubs, index_dtype, data,
                                                 seed):
    g = torch.Generator().manual_seed(seed)
    src = random_values((outer, n), dtype, g, reduce)
    if dtype.is_floating_point:
        src[torch.rand(outer, n, generator=g) < 0.2] = -0.0  # signed zeros: an identity of +0.0 would show
    # hubs: a few targets take most positions, so runs span several nominal chunks (and chunks are empty)
    high = min(num_targets, 2) if hubs else num_targets
    index = torch.randint(0, high, (n,), generator=g).sort().values
    if hubs:
        index = index * (num_targets - 1) // max(high - 1, 1)
    if dtype != torch.float32:
        index_dtype = torch.int64  # int32 indices with one dtype: each pair is a compiled variant
    index = index.to(index_dtype)
    nchunks = data.draw(st.integers(1, n))
    bad, got, guards = run_runs(src, index, num_targets, reduce, nchunks)
    assert bad == 0 and guards
    assert torch.equal(bits(got), bits(run_segments(src, index.long(), num_targets, reduce)))


def run_rows(src, index, num_targets, reduce, nchunks, stream):
    """``sorted_rows`` into a 64-byte aligned output with sentinel guards: ``(bad chunks, out, guards untouched)``."""
    outer, _, inner = src.shape
    size = outer * num_targets * inner
    per_block = STREAM_ALIGN // src.element_size()
    buffer = torch.full((size + 4 * per_block,), 7, dtype=src.dtype)
    skip = next(k for k in range(per_block, 2 * per_block)
                if (buffer.data_ptr() + k * src.element_size()) % STREAM_ALIGN == 0)
    out = buffer[skip:skip + size].view(outer, num_targets, inner)
    bad = runs.sorted_rows(numpy_view(src.contiguous()), numpy_view(index), numpy_view(out),
                           BY_NAME[reduce].code, storage_code(src.dtype), nchunks, stream)
    guards = torch.cat([buffer[:skip], buffer[skip + size:]])
    return bad, out, bool((guards == 7).all())


def run_segments3(src, index, num_targets, reduce):
    """The segment kernel over the offsets of ``index`` for 3-D ``src``, empty targets 0."""
    outer, n, inner = src.shape
    ptr = torch.zeros(num_targets + 1, dtype=torch.int64)
    ptr[1:] = torch.bincount(index, minlength=num_targets).cumsum(0)
    out = torch.full((outer, num_targets, inner), 7, dtype=src.dtype)
    segment_reduce(
        numpy_view(src.contiguous()), np.empty(0, np.int32), ptr.numpy(), np.array([0, num_targets]),
        numpy_view(out), numpy_view(out), BY_NAME[reduce].code, storage_code(src.dtype), False, False, True, 8,
        False,
    )
    return out


@settings(max_examples=80, deadline=None)
@given(
    reduce=st.sampled_from(REDUCES), dtype=st.sampled_from(SUPPORTED_DTYPES), n=st.integers(1, 50),
    num_targets=st.integers(1, 12), outer=st.sampled_from([1, 2, 5]), inner=st.sampled_from([2, 3, 16, 33]),
    hubs=st.booleans(), stream=st.booleans(), index_dtype=st.sampled_from([torch.int64, torch.int32]),
    data=st.data(), seed=st.integers(0, 2**31 - 1),
)
def test_rows_kernel_gives_the_segment_kernel_s_bits(reduce, dtype, n, num_targets, outer, inner, hubs, stream,
                                                      index_dtype, data, seed):
    g = torch.Generator().manual_seed(seed)
    if stream:  # what the backend checks: native types, rows of whole 64-byte blocks
        if dtype in (torch.float16, torch.bfloat16):
            stream = False
        else:
            inner = STREAM_ALIGN // torch.empty((), dtype=dtype).element_size() * (1 + inner % 2)
    src = random_values((outer, n, inner), dtype, g, reduce)
    if dtype.is_floating_point:
        src[torch.rand(src.shape, generator=g) < 0.2] = -0.0
    high = min(num_targets, 2) if hubs else num_targets
    index = torch.randint(0, high, (n,), generator=g).sort().values
    if hubs:
        index = index * (num_targets - 1) // max(high - 1, 1)
    if dtype != torch.float32:
        index_dtype = torch.int64
    nchunks = data.draw(st.integers(1, n))
    bad, got, guards = run_rows(src, index.to(index_dtype), num_targets, reduce, nchunks, stream)
    assert bad == 0 and guards
    assert torch.equal(bits(got), bits(run_segments3(src, index, num_targets, reduce)))


def spoiled(index: torch.Tensor, where: int, value) -> torch.Tensor:
    """A sorted ``index`` with one bad entry at ``where``: ``value``, or ``"decrease"`` (below its predecessor,
    or above its successor at position 0)."""
    index = index.clone()
    if value == "decrease":
        if where == 0:
            index[0] = index[1] + 1
        else:
            index[where] = index[where - 1] - 1
    else:
        index[where] = value
    return index


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("where", [0, 5, 11, 19])
@pytest.mark.parametrize("value", [-1, -(2**40), 6, 2**40, "decrease"])
def test_rows_kernel_reports_a_bad_entry_and_writes_nothing_outside_the_output(stream, where, value):
    num_targets = 6
    index = spoiled(torch.arange(20) * num_targets // 20, where, value)
    src = torch.ones(2, 20, 16)
    for nchunks in (1, 2, 4, 7, 20):
        bad, _, guards = run_rows(src, index, num_targets, "sum", nchunks, stream)
        assert bad > 0, nchunks
        assert guards, nchunks


@pytest.mark.parametrize("outer", [1, 3, 9])  # 9 slices of long runs take the lanes
@pytest.mark.parametrize("where", [0, 5, 11, 19])  # first position, inside a chunk, chunk boundaries, last
@pytest.mark.parametrize("value", [-1, -(2**40), 6, 2**40, "decrease"])
def test_bad_entry_is_reported_and_nothing_lands_outside_the_output(outer, where, value):
    num_targets = 6
    index = torch.arange(20) * num_targets // 20  # sorted, ~3.3 positions a target
    if outer == 9:
        index = torch.arange(20) * 2 // 20 * 3  # 10 positions a run: the lanes
    index = spoiled(index, where, value)
    src = torch.ones(outer, 20)
    for nchunks in (1, 2, 4, 7, 20):
        bad, _, guards = run_runs(src, index, num_targets, "sum", nchunks)
        assert bad > 0, nchunks
        assert guards, nchunks


def test_backend_takes_the_runs_kernel_for_single_element_rows_only(monkeypatch):
    calls = count_launches(monkeypatch, backends.cpu, "sorted_runs")
    monkeypatch.setattr(backends.cpu, "SMALL_CALL_ELEMENTS", -1)
    index = torch.tensor([0, 0, 2, 3])
    scatterx.index_scatter_reduce(0, index, torch.ones(4), "sum", sorted=True)
    scatterx.index_scatter_reduce(-1, index, torch.ones(3, 4), "sum", sorted=True)  # rows of one element
    backends.cpu.index_scatter_reduce(torch.ones(4), index, 0, BY_NAME["sum"], None, 4)  # found sorted
    assert len(calls) == 3
    scatterx.index_scatter_reduce(0, index, torch.ones(4, 2), "sum", sorted=True)  # rows of two
    scatterx.index_scatter_reduce(0, index, torch.ones(4), "sum", sorted=True, out=torch.zeros(4))  # in place
    scatterx.index_scatter_reduce(0, index, torch.ones(4), "sum", sorted=False)
    assert len(calls) == 3


def test_backend_takes_the_rows_kernel_for_rows_of_a_cache_line_with_a_position_per_target(monkeypatch):
    calls = count_launches(monkeypatch, backends.cpu, "sorted_rows")
    monkeypatch.setattr(backends.cpu, "SMALL_CALL_ELEMENTS", -1)
    index = torch.tensor([0, 0, 2, 3])
    scatterx.index_scatter_reduce(0, index, torch.ones(4, 16), "sum", sorted=True)  # 64-byte rows
    scatterx.index_scatter_reduce(1, index, torch.ones(2, 4, 8), "amax", sorted=True)  # 8 float32, 2 slices
    scatterx.index_scatter_reduce(0, index, torch.ones(4, 8, dtype=torch.float64), "mean")  # 64 bytes
    backends.cpu.index_scatter_reduce(torch.ones(4, 16), index, 0, BY_NAME["sum"], None, 4)  # found sorted
    assert len(calls) == 3
    scatterx.index_scatter_reduce(0, index, torch.ones(4, 8), "sum", sorted=True)  # 32-byte rows
    scatterx.index_scatter_reduce(0, index, torch.ones(4, 16), "sum", sorted=True, dim_size=5)  # 4 < 5 targets
    scatterx.index_scatter_reduce(0, index, torch.ones(4, 16), "sum", sorted=True, out=torch.zeros(4, 16))
    scatterx.index_scatter_reduce(0, index, torch.ones(4, 16), "sum", sorted=False)
    backends.cpu.index_scatter_reduce(torch.ones(4, 16), index.flip(0), 0, BY_NAME["sum"], None, 4)  # shuffled
    assert len(calls) == 3


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("reduce", REDUCES)
def test_backend_runs_path_equals_segment_path(dtype, reduce, monkeypatch):
    monkeypatch.setattr(backends.cpu, "SMALL_CALL_ELEMENTS", -1)
    g = torch.Generator().manual_seed(3)
    monkeypatch.setattr(backends.cpu, "STREAM_MIN_BYTES", 0)  # wide native rows streamed where aligned
    for shape, dim, degree in [((5000,), 0, 2), ((5000,), 0, 30), ((12, 3000), 1, 2), ((12, 3000), -1, 10),
                               ((3, 4000, 1), 1, 5), ((3000, 16), 0, 3), ((2, 1500, 32), 1, 12), ((700, 48), 0, 1)]:
        src = random_values(shape, dtype, g, reduce)
        n = src.size(dim)
        index = torch.randint(0, n // degree, (n,), generator=g).sort().values
        got = scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=True, dim_size=n // degree + 3)
        with monkeypatch.context() as m:
            m.setattr(backends.cpu, "SORTED_RUNS", False)
            m.setattr(backends.cpu, "STREAM_MIN_BYTES", 1 << 62)
            want = scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=True, dim_size=n // degree + 3)
        assert torch.equal(bits(got), bits(want)), (shape, dim)


def test_backend_bad_sorted_index_raises_and_unknown_order_falls_back(monkeypatch):
    monkeypatch.setattr(backends.cpu, "SMALL_CALL_ELEMENTS", -1)
    src = torch.arange(6.0)
    with pytest.raises(ValueError, match="not sorted"):
        scatterx.index_scatter_reduce(0, torch.tensor([0, 0, 2, 1, 3, 3]), src, "sum", sorted=True)
    with pytest.raises(IndexError, match="out of range"):
        scatterx.index_scatter_reduce(0, torch.tensor([0, 0, 1, 1, 3, 9]), src, "sum", sorted=True, dim_size=4)
    with pytest.raises(IndexError, match="negative"):
        scatterx.index_scatter_reduce(0, torch.tensor([-1, 0, 1, 1, 3, 3]), src, "sum", sorted=True)
    shuffled = torch.tensor([3, 0, 2, 1, 3, 0])
    got = backends.cpu.index_scatter_reduce(src, shuffled, 0, BY_NAME["sum"], None, 4)  # order not known
    assert torch.equal(got, torch.zeros(4).index_add_(0, shuffled, src))
