"""segment_logsumexp (the normaliser of torch_scatter's logsumexp and log_softmax) against the reference, on both
backends; opcheck, gradients, torch.compile, bad input."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scatterx import reference
from scatterx.ops import segment_logsumexp
from scatterx.ops.segment_logsumexp import segment_logsumexp_op


@st.composite
def problems(draw):
    dtype = draw(st.sampled_from([torch.float32, torch.float64, torch.float16, torch.bfloat16]))
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    lengths = draw(st.lists(st.integers(0, 5), min_size=0, max_size=6))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    gather = draw(st.booleans())
    n = draw(st.integers(1, 6)) if gather else sum(lengths)
    shape[dim] = n
    x = torch.rand(shape, generator=g, dtype=torch.float64) * 8 - 4
    if draw(st.booleans()):
        pick = torch.rand(shape, generator=g)
        x[pick < 0.15] = math.nan
        x[(pick >= 0.15) & (pick < 0.3)] = -math.inf
        x[(pick >= 0.3) & (pick < 0.35)] = math.inf
    perm = torch.randint(0, n, (sum(lengths),), generator=g) if gather else None
    return dict(
        src=x.to(dtype),
        ptr=torch.tensor([0] + lengths).cumsum(0),
        dim=dim,
        perm=perm,
        eps=draw(st.sampled_from([1e-12, 0.0, 0.5])),
        flavour=draw(st.sampled_from(["logsumexp", "log_softmax"])),
    )


def test_matches_reference(backend):
    @settings(max_examples=backend.examples(300))
    @given(problems())
    def check(p):
        want = reference.segment_logsumexp(**p)
        q = backend.put(p)
        with backend:
            got = segment_logsumexp(q.pop("src"), q.pop("ptr"), q.pop("dim"), **q)
        tol = {torch.float64: 1e-10, torch.float32: 1e-5}.get(want.dtype, 2e-2)
        torch.testing.assert_close(got.cpu(), want, atol=tol, rtol=tol, equal_nan=True)

    check()


def test_opcheck_gradients_and_compile():
    g = torch.Generator().manual_seed(0)
    src = torch.randn(7, 3, generator=g, dtype=torch.float64, requires_grad=True)
    ptr = torch.tensor([0, 2, 3, 7])
    perm = torch.tensor([3, 1, 0, 6, 5, 4, 2])
    torch.library.opcheck(segment_logsumexp_op, (src, ptr, None, 0, 1e-12, "logsumexp"))
    torch.library.opcheck(segment_logsumexp_op, (src, ptr, perm, 0, 0.0, "log_softmax"))
    # eps = 0.5: the member that is ``top`` gets an extra eps / (S + eps) (top is a function of the members)
    for kw in (
        dict(),
        dict(eps=0.5),
        dict(perm=perm, flavour="log_softmax"),
        dict(perm=perm, flavour="log_softmax", eps=0.5),
        dict(flavour="log_softmax", eps=0.0),
        # a perm naming a row at several positions of a segment (the top row's extra share goes to it once)
        dict(perm=torch.tensor([3, 3, 1, 6, 6, 6, 0]), eps=0.5),
        dict(perm=torch.tensor([3, 3, 1, 6, 6, 6, 0]), flavour="log_softmax", eps=0.5),
    ):
        assert torch.autograd.gradcheck(lambda t, kw=kw: segment_logsumexp(t, ptr, **kw), (src,))
        assert torch.autograd.gradgradcheck(lambda t, kw=kw: segment_logsumexp(t, ptr, **kw), (src,))
    x = torch.randn(9, 4, requires_grad=True)
    p = torch.tensor([0, 4, 9])
    f = lambda t: segment_logsumexp(t, p).sum()  # noqa: E731
    got = torch.compile(f, fullgraph=True)(x)
    torch.testing.assert_close(got, f(x))
    torch.testing.assert_close(segment_logsumexp(x, p, eps=0.0), torch.stack([x[:4].logsumexp(0), x[4:].logsumexp(0)]))


@pytest.mark.parametrize("flavour", ["logsumexp", "log_softmax"])
def test_gradient_is_exact_for_large_values(flavour):
    """The shares come from ``x - top`` and ``log(S + eps)``, not from ``x - out`` (rounded at ``top``'s magnitude):
    each segment's gradient sums to 1 (eps = 0) however large the values."""
    for scale in (1e4, 1e6, 3e38):
        x = torch.tensor([scale, scale, scale / 3, -scale, 3.0], requires_grad=True)
        ptr = torch.tensor([0, 2, 4, 5])
        out = segment_logsumexp(x, ptr, eps=0.0, flavour=flavour)
        (grad,) = torch.autograd.grad(out.sum(), x)
        torch.testing.assert_close(grad, torch.tensor([0.5, 0.5, 1.0, 0.0, 1.0]))


def test_bad_input_raises():
    src = torch.ones(4, 2)
    with pytest.raises(TypeError):
        segment_logsumexp(torch.ones(4, dtype=torch.int64), torch.tensor([0, 4]))
    with pytest.raises(ValueError):
        segment_logsumexp(src, torch.tensor([0, 3, 2, 4]))
    with pytest.raises(ValueError):
        segment_logsumexp(src, torch.tensor([0, 4]), flavour="softmax")
    with pytest.raises(IndexError):
        segment_logsumexp(src, torch.tensor([0, 2]), perm=torch.tensor([0, 4]))
