"""gather_segment_reduce and csr_transpose against their references, gradients, and bad input."""

import pytest
import torch
from conftest import _backend, assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import ALIASES, REDUCES, SUPPORTED_DTYPES, random_values
from torch.autograd import gradcheck, gradgradcheck

import scatterx
from scatterx import reference


@st.composite
def gather_problems(draw, dtype=None, reduce=None):
    """src (any rank, reduced along dim), CSR segments over an index that reads src's rows in any order."""
    dtype = draw(st.sampled_from(SUPPORTED_DTYPES)) if dtype is None else dtype
    reduce = draw(st.sampled_from(REDUCES + list(ALIASES))) if reduce is None else reduce
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    shape[dim] = draw(st.integers(1, 9))
    lengths = draw(st.lists(st.integers(0, 5), max_size=8))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    ptr = torch.tensor([0] + lengths).cumsum(0)
    index = torch.randint(0, shape[dim], (int(ptr[-1]),), generator=g)
    index = index.to(draw(st.sampled_from([torch.int32, torch.int64])))
    return dict(src=random_values(shape, dtype, g, reduce), ptr=ptr, index=index, reduce=reduce, dim=dim)


def test_matches_reference(backend):
    @settings(max_examples=backend.examples(300))
    @given(gather_problems())
    def check(p):
        q = backend.put(p)
        with backend:
            got = scatterx.gather_segment_reduce(q["src"], q["ptr"], q["index"], q["reduce"], q["dim"])
        want = reference.gather_segment_reduce(p["src"], p["ptr"], p["index"], p["reduce"], p["dim"])
        assert_matches(got, want, ALIASES.get(p["reduce"], p["reduce"]))

    check()


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_matches_reference_fixed_problem(backend, reduce, dtype):
    g = torch.Generator().manual_seed(5)
    src = random_values((7, 5), dtype, g, reduce)
    ptr = torch.tensor([0, 3, 3, 9, 10])
    index = torch.randint(0, 7, (10,), generator=g)
    with backend:
        got = scatterx.gather_segment_reduce(backend.put(src), backend.put(ptr), backend.put(index), reduce)
    assert_matches(got, reference.gather_segment_reduce(src, ptr, index, reduce), reduce)


def test_hand_written():
    src = torch.tensor([[1.0, -1.0], [10.0, -10.0], [100.0, -100.0]])
    ptr = torch.tensor([0, 3, 3, 5])
    index = torch.tensor([2, 0, 2, 1, 1])  # repeats, any order
    expected = {
        "sum": [[201.0, -201.0], [0.0, 0.0], [20.0, -20.0]],
        "mean": [[67.0, -67.0], [0.0, 0.0], [10.0, -10.0]],
        "prod": [[10000.0, -10000.0], [0.0, 0.0], [100.0, 100.0]],
        "amax": [[100.0, -1.0], [0.0, 0.0], [10.0, -10.0]],
        "amin": [[1.0, -100.0], [0.0, 0.0], [10.0, -10.0]],
    }
    for reduce, want in expected.items():
        torch.testing.assert_close(scatterx.gather_segment_reduce(src, ptr, index, reduce), torch.tensor(want))
    # along dim 1: segments of columns
    got = scatterx.gather_segment_reduce(src.t(), ptr, index, "sum", dim=1)
    torch.testing.assert_close(got, torch.tensor(expected["sum"]).t())


