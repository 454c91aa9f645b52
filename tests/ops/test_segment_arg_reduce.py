"""segment_arg_reduce (the selection of torch_scatter's min/max with argindex) against the reference, on both
backends; opcheck, gradients, torch.compile, and bad input raising before anything is written."""

import math

import pytest
import torch
from conftest import assert_device_assert
from hypothesis import given, settings
from hypothesis import strategies as st

from scatterx import reference
from scatterx.ops import segment_arg_reduce
from scatterx.ops.segment_arg_reduce import segment_arg_reduce_op

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64]


@st.composite
def problems(draw):
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    lengths = draw(st.lists(st.integers(0, 4), min_size=0, max_size=6))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    gather = draw(st.booleans())
    n = draw(st.integers(1, 6)) if gather else sum(lengths)
    shape[dim] = n
    ptr = torch.tensor([0] + lengths).cumsum(0)
    perm = torch.randint(0, n, (sum(lengths),), generator=g) if gather else None
    x = torch.randint(-3, 4, shape, generator=g).to(torch.float64)  # ties
    if dtype.is_floating_point and draw(st.booleans()):
        pick = torch.rand(shape, generator=g)
        x[pick < 0.15] = math.nan
        x[(pick >= 0.15) & (pick < 0.3)] = -math.inf
        x[(pick >= 0.3) & (pick < 0.4)] = math.inf
    base_shape = list(shape)
    base_shape[dim] = len(lengths)
    base = torch.randint(-3, 4, base_shape, generator=g).to(dtype) if draw(st.booleans()) else None
    return dict(
        src=x.to(dtype),
        ptr=ptr,
        reduce=draw(st.sampled_from(["amax", "amin", "max", "min"])),
        dim=dim,
        perm=perm,
        base=base,
        finite_start=draw(st.booleans()),
        fill=draw(st.sampled_from(["none", "unselected", "empty"])),
    )


def test_matches_reference(backend):
    @settings(max_examples=backend.examples(300))
    @given(problems())
    def check(p):
        want_values, want_arg = reference.segment_arg_reduce(**p)
        q = backend.put(p)
        with backend:
            values, arg = segment_arg_reduce(q.pop("src"), q.pop("ptr"), q.pop("reduce"), q.pop("dim"), **q)
        torch.testing.assert_close(values.cpu(), want_values, atol=0, rtol=0, equal_nan=True)
        assert torch.equal(arg.cpu(), want_arg)

    check()


def test_first_tie_wins_and_nan_is_never_selected():
    src = torch.tensor([math.nan, 2.0, 2.0, 1.0, -math.inf])
    values, arg = segment_arg_reduce(src, torch.tensor([0, 3, 5]), "max")
    assert values.tolist() == [2.0, 1.0] and arg.tolist() == [1, 3]
    values, arg = segment_arg_reduce(
        torch.tensor([math.nan, -math.inf]), torch.tensor([0, 2]), "max", finite_start=True
    )
    assert values.tolist() == [0.0] and arg.tolist() == [2]


def test_int64_extremes_of_base_are_kept_exactly(backend):
    """A base of int64's largest value, unbeaten, is kept bit for bit by the op and by the reference (which read it
    through a float: 2^63 - 1 became 2^63 and wrapped to the smallest)."""
    src, ptr = torch.tensor([1, 2], dtype=torch.int64), torch.tensor([0, 2])
    for top in (torch.iinfo(torch.int64).max, torch.iinfo(torch.int64).min):
        reduce = "amax" if top > 0 else "amin"
        base = torch.tensor([top])
        with backend:
            values, arg = segment_arg_reduce(
                backend.put(src), backend.put(ptr), reduce, base=backend.put(base), fill="none"
            )
        want = reference.segment_arg_reduce(src, ptr, reduce, base=base, fill="none")
        assert values.tolist() == want[0].tolist() == [top] and arg.tolist() == want[1].tolist() == [2]


def test_opcheck():
    g = torch.Generator().manual_seed(0)
    src = torch.randn(5, 3, generator=g, requires_grad=True)
    ptr = torch.tensor([0, 2, 2, 5])
    base = torch.randn(3, 3, generator=g, requires_grad=True)
    for args in [
        (src, ptr, None, None, "amax", 0, False, "unselected"),
        (src, ptr, torch.tensor([4, 0, 1, 1, 3]), base, "amin", 0, True, "none"),
    ]:
        torch.library.opcheck(segment_arg_reduce_op, args)


