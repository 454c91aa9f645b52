"""gather_segment_reduce with ``weight=``: against the reference (gather, scale, reduce) on both backends, exact
gradients in src and weight (double backward for sum/mean), opcheck, torch.compile, and bad weights."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import REDUCES, SUPPORTED_DTYPES, random_values
from torch.autograd import gradcheck, gradgradcheck

import scatterx
from scatterx import reference


@st.composite
def weighted_problems(draw, dtype=None):
    """src of rank 1-4 reduced along dim, CSR segments over an index in any order, a weight per entry: (E,), or
    (E, heads) with the heads at dim + 1."""
    dtype = draw(st.sampled_from(SUPPORTED_DTYPES)) if dtype is None else dtype
    reduce = draw(st.sampled_from(REDUCES))
    heads = draw(st.booleans())
    ndim = draw(st.integers(2 if heads else 1, 4))
    shape = draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(0, ndim - (2 if heads else 1)))
    shape[dim] = draw(st.integers(1, 7))
    lengths = draw(st.lists(st.integers(0, 5), max_size=7))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    ptr = torch.tensor([0] + lengths).cumsum(0)
    edges = int(ptr[-1])
    index = torch.randint(0, shape[dim], (edges,), generator=g).to(draw(st.sampled_from([torch.int32, torch.int64])))
    weight_shape = (edges, shape[dim + 1]) if heads else (edges,)
    weight = random_values(weight_shape, dtype, g, "prod")  # small: products of weighted values stay in range
    src = random_values(shape, dtype, g, "prod" if reduce == "prod" else "sum")
    dim = dim - ndim if draw(st.booleans()) else dim  # negative dims too
    return dict(src=src, ptr=ptr, index=index, reduce=reduce, dim=dim, weight=weight)


def _compare(got, want, reduce, dtype):
    # weighted amax/amin round a product: exact in float32/64 (one rounding both ways), not through the
    # interpreter's half-type conversions
    exact = reduce if dtype not in (torch.float16, torch.bfloat16) else "sum"
    assert_matches(got, want, exact)


def test_matches_reference(backend):
    @settings(max_examples=backend.examples(200))
    @given(weighted_problems())
    def check(p):
        q = backend.put(p)
        with backend:
            got = scatterx.gather_segment_reduce(
                q["src"], q["ptr"], q["index"], q["reduce"], q["dim"], weight=q["weight"]
            )
        want = reference.gather_segment_reduce(p["src"], p["ptr"], p["index"], p["reduce"], p["dim"], p["weight"])
        _compare(got, want, p["reduce"], p["src"].dtype)

    check()


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
def test_matches_reference_with_heads(backend, reduce, dtype):
    g = torch.Generator().manual_seed(3)
    src = random_values((6, 3, 5), dtype, g, "prod")
    ptr = torch.tensor([0, 4, 4, 9, 12])
    index = torch.randint(0, 6, (12,), generator=g)
    weight = random_values((12, 3), dtype, g, "prod")
    with backend:
        got = scatterx.gather_segment_reduce(*backend.put((src, ptr, index)), reduce, weight=backend.put(weight))
    _compare(got, reference.gather_segment_reduce(src, ptr, index, reduce, 0, weight), reduce, dtype)


def test_hand_written():
    src = torch.tensor([[1.0, 2.0], [10.0, 20.0], [100.0, 200.0]])
    ptr = torch.tensor([0, 3, 3, 5])
    index = torch.tensor([2, 0, 2, 1, 1])
    weight = torch.tensor([0.5, 2.0, -1.0, 3.0, 0.0])
    # segment 0: 0.5*[100,200] + 2*[1,2] - [100,200] = [-48, -96]; segment 2: 3*[10,20] + 0*[10,20]
    torch.testing.assert_close(
        scatterx.gather_segment_reduce(src, ptr, index, "sum", weight=weight),
        torch.tensor([[-48.0, -96.0], [0.0, 0.0], [30.0, 60.0]]),
    )
    torch.testing.assert_close(
        scatterx.gather_segment_reduce(src, ptr, index, "mean", weight=weight),
        torch.tensor([[-16.0, -32.0], [0.0, 0.0], [15.0, 30.0]]),
    )
    torch.testing.assert_close(
        scatterx.gather_segment_reduce(src, ptr, index, "amax", weight=weight),
        torch.tensor([[50.0, 100.0], [0.0, 0.0], [30.0, 60.0]]),
    )
    # heads: src (3, 2 heads, 1 channel), weight per head
    per_head = torch.tensor([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    got = scatterx.gather_segment_reduce(src.unsqueeze(-1), ptr, index, "sum", weight=per_head)
    torch.testing.assert_close(got.squeeze(-1), torch.tensor([[201.0, 0.0], [0.0, 0.0], [0.0, 40.0]]))
    # a weight of ones is the unweighted op
    ones = torch.ones(5)
    for reduce in REDUCES:
        torch.testing.assert_close(
            scatterx.gather_segment_reduce(src, ptr, index, reduce, weight=ones),
            scatterx.gather_segment_reduce(src, ptr, index, reduce),
        )


@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("heads", [False, True])
def test_gradients(reduce, heads):
    g = torch.Generator().manual_seed(11)
    src = torch.randn(6, 2, 3, dtype=torch.float64, generator=g)
    ptr = torch.tensor([0, 4, 4, 9, 11])
    index = torch.tensor([2, 4, 1, 2, 0, 5, 3, 4, 2, 1, 1])
    weight = torch.randn((11, 2) if heads else (11,), dtype=torch.float64, generator=g)
    if reduce == "prod":
        weight[3] = 0.0  # a zero member: prod's gradient is still exact

    def f(x, w):
        return scatterx.gather_segment_reduce(x, ptr, index, reduce, weight=w)

    inputs = (src.requires_grad_(), weight.requires_grad_())
    assert gradcheck(f, inputs)
    if reduce in ("sum", "mean"):
        assert gradgradcheck(f, inputs)


def test_amax_ties_split_the_gradient():
    src = torch.tensor([[1.0], [2.0]], requires_grad=True)
    weight = torch.tensor([2.0, 1.0, 0.5], requires_grad=True)
    ptr, index = torch.tensor([0, 3]), torch.tensor([0, 1, 1])  # 2*1 == 1*2: a tie; 0.5*2 below
    out = scatterx.gather_segment_reduce(src, ptr, index, "amax", weight=weight)
    assert out.item() == 2.0
    grad_src, grad_w = torch.autograd.grad(out.sum(), (src, weight))
    assert grad_src.flatten().tolist() == [1.0, 0.5]  # d(2*x0)/dx0 * 1/2, d(1*x1)/dx1 * 1/2
    assert grad_w.tolist() == [0.5, 1.0, 0.0]  # x0 / 2, x1 / 2


def test_given_transpose_gives_the_same_gradients():
    g = torch.Generator().manual_seed(2)
    src = torch.randn(5, 3, dtype=torch.float64, generator=g, requires_grad=True)
    ptr, index = torch.tensor([0, 2, 6, 7]), torch.tensor([4, 0, 1, 1, 3, 0, 2])
    weight = torch.randn(7, dtype=torch.float64, generator=g, requires_grad=True)
    transpose = scatterx.csr_transpose(ptr, index, 5)
    grads = [
        torch.autograd.grad(
            scatterx.gather_segment_reduce(src, ptr, index, weight=weight, transpose=t).sum(), (src, weight)
        )
        for t in (None, transpose)
    ]
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b)


def test_compiles_without_graph_breaks():
    src = torch.randn(5, 2, 4, requires_grad=True)
    weight = torch.rand(5, 2, requires_grad=True)
    ptr, index = torch.tensor([0, 2, 5]), torch.tensor([4, 0, 1, 1, 3])

    def f(x, w):
        return scatterx.gather_segment_reduce(x, ptr, index, "sum", weight=w).relu().sum()

    eager = torch.autograd.grad(f(src, weight), (src, weight))
    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    for a, b in zip(torch.autograd.grad(compiled(src, weight), (src, weight)), eager):
        torch.testing.assert_close(a, b)


def test_opcheck():
    src = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(5, 2, dtype=torch.float64, requires_grad=True)
    ptr, index = torch.tensor([0, 2, 5]), torch.tensor([4, 0, 1, 1, 3])
    for reduce in ("sum", "mean"):
        torch.library.opcheck(
            torch.ops.scatterx.weighted_gather_segment_reduce.default, (src, ptr, index, weight, reduce)
        )


@pytest.mark.parametrize("requires_grad", [False, True])
def test_bad_weights_raise(requires_grad):
    src = torch.ones(4, 2, 3, requires_grad=requires_grad)
    ptr, index = torch.tensor([0, 2, 3]), torch.tensor([0, 3, 1])
    cases = [
        (torch.ones(2), ValueError, r"shape \(E,\) or \(E, heads\) with E = index.numel\(\) = 3"),
        (torch.ones(3, 2, 1), ValueError, "shape"),
        (torch.ones(3, 5), ValueError, "5 heads: src needs them at dim 1"),
        (torch.ones(3, dtype=torch.float64), TypeError, "weight has dtype torch.float64 but src has dtype"),
        ([1.0, 1.0, 1.0], TypeError, "weight must be a torch.Tensor"),
        (torch.ones(3, device="meta"), ValueError, "weight is on meta but src is on cpu"),
    ]
    for weight, error, match in cases:
        with pytest.raises(error, match=match):
            scatterx.gather_segment_reduce(src, ptr, index, weight=weight)
    with pytest.raises(ValueError, match="heads"):  # heads need a dim after the reduced one
        scatterx.gather_segment_reduce(torch.ones(4), ptr, index, weight=torch.ones(3, 1))


@pytest.mark.parametrize(
    "ptr, index, error, match",
    [
        ([0, 2, 3], [0, 5, 1], IndexError, r"index\[1\]=5 is out of range"),
        ([0, 2, 3], [0, -1, 1], IndexError, r"index\[1\]=-1"),
        ([0, 2, 4], [0, 1, 1], ValueError, r"ptr must end at index.numel\(\)=3"),
        ([0, 3, 2, 3], [0, 1, 1], ValueError, "non-decreasing"),
    ],
)
@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("reduce", ["sum", "amax"])
def test_bad_structure_raises_before_any_kernel(ptr, index, error, match, requires_grad, reduce):
    src = torch.ones(4, 2, requires_grad=requires_grad)
    with pytest.raises(error, match=match):
        scatterx.gather_segment_reduce(
            src, torch.tensor(ptr), torch.tensor(index), reduce, weight=torch.ones(len(index))
        )
