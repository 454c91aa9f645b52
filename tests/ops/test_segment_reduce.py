"""segment_reduce, index_to_ptr and ptr_to_index against the reference and against each other."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import REDUCES, random_values

import scatterx
from scatterx import reference


@st.composite
def segment_problems(draw):
    dtype = draw(st.sampled_from(scatterx.SUPPORTED_DTYPES))
    reduce = draw(st.sampled_from(REDUCES))
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    lengths = draw(st.lists(st.integers(0, 4), min_size=0, max_size=8))  # empty segments included
    shape[dim] = sum(lengths)
    ptr = torch.tensor([0] + lengths).cumsum(0).to(draw(st.sampled_from([torch.int32, torch.int64])))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    return random_values(shape, dtype, g, reduce), ptr, reduce, dim


def test_segment_reduce_matches_reference(backend):
    @settings(max_examples=backend.examples(300))
    @given(segment_problems())
    def check(problem):
        src, ptr, reduce, dim = problem
        with backend:
            got = scatterx.segment_reduce(backend.put(src), backend.put(ptr), reduce, dim)
        assert_matches(got, reference.segment_reduce(src, ptr, reduce, dim), reduce)

    check()


@settings(max_examples=200)
@given(st.lists(st.integers(0, 5), max_size=12), st.integers(0, 3))
def test_index_to_ptr_and_ptr_to_index_are_inverse(lengths, extra_segments):
    counts = torch.tensor(lengths + [0] * extra_segments, dtype=torch.int64)
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    index = scatterx.ptr_to_index(ptr)
    assert index.tolist() == [s for s, n in enumerate(counts.tolist()) for _ in range(n)]
    assert torch.equal(scatterx.index_to_ptr(index, counts.numel()), ptr)
    assert torch.equal(scatterx.index_to_ptr(index.int(), counts.numel()), ptr)


def test_index_to_ptr_hand_written(backend):
    with backend:
        assert scatterx.index_to_ptr(backend.put(torch.tensor([0, 0, 2])), 4).tolist() == [0, 2, 2, 3, 3]
        assert scatterx.index_to_ptr(backend.put(torch.tensor([], dtype=torch.long)), 2).tolist() == [0, 0, 0]
        assert scatterx.ptr_to_index(backend.put(torch.tensor([0, 2, 2, 3]))).tolist() == [0, 0, 2]


def test_index_to_ptr_and_ptr_to_index_compile_fullgraph():
    """Each is one op in a compiled graph (``scatterx::index_to_ptr``, ``scatterx::ptr_to_index``, with fakes that
    opcheck holds): its checks read the values when the graph runs, and ptr_to_index's length is data-dependent."""
    index, ptr = torch.tensor([0, 0, 2, 4]), torch.tensor([0, 2, 2, 3, 5])
    torch.library.opcheck(torch.ops.scatterx.index_to_ptr.default, (index, 5))
    torch.library.opcheck(torch.ops.scatterx.ptr_to_index.default, (ptr,))

    def step(index, ptr):
        return scatterx.index_to_ptr(index, 5), scatterx.ptr_to_index(ptr)

    compiled = torch.compile(step, fullgraph=True, dynamic=True, backend="aot_eager")
    for args in ((index, ptr), (torch.tensor([1, 3, 3], dtype=torch.int32), torch.tensor([0, 0, 4]))):
        for got, want in zip(compiled(*args), step(*args)):
            assert torch.equal(got, want)
    with pytest.raises(ValueError, match="sorted"):
        compiled(torch.tensor([2, 1, 1]), ptr)
    with pytest.raises(IndexError):
        compiled(torch.tensor([0, 5, 5]), ptr)
    with pytest.raises(ValueError, match="non-decreasing"):
        compiled(index, torch.tensor([0, 3, 2]))
    # the ops called directly check their arguments too (a float index read as bits, a 2-D one Numba's error)
    with pytest.raises(TypeError, match="int32 or int64"):
        torch.ops.scatterx.index_to_ptr(torch.tensor([0.0, 1.0]), 3)
    with pytest.raises(ValueError, match="1-D"):
        torch.ops.scatterx.index_to_ptr(torch.tensor([[0, 1]]), 3)
    with pytest.raises(ValueError, match="dim_size"):
        torch.ops.scatterx.index_to_ptr(torch.tensor([0, 1]), -1)
    with pytest.raises(ValueError, match="1-D"):
        torch.ops.scatterx.ptr_to_index(torch.tensor([[0, 1]]))


@pytest.mark.parametrize("reduce", REDUCES)
def test_segment_reduce_is_the_sorted_path_of_index_scatter_reduce(reduce):
    g = torch.Generator().manual_seed(1)
    index = torch.randint(0, 300, (50_000,), generator=g).sort().values
    src = torch.randn(50_000, 6, generator=g)
    ptr = scatterx.index_to_ptr(index, 300)
    a = scatterx.segment_reduce(src, ptr, reduce)
    b = scatterx.index_scatter_reduce(0, index, src, reduce, dim_size=300)
    assert torch.equal(a, b)  # one kernel: the same bits


def test_segment_reduce_hand_written_dim_minus_one(backend):
    src = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]])
    with backend:
        got = scatterx.segment_reduce(backend.put(src), backend.put(torch.tensor([0, 1, 1, 4])), "amax", dim=-1)
    assert got.tolist() == [[1.0, 0.0, 4.0], [5.0, 0.0, 8.0]]


def test_segment_reduce_matches_reference_on_a_3d_tensor(backend):
    g = torch.Generator().manual_seed(5)
    src = random_values((2, 9, 3), torch.float32, g, "sum")
    ptr = torch.tensor([0, 2, 2, 7, 9])
    for reduce in REDUCES:
        with backend:
            got = scatterx.segment_reduce(backend.put(src), backend.put(ptr), reduce, dim=1)
        assert_matches(got, reference.segment_reduce(src, ptr, reduce, dim=1), reduce)
