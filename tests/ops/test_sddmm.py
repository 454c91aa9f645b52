"""sddmm against its reference on both backends, gradients (double backward included), opcheck, torch.compile,
and bad input."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import SUPPORTED_DTYPES, random_values
from torch.autograd import gradcheck, gradgradcheck

import scatterx
from scatterx import reference

OPS = ["add", "mul", "dot"]


@st.composite
def sddmm_problems(draw):
    """a (sources) and b (targets) with one feature shape of rank 1-3, CSR edges by target."""
    dtype = draw(st.sampled_from(SUPPORTED_DTYPES))
    op = draw(st.sampled_from(OPS))
    features = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
    if op != "dot" and draw(st.booleans()):
        features = []  # 1-D rows: one value per node
    lengths = draw(st.lists(st.integers(0, 4), max_size=6))
    sources = draw(st.integers(1, 6))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    ptr = torch.tensor([0] + lengths).cumsum(0)
    index_dtype = draw(st.sampled_from([torch.int32, torch.int64]))
    index = torch.randint(0, sources, (int(ptr[-1]),), generator=g).to(index_dtype)
    a = random_values((sources, *features), dtype, g, "prod")
    b = random_values((len(lengths), *features), dtype, g, "prod")
    return dict(ptr=ptr, index=index, a=a, b=b, op=op)


def test_matches_reference(backend):
    @settings(max_examples=backend.examples(200))
    @given(sddmm_problems())
    def check(p):
        q = backend.put(p)
        with backend:
            got = scatterx.sddmm(q["ptr"], q["index"], q["a"], q["b"], q["op"])
        want = reference.sddmm(p["ptr"], p["index"], p["a"], p["b"], p["op"])
        assert_matches(got, want, "sum")

    check()


def test_hand_written():
    ptr, index = torch.tensor([0, 2, 2, 3]), torch.tensor([1, 0, 1])
    a = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = torch.tensor([[1.0, 1.0], [5.0, 5.0], [0.0, 10.0]])
    assert scatterx.sddmm(ptr, index, a, b, "dot").tolist() == [7.0, 3.0, 40.0]
    assert scatterx.sddmm(ptr, index, a, b, "add").tolist() == [[4.0, 5.0], [2.0, 3.0], [3.0, 14.0]]
    assert scatterx.sddmm(ptr, index, a, b, "mul").tolist() == [[3.0, 4.0], [1.0, 2.0], [0.0, 40.0]]
    # heads: (N, heads, C) -> (E, heads)
    got = scatterx.sddmm(ptr, index, a.view(2, 2, 1), b.view(3, 2, 1), "dot")
    assert got.tolist() == [[3.0, 4.0], [1.0, 2.0], [0.0, 40.0]]


@pytest.mark.parametrize("op", OPS)
def test_gradients(op):
    g = torch.Generator().manual_seed(7)
    ptr, index = torch.tensor([0, 3, 3, 7]), torch.tensor([1, 0, 1, 3, 2, 2, 0])
    a = torch.randn(4, 2, 3, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(3, 2, 3, dtype=torch.float64, generator=g, requires_grad=True)

    def f(x, y):
        return scatterx.sddmm(ptr, index, x, y, op)

    assert gradcheck(f, (a, b))
    assert gradgradcheck(f, (a, b))


def test_compiles_without_graph_breaks():
    """A GAT-style step: logits by sddmm, softmax per target, weighted aggregation."""
    ptr, index = torch.tensor([0, 2, 5]), torch.tensor([4, 0, 1, 1, 3])
    x = torch.randn(5, 2, 4, requires_grad=True)
    att = torch.randn(2, 4, requires_grad=True)

    def step(x, att):
        alpha_src = (x * att).sum(-1, keepdim=True)  # (N, heads, 1)
        alpha_dst = alpha_src[:2]
        logits = scatterx.sddmm(ptr, index, alpha_src, alpha_dst, "add").squeeze(-1)  # (E, heads)
        alpha = scatterx.segment_softmax(logits, ptr=ptr)
        return scatterx.gather_segment_reduce(x, ptr, index, "sum", weight=alpha).sum()

    eager = torch.autograd.grad(step(x, att), (x, att))
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    for got, want in zip(torch.autograd.grad(compiled(x, att), (x, att)), eager):
        torch.testing.assert_close(got, want)


def test_opcheck():
    ptr, index = torch.tensor([0, 2, 5]), torch.tensor([4, 0, 1, 1, 3])
    a = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, 2, 3, dtype=torch.float64, requires_grad=True)
    for op in OPS:
        torch.library.opcheck(torch.ops.scatterx.sddmm.default, (ptr, index, a, b, op))


def test_bad_input_raises():
    ptr, index = torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1])
    a, b = torch.ones(2, 3), torch.ones(2, 3)
    cases = [
        (dict(op="sub"), ValueError, "op must be one of"),
        (dict(b=torch.ones(2, 3, dtype=torch.float64)), TypeError, "b has dtype"),
        (dict(b=torch.ones(2, 4)), ValueError, "same feature shape"),
        (dict(b=torch.ones(3, 3)), ValueError, "ptr has 3 entries; b has 3 rows"),
        (dict(a=torch.ones(2), b=torch.ones(2), op="dot"), ValueError, "feature dim"),
        (dict(index=torch.tensor([0, 2, 1])), IndexError, r"index\[1\]=2 is out of range"),
        (dict(index=torch.tensor([0, -1, 1])), IndexError, r"index\[1\]=-1"),
        (dict(ptr=torch.tensor([0, 2, 4])), ValueError, r"ptr must end at index.numel\(\)=3"),
        (dict(ptr=torch.tensor([0, 3, 2])), ValueError, "ptr must"),
        (dict(index=torch.tensor([0.0, 1.0, 1.0])), TypeError, "int32 or int64"),
        (dict(a=[[1.0]]), TypeError, "a must be a torch.Tensor"),
        (dict(b=torch.ones(2, 3, device="meta")), (ValueError, NotImplementedError), "meta"),
    ]
    for change, error, match in cases:
        args = dict(ptr=ptr, index=index, a=a, b=b, op="dot") | change
        with pytest.raises(error, match=match):
            scatterx.sddmm(**args)
