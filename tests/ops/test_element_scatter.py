"""element_scatter / element_gather (the planner's element plans) on every backend, against the x-transformer
reference (``reference.x_scatter`` / ``x_gather`` on the same map): both forms (along a dim, by coordinates), every
reduction and assign, every dtype, int32/int64 indices and non-contiguous index, src and base; bad indices raise
with their position before anything is written."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import random_values

from scatterx import reference
from scatterx.ops import element_gather, element_scatter
from scatterx.planner import XMap

MODES = ["assign", "sum", "mean", "prod", "amax", "amin"]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64]


def _layout(t: torch.Tensor, how: str) -> torch.Tensor:
    """The same values in another memory layout: transposed storage, every other element of a larger tensor, or
    (for an index) stride 0 along a dim where the values repeat."""
    if how == "transposed" and t.dim() >= 2:
        return t.mT.contiguous().mT
    if how == "strided":
        return torch.stack([t, torch.zeros_like(t)], -1)[..., 0]
    return t


@st.composite
def along_problems(draw, dtype):
    """(index, src, base, dim): index/src of one shape, base the same except along dim (any size there)."""
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(0, ndim - 1))
    size = draw(st.integers(1, 5))
    base_shape = list(shape)
    base_shape[dim] = size
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    index = torch.randint(0, size, shape, generator=g)
    if ndim >= 2 and draw(st.booleans()):  # constant along a dim other than dim, stored with stride 0
        d = (dim + 1) % ndim
        index = index.narrow(d, 0, 1).expand(shape)
    index = _layout(
        index.to(draw(st.sampled_from([torch.int32, torch.int64]))),
        draw(st.sampled_from(["contiguous", "transposed", "strided"])),
    )
    src = _layout(random_values(shape, dtype, g, "prod"), draw(st.sampled_from(["contiguous", "transposed"])))
    base = _layout(random_values(base_shape, dtype, g, "prod"), draw(st.sampled_from(["contiguous", "strided"])))
    return index, src, base, dim


@st.composite
def coordinate_problems(draw, dtype):
    """(index, src, base): index of shape B + (base.dim(),), src of shape B."""
    rank = draw(st.integers(1, 3))
    base_shape = draw(st.lists(st.integers(1, 3), min_size=rank, max_size=rank))
    batch = draw(st.lists(st.integers(0, 4), min_size=1, max_size=2))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    index = torch.stack([torch.randint(0, s, batch, generator=g) for s in base_shape], -1)
    index = _layout(
        index.to(draw(st.sampled_from([torch.int32, torch.int64]))),
        draw(st.sampled_from(["contiguous", "transposed", "strided"])),
    )
    src = random_values(batch, dtype, g, "prod")
    base = _layout(random_values(base_shape, dtype, g, "prod"), draw(st.sampled_from(["contiguous", "strided"])))
    return index, src, base


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduce", MODES)
def test_along_a_dim_matches_the_reference(backend, reduce, dtype):
    @settings(max_examples=backend.examples(40))
    @given(along_problems(dtype), st.booleans())
    def check(problem, include_self):
        index, src, base, dim = problem
        with backend:
            got = element_scatter(*backend.put((index, src, base)), reduce, include_self, dim)
        want = reference.x_scatter(
            XMap.along_dim(index, base.shape, dim), base, src, reduce, include_self and reduce != "assign"
        )
        assert_matches(got, want, reduce)

    check()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("reduce", MODES)
def test_by_coordinates_matches_the_reference(backend, reduce, dtype):
    @settings(max_examples=backend.examples(25))
    @given(coordinate_problems(dtype), st.booleans())
    def check(problem, include_self):
        index, src, base = problem
        with backend:
            got = element_scatter(*backend.put((index, src, base)), reduce, include_self)
        want = reference.x_scatter(XMap.nd(index, base.shape), base, src, reduce, include_self and reduce != "assign")
        assert_matches(got, want, reduce)

    check()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gathers_match_the_reference(backend, dtype):
    @settings(max_examples=backend.examples(40))
    @given(along_problems(dtype), coordinate_problems(dtype))
    def check(along, coordinates):
        index, _, data, dim = along
        with backend:
            got = element_gather(*backend.put((data, index)), dim)
        assert torch.equal(got.cpu(), reference.x_gather(XMap.along_dim(index, data.shape, dim), data))
        index, _, data = coordinates
        with backend:
            got = element_gather(*backend.put((data, index)))
        assert torch.equal(got.cpu(), reference.x_gather(XMap.nd(index, data.shape), data))

    check()


def test_assign_keeps_the_last_write_in_row_major_order(backend):
    index = torch.tensor([[1, 0], [1, 1], [0, 1]])
    src = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    with backend:
        got = element_scatter(*backend.put((index, src, torch.zeros(2, 2))), "assign", True, 0)
    assert got.cpu().tolist() == [[5.0, 2.0], [3.0, 6.0]]
    coords = torch.tensor([[0, 1], [1, 0], [0, 1]])
    with backend:
        got = element_scatter(*backend.put((coords, torch.tensor([1.0, 2.0, 3.0]), torch.zeros(2, 2))), "assign", True)
    assert got.cpu().tolist() == [[0.0, 3.0], [2.0, 0.0]]


@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("reduce", MODES)
def test_bad_index_raises_with_its_position_and_writes_nothing(reduce, index_dtype):
    base = torch.arange(12.0).view(3, 4)
    before = base.clone()
    index = torch.tensor([[0, 1, 2, 0], [2, 3, 0, 1]], dtype=index_dtype)  # 3 >= base.size(0)
    with pytest.raises(IndexError, match=r"index\[1, 1\] = 3 is out of bounds for dimension 0 with size 3"):
        element_scatter(index, torch.ones(2, 4), base, reduce, True, 0)
    with pytest.raises(IndexError, match=r"index\[1, 1\] = 3 is out of bounds for dimension 0 with size 3"):
        element_gather(base, index, 0)
    coords = torch.tensor([[0, 1], [2, 4], [-1, 0]], dtype=index_dtype)  # flat offset 12 would be "in range" of 3x5
    with pytest.raises(IndexError, match=r"index\[1, 1\] = 4 is out of bounds for dimension 1 with size 4"):
        element_scatter(coords, torch.ones(3), base, reduce, False)
    with pytest.raises(IndexError, match=r"index\[1, 1\] = 4"):
        element_gather(base, coords)
    assert torch.equal(base, before)


@pytest.mark.parametrize("reduce", MODES)
def test_a_base_with_no_element_still_rejects_every_entry(reduce):
    """A base with a dim of size 0 has no target: no kernel runs, and every entry of a non-empty index is still
    an error (along a dim: the index has base's size in every other dim; by coordinates: one coordinate is out)."""
    base = torch.zeros(0, 2)
    with pytest.raises(IndexError, match=r"index\[0, 0\] = 0 is out of bounds for dimension 0 with size 0"):
        element_scatter(torch.tensor([[0, 1], [5, 0]]), torch.ones(2, 2), base, reduce, True, 0)
    with pytest.raises(IndexError, match=r"index\[0\] = 1 is out of bounds for dimension 0 with size 0"):
        element_scatter(torch.tensor([1, 0]), torch.ones(2), torch.zeros(0), reduce, True, 0)
    with pytest.raises(IndexError, match=r"index\[0, 1\] = 0 is out of bounds for dimension 1 with size 0"):
        element_scatter(torch.tensor([[0, 0], [1, 0]]), torch.ones(2), torch.zeros(3, 0), reduce, False)
    assert element_scatter(torch.zeros(0, 2, dtype=torch.long), torch.ones(0, 2), base, reduce, True, 0).shape == (0, 2)


def test_a_coordinate_out_of_its_dim_is_caught_even_when_the_flat_offset_is_in_range():
    base = torch.zeros(3, 4)
    with pytest.raises(IndexError, match=r"index\[0, 1\] = 4"):
        element_scatter(torch.tensor([[0, 4]]), torch.ones(1), base, "sum", True)  # flat 4 = (1, 0)
    with pytest.raises(IndexError, match=r"index\[0, 1\] = 5"):
        element_scatter(torch.tensor([[0, 5, 0, 0]]), torch.ones(1, 4), base, "sum", True, 0)  # along dim 0: no row 5


@pytest.mark.parametrize(
    "args, error",
    [
        ((torch.tensor([[0]]), torch.ones(1, 1), torch.zeros(2, 1), "median", True, 0), ValueError),
        ((torch.tensor([[0, 1]]), torch.ones(1, 1), torch.zeros(2, 2), "sum", True, 0), ValueError),  # src shape
        ((torch.tensor([[0]]), torch.ones(1, 1), torch.zeros(2, 3), "sum", True, 0), ValueError),  # base shape
        ((torch.tensor([[0]]), torch.ones(1, 1), torch.zeros(2, 1), "sum", True, 2), ValueError),  # dim
        ((torch.tensor([[0]]), torch.ones(1), torch.zeros(2, 1), "sum", True), ValueError),  # 1 coordinate, rank 2
        ((torch.tensor([[0]]), torch.ones(1, 1), torch.zeros(2, 1, dtype=torch.float64), "sum", True, 0), ValueError),
        ((torch.tensor([[0.0]]), torch.ones(1, 1), torch.zeros(2, 1), "sum", True, 0), TypeError),
        (([[0]], torch.ones(1, 1), torch.zeros(2, 1), "sum", True, 0), TypeError),
        (
            (
                torch.tensor([[0]]),
                torch.ones(1, 1, dtype=torch.bool),
                torch.zeros(2, 1, dtype=torch.bool),
                "sum",
                True,
                0,
            ),
            TypeError,
        ),
    ],
)
def test_bad_arguments(args, error):
    with pytest.raises(error):
        element_scatter(*args)


@pytest.mark.parametrize("reduce", MODES)
def test_cpu_results_are_bit_identical_whatever_the_thread_count(reduce):
    """Large enough for several threads: every target still reduces its values in u's order, so float32 sums
    agree bit for bit with one thread."""
    _check_bit_identical_whatever_the_thread_count(reduce)


def _check_bit_identical_whatever_the_thread_count(reduce):
    g = torch.Generator().manual_seed(1)
    index = torch.randint(0, 60, (700, 96), generator=g)
    src = torch.randn(700, 96, generator=g) * 1e3
    base = torch.randn(60, 96, generator=g)
    results = []
    before = torch.get_num_threads()
    try:
        for threads in (1, 2):
            torch.set_num_threads(threads)
            results.append(
                [element_scatter(index, src, base, reduce, include_self, 0) for include_self in (True, False)]
                + [element_scatter(index.t(), src.t(), base.t(), reduce, True, 1)]
            )
    finally:
        torch.set_num_threads(before)
    for one, two in zip(*results):
        assert torch.equal(one, two)
    want = reference.x_scatter(XMap.along_dim(index[:50, :8], (60, 8), 0), base[:, :8], src[:50, :8], reduce, True)
    assert_matches(element_scatter(index[:50, :8], src[:50, :8], base[:, :8], reduce, True, 0), want, reduce)


def test_gpu_offsets_of_an_int32_index_into_a_dim_past_int32():
    """The GPU backend's coordinate check compares an int32 index with the data's sizes: a size of 2^31 or more
    does not fit the index's type (it was converted to it, and torch refused), and no data is needed to see it."""
    pytest.importorskip("triton")
    from scatterx.backends.gpu.element_scatter import _element_offsets

    big = 2**31 + 10
    offsets = _element_offsets(torch.tensor([[0, 5], [1, 2**31 - 1]], dtype=torch.int32), (2, big), None)
    assert offsets.tolist() == [5, big + 2**31 - 1]
