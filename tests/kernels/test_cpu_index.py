"""The index kernels (kernels/cpu/index.py) called directly with any number of chunks, so that chunk boundaries
(a value spanning chunks, empty chunks, a bad value at a boundary) are exercised on small inputs too."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from scatterx.kernels.cpu.index import counting_sort, sorted_index_to_ptr

values = st.lists(st.integers(0, 6), max_size=40)


@given(values, st.integers(0, 3), st.integers(1, 7), st.sampled_from([np.int32, np.int64]))
def test_sorted_index_to_ptr_matches_searchsorted(raw, extra, nchunks, dtype):
    index = np.sort(np.array(raw, dtype=dtype))
    num_segments = (int(index.max()) + 1 if index.size else 0) + extra
    ptr, bad = sorted_index_to_ptr(index, num_segments, nchunks)
    assert bad == 0
    np.testing.assert_array_equal(ptr, np.searchsorted(index, np.arange(num_segments + 1), side="left"))


@given(values, st.integers(1, 7), st.data())
def test_sorted_index_to_ptr_counts_every_bad_entry(raw, nchunks, data):
    index = np.sort(np.array(raw + [0], dtype=np.int64))
    i = data.draw(st.integers(0, index.size - 1))
    index[i] = data.draw(st.sampled_from([-1, 7, 100]))  # out of range for 7 segments, and usually unsorted
    expected_bad = np.count_nonzero((index < 0) | (index >= 7) | (index > np.append(index[1:], 6)))
    _, bad = sorted_index_to_ptr(index, 7, nchunks)
    assert bad == expected_bad > 0


@given(values, st.integers(0, 3), st.integers(1, 7), st.sampled_from([np.int32, np.int64]))
def test_counting_sort_is_a_stable_sort(raw, extra, nchunks, perm_dtype):
    index = np.array(raw, dtype=np.int64)
    num_segments = (int(index.max()) + 1 if index.size else 0) + extra
    ptr, perm, bad = counting_sort(index, num_segments, nchunks, np.empty(0, perm_dtype))
    assert bad == 0
    np.testing.assert_array_equal(perm, np.argsort(index, kind="stable"))
    np.testing.assert_array_equal(ptr, np.concatenate([[0], np.cumsum(np.bincount(index, minlength=num_segments))]))


@given(values, st.integers(1, 7), st.sampled_from([-3, 7]))
def test_counting_sort_rejects_out_of_range(raw, nchunks, wrong):
    index = np.array(raw + [wrong], dtype=np.int64)
    _, _, bad = counting_sort(index, 7, nchunks, np.empty(0, np.int32))
    assert bad == 1
