"""The serial kernel for small calls (``kernels/cpu/serial.py``), called directly and through the backend: the
segment kernel's bits for every reduction x dtype x sorted/unsorted, nothing written on a bad index."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import scatterx
from scatterx import backends
from scatterx._reductions import BY_NAME
from scatterx.kernels.cpu import numpy_view, storage_code
from scatterx.kernels.cpu.serial import (
    MARKS_EMPTY, NOT_SORTED, OK, OUT_OF_RANGE, index_bound, narrow_scatter, serial_scatter,
)
from scatterx.kernels.cpu.segment import segment_reduce
from strategies import REDUCES, SUPPORTED_DTYPES, count_launches, random_values


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns, so that -0.0 and NaN payloads compare exactly."""
    if t.dtype.is_floating_point:
        return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def run_serial(src, index, base, reduce, sorted, include_self, fill_empty):
    out = torch.full_like(base, 7)
    storage = storage_code(src.dtype)
    status = serial_scatter(
        numpy_view(src).reshape(1, *src.shape), numpy_view(index), numpy_view(base).reshape(1, *base.shape),
        numpy_view(out).reshape(1, *out.shape), BY_NAME[reduce].code, storage, sorted, include_self, fill_empty,
    )
    return status, out


def run_segments(src, index, base, reduce, include_self, fill_empty):
    """The segment kernel on the stably sorted index: the general path's result."""
    order = torch.sort(index, stable=True).indices
    ptr = torch.zeros(base.size(0) + 1, dtype=torch.int64)
    ptr[1:] = torch.bincount(index, minlength=base.size(0)).cumsum(0)
    out = torch.full_like(base, 7)
    segment_reduce(
        numpy_view(src).reshape(1, *src.shape), order.numpy(), ptr.numpy(), np.array([0, base.size(0)]),
        numpy_view(base).reshape(1, *base.shape), numpy_view(out).reshape(1, *out.shape),
        BY_NAME[reduce].code, storage_code(src.dtype), True, include_self, fill_empty, 8, False,
    )
    return out


@settings(max_examples=60, deadline=None)
@given(
    reduce=st.sampled_from(REDUCES), dtype=st.sampled_from(SUPPORTED_DTYPES), n=st.integers(0, 12),
    num_targets=st.integers(1, 6), inner=st.integers(1, 4), include_self=st.booleans(), fill_empty=st.booleans(),
    sorted=st.booleans(), seed=st.integers(0, 2**31 - 1),
)
def test_kernel_gives_the_segment_kernel_s_bits(reduce, dtype, n, num_targets, inner, include_self, fill_empty,
                                                 sorted, seed):
    g = torch.Generator().manual_seed(seed)
    src = random_values((n, inner), dtype, g, reduce)
    if dtype.is_floating_point and n:
        src[torch.rand(n, inner, generator=g) < 0.2] = -0.0  # signed zeros: an identity of +0.0 would show
    base = random_values((num_targets, inner), dtype, g, reduce)
    index = torch.randint(0, num_targets, (n,), generator=g)
    if sorted:
        index = index.sort().values
    status, got = run_serial(src, index, base, reduce, sorted, include_self, fill_empty and not include_self)
    assert status == OK
    want = run_segments(src, index, base, reduce, include_self, fill_empty and not include_self)
    assert torch.equal(bits(got), bits(want))


def special_values(dtype):
    """Values that have an identity's bits (the ones the narrow kernel must not take for an empty target)."""
    if dtype.is_floating_point:
        return [-0.0, 0.0, float("inf"), -float("inf"), float("nan")]
    info = torch.iinfo(dtype)
    return [0, info.min, info.max]