@settings(max_examples=100)
@given(st.lists(st.integers(0, 4), max_size=8), st.integers(1, 6), st.integers(0, 2**31 - 1))
def test_csr_transpose_lists_each_reading(lengths, num_rows, seed):
    ptr = torch.tensor([0] + lengths).cumsum(0)
    index = torch.randint(0, num_rows, (int(ptr[-1]),), generator=torch.Generator().manual_seed(seed))
    ptr_t, index_t = scatterx.csr_transpose(ptr, index, num_rows)
    segment_of = [s for s, n in enumerate(lengths) for _ in range(n)]
    for r in range(num_rows):
        want = [segment_of[k] for k in range(index.numel()) if index[k] == r]
        assert index_t[ptr_t[r] : ptr_t[r + 1]].tolist() == want
    assert ptr_t.dtype == index_t.dtype == torch.int64
    # transposing twice gives back the segments, each with its entries in increasing order
    ptr_tt, index_tt = scatterx.csr_transpose(ptr_t, index_t, len(lengths))
    assert torch.equal(ptr_tt, ptr)
    for s in range(len(lengths)):
        assert index_tt[ptr[s] : ptr[s + 1]].tolist() == sorted(index[ptr[s] : ptr[s + 1]].tolist())


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("with_transpose", [False, True])
def test_gradients(reduce, with_transpose):
    g = torch.Generator().manual_seed(3)
    src = torch.randn(6, 3, dtype=torch.float64, generator=g)
    src[1, 0] = 0.0  # a zero in a product
    src[4] = src[2]  # ties for amax/amin
    src.requires_grad_()
    ptr = torch.tensor([0, 4, 4, 9])
    index = torch.tensor([2, 4, 1, 2, 0, 5, 3, 4, 2])
    transpose = scatterx.csr_transpose(ptr, index, 6) if with_transpose else None

    def f(x):
        return scatterx.gather_segment_reduce(x, ptr, index, reduce, transpose=transpose)

    if reduce in ("amax", "amin"):  # ties are not differentiable: compare with index_scatter_reduce's split
        rows = src.detach().index_select(0, index).requires_grad_()
        targets = scatterx.ptr_to_index(ptr)
        want_rows = torch.autograd.grad(scatterx.index_scatter_reduce(0, targets, rows, reduce).sum(), rows)[0]
        want = torch.zeros_like(src).index_add_(0, index, want_rows)
        got = torch.autograd.grad(f(src).sum(), src)[0]
        torch.testing.assert_close(got, want)
    else:
        assert gradcheck(f, (src,))
    if reduce in ("sum", "mean"):
        assert gradgradcheck(f, (src,))


def test_backward_reads_the_transpose_it_is_given():
    """A given transpose is what the backward uses (a wrong one gives a wrong gradient, so it is not recomputed)."""
    src = torch.ones(3, 1, requires_grad=True)
    ptr, index = torch.tensor([0, 2]), torch.tensor([0, 2])
    right = scatterx.csr_transpose(ptr, index, 3)
    wrong = (torch.tensor([0, 0, 1, 2]), torch.tensor([0, 0]))  # claims rows 1 and 2 are read, not 0 and 2
    grad_right = torch.autograd.grad(scatterx.gather_segment_reduce(src, ptr, index, transpose=right).sum(), src)
    grad_wrong = torch.autograd.grad(scatterx.gather_segment_reduce(src, ptr, index, transpose=wrong).sum(), src)
    assert grad_right[0].flatten().tolist() == [1.0, 0.0, 1.0]
    assert grad_wrong[0].flatten().tolist() == [0.0, 1.0, 1.0]


def test_compiles_without_graph_breaks():
    src = torch.randn(5, 4, requires_grad=True)
    ptr, index = torch.tensor([0, 2, 5]), torch.tensor([4, 0, 1, 1, 3])
    transpose = scatterx.csr_transpose(ptr, index, 5)

    def f(x):
        return scatterx.gather_segment_reduce(x, ptr, index, "mean", transpose=transpose).relu().sum()

    eager = torch.autograd.grad(f(src), src)[0]
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(torch.autograd.grad(compiled(src), src)[0], eager)


def test_opcheck():
    src = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    ptr, index = torch.tensor([0, 2, 5]), torch.tensor([4, 0, 1, 1, 3])
    torch.library.opcheck(torch.ops.scatterx.gather_segment_reduce.default, (src, ptr, index, "sum", 0, None, None))
    torch.library.opcheck(torch.ops.scatterx.csr_transpose.default, (ptr, index, 5))


