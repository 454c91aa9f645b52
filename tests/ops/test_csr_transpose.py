"""csr_transpose and csr_order (``ops/csr_transpose.py``) against the reference and a stable sort, on both
backends; bad input. (csr_transpose is also tested with gather_segment_reduce, whose backward it serves.)"""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import scatterx.ops
from scatterx import reference


def test_matches_a_stable_sort(backend):
    @settings(max_examples=backend.examples(100))
    @given(st.lists(st.integers(0, 6), max_size=30), st.integers(7, 9), st.sampled_from([torch.int32, torch.int64]))
    def check(values, num_rows, dtype):
        index = torch.tensor(values, dtype=torch.int64).to(dtype)
        with backend:
            ptr, order = scatterx.ops.csr_order(backend.put(index), num_rows)
        ptr, order = ptr.cpu(), order.cpu()
        assert ptr.dtype == order.dtype == torch.int64
        assert torch.equal(order, torch.sort(index.long(), stable=True).indices)
        assert torch.equal(
            ptr,
            torch.cat([torch.zeros(1, dtype=torch.int64), torch.bincount(index.long(), minlength=num_rows).cumsum(0)]),
        )

    check()


def test_csr_transpose_matches_the_reference(backend):
    @settings(max_examples=backend.examples(100))
    @given(st.data(), st.integers(0, 6), st.integers(1, 8), st.sampled_from([torch.int32, torch.int64]))
    def check(data, segments, num_rows, dtype):
        lengths = data.draw(st.lists(st.integers(0, 4), min_size=segments, max_size=segments))
        ptr = torch.tensor([0] + lengths, dtype=torch.int64).cumsum(0).to(dtype)
        index = torch.tensor(
            data.draw(st.lists(st.integers(0, num_rows - 1), min_size=sum(lengths), max_size=sum(lengths))),
            dtype=torch.int64,
        ).to(dtype)
        with backend:
            got = scatterx.ops.csr_transpose(backend.put(ptr), backend.put(index), num_rows)
            order = scatterx.ops.csr_order(backend.put(index), num_rows)
        for got_t, want_t in zip(
            got + order, reference.csr_transpose(ptr, index, num_rows) + reference.csr_order(index, num_rows)
        ):
            assert got_t.dtype == torch.int64 and torch.equal(got_t.cpu(), want_t)

    check()


def test_hand_written_and_opcheck():
    ptr, order = scatterx.ops.csr_order(torch.tensor([2, 0, 2, 1]), 4)
    assert ptr.tolist() == [0, 1, 2, 4, 4] and order.tolist() == [1, 3, 0, 2]
    torch.library.opcheck(torch.ops.scatterx.csr_order.default, (torch.tensor([2, 0, 2, 1]), 4))


def test_bad_input_raises():
    with pytest.raises(IndexError, match="out of range"):
        scatterx.ops.csr_order(torch.tensor([0, 3]), 3)
    with pytest.raises(IndexError):
        scatterx.ops.csr_order(torch.tensor([0, -1]), 3)
    with pytest.raises(TypeError, match="int32 or int64"):
        scatterx.ops.csr_order(torch.tensor([0.0]), 3)
    with pytest.raises(TypeError, match="num_rows"):
        scatterx.ops.csr_order(torch.tensor([0]), None)
    with pytest.raises(ValueError, match="num_rows must be >= 0"):
        scatterx.ops.csr_order(torch.tensor([0]), -1)
