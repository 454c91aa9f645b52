"""Gradients of torch.ops.scatterx.index_scatter_reduce: gradcheck, torch's own scatter_reduce as a second oracle
(ties, zeros), the exact rules by hand, opcheck, torch.compile; the GPU backend's gradients against the CPU's."""

import contextlib

import pytest
import torch
from conftest import ON_GPU, Backend, _backend
from torch.autograd import gradcheck, gradgradcheck

import scatterx
from scatterx.backends.cpu import routes

op = torch.ops.scatterx.index_scatter_reduce
REDUCES = ["sum", "mean", "prod", "amax", "amin"]
# (has a base, include_self): no out / out taking part / out not taking part
BASE_MODES = [(False, False), (True, True), (True, False)]


def problem(reduce, dim, sorted, seed, ties=False):
    g = torch.Generator().manual_seed(seed)
    src = torch.randn(6, 5, 4, dtype=torch.float64, generator=g)
    n = src.size(dim)
    index = torch.randint(0, 3, (n - 1,), generator=g)  # shorter than src along dim; segment 3 stays empty
    if sorted:
        index = index.sort().values
    shape = list(src.shape)
    shape[dim % 3] = 4
    base = torch.randn(shape, dtype=torch.float64, generator=g)
    if reduce == "prod":  # plant zeros: groups with none, one and several
        src = src.masked_fill(torch.rand(src.shape, generator=g) < 0.25, 0.0)
        base = base.masked_fill(torch.rand(shape, generator=g) < 0.25, 0.0)
    if ties:
        src, base = src.round(), base.round()
    return src, index, base