@pytest.mark.parametrize(
    "ptr, index, error, match",
    [
        ([0, 2, 3], [0, 5, 1], IndexError, r"index\[1\]=5 is out of range for src.size\(0\)=4"),
        ([0, 2, 3], [0, -1, 1], IndexError, r"index\[1\]=-1"),
        ([0, 2, 4], [0, 1, 1], ValueError, r"ptr must end at index.numel\(\)=3"),
        ([1, 2, 3], [0, 1, 1], ValueError, "ptr must start at 0"),
        ([0, 3, 2, 3], [0, 1, 1], ValueError, "non-decreasing"),
    ],
)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_bad_structure_raises_before_any_kernel(ptr, index, error, match, requires_grad):
    src = torch.ones(4, 2, requires_grad=requires_grad)
    with pytest.raises(error, match=match):
        scatterx.gather_segment_reduce(src, torch.tensor(ptr), torch.tensor(index))


def test_bad_arguments():
    src, ptr, index = torch.ones(4, 2), torch.tensor([0, 1]), torch.tensor([0])
    with pytest.raises(TypeError, match="int32 or int64"):
        scatterx.gather_segment_reduce(src, ptr, index.float())
    with pytest.raises(ValueError, match=r"reduce must be one of"):
        scatterx.gather_segment_reduce(src, ptr, index, "median")
    with pytest.raises(IndexError):
        scatterx.gather_segment_reduce(src, ptr, index, dim=2)
    with pytest.raises(TypeError, match="pair"):
        scatterx.gather_segment_reduce(src, ptr, index, transpose=ptr)
    with pytest.raises(ValueError, match="transpose does not fit"):
        scatterx.gather_segment_reduce(src, ptr, index, transpose=(torch.tensor([0, 1]), index))
    with pytest.raises(TypeError, match="num_rows"):
        scatterx.csr_transpose(ptr, index, 2.0)
    with pytest.raises(IndexError):
        scatterx.csr_transpose(ptr, torch.tensor([3]), 2)


@pytest.mark.parametrize(
    "reduce, requires_grad, weighted",
    [
        ("sum", False, False),
        ("amax", False, False),
        ("amax", True, False),
        ("sum", False, True),
        ("sum", True, True),
    ],
)
def test_a_bad_transpose_raises_on_every_path(reduce, requires_grad, weighted):
    """A transpose of the right sizes but bad values is an error whether or not a backward will use it."""
    src = torch.ones(3, 2, requires_grad=requires_grad)
    ptr, index = torch.tensor([0, 2, 3]), torch.tensor([2, 0, 2])
    weight = torch.ones(3) if weighted else None
    out_of_range = (torch.tensor([0, 1, 1, 3]), torch.tensor([0, 7, 1]))  # index_t names segment 7 of 2
    with pytest.raises(IndexError, match=r"transpose\[1\] \(index_t\)\[1\]=7"):
        scatterx.gather_segment_reduce(src, ptr, index, reduce, weight=weight, transpose=out_of_range)
    decreasing = (torch.tensor([0, 2, 1, 3]), torch.tensor([0, 0, 1]))
    with pytest.raises(ValueError, match="non-decreasing"):
        scatterx.gather_segment_reduce(src, ptr, index, reduce, weight=weight, transpose=decreasing)


def test_csr_transpose_checks_ptr_on_the_device_path():
    """On the GPU backend ptr is checked by device asserts, which raise at once on CPU tensors (interpreter)."""
    gpu = _backend("gpu")
    if not gpu.interpreted:
        pytest.skip("on CUDA the check is a device-side assert, which ends the process's CUDA context")
    with gpu:
        with pytest.raises(RuntimeError, match=r"ptr must end at index\.numel"):
            torch.ops.scatterx.csr_transpose(torch.tensor([0, 1, 5]), torch.tensor([0, 1, 1]), 2)
        with pytest.raises(RuntimeError, match="non-decreasing"):
            torch.ops.scatterx.csr_transpose(torch.tensor([0, 3, 2, 3]), torch.tensor([0, 1, 1]), 2)
        ptr_t, index_t = torch.ops.scatterx.csr_transpose(torch.tensor([0, 2, 3]), torch.tensor([1, 0, 1]), 2)
    assert ptr_t.tolist() == [0, 1, 3] and index_t.tolist() == [0, 0, 1]