@settings(max_examples=80, deadline=None)
@given(
    reduce=st.sampled_from(sorted(MARKS_EMPTY)), dtype=st.sampled_from(SUPPORTED_DTYPES), n=st.integers(0, 16),
    num_targets=st.integers(1, 8), special=st.floats(0, 1), seed=st.integers(0, 2**31 - 1),
)
def test_narrow_kernel_gives_the_serial_kernel_s_bits(reduce, dtype, n, num_targets, special, seed):
    """One-element rows, a new result: identity-valued members (-0.0 sums, -inf maxima, integer extremes) and
    targets that receive nothing both come out as the serial kernel's, with or without the bitmap."""
    g = torch.Generator().manual_seed(seed)
    src = random_values((n,), dtype, g, reduce)
    if n:
        choices = torch.tensor(special_values(dtype), dtype=dtype)
        pick = torch.randint(0, len(choices), (n,), generator=g)
        mask = torch.rand(n, generator=g) < special
        src[mask] = choices[pick][mask]
    index = torch.randint(0, num_targets, (n,), generator=g)
    out = torch.full((num_targets,), 7, dtype=dtype)
    status = narrow_scatter(numpy_view(src), numpy_view(index), numpy_view(out), BY_NAME[reduce].code,
                            storage_code(dtype))
    assert status == OK
    base = torch.zeros(num_targets, 1, dtype=dtype)
    _, want = run_serial(src.reshape(n, 1), index, base, reduce, False, False, True)
    assert torch.equal(bits(out), bits(want.reshape(num_targets))), (src, index)


def test_narrow_kernel_leaves_out_untouched_on_a_bad_index():
    for index in ([0, 3, 1], [0, -1, 1]):
        out = torch.full((3,), 7.0)
        status = narrow_scatter(numpy_view(torch.ones(3)), numpy_view(torch.tensor(index)), numpy_view(out),
                                BY_NAME["sum"].code, storage_code(torch.float32))
        assert status == OUT_OF_RANGE
        assert torch.equal(out, torch.full((3,), 7.0))


@pytest.mark.parametrize("index, sorted, status", [
    ([0, 3, 1], False, OUT_OF_RANGE),
    ([0, -1, 1], False, OUT_OF_RANGE),
    ([0, 2, 1], True, NOT_SORTED),
    ([0, 1, 5], True, OUT_OF_RANGE),
])
def test_bad_index_returns_its_status_before_writing(index, sorted, status):
    src = torch.ones(3, 2)
    base = torch.zeros(3, 2)
    got, out = run_serial(src, torch.tensor(index), base, "sum", sorted, False, True)
    assert got == status
    assert torch.equal(out, torch.full((3, 2), 7.0))  # untouched


def test_index_bound():
    assert index_bound(np.array([3, 0, 7, 2])) == 8
    assert index_bound(np.array([], dtype=np.int64)) == 0
    assert index_bound(np.array([1, -2], dtype=np.int32)) == -1


def test_small_calls_take_the_serial_kernel_and_large_ones_do_not(monkeypatch):
    calls = count_launches(monkeypatch, backends.cpu, "serial_scatter")
    index = torch.tensor([0, 0, 2])
    scatterx.index_scatter_reduce(0, index, torch.ones(3, 4), "sum")
    assert len(calls) == 1
    big = torch.ones(backends.cpu.SMALL_CALL_ELEMENTS, 2)
    scatterx.index_scatter_reduce(0, torch.zeros(big.size(0), dtype=torch.int64), big, "sum")
    assert len(calls) == 1  # the general path


