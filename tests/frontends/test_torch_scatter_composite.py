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


def test_softmax_and_log_softmax_match_reference(backend):
    @settings(max_examples=backend.examples(100))
    @given(p=groups())
    def examples(p):
        src, index, dim, size = p
        with backend:
            got = ts.scatter_softmax(*backend.put([src, index]), dim, dim_size=size).cpu()
            got_log = ts.scatter_log_softmax(*backend.put([src, index]), dim, dim_size=size).cpu()
        close(got, reference.ts_softmax_family(src, index, dim, "softmax", dim_size=size))
        close(got_log, reference.ts_softmax_family(src, index, dim, "log_softmax", dim_size=size))

    examples()


def test_logsumexp_and_std_match_reference(backend):
    @settings(max_examples=backend.examples(100))
    @given(p=groups(), unbiased=st.booleans())
    def examples(p, unbiased):
        src, index, dim, size = p
        finite = torch.nan_to_num(src, nan=0.5, posinf=3.0, neginf=-3.0)
        with backend:
            got = ts.scatter_logsumexp(*backend.put([src, index]), dim, dim_size=size).cpu()
            got_std = ts.scatter_std(*backend.put([finite, index]), dim, dim_size=size, unbiased=unbiased).cpu()
        close(got, reference.ts_softmax_family(src, index, dim, "logsumexp", dim_size=size))
        close(
            got_std, reference.ts_softmax_family(finite, index, dim, "std" if unbiased else "std_biased", dim_size=size)
        )

    examples()


