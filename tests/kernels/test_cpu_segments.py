"""The index -> segments kernels (``kernels/cpu/segments.py``) called directly with any number of chunks and
threads, so that chunk boundaries (a value spanning chunks, empty chunks, a bad value at a boundary) are exercised
on small inputs too."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scatterx.kernels.cpu import launch
from scatterx.kernels.cpu.segments import (
    balanced_bounds,
    fill_empty_starts,
    histograms,
    index_bound,
    prefix_offsets,
    sorted_index_to_ptr,
    stable_positions,
)

values = st.lists(st.integers(0, 6), max_size=40)


def to_ptr(index, num_segments, nchunks, threads=2):
    """``(ptr, bad)`` of a sorted index."""
    m = index.size
    step = max(1, -(-m // nchunks))
    ptr = np.full(num_segments + 1, -1, np.int64)
    bad = launch(sorted_index_to_ptr, None, -(-m // step) if m else 1, threads, index, ptr, step)
    if not bad:
        fill_empty_starts(ptr, m)
    return ptr, bad


def counting_sort(index, num_segments, nchunks, threads=2, check_order=False):
    """``(ptr, perm, bad)`` of any index: the histograms, their prefix and the stable positions."""
    m = index.size
    step = max(1, -(-m // nchunks))
    chunks = -(-m // step) if m else 1
    counts = np.empty((chunks, num_segments), np.int64)
    bad = launch(histograms, None, chunks, threads, index, counts, step, check_order)
    ptr = np.empty(num_segments + 1, np.int64)
    perm = np.empty(m, np.int64)
    if not bad:
        prefix_offsets(counts, ptr)
        launch(stable_positions, None, chunks, threads, index, counts, perm, step)
    return ptr, perm, bad


@given(values, st.integers(0, 3), st.integers(1, 7))
def test_sorted_index_to_ptr_matches_searchsorted(raw, extra, nchunks):
    index = np.sort(np.array(raw, dtype=np.int64))
    num_segments = (int(index.max()) + 1 if index.size else 0) + extra
    ptr, bad = to_ptr(index, num_segments, nchunks)
    assert bad == 0
    np.testing.assert_array_equal(ptr, np.searchsorted(index, np.arange(num_segments + 1), side="left"))


@given(values, st.integers(1, 7), st.data())
def test_sorted_index_to_ptr_counts_every_bad_entry(raw, nchunks, data):
    index = np.sort(np.array(raw + [0], dtype=np.int64))
    i = data.draw(st.integers(0, index.size - 1))
    index[i] = data.draw(st.sampled_from([-1, 7, 100]))  # out of range for 7 segments, and usually unsorted
    expected_bad = np.count_nonzero((index < 0) | (index >= 7) | (index > np.append(index[1:], 6)))
    _, bad = to_ptr(index, 7, nchunks)
    assert bad == expected_bad > 0


@given(values, st.integers(0, 3), st.integers(1, 7))
def test_counting_sort_is_a_stable_sort(raw, extra, nchunks):
    index = np.array(raw, dtype=np.int64)
    num_segments = (int(index.max()) + 1 if index.size else 0) + extra
    ptr, perm, bad = counting_sort(index, num_segments, nchunks)
    assert bad == 0
    np.testing.assert_array_equal(perm, np.argsort(index, kind="stable"))
    np.testing.assert_array_equal(ptr, np.concatenate([[0], np.cumsum(np.bincount(index, minlength=num_segments))]))


@given(values, st.integers(1, 7), st.sampled_from([-3, 7]))
def test_histograms_count_entries_out_of_range(raw, nchunks, wrong):
    index = np.array(raw + [wrong], dtype=np.int64)
    _, _, bad = counting_sort(index, 7, nchunks)
    assert bad == 1


@given(values, st.integers(1, 7))
def test_histograms_count_decreases_when_asked(raw, nchunks):
    index = np.array(raw, dtype=np.int64)
    _, _, bad = counting_sort(index, 7, nchunks, check_order=True)
    assert bad == np.count_nonzero(np.diff(index) < 0)


@settings(max_examples=200)
@given(st.lists(st.integers(0, 50), max_size=30), st.integers(1, 9))
def test_balanced_bounds_cover_all_segments_in_order_and_even_out_work(lengths, nchunks):
    ptr = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    bounds = balanced_bounds(ptr, nchunks)
    assert bounds[0] == 0 and bounds[-1] == len(lengths) and len(bounds) == nchunks + 1
    assert (np.diff(bounds) >= 0).all()
    # a chunk's work (rows + segments) exceeds the fair share by at most one segment's work
    work = [int(ptr[b] - ptr[a]) + int(b - a) for a, b in zip(bounds[:-1], bounds[1:])]
    fair = (int(ptr[-1]) + len(lengths)) / nchunks
    biggest_segment = max(lengths, default=0) + 1
    assert max(work) <= fair + biggest_segment


def test_index_bound():
    assert index_bound(np.array([3, 0, 7, 2])) == 8
    assert index_bound(np.array([], dtype=np.int64)) == 0
    assert index_bound(np.array([1, -2], dtype=np.int64)) == -1