def test_gradients_go_to_the_selected_member_and_to_kept_base():
    src = torch.tensor([[1.0, 5.0], [3.0, 5.0], [3.0, 0.0]], dtype=torch.float64, requires_grad=True)
    base = torch.tensor([[2.0, 9.0], [0.0, 0.0]], dtype=torch.float64, requires_grad=True)
    values, arg = segment_arg_reduce(src, torch.tensor([0, 3, 3]), "max", base=base, fill="none")
    assert values.tolist() == [[3.0, 9.0], [0.0, 0.0]] and arg.tolist() == [[1, 3], [3, 3]]
    values.backward(torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64))
    assert src.grad.tolist() == [[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]
    assert base.grad.tolist() == [[0.0, 2.0], [3.0, 4.0]]
    # each fill: base's gradient where its value is the output's (nothing selected in a segment with members
    # keeps it under "none" and "empty"; "unselected" writes 0 there, and every fill writes 0 in an empty segment)
    ptr = torch.tensor([0, 3, 3])
    for fill, kept in [("none", [[0.0, 2.0], [3.0, 4.0]]), ("empty", [[0.0, 2.0], [0.0, 0.0]]), ("unselected", 0)]:
        base.grad = None
        values, _ = segment_arg_reduce(src, ptr, "max", base=base, fill=fill)
        values.backward(torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64))
        assert base.grad.tolist() == (kept or [[0.0, 0.0], [0.0, 0.0]]), fill
        kept_values = lambda b, fill=fill: segment_arg_reduce(src.detach(), ptr, "max", base=b, fill=fill)[0]  # noqa: E731
        assert torch.autograd.gradcheck(kept_values, (base.detach().requires_grad_(),))
    x = (torch.randperm(12, generator=torch.Generator().manual_seed(1)).double() / 3).view(4, 3).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: segment_arg_reduce(t, torch.tensor([0, 1, 4]), "min")[0], (x,))
    assert torch.autograd.gradgradcheck(lambda t: segment_arg_reduce(t, torch.tensor([0, 1, 4]), "min")[0], (x,))


def test_compiles_fullgraph():
    def f(x, ptr):
        values, arg = segment_arg_reduce(x, ptr, "max", finite_start=True)
        return values * 2, arg

    x = torch.randn(9, 4, requires_grad=True)
    ptr = torch.tensor([0, 3, 3, 9])
    got = torch.compile(f, fullgraph=True)(x, ptr)
    want = f(x, ptr)
    torch.testing.assert_close(got[0], want[0])
    assert torch.equal(got[1], want[1])


def test_bad_input_raises_before_anything_runs(backend):
    """Argument errors raise the same on both backends; bad offset/row *values* raise ValueError/IndexError on
    the CPU and a device-side assert (RuntimeError) on the GPU backend, before the kernel runs."""
    src = torch.ones(4, 2)
    base = torch.full((2, 2), 7.0)
    cases = [
        (dict(ptr=torch.tensor([0, 3, 2])), ValueError, "non-decreasing"),  # decreasing
        (dict(ptr=torch.tensor([0, 2, 5])), ValueError, "ptr must end"),  # past the end
        (dict(ptr=torch.tensor([0, 2, 3]), perm=torch.tensor([0, 1, 4])), IndexError, "out of range"),  # a row
        (dict(ptr=torch.tensor([0, 2, 4]), reduce="sum"), ValueError, False),
        (dict(ptr=torch.tensor([0, 2, 4]), fill="zero"), ValueError, False),
        (dict(ptr=torch.tensor([0.0, 2, 4])), TypeError, False),
        (dict(ptr=torch.tensor([0, 2, 4]), base=torch.zeros(3, 2)), ValueError, False),
    ]
    for case, error, is_value in cases:
        if is_value and backend.device == "cuda":  # a device-side assert: in a process of its own
            args = ", ".join(f"{k}=torch.tensor({v.tolist()}, device=DEVICE)" for k, v in case.items())
            assert_device_assert(
                f"""
                from scatterx.ops import segment_arg_reduce
                with GPU:
                    segment_arg_reduce(torch.ones(4, 2, device=DEVICE), reduce="amax", {args})
                """,
                is_value,
            )
            continue
        kwargs = backend.put(dict(case))
        ptr = kwargs.pop("ptr")
        reduce = kwargs.pop("reduce", "amax")
        b = backend.put(base)
        with pytest.raises(RuntimeError if is_value and backend.name == "gpu" else error), backend:
            segment_arg_reduce(backend.put(src), ptr, reduce, base=kwargs.pop("base", b), **kwargs)
        assert torch.equal(b.cpu(), torch.full((2, 2), 7.0))
