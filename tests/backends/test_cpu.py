"""backends/cpu.py's own decisions: how segments are split among threads, and which unsorted strategy runs."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

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
