"""torch_scatter's composites (softmax, log_softmax, logsumexp, std) against the reference of their formulas,
their gradients, and ``torch.compile(fullgraph=True)`` of a function using ``scatter_max`` and
``scatter_softmax``."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import scatterx.torch_scatter as ts
from scatterx import reference


@st.composite
def groups(draw):
    dtype = draw(st.sampled_from([torch.float32, torch.float64]))
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    d = dim % ndim
    shape[d] = draw(st.integers(1, 8))
    size = draw(st.integers(1, 5))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    form = draw(st.sampled_from(["1d", "full"]))
    index = torch.randint(0, size, (shape[d],) if form == "1d" else tuple(shape), generator=g)
    src = torch.rand(shape, generator=g, dtype=torch.float64) * 10 - 5
    if draw(st.booleans()):
        pick = torch.rand(shape, generator=g)
        src[pick < 0.15] = -math.inf
        src[(pick >= 0.15) & (pick < 0.2)] = math.nan
        src[(pick >= 0.2) & (pick < 0.23)] = math.inf
    return src.to(dtype), index, dim, size


def close(actual, expected):
    tol = 1e-5 if actual.dtype == torch.float32 else 1e-10
    torch.testing.assert_close(actual, expected, atol=tol, rtol=tol, equal_nan=True)


@settings(max_examples=100)
@given(p=groups())
def test_softmax_and_log_softmax_match_reference(p, backend):
    src, index, dim, size = p
    with backend:
        got = ts.scatter_softmax(*backend.put([src, index]), dim, dim_size=size).cpu()
        got_log = ts.scatter_log_softmax(*backend.put([src, index]), dim, dim_size=size).cpu()
    close(got, reference.ts_softmax_family(src, index, dim, "softmax", dim_size=size))
    close(got_log, reference.ts_softmax_family(src, index, dim, "log_softmax", dim_size=size))


@settings(max_examples=100)
@given(p=groups(), unbiased=st.booleans())
def test_logsumexp_and_std_match_reference(p, unbiased, backend):
    src, index, dim, size = p
    finite = torch.nan_to_num(src, nan=0.5, posinf=3.0, neginf=-3.0)
    with backend:
        got = ts.scatter_logsumexp(*backend.put([src, index]), dim, dim_size=size).cpu()
        got_std = ts.scatter_std(*backend.put([finite, index]), dim, dim_size=size, unbiased=unbiased).cpu()
    close(got, reference.ts_softmax_family(src, index, dim, "logsumexp", dim_size=size))
    close(got_std, reference.ts_softmax_family(finite, index, dim, "std" if unbiased else "std_biased",
                                               dim_size=size))


def test_logsumexp_out_keeps_out_where_not_finite():
    out = torch.tensor([-10.0, -10.0])
    ts.scatter_logsumexp(torch.tensor([-1.0, -50.0]), torch.tensor([0, 0]), out=out)
    torch.testing.assert_close(out, torch.tensor([-0.9999, -10.0]), atol=1e-4, rtol=0)


def test_integer_src_is_refused():
    for fn in (ts.scatter_softmax, ts.scatter_log_softmax, ts.scatter_logsumexp):
        with pytest.raises(ValueError):
            fn(torch.tensor([1, 2]), torch.tensor([0, 0]))


@pytest.mark.parametrize("fn", [ts.scatter_softmax, ts.scatter_log_softmax, ts.scatter_logsumexp, ts.scatter_std])
def test_gradcheck(fn):
    g = torch.Generator().manual_seed(2)
    src = torch.randn(4, 7, generator=g, dtype=torch.float64, requires_grad=True)
    # every group has two members or more: a group of one has std sqrt(0), where no derivative exists
    groups = torch.tensor([0, 1, 0, 2, 2, 1, 0])
    per_row = torch.stack([groups[torch.randperm(7, generator=g)] for _ in range(4)])
    for index in (groups, per_row):
        assert torch.autograd.gradcheck(lambda x: fn(x, index, -1), (src,))
        assert torch.autograd.gradgradcheck(lambda x: fn(x, index, -1), (src,))


def test_compiles_fullgraph():
    """A message-passing step with ``scatter_max`` and ``scatter_softmax`` under ``torch.compile(fullgraph=True)``,
    forward and backward, equal to eager."""

    def step(x, index, n: int):
        top, arg = ts.scatter_max(x, index, 0, dim_size=n)
        attention = ts.scatter_softmax(x.sum(-1), index, 0, dim_size=n)
        return top.sum() + (attention.unsqueeze(-1) * x).sum() + arg.sum() * 0

    g = torch.Generator().manual_seed(3)
    x = torch.randn(50, 8, generator=g, requires_grad=True)
    index = torch.randint(0, 10, (50,), generator=g)
    compiled = torch.compile(step, fullgraph=True)
    got = compiled(x, index, 10)
    (gx,) = torch.autograd.grad(got, x)
    want = step(x, index, 10)
    (wx,) = torch.autograd.grad(want, x)
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(gx, wx)


@pytest.mark.parametrize("name", ["scatter_softmax", "scatter_log_softmax", "scatter_logsumexp", "scatter_std"])
def test_composites_are_scriptable(name):
    """torch_scatter's functions are TorchScript functions; PyG scripts modules that call them."""
    scripted = torch.jit.script(getattr(ts, name))
    src = torch.rand(5, 2)
    index = torch.tensor([0, 0, 1, 1, 1])
    torch.testing.assert_close(scripted(src, index, 0), getattr(ts, name)(src, index, 0))