def test_logsumexp_out_keeps_out_where_not_finite():
    out = torch.tensor([-10.0, -10.0])
    ts.scatter_logsumexp(torch.tensor([-1.0, -50.0]), torch.tensor([0, 0]), out=out)
    torch.testing.assert_close(out, torch.tensor([-0.9999, -10.0]), atol=1e-4, rtol=0)
    # and its gradient there is 1 (its own value), also in a row whose only member is -inf, and out's share of
    # the rows with members is its softmax weight
    src = torch.tensor([0.5, 1.0, -float("inf")], dtype=torch.float64, requires_grad=True)
    base = torch.tensor([0.3, 0.7, 0.2], dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 2])
    ts.scatter_logsumexp(src, index, 0, out=base.clone()).sum().backward()
    share = (0.3 - torch.tensor([0.5, 1.0, 0.3], dtype=torch.float64).logsumexp(0)).exp()
    torch.testing.assert_close(base.grad, torch.stack([share, torch.tensor(1.0).double(), torch.tensor(1.0).double()]))
    finite = torch.tensor([0.5, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x, b: ts.scatter_logsumexp(x, index, 0, out=b.clone()), (finite, base.detach().requires_grad_())
    )


@pytest.mark.parametrize("eps", [0.0, 1e-12])
def test_logsumexp_gradient_of_the_gradient_is_zero_in_empty_rows(eps):
    """An index that varies along the rows (the general path) with an empty row: the derivative of ``src``'s
    gradient by the output gradient is 0 there, as on the 1-D path (with eps=0 the log of 0 made it NaN)."""
    src = torch.tensor([[0.3, -1.2], [0.5, 0.9]], dtype=torch.float64, requires_grad=True)
    out = ts.scatter_logsumexp(src, torch.tensor([[0, 1], [0, 0]]), 0, dim_size=3, eps=eps)
    grad_out = torch.ones_like(out, requires_grad=True)
    (grad,) = torch.autograd.grad(out, src, grad_out, create_graph=True)
    (twice,) = torch.autograd.grad(grad.sum(), grad_out)
    assert twice.tolist() == [[1.0, 1.0], [0.0, 1.0], [0.0, 0.0]]


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
        assert torch.autograd.gradcheck(lambda x, index=index: fn(x, index, -1), (src,))
        assert torch.autograd.gradgradcheck(lambda x, index=index: fn(x, index, -1), (src,))


@pytest.mark.parametrize("fn", [ts.scatter_log_softmax, ts.scatter_logsumexp])
def test_gradcheck_with_eps(fn):
    """With ``eps > 0`` the result is not invariant to the group's maximum: the member that is the maximum gets
    ``eps / (sum + eps)`` more (through ``scatter_max`` in torch_scatter's composition)."""
    g = torch.Generator().manual_seed(4)
    src = torch.randn(3, 7, generator=g, dtype=torch.float64, requires_grad=True)
    groups = torch.tensor([0, 1, 0, 2, 2, 1, 0])
    shuffled = torch.tensor([2, 0, 1, 1, 0, 2, 0])
    for index, dim in ((groups, -1), (shuffled, -1), (groups[:3], 0)):
        assert torch.autograd.gradcheck(lambda x, index=index, dim=dim: fn(x, index, dim, eps=0.5), (src,))
        assert torch.autograd.gradgradcheck(lambda x, index=index, dim=dim: fn(x, index, dim, eps=0.5), (src,))
    # by hand: group {0.3}: d/dx = 1 (logsumexp), 0 (log_softmax); group {-1, 2}: S = e^-3 + 1
    x = torch.tensor([0.3, -1.0, 2.0], dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(fn(x, torch.tensor([0, 1, 1]), 0, eps=0.5).sum(), x)
    S = math.exp(-3) + 1
    want = (
        [1.0, math.exp(-3) / (S + 0.5), 1 / (S + 0.5) + 0.5 / (S + 0.5)]
        if fn is ts.scatter_logsumexp
        else [0.0, 1 - 2 * math.exp(-3) / (S + 0.5), 1 - 2 * (1 + 0.5) / (S + 0.5)]
    )
    torch.testing.assert_close(grad, torch.tensor(want, dtype=torch.float64))


def test_log_softmax_is_exact_for_large_values():
    """``(x - max) - log(sum + eps)``, rounded as torch_scatter rounds it: not ``x - (max + log(sum + eps))``,
    which is rounded at the maximum's magnitude."""
    for scale in (1e3, 1e6, 3e38):
        x = torch.tensor([scale, scale, scale - scale / 4, 1.0], requires_grad=True)
        index = torch.tensor([0, 0, 1, 1])
        got = ts.scatter_log_softmax(x, index, 0)
        torch.testing.assert_close(got[:3], torch.tensor([-math.log(2), -math.log(2), 0.0]))
        (grad,) = torch.autograd.grad(ts.scatter_logsumexp(x, index, 0).sum(), x)
        torch.testing.assert_close(grad, torch.tensor([0.5, 0.5, 1.0, 0.0]))


def test_mean_and_std_count_on_the_broadcast_index():
    """An index that broadcasts along ``dim`` itself (torch_scatter counts it on its own shape and miscounts)."""
    src = torch.arange(8.0).view(1, 2, 4)
    index = torch.tensor([[0, 1]])  # broadcast to (1, 2, 4): every position of a row goes to that row's value
    mean = ts.scatter_mean(src, index, -1)
    torch.testing.assert_close(mean, torch.tensor([[[1.5, 0.0], [0.0, 5.5]]]))
    std = ts.scatter_std(src, index, -1)
    want = torch.tensor([[[src[0, 0].std().item(), 0.0], [0.0, src[0, 1].std().item()]]])
    torch.testing.assert_close(std, want, atol=1e-5, rtol=1e-5)
    # the differentiable path gives the same
    torch.testing.assert_close(ts.scatter_std(src.clone().requires_grad_(), index, -1).detach(), std)


def test_int32_index_with_a_general_index():
    """A general (not 1-D) int32 index: the composites gather through it as int64 (torch's CPU ``gather`` misreads
    an expanded int32 index)."""
    x = torch.tensor([[1.0, 2.0], [3.0, 5.0], [4.0, 9.0], [0.0, 1.0]], dtype=torch.float64)
    index = torch.tensor([0, 0, 1, 1])
    for fn in (ts.scatter_std, ts.scatter_softmax, ts.scatter_log_softmax, ts.scatter_logsumexp):
        want = fn(x, index, 0)
        for src in (x, x.clone().requires_grad_()):  # the fast path, and the differentiable (general) one
            torch.testing.assert_close(fn(src, index.to(torch.int32), 0).detach(), want)
            torch.testing.assert_close(fn(src, index.view(-1, 1).expand(4, 2).to(torch.int32), 0).detach(), want)


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


def test_compiles_fullgraph_without_dim_size():
    """torch_scatter's usual call, with no dim_size: the size read from the index is data-dependent under
    ``torch.compile(fullgraph=True)`` (no graph break), the selections, products, composites and sorted-index
    segments included; values and gradients equal to eager."""
    torch._dynamo.reset()

    def step(x, index, ordered):
        top, arg = ts.scatter_max(x, index, 0)
        low, _ = ts.segment_min_coo(x, ordered)
        return (
            top.sum()
            + ts.scatter_mul(x, index, 0).sum()
            + ts.scatter_std(x, index, 0).sum()
            + ts.scatter_log_softmax(x, index, 0).sum()
            + ts.segment_coo(x, ordered, reduce="mean").sum()
            + low.sum()
            + arg.sum() * 0
        )

    g = torch.Generator().manual_seed(4)
    x = torch.randn(40, 3, generator=g, dtype=torch.float64)
    index = torch.randint(0, 9, (40,), generator=g)
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    results = []
    # (capturing Tensor.item() is the default in newer torch; older versions, 2.4 among them, need it asked for)
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        for fn in (step, compiled):
            xx = x.clone().requires_grad_()
            loss = fn(xx, index, index.sort().values)
            results.append((loss.detach(), *torch.autograd.grad(loss, xx)))
    for eager, traced in zip(*results):
        torch.testing.assert_close(traced, eager)


@pytest.mark.parametrize("name", ["scatter_softmax", "scatter_log_softmax", "scatter_logsumexp", "scatter_std"])
def test_composites_are_scriptable(name):
    """torch_scatter's functions are TorchScript functions; PyG scripts modules that call them."""
    scripted = torch.jit.script(getattr(ts, name))
    src = torch.rand(5, 2)
    index = torch.tensor([0, 0, 1, 1, 1])
    torch.testing.assert_close(scripted(src, index, 0), getattr(ts, name)(src, index, 0))


@pytest.mark.parametrize("fn", [ts.scatter_softmax, ts.scatter_log_softmax, ts.scatter_logsumexp, ts.scatter_std])
def test_index_that_does_not_broadcast_raises_value_error(fn):
    """As the scatter functions (``_engine.broadcast_index``), not torch's RuntimeError from ``expand``."""
    x = torch.randn(4, 3)
    for grad in (False, True):  # the fused path and the general one
        src = x.clone().requires_grad_(grad)
        with pytest.raises(ValueError, match="cannot be broadcast"):
            fn(src, torch.tensor([0, 1, 1, 1, 2]), 0)
        with pytest.raises(ValueError, match="may not have more"):
            fn(src, torch.zeros(1, 4, 3, dtype=torch.long), 0)


@pytest.mark.parametrize("name", ["scatter_std", "scatter_logsumexp", "scatter_softmax", "scatter_log_softmax"])
@pytest.mark.parametrize("size", ["inferred", "dim_size", "out"])
@pytest.mark.parametrize("grad", [False, True])
def test_negative_index_entry_raises_index_error_naming_it(name, size, grad):
    """As in the scatter functions: a negative entry anywhere, sorted or not, is an IndexError naming it, with or
    without dim_size, on the fused path and the general (differentiable) one, before ``out`` is written."""
    from test_torch_scatter import NEGATIVE, general, names_entry

    fn = getattr(ts, name)
    if size == "out" and name in ("scatter_softmax", "scatter_log_softmax"):
        pytest.skip("no out= argument")
    src = torch.arange(14.0).view(7, 2).requires_grad_(grad)
    for case, index in NEGATIVE.items():
        for form in (index, general(index)):
            kwargs = {}
            if size == "dim_size":
                kwargs["dim_size"] = 3
            out = torch.full((3, 2), 7.0) if size == "out" else None
            if out is not None:
                kwargs["out"] = out
            with pytest.raises(IndexError, match=names_entry(form)):
                fn(src, form, 0, **kwargs)
            if out is not None:
                assert torch.equal(out, torch.full((3, 2), 7.0)), case


def test_logsumexp_of_a_zero_dim_src_is_one_slice_as_the_other_reductions_take_it():
    src, index = torch.tensor(2.0), torch.tensor(0)
    assert torch.equal(ts.scatter_logsumexp(src, index, 0), torch.tensor([2.0]))
    assert torch.equal(ts.scatter_logsumexp(src, index, 0, dim_size=2), torch.tensor([2.0, 0.0]))
    out = torch.zeros(1)
    assert ts.scatter_logsumexp(src, index, 0, out=out) is out
    torch.testing.assert_close(out, torch.tensor([2.0]).exp().add(1).log())  # out's value joins as a member
    assert ts.scatter_sum(src, index, 0, dim_size=2).shape == ts.scatter_logsumexp(src, index, 0, dim_size=2).shape


def test_softmax_names_dim_size_in_its_errors_as_log_softmax_does():
    src, index = torch.rand(3), torch.tensor([0, 1, 2])
    for fn in (ts.scatter_softmax, ts.scatter_log_softmax):
        with pytest.raises(TypeError, match="dim_size must be an int"):
            fn(src, index, 0, dim_size=True)
        with pytest.raises(IndexError, match=r"index\[2\]=2 is out of range for dim_size=2"):
            fn(src, index, 0, dim_size=2)


def test_an_unsorted_bad_index_names_dim_size_not_the_sort_s_argument():
    """The composites sort an unsorted index with ``csr_order``, whose own message names ``num_rows``."""
    src, index = torch.ones(4, 2), torch.tensor([0, 1, 7, 0])
    for call in (
        lambda: ts.scatter_logsumexp(src, index, 0, out=torch.zeros(3, 2)),
        lambda: ts.scatter_softmax(src, index, 0, dim_size=3),
        lambda: ts.scatter_log_softmax(src, index, 0, dim_size=3),
    ):
        with pytest.raises(IndexError, match=r"^index\[2\]=7 is out of range for dim_size=3"):
            call()
