"""backends/cpu.py's own decisions: how segments are split among threads, which unsorted strategy runs, and which
outputs are written with streaming (non-temporal) stores."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import scatterx
from scatterx.backends import cpu


@settings(max_examples=200)
@given(st.lists(st.integers(0, 50), max_size=30), st.integers(1, 9))
def test_balanced_bounds_cover_all_segments_in_order_and_even_out_work(lengths, nchunks):
    ptr = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    bounds = cpu.balanced_bounds(ptr, nchunks)
    assert bounds[0] == 0 and bounds[-1] == len(lengths) and len(bounds) == nchunks + 1
    assert (np.diff(bounds) >= 0).all()
    # a chunk's work (rows + segments) exceeds the fair share by at most one segment's work
    work = [int(ptr[b] - ptr[a]) + int(b - a) for a, b in zip(bounds[:-1], bounds[1:])]
    fair = (int(ptr[-1]) + len(lengths)) / nchunks
    biggest_segment = max(lengths, default=0) + 1
    assert max(work) <= fair + biggest_segment


def test_slice_owner_runs_for_tiny_rows_and_many_outer_slices():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert cpu._slices_pay(torch.zeros(64, 1000), 1, 100)  # the last dim of (features, edges)
        assert not cpu._slices_pay(torch.zeros(1000, 64), 0, 100)  # rows of 256 bytes: gather them
        assert not cpu._slices_pay(torch.zeros(1, 1000), 1, 100)  # one outer slice: one thread would work
        assert not cpu._slices_pay(torch.zeros(64, 1000), 1, 10_000_000)  # accumulator beyond the cache budget
    finally:
        torch.set_num_threads(before)


def _stream_flags(monkeypatch):
    """The ``stream`` argument (the last) of every segment-kernel and rows-kernel launch."""
    flags = []
    for name in ("segment_kernel", "sorted_rows"):
        real = getattr(cpu, name)

        class Spy:
            def keyed(self, key, *args, real=real):
                flags.append(args[-1])
                return real.keyed(key, *args)

        monkeypatch.setattr(cpu, name, Spy())
    return flags


def test_outputs_are_streamed_only_where_the_aligned_stores_allow_it(monkeypatch):
    monkeypatch.setattr(cpu, "SMALL_CALL_ELEMENTS", -1)
    flags = _stream_flags(monkeypatch)
    g = torch.Generator().manual_seed(0)
    index = torch.randint(0, 40, (200,), generator=g).sort().values
    ptr = scatterx.index_to_ptr(index, 40)

    def streamed(call):
        flags.clear()
        result = call()
        assert len(flags) == 1
        return flags[0], result

    # below the size threshold nothing streams
    assert streamed(lambda: scatterx.segment_reduce(torch.ones(200, 16), ptr, "sum"))[0] is False
    monkeypatch.setattr(cpu, "STREAM_MIN_BYTES", 0)
    assert streamed(lambda: scatterx.segment_reduce(torch.ones(200, 16), ptr, "sum"))[0] is True
    assert streamed(lambda: scatterx.index_scatter_reduce(0, index, torch.ones(200, 16), "amax"))[0] is True
    assert streamed(lambda: scatterx.segment_reduce(torch.ones(200, 8, dtype=torch.float64), ptr))[0] is True
    # rows that are not whole 64-byte blocks, half types, rows beyond 512 bytes, the unsorted path's gather
    assert streamed(lambda: scatterx.segment_reduce(torch.ones(200, 8), ptr, "sum"))[0] is False
    assert streamed(lambda: scatterx.segment_reduce(torch.ones(200, 24), ptr, "sum"))[0] is False
    assert streamed(lambda: scatterx.segment_reduce(torch.ones(200, 32, dtype=torch.float16), ptr))[0] is False
    assert streamed(lambda: scatterx.segment_reduce(torch.ones(200, 256), ptr, "sum"))[0] is False
    shuffled = index[torch.randperm(200, generator=g)]
    assert streamed(lambda: scatterx.index_scatter_reduce(0, shuffled, torch.ones(200, 16), "sum",
                                                          sorted=False, dim_size=40))[0] is False


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
def test_out_at_an_address_off_the_64_byte_grid_is_written_without_streaming(reduce, monkeypatch):
    """Aligned non-temporal stores fault on a misaligned address: ``out=`` a view 4 bytes off the grid (rows of
    64 bytes, otherwise streamable) must take the plain stores and give the same values as an aligned ``out``."""
    monkeypatch.setattr(cpu, "SMALL_CALL_ELEMENTS", -1)
    monkeypatch.setattr(cpu, "STREAM_MIN_BYTES", 0)
    flags = _stream_flags(monkeypatch)
    g = torch.Generator().manual_seed(1)
    src = torch.rand(300, 16, generator=g)
    index = torch.randint(0, 50, (300,), generator=g).sort().values
    start = torch.rand(50, 16, generator=g)
    buffer = torch.zeros(50 * 16 + 32)
    skip = next(k for k in range(1, 17) if (buffer.data_ptr() + 4 * k) % 64 != 0)
    misaligned = buffer[skip:skip + 50 * 16].view(50, 16).copy_(start)
    aligned = start.clone()
    assert aligned.data_ptr() % 64 == 0
    for out in (aligned, misaligned):
        scatterx.index_scatter_reduce(0, index, src, reduce, out=out, include_self=True)
    assert flags == [True, False]
    assert torch.equal(misaligned, aligned)