@pytest.mark.parametrize("has_base, include_self", BASE_MODES, ids=["no-out", "out-self", "out-noself"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("sorted", [True, False], ids=["sorted", "unsorted"])
@pytest.mark.parametrize("reduce", REDUCES)
def test_gradcheck(reduce, sorted, dim, has_base, include_self):
    """Finite differences in float64. amax/amin are checked where differentiable (distinct values); their rule at
    ties is checked against torch and by hand below."""
    src, index, base = problem(reduce, dim, sorted, seed=hash((reduce, sorted, dim, has_base)) % 1000)
    src.requires_grad_()
    base.requires_grad_(has_base)

    def f(s, b):
        return op(s, index, dim, reduce, sorted, 4, b if has_base else None, include_self, False)

    assert gradcheck(f, (src, base), eps=1e-6, atol=1e-6)


@pytest.mark.parametrize("has_base, include_self", BASE_MODES, ids=["no-out", "out-self", "out-noself"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("reduce", REDUCES)
def test_values_and_gradients_match_torch_scatter_reduce_with_ties_and_zeros(reduce, dim, has_base, include_self):
    g = torch.Generator().manual_seed(3)
    src0 = torch.randint(-2, 3, (6, 5, 4), generator=g).double()  # small integers: many ties and zeros
    n = src0.size(dim)
    index = torch.randint(0, 4, (n,), generator=g)
    shape = list(src0.shape)
    shape[dim % 3] = 4
    if has_base:
        # with torch_ties=True the op splits amax/amin's gradient as torch does: a base equal to the result counts
        # among the ties even with include_self=False (scatterx's own rule does not: test_tie_with_out_not_taking_part)
        base0 = torch.randint(-2, 3, shape, generator=g).double()
    else:
        base0 = torch.full(shape, 100.0, dtype=torch.float64)
    grad = torch.randn(shape, dtype=torch.float64, generator=g)

    ours_src, ours_base = src0.clone().requires_grad_(), base0.clone().requires_grad_(has_base)
    ours = op(ours_src, index, dim, reduce, False, 4, ours_base if has_base else None, include_self and has_base, True)
    ours.backward(grad)

    ref_src, ref_base = src0.clone().requires_grad_(), base0.clone().requires_grad_(has_base)
    view = [1, 1, 1]
    view[dim % 3] = n
    ref = torch.scatter_reduce(
        ref_base, dim, index.view(view).expand_as(src0), ref_src, reduce, include_self=include_self and has_base
    )
    if not has_base:
        ref = torch.where(ref == 100.0, torch.zeros_like(ref), ref)  # rows receiving nothing are 0 for us
    ref.backward(grad)

    torch.testing.assert_close(ours, ref)
    torch.testing.assert_close(ours_src.grad, ref_src.grad)
    if has_base:
        torch.testing.assert_close(ours_base.grad, ref_base.grad)


def _grads(reduce, src, index, base=None, include_self=True):
    src = src.clone().double().requires_grad_()
    base = None if base is None else base.clone().double().requires_grad_()
    size = base.size(0) if base is not None else int(index.max()) + 1
    out = op(src, index, 0, reduce, False, size, base, include_self, False)
    out.backward(torch.ones_like(out))
    return src.grad, None if base is None else base.grad


def test_prod_gradient_is_exact_with_zeros():
    index = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2])
    src = torch.tensor([2.0, 0.0, 3.0, 0.0, 0.0, 5.0, 4.0, 0.5])
    grad_src, _ = _grads("prod", src, index)
    # group 0 has one zero: its gradient is the product of the others (6), the others get 0
    # group 1 has two zeros: all 0; group 2 has none: the product of the others
    assert grad_src.tolist() == [0.0, 6.0, 0.0, 0.0, 0.0, 0.0, 0.5, 4.0]
    assert not grad_src.isnan().any()


def test_prod_gradient_counts_out_as_a_member_with_include_self():
    index = torch.tensor([0, 0])
    src = torch.tensor([2.0, 3.0])
    grad_src, grad_base = _grads("prod", src, index, base=torch.tensor([0.0]), include_self=True)
    assert grad_src.tolist() == [0.0, 0.0] and grad_base.tolist() == [6.0]


def test_ties_split_the_gradient_evenly():
    index = torch.tensor([0, 0, 0, 1])
    src = torch.tensor([5.0, 1.0, 5.0, 7.0])
    grad_src, _ = _grads("amax", src, index)
    assert grad_src.tolist() == [0.5, 0.0, 0.5, 1.0]
    grad_src, grad_base = _grads("amax", src, index, base=torch.tensor([5.0, 0.0]), include_self=True)
    assert grad_src.tolist() == [1 / 3, 0.0, 1 / 3, 1.0] and grad_base.tolist() == [1 / 3, 0.0]


def test_tie_with_out_not_taking_part():
    """include_self=False: out's value takes no part, so it neither ties nor gets gradient."""
    index = torch.tensor([0, 0])
    src = torch.tensor([5.0, 5.0])
    grad_src, grad_base = _grads("amax", src, index, base=torch.tensor([5.0, 9.0]), include_self=False)
    assert grad_src.tolist() == [0.5, 0.5]
    assert grad_base.tolist() == [0.0, 1.0]  # row 0 received (0 gradient), row 1 did not (passes through)


@pytest.mark.parametrize("torch_ties", [False, True], ids=["own-rule", "torch-ties"])
@pytest.mark.parametrize("graph", [False, True], ids=["kernel", "create-graph"])
@pytest.mark.parametrize("with_out", [False, True], ids=["no-out", "out-self"])
@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_a_nan_result_s_gradient_goes_to_its_nan_members_as_torch_max_splits_it(reduce, with_out, graph, torch_ties):
    """A group whose result is NaN was made by its NaN members: they share its gradient, as ``torch.max()`` of the
    group's values splits it (torch.scatter_reduce's formula gives every member NaN there, a 0 / 0); ``out``'s own
    NaN is one of them with include_self. Each group is held against torch.max/min of its members."""
    nan = float("nan")
    index = torch.tensor([2, 0, 0, 1, 0, 1, 2, 2])
    src = torch.tensor([1.0, nan, 3.0, 4.0, nan, 2.0, -1.0, nan], dtype=torch.float64)
    base = torch.tensor([nan, 0.0, 5.0, 7.0], dtype=torch.float64)
    weight = torch.tensor([0.5, -2.0, 3.0, 1.5], dtype=torch.float64)
    s = src.clone().requires_grad_()
    b = base.clone().requires_grad_()
    out = op(s, index, 0, reduce, False, 4, b if with_out else None, with_out, torch_ties)
    grads = torch.autograd.grad((out * weight).sum(), [s, b] if with_out else [s], create_graph=graph)
    select = torch.max if reduce == "amax" else torch.min
    want_src, want_base = torch.zeros_like(src), torch.zeros_like(base)
    for group in range(4):
        rows = (index == group).nonzero().flatten()
        members = torch.cat([base[group : group + 1], src[rows]] if with_out else [src[rows]]).requires_grad_()
        if members.numel() == 0:
            want_base[group] = weight[group]  # (receives nothing: passes its gradient)
            continue
        (select(members) * weight[group]).backward()
        want_src[rows] = members.grad[1:] if with_out else members.grad
        want_base[group] = members.grad[0] if with_out else 0.0
    torch.testing.assert_close(
        out,
        torch.stack(
            [select(torch.cat([base[g : g + 1], src[index == g]]) if with_out else src[index == g]) for g in range(3)]
            + [base[3] if with_out else torch.tensor(0.0, dtype=torch.float64)]
        ),
        equal_nan=True,
    )
    assert not grads[0].isnan().any()
    torch.testing.assert_close(grads[0], want_src)
    if with_out:
        torch.testing.assert_close(grads[1], want_base)


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_rows_of_out_that_receive_nothing_pass_their_gradient(reduce):
    index = torch.tensor([0, 0])
    _, grad_base = _grads(reduce, torch.tensor([1.0, 2.0]), index, base=torch.tensor([3.0, 4.0]), include_self=False)
    assert grad_base.tolist() == [0.0, 1.0]
    _, grad_base = _grads(reduce, torch.tensor([1.0, 2.0]), index, base=torch.tensor([3.0, 4.0]), include_self=True)
    assert grad_base.tolist() == ([1.0, 1.0] if reduce == "sum" else [1 / 3, 1.0])


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_gradgradcheck_sum_and_mean(reduce, include_self):
    src, index, base = problem(reduce, 0, False, seed=5)
    src.requires_grad_()
    base.requires_grad_()
    assert gradgradcheck(lambda s, b: op(s, index, 0, reduce, False, 4, b, include_self, False), (src, base))


@pytest.mark.parametrize("reduce", REDUCES)
def test_opcheck(reduce):
    src, index, base = problem(reduce, 1, True, seed=7)
    src.requires_grad_()
    for b, include_self in ((None, False), (base, True), (base, False)):
        torch.library.opcheck(op, (src, index, 1, reduce, True, 4, b, include_self, False))
    if reduce in ("prod", "amax", "amin"):
        result = op(src, index, 1, reduce, True, 4, base, True, False).detach()
        torch.library.opcheck(
            torch.ops.scatterx.index_scatter_reduce_backward,
            (torch.randn_like(result), src.detach(), index, result, base, 1, reduce, True, True, False),
        )
        # a transposed src and base: the fake gradients are contiguous, as the kernels' (a compiled backward
        # asserted the strides of empty_like's)
        src_t, base_t = (t.detach().transpose(0, -1).contiguous().transpose(0, -1) for t in (src, base))
        result = op(src_t, index, 1, reduce, True, 4, base_t, True, False).detach()
        torch.library.opcheck(
            torch.ops.scatterx.index_scatter_reduce_backward,
            (torch.randn_like(result), src_t, index, result, base_t, 1, reduce, True, True, False),
        )


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax"])
def test_compiled_message_passing_step_matches_eager(reduce):
    """torch.compile(fullgraph=True): no graph break; same values and gradients as eager."""
    torch._dynamo.reset()
    g = torch.Generator().manual_seed(8)
    num_nodes, num_edges, features = 50, 400, 8
    edge_src = torch.randint(0, num_nodes, (num_edges,), generator=g)
    edge_dst = torch.randint(0, num_nodes, (num_edges,), generator=g).sort().values
    x = torch.randn(num_nodes, features, generator=g)
    weight = torch.randn(features, features, generator=g)

    def step(x, weight):
        messages = (x[edge_src] @ weight).relu()
        aggregated = op(messages, edge_dst, 0, reduce, True, num_nodes, None, False, False)
        return (aggregated + x).tanh().sum()

    grads = []
    for fn in (step, torch.compile(step, fullgraph=True, backend="aot_eager")):
        xx, ww = x.clone().requires_grad_(), weight.clone().requires_grad_()
        loss = fn(xx, ww)
        loss.backward()
        grads.append((loss.detach(), xx.grad, ww.grad))
    for eager, compiled in zip(*grads):
        torch.testing.assert_close(compiled, eager)


@pytest.mark.parametrize("sorted", [True, False], ids=["sorted", "unsorted"])
def test_compiles_fullgraph_without_dim_size(sorted):
    """No dim_size: the output size is read from the index as a data-dependent size (no graph break), the values
    and gradients are eager's, and a bad index still raises the eager error when the compiled call runs."""
    torch._dynamo.reset()
    g = torch.Generator().manual_seed(9)
    index = torch.randint(0, 7, (30,), generator=g)
    index = index.sort().values if sorted else index
    x = torch.randn(30, 4, generator=g, dtype=torch.float64)

    def step(x, index):
        return scatterx.index_scatter_reduce(0, index, x, "amax", sorted).tanh().sum(0)

    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    results = []
    # (capturing Tensor.item() is the default in newer torch; older versions, 2.4 among them, need it asked for)
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        for fn in (step, compiled):
            xx = x.clone().requires_grad_()
            out = fn(xx, index)
            out.sum().backward()
            results.append((out.detach(), xx.grad))
    for eager, traced in zip(*results):
        torch.testing.assert_close(traced, eager)
    with pytest.raises(IndexError, match="negative"), torch._dynamo.config.patch(capture_scalar_outputs=True):
        compiled(x, torch.cat([index[:-1], torch.tensor([-1])]) if not sorted else index - 1)
    # every entry negative: the size read from the index must not fail first (a RuntimeError of the graph's own)
    with pytest.raises(IndexError, match="negative"), torch._dynamo.config.patch(capture_scalar_outputs=True):
        compiled(x, -1 - index.flip(0) if sorted else -1 - index)


@pytest.mark.parametrize("reduce", REDUCES)
def test_public_functions_differentiate_like_the_op(reduce):
    src, index, _base = problem(reduce, 0, True, seed=9)
    grads = []
    for call in (
        lambda s: scatterx.index_scatter_reduce(0, index, s, reduce, dim_size=4),
        lambda s: op(s, index, 0, reduce, True, 4, None, False, False),
        lambda s: scatterx.segment_reduce(s.narrow(0, 0, index.numel()), scatterx.index_to_ptr(index, 4), reduce),
    ):
        s = src.clone().requires_grad_()
        result = call(s)
        result.backward(torch.arange(result.numel(), dtype=torch.float64).view(result.shape))
        grads.append(s.grad)
    torch.testing.assert_close(grads[0], grads[1])
    torch.testing.assert_close(grads[2], grads[1])


def test_gradient_flows_into_out_when_out_is_not_a_leaf():
    index = torch.tensor([0, 0])
    src = torch.tensor([1.0, 2.0], requires_grad=True)
    base = torch.tensor([3.0, 4.0], requires_grad=True)
    out = base * 1.0  # a non-leaf: in-place ops on leaves that require grad are refused by torch itself
    scatterx.index_scatter_reduce(0, index, src, "sum", out=out, include_self=False)
    out.sum().backward()
    assert src.grad.tolist() == [1.0, 1.0] and base.grad.tolist() == [0.0, 1.0]


@pytest.mark.parametrize("route", [None, "segments", "gather", "slices"])
def test_a_write_into_out_is_seen_by_autograd(route):
    """``out`` written in place (the kernel's own write, through NumPy, on every route that takes ``out``) bumps
    its version counter as torch's in-place ops do: a backward that saved ``out``'s old values then raises, where
    it used the new ones and gave a wrong gradient."""
    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = torch.ones(3)
    y = x * out  # saves out for x's gradient
    with contextlib.nullcontext() if route is None else routes.force(route):
        scatterx.index_scatter_reduce(0, torch.tensor([0, 1, 2]), torch.full((3,), 10.0), "sum", out=out)
    assert out._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax"])
def test_segment_reduce_gradcheck(reduce):
    src = torch.randn(7, 3, dtype=torch.float64, requires_grad=True)
    ptr = torch.tensor([0, 3, 3, 7])
    assert gradcheck(lambda s: scatterx.segment_reduce(s, ptr, reduce), (src,))
    torch.library.opcheck(torch.ops.scatterx.segment_reduce, (src, ptr, reduce, 0))


def test_compiled_public_functions_need_no_host_sync_with_dim_size():
    torch._dynamo.reset()
    index = torch.tensor([0, 0, 1, 3])
    ptr = torch.tensor([0, 2, 3, 3, 4])

    def step(x):
        a = scatterx.index_scatter_reduce(0, index, x, "mean", dim_size=4)
        b = scatterx.segment_reduce(x, ptr, "sum")
        return (a * b).sum()

    x = torch.randn(4, 5, requires_grad=True)
    eager = step(x)
    (eager_grad,) = torch.autograd.grad(eager, x)
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")(x)
    (compiled_grad,) = torch.autograd.grad(compiled, x)
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(compiled_grad, eager_grad)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("reduce", REDUCES)
def test_half_precision_gradients_match_float64(reduce, dtype):
    g = torch.Generator().manual_seed(10)
    src64 = (torch.randint(1, 9, (40, 3), generator=g) / 4.0).double()  # exact in every dtype, with ties
    index = torch.randint(0, 6, (40,), generator=g)
    grad64 = (torch.randint(-4, 5, (6, 3), generator=g) / 4.0).double()
    grads = []
    for t in (src64, src64.to(dtype)):
        leaf = t.clone().requires_grad_()
        scatterx.index_scatter_reduce(0, index, leaf, reduce, sorted=False, dim_size=6).backward(grad64.to(t.dtype))
        grads.append(leaf.grad)
    assert grads[1].dtype == dtype
    torch.testing.assert_close(grads[1].double(), grads[0], atol=0.05, rtol=0.02)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("reduce", REDUCES)
def test_half_precision_gradients_of_out_match_float64(reduce, dtype):
    """``out``'s values taking part (include_self), ties between them and the members included: the gradient of
    ``out`` is split among the ties as in float64 (half types once got the tie count's bits, not its value)."""
    g = torch.Generator().manual_seed(12)
    src64 = (torch.randint(1, 9, (40, 3), generator=g) / 4.0).double()
    base64 = (torch.randint(1, 9, (6, 3), generator=g) / 4.0).double()
    index = torch.randint(0, 6, (40,), generator=g)
    grad64 = (torch.randint(-4, 5, (6, 3), generator=g) / 4.0).double()
    grads = []
    for s, b in ((src64, base64), (src64.to(dtype), base64.to(dtype))):
        src, base = s.clone().requires_grad_(), b.clone().requires_grad_()
        result = scatterx.index_scatter_reduce(0, index, src, reduce, sorted=False, out=base.clone(), include_self=True)
        result.backward(grad64.to(s.dtype))
        grads.append((src.grad, base.grad))
    for half, wide in zip(grads[1], grads[0]):
        assert half.dtype == dtype
        torch.testing.assert_close(half.double(), wide, atol=0.05, rtol=0.02)


@pytest.mark.parametrize("dtype, members", [(torch.bfloat16, 300), (torch.float16, 3000)])
def test_half_precision_counts_past_the_type_s_integers(dtype, members):
    """A group of more members than the half type counts exactly (256 in bfloat16, 2,048 in float16): the mean's
    gradient is 1/n rounded once (sorted, unsorted, into out), and amax's ties split by n in a double-backward
    graph -- the counts were sums of ones in the half type, which stop there."""
    src = torch.ones(members + 1, 2, dtype=dtype)
    index = torch.tensor([0] * members + [1])
    want = torch.tensor([1.0 / members] * members + [1.0], dtype=torch.float64).to(dtype)[:, None].expand(-1, 2)
    for sorted, out in ((True, None), (False, None), (True, torch.zeros(2, 2, dtype=dtype))):
        leaf = src.clone().requires_grad_()
        result = scatterx.index_scatter_reduce(0, index, leaf, "mean", sorted, out=out, include_self=False)
        (grad,) = torch.autograd.grad(result.sum(), leaf)
        assert torch.equal(grad, want), (sorted, out is not None)
    leaf = src.clone().requires_grad_()
    (grad,) = torch.autograd.grad(
        scatterx.index_scatter_reduce(0, index, leaf, "amax", dim_size=2).sum(), leaf, create_graph=True
    )
    assert torch.equal(grad.detach(), want)


@pytest.mark.parametrize("op", ["index_scatter_reduce", "segment_reduce"])
@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_sum_and_mean_do_not_keep_src_alive_for_backward(op, reduce):
    """Their gradient needs src's shape only; in message passing src is the edges x features messages tensor."""
    import weakref

    x = torch.randn(4, 3, requires_grad=True)
    index = torch.tensor([0, 0, 1, 2, 2, 3])
    messages = x.index_select(0, torch.tensor([0, 1, 2, 3, 3, 1]))
    alive = weakref.ref(messages)
    if op == "index_scatter_reduce":
        out = scatterx.index_scatter_reduce(0, index, messages, reduce)
    else:
        out = scatterx.segment_reduce(messages, scatterx.index_to_ptr(index, 4), reduce)
    del messages
    assert alive() is None
    out.sum().backward()
    assert x.grad is not None and x.grad.shape == (4, 3)


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("sorted", [False, True])
def test_double_backward_of_prod_amax_amin(reduce, include_self, sorted):
    """With create_graph=True the backward runs as differentiable ops: gradgradcheck on distinct values (ties are
    where amax/amin are not differentiable; prod's zeros: the next test)."""
    g = torch.Generator().manual_seed(1)
    index = torch.tensor([0, 0, 1, 3, 3, 3]) if sorted else torch.tensor([3, 0, 1, 3, 0, 3])
    src = (torch.rand(6, 2, generator=g, dtype=torch.float64) + 0.5).requires_grad_()
    base = (torch.rand(4, 2, generator=g, dtype=torch.float64) + 0.5).requires_grad_()
    op = torch.ops.scatterx.index_scatter_reduce

    assert gradgradcheck(lambda s, b: op(s, index, 0, reduce, sorted, 4, b, include_self, False), (src, base))
    ptr = torch.tensor([0, 2, 3, 3, 6])
    assert gradgradcheck(lambda s: scatterx.segment_reduce(s, ptr, reduce), (src,))


@pytest.mark.parametrize("include_self", [False, True])
@pytest.mark.parametrize("sorted", [False, True])
def test_double_backward_of_prod_with_zeros_is_the_product_s(include_self, sorted):
    """A product is a polynomial, differentiable twice at zeros too: the Hessian through scatterx's prod equals the
    Hessian of the members multiplied out by hand, with one, two and three zeros in a group and a zero ``base``
    (a one-zero group's other members have gradient 0 there, but not a zero second derivative)."""
    index = torch.tensor([0, 0, 0, 1, 1, 1, 3, 3]) if sorted else torch.tensor([3, 0, 1, 0, 1, 3, 0, 1])
    weight = torch.tensor([1.5, -2.0, 0.5, 3.0], dtype=torch.float64)

    def by_hand(s, b):
        groups = []
        for t in range(4):
            value = b[t] if include_self else torch.ones((), dtype=s.dtype)
            members = [s[i] for i in range(8) if index[i] == t]
            for member in members:
                value = value * member
            groups.append(value if members else b[t])
        return (torch.stack(groups) * weight).sum()

    def through_scatterx(s, b):
        return (op(s, index, 0, "prod", sorted, 4, b, include_self, False) * weight).sum()

    for zeros in ([0], [0, 1], [0, 1, 2], [3, 5]):
        src = torch.arange(1.0, 9.0, dtype=torch.float64) / 4
        src[zeros] = 0.0
        base = torch.tensor([0.0, 2.0, 3.0, 0.5], dtype=torch.float64)
        got = torch.autograd.functional.hessian(through_scatterx, (src, base))
        want = torch.autograd.functional.hessian(by_hand, (src, base))
        for a, b in zip(got, want):
            for x, y in zip(a, b):
                torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)
        assert gradgradcheck(
            lambda s, b: op(s, index, 0, "prod", sorted, 4, b, include_self, False), (src.requires_grad_(), base)
        )


def test_double_backward_of_amax_matches_torch():
    """A gradient penalty through amax (ties included): the same as torch.scatter_reduce's."""
    index = torch.tensor([0, 0, 1, 1, 1])
    src0 = torch.tensor([[1.0, 2.0], [3.0, 2.0], [0.5, 0.5], [0.5, 0.2], [0.1, 0.5]], dtype=torch.float64)
    grads = []
    for use_scatterx in (False, True):
        src = src0.clone().requires_grad_()
        weight = torch.arange(1.0, 5.0, dtype=torch.float64).view(2, 2)
        if use_scatterx:
            out = scatterx.index_scatter_reduce(0, index, src * src, "amax")
        else:
            expanded = index.view(-1, 1).expand(-1, 2)
            out = torch.zeros(2, 2, dtype=torch.float64).scatter_reduce(
                0, expanded, src * src, "amax", include_self=False
            )
        (g,) = torch.autograd.grad((out * weight).sum(), src, create_graph=True)
        grads.append(torch.autograd.grad(g.pow(2).sum(), src)[0])
    torch.testing.assert_close(grads[1], grads[0])


# ------------------------------------------------------------------------------------- the GPU backend's gradients
def _backend_grads(backend, reduce, sorted, with_out, include_self):
    g = torch.Generator().manual_seed(2)
    src = torch.randint(-2, 3, (12, 3), generator=g).double()  # small integers: ties and zeros
    index = torch.randint(0, 4, (10,), generator=g)
    if sorted:
        index = index.sort().values
    base = torch.randint(-2, 3, (5, 3), generator=g).double() if with_out else None
    if reduce in ("amax", "amin"):  # NaN results: the NaN members share the gradient
        src[[1, 4, 9], [0, 0, 2]] = float("nan")
        if base is not None:
            base[index[4], 0] = float("nan")
    weights = torch.randn(5, 3, generator=g, dtype=torch.float64)
    s = backend.put(src).requires_grad_()
    b = None if base is None else backend.put(base).requires_grad_()
    with backend:
        out = scatterx.index_scatter_reduce(
            0,
            backend.put(index),
            s,
            reduce,
            sorted,
            dim_size=5,
            out=None if b is None else b.clone(),
            include_self=include_self,
        )
        (out * backend.put(weights)).sum().backward()
    return [t.detach().cpu() for t in (out, s.grad, *(() if b is None else (b.grad,)))]


@pytest.mark.parametrize(
    "with_out, include_self", [(False, True), (True, True), (True, False)], ids=["no-out", "out-self", "out-noself"]
)
@pytest.mark.parametrize("sorted", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_gpu_gradients_match_the_cpu_backend(reduce, sorted, with_out, include_self):
    """Planted ties, zeros and NaNs: amax/amin split among ties (NaN members where the result is NaN), prod with
    one and with several zeros."""
    gpu = _backend("gpu")
    for got, want in zip(
        _backend_grads(gpu, reduce, sorted, with_out, include_self),
        _backend_grads(Backend("cpu"), reduce, sorted, with_out, include_self),
    ):
        torch.testing.assert_close(got, want, equal_nan=True)


def test_gpu_segment_reduce_gradient_matches_the_cpu_backend():
    ptr = torch.tensor([0, 3, 3, 8])
    src = torch.tensor([[1.0], [3.0], [3.0], [0.0], [2.0], [2.0], [-1.0], [0.5]], dtype=torch.float64)
    for reduce in ("mean", "amax", "prod"):
        grads = []
        for backend in (_backend("gpu"), Backend("cpu")):
            s = backend.put(src).requires_grad_()
            with backend:
                scatterx.segment_reduce(s, backend.put(ptr), reduce).sum().backward()
            grads.append(s.grad.cpu())
        torch.testing.assert_close(*grads)


@pytest.mark.skipif(not ON_GPU, reason="torch.compile traces Triton kernels on CUDA only")
def test_ops_pass_opcheck_on_cuda():
    src = torch.randn(7, 3, device="cuda", dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 1, 3, 3, 3, 4], device="cuda")
    for reduce in REDUCES:
        torch.library.opcheck(
            torch.ops.scatterx.index_scatter_reduce.default, (src, index, 0, reduce, True, 5, None, False, False)
        )


@pytest.mark.skipif(not ON_GPU, reason="torch.compile traces Triton kernels on CUDA only")
def test_compiled_message_passing_step_on_cuda():
    x = torch.randn(5, 8, device="cuda", requires_grad=True)
    edge_src = torch.tensor([0, 1, 2, 3, 4, 0], device="cuda")
    edge_dst = torch.tensor([0, 0, 1, 2, 2, 4], device="cuda")

    def step(x):
        return scatterx.index_scatter_reduce(0, edge_dst, x[edge_src], "mean", True, dim_size=5).relu().sum()

    compiled = torch.compile(step, fullgraph=True)
    torch.testing.assert_close(compiled(x), step(x))
