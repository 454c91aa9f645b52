"""segment_softmax against the reference (torch.softmax per group, in float64) on every backend: random groups
by index (sorted and not) and by ptr, every floating dtype and dim, torch's NaN/inf rules, gradients
(gradcheck, double backward), opcheck, torch.compile, and bad input."""

import math

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.autograd import gradcheck, gradgradcheck

import scatterx
from scatterx import reference

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@st.composite
def softmax_problems(draw, dtype=None):
    dtype = draw(st.sampled_from(FLOATS)) if dtype is None else dtype
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    shape[dim] = draw(st.integers(0, 12))
    num_segments = draw(st.integers(1, 6))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    index = torch.randint(0, num_segments, (shape[dim],), generator=g)
    by = draw(st.sampled_from(["sorted", "unsorted", "ptr"]))
    if by != "unsorted":
        index = index.sort().values
    src = (torch.randn(shape, generator=g, dtype=torch.float64) * 4).to(dtype)
    return dict(
        src=src,
        index=index.to(draw(st.sampled_from([torch.int32, torch.int64]))),
        by=by,
        dim=dim,
        num_segments=num_segments,
    )


def run(backend, p):
    src, index = backend.put(p["src"]), backend.put(p["index"])
    with backend:
        if p["by"] == "ptr":
            ptr = scatterx.index_to_ptr(index, p["num_segments"])
            return scatterx.segment_softmax(src, ptr=ptr, dim=p["dim"]).cpu()
        return scatterx.segment_softmax(
            src, index, dim=p["dim"], num_segments=p["num_segments"], sorted=p["by"] == "sorted"
        ).cpu()


def test_matches_reference(backend):
    @settings(max_examples=backend.examples(200))
    @given(softmax_problems())
    def check(p):
        assert_matches(run(backend, p), reference.segment_softmax(p["src"], p["index"], dim=p["dim"]))

    check()


def test_hand_written(backend):
    src = torch.tensor([1.0, 1.0, 5.0, 0.0, math.log(3.0)])
    index = torch.tensor([0, 0, 1, 2, 2])
    got = run(backend, dict(src=src, index=index, by="sorted", dim=0, num_segments=3))
    torch.testing.assert_close(got, torch.tensor([0.5, 0.5, 1.0, 0.25, 0.75]))
    # the same groups in another order, and along dim 1
    order = torch.tensor([4, 0, 2, 3, 1])
    got = run(backend, dict(src=src[order].view(1, 5), index=index[order], by="unsorted", dim=1, num_segments=3))
    torch.testing.assert_close(got.view(5), torch.tensor([0.75, 0.5, 1.0, 0.25, 0.5]))


def test_nan_and_inf_follow_torch_softmax(backend):
    inf, nan = math.inf, math.nan
    groups = [[-inf, -inf], [inf, 1.0], [nan, 1.0], [-inf, 1.0], [1e30, 1e30], [7.0]]
    src = torch.tensor([v for group in groups for v in group])
    index = torch.tensor([s for s, group in enumerate(groups) for _ in group])
    got = run(backend, dict(src=src, index=index, by="ptr", dim=0, num_segments=len(groups)))
    want = torch.cat([torch.softmax(torch.tensor(group), 0) for group in groups])
    torch.testing.assert_close(got, want, equal_nan=True)


def test_large_values_do_not_overflow(backend):
    src = torch.tensor([1000.0, 1001.0, -1000.0, -1001.0])
    got = run(backend, dict(src=src, index=torch.tensor([0, 0, 1, 1]), by="sorted", dim=0, num_segments=2))
    torch.testing.assert_close(got, torch.cat([torch.softmax(src[:2], 0), torch.softmax(src[2:], 0)]))


@pytest.mark.parametrize("by", ["sorted", "unsorted", "ptr"])
def test_gradients(backend, by):
    g = torch.Generator().manual_seed(3)
    # Triton's interpreter runs every program of every evaluation in Python: fewer inputs there, every case kept
    # (a segment of several rows, an empty segment, unsorted positions)
    shape, index = ((5, 2), [0, 2, 2, 3, 0]) if backend.interpreted else ((7, 3), [0, 0, 2, 2, 2, 3, 0])
    src = backend.put(torch.randn(shape, dtype=torch.float64, generator=g)).requires_grad_()
    index = torch.tensor(index)
    ptr = backend.put(scatterx.index_to_ptr(index.sort().values, 4))
    index = backend.put(index.sort().values if by != "unsorted" else index)

    def f(x):
        if by == "ptr":
            return scatterx.segment_softmax(x, ptr=ptr)
        return scatterx.segment_softmax(x, index, num_segments=4, sorted=by == "sorted")

    with backend:
        assert gradcheck(f, (src,))
        # the double backward runs the same formula whichever way the segments came: on the interpreter (seconds
        # per check) it is checked once
        if not backend.interpreted or by == "sorted":
            assert gradgradcheck(f, (src,))