@pytest.mark.parametrize("threads", [1, 2, 16])
def test_wide_rows_take_the_serial_kernel_up_to_a_larger_size(threads, monkeypatch):
    calls = count_launches(monkeypatch, backends.cpu, "serial_scatter")
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    limit = backends.cpu.SMALL_CALL_ELEMENTS
    wide = max(limit, limit * backends.cpu.SMALL_WIDE_FACTOR * 2 // threads)
    row = backends.cpu.SMALL_WIDE_ROW
    for features, size, taken in [
        (row, (limit - 4 * row) // row, True),  # src and output within the plain limit
        (row, 2 * limit // row, 2 * limit + 4 * row <= wide),  # beyond it: wide rows only while threads are few
        (row - 1, 2 * limit // (row - 1), False),  # narrower rows: the plain limit
        (row, wide // row, False),  # src alone fills the wide limit: with the output, over it
    ]:
        calls.clear()
        index = torch.arange(size) % 4
        scatterx.index_scatter_reduce(0, index, torch.ones(size, features), "sum", sorted=False, dim_size=4)
        assert bool(calls) == taken, (features, size)


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("sorted", [True, False])
def test_backend_small_path_equals_general_path_on_every_dim(dtype, sorted, monkeypatch):
    g = torch.Generator().manual_seed(1)
    src = random_values((3, 5, 4), dtype, g, "sum")
    for dim in (0, 1, 2, -1):
        index = torch.randint(0, 3, (src.size(dim) - 1,), generator=g)
        index = index.sort().values if sorted else index
        for reduce in REDUCES:
            small = scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=sorted)
            with monkeypatch.context() as m:
                m.setattr(backends.cpu, "SMALL_CALL_ELEMENTS", -1)
                general = scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=sorted)
            assert torch.equal(bits(small), bits(general)), (dim, reduce)


def test_small_call_bad_input_raises_as_the_general_path():
    src = torch.ones(3, 2)
    with pytest.raises(IndexError, match="out of range|out of bounds"):
        scatterx.index_scatter_reduce(0, torch.tensor([0, 5, 1]), src, "sum", sorted=False, dim_size=3)
    with pytest.raises(ValueError, match="not sorted"):
        scatterx.index_scatter_reduce(0, torch.tensor([0, 2, 1]), src, "sum")
    with pytest.raises(IndexError, match="negative|out of"):
        scatterx.index_scatter_reduce(0, torch.tensor([0, -1, 1]), src, "sum", sorted=False)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape, dim", [((300,), 0), ((1, 300, 3), 1), ((300, 4), 0), ((300, 5), 0), ((4, 300), 1)])
def test_narrow_unsorted_rows_take_the_serial_kernel_at_any_size(shape, dim, threads, monkeypatch):
    """Beyond the small-call size, an unsorted index into one outer slice of rows of ``inner`` elements takes
    the serial kernel while ``inner x threads <= SERIAL_UNSORTED_MAX_WORK`` (one-element rows of sum, amax and
    amin: the narrow kernel), with the gather path's bits."""
    calls = count_launches(monkeypatch, backends.cpu, "serial_scatter")
    narrow = count_launches(monkeypatch, backends.cpu, "narrow_scatter")
    monkeypatch.setattr(backends.cpu, "SMALL_CALL_ELEMENTS", -1)
    monkeypatch.setattr(torch, "get_num_threads", lambda: threads)
    g = torch.Generator().manual_seed(4)
    src = random_values(shape, torch.float32, g, "sum")
    index = torch.randint(0, 40, (300,), generator=g)
    inner = src[0].numel() if dim == 0 else (shape[2] if len(shape) == 3 else 1)
    outer = shape[0] if dim == 1 else 1
    for reduce in REDUCES:
        got = scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=False, dim_size=45)
        with monkeypatch.context() as m:
            m.setattr(backends.cpu, "SERIAL_UNSORTED_MAX_WORK", 0)
            want = scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=False, dim_size=45)
        assert torch.equal(bits(got), bits(want)), reduce
    taken = outer == 1 and inner * threads <= backends.cpu.SERIAL_UNSORTED_MAX_WORK
    one_element = [r for r in REDUCES if r in MARKS_EMPTY] if inner == 1 else []
    assert len(narrow) == (len(one_element) if taken else 0)  # its own kernel, with the same bits
    assert len(calls) == (len(REDUCES) - len(one_element) if taken else 0)
    bad = index.clone()
    bad[7] = 45
    with pytest.raises(IndexError, match="out of range"):
        scatterx.index_scatter_reduce(dim, bad, src, "sum", sorted=False, dim_size=45)