def test_gradient_matches_torch_autograd_of_the_reference():
    g = torch.Generator().manual_seed(4)
    src = torch.randn(9, 2, dtype=torch.float64, generator=g, requires_grad=True)
    index = torch.tensor([1, 0, 1, 2, 2, 1, 0, 2, 2])
    weight = torch.randn(9, 2, dtype=torch.float64, generator=g)
    (ours,) = torch.autograd.grad((scatterx.segment_softmax(src, index) * weight).sum(), src)
    (theirs,) = torch.autograd.grad((reference.segment_softmax(src, index) * weight).sum(), src)
    torch.testing.assert_close(ours, theirs)


def test_half_precision_gradients_match_float64():
    g = torch.Generator().manual_seed(5)
    src = torch.randn(20, 3, generator=g, dtype=torch.float64)
    index = torch.randint(0, 4, (20,), generator=g)
    grads = []
    for dtype in (torch.float64, torch.float16, torch.bfloat16):
        x = src.to(dtype).detach().requires_grad_()
        scatterx.segment_softmax(x, index, num_segments=4).backward(torch.ones(20, 3, dtype=dtype))
        grads.append(x.grad.double())
    torch.testing.assert_close(grads[1], grads[0], atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(grads[2], grads[0], atol=5e-2, rtol=5e-2)


def test_opcheck():
    src = torch.randn(6, 3, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 2, 0, 1, 1, 2])
    ptr = torch.tensor([0, 2, 2, 6])
    torch.library.opcheck(torch.ops.scatterx.segment_softmax.default, (src, index, None, 0, 3, False))
    torch.library.opcheck(torch.ops.scatterx.segment_softmax.default, (src, None, ptr, 0, 3, False))
    # a transposed src: the fake result is contiguous, as the kernels' (a compiled call asserted empty_like's strides)
    src_t = src.detach().t().contiguous().t()
    torch.library.opcheck(torch.ops.scatterx.segment_softmax.default, (src_t, index, None, 0, 3, False))
    out = scatterx.segment_softmax(src, index).detach()
    torch.library.opcheck(
        torch.ops.scatterx.segment_softmax_backward.default, (out, torch.randn_like(out), index, None, 0, 3, False)
    )


def test_compiles_without_graph_breaks():
    torch._dynamo.reset()
    index = torch.tensor([0, 0, 1, 3, 3, 3])
    x = torch.randn(6, 4, requires_grad=True)

    def attention(x):
        return (scatterx.segment_softmax(x, index, num_segments=4) * x).sum()

    eager = torch.autograd.grad(attention(x), x)[0]
    compiled = torch.compile(attention, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(torch.autograd.grad(compiled(x), x)[0], eager)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda x: scatterx.segment_softmax(x, torch.tensor([0, 0, 5]), num_segments=2), IndexError, r"index\[2\]=5"),
        (lambda x: scatterx.segment_softmax(x, torch.tensor([0, -1, 0])), IndexError, "negative"),
        (lambda x: scatterx.segment_softmax(x, torch.tensor([1, 0, 1]), sorted=True), ValueError, "not sorted"),
        (lambda x: scatterx.segment_softmax(x, torch.tensor([0, 0])), ValueError, "every slice needs a group"),
        (
            lambda x: scatterx.segment_softmax(x, ptr=torch.tensor([0, 2])),
            ValueError,
            r"ptr must end at src.size\(0\)=3",
        ),
        (scatterx.segment_softmax, ValueError, "either index or ptr"),
        (
            lambda x: scatterx.segment_softmax(x, torch.tensor([0, 0, 0]), ptr=torch.tensor([0, 3])),
            ValueError,
            "either",
        ),
        (lambda x: scatterx.segment_softmax(x.long(), torch.tensor([0, 0, 0])), TypeError, "floating-point"),
        (lambda x: scatterx.segment_softmax(x, torch.tensor([0.0, 0, 0])), TypeError, "int32 or int64"),
        (lambda x: scatterx.segment_softmax(x, torch.tensor([0, 0, 0]), dim=2), IndexError, "dim 2"),
        # num_segments with ptr: ptr says how many groups there are, a different number is an error
        (
            lambda x: scatterx.segment_softmax(x, ptr=torch.tensor([0, 1, 3]), num_segments=7),
            ValueError,
            "num_segments=7 disagrees with ptr",
        ),
        # groups whose offsets cannot be allocated: named, before any allocation
        (
            lambda x: scatterx.segment_softmax(x, torch.tensor([0, 0, 1]), num_segments=2**40),
            MemoryError,
            "num_segments=1099511627776",
        ),
        (lambda x: scatterx.segment_softmax(x, torch.tensor([0, 0, 2**40])), MemoryError, r"index.max\(\) \+ 1"),
        (
            lambda x: scatterx.segment_softmax(x, torch.tensor([0, 0, 1]), num_segments=2**63),
            ValueError,
            "num_segments=.* too large",
        ),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call(torch.randn(3, 2))
