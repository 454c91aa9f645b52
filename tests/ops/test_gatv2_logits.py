"""gatv2_logits against its reference (PyG's edge_update in float64) on both backends, values and gradients;
gradcheck, opcheck, torch.compile of a GATv2 step, and bad input."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.autograd import gradcheck, gradgradcheck

import scatterx
from scatterx import reference

FLOATING = [torch.float16, torch.bfloat16, torch.float32, torch.float64]


@st.composite
def gatv2_problems(draw, dtypes=FLOATING):
    """x_l (sources) and x_r (targets) with heads, or 2-D rows; CSR edges by target, with empty segments and
    repeated sources. Half the problems hold small integers, so that ``z = a + b`` is often exactly 0 (where the
    leaky ReLU's derivative is a choice: torch's is the slope)."""
    dtype = draw(st.sampled_from(dtypes))
    heads = draw(st.integers(1, 3))
    channels = draw(st.integers(0, 5))
    two_d = draw(st.booleans())
    features = (channels,) if two_d else (heads, channels)
    lengths = draw(st.lists(st.integers(0, 4), max_size=6))
    sources = draw(st.integers(1, 6))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    ptr = torch.tensor([0] + lengths).cumsum(0)
    index_dtype = draw(st.sampled_from([torch.int32, torch.int64]))
    index = torch.randint(0, sources, (int(ptr[-1]),), generator=g).to(index_dtype)
    if draw(st.booleans()):

        def values(shape):
            return torch.randint(-2, 3, shape, generator=g).to(dtype)
    else:

        def values(shape):
            return (torch.rand(shape, generator=g, dtype=torch.float64) * 3 - 1.5).to(dtype)

    att_shape = draw(st.sampled_from([features, (1, *features)]))
    slope = draw(st.sampled_from([0.2, 0.0, 1.0, 1.5, -0.5]))
    return dict(
        ptr=ptr,
        index=index,
        a=values((sources, *features)),
        b=values((len(lengths), *features)),
        att=values(att_shape),
        negative_slope=slope,
    )


def test_matches_reference(backend):
    @settings(max_examples=backend.examples(200))
    @given(gatv2_problems())
    def check(p):
        q = backend.put(p)
        with backend:
            got = scatterx.gatv2_logits(**q)
        assert_matches(got, reference.gatv2_logits(**p), "sum")

    check()


def test_gradients_match_reference(backend):
    """Gradients for both ends and att against autograd through the reference (float32/float64, z = 0 included)."""

    @settings(max_examples=backend.examples(100))
    @given(gatv2_problems(dtypes=[torch.float32, torch.float64]), st.integers(0, 2**31 - 1))
    def check(p, seed):
        grad_out = reference.gatv2_logits(**p)
        grad_out = torch.randn(grad_out.shape, generator=torch.Generator().manual_seed(seed)).to(grad_out.dtype)
        leaves = {k: p[k].clone().requires_grad_() for k in ("a", "b", "att")}
        want = torch.autograd.grad(reference.gatv2_logits(**(p | leaves)), list(leaves.values()), grad_out)
        q = backend.put(p)
        on_device = {k: v.detach().clone().requires_grad_() for k, v in backend.put(leaves).items()}
        with backend:
            out = scatterx.gatv2_logits(**(q | on_device))
            got = torch.autograd.grad(out, list(on_device.values()), backend.put(grad_out))
        for x, y in zip(got, want):
            assert_matches(x, y, "sum")

    check()


def test_hand_written():
    ptr, index = torch.tensor([0, 2, 2, 3]), torch.tensor([1, 0, 1])
    a = torch.tensor([[1.0, -2.0], [3.0, 4.0]])
    b = torch.tensor([[0.0, 0.0], [9.0, 9.0], [-4.0, 0.0]])
    att = torch.tensor([1.0, 2.0])
    # edge 0: a[1] + b[0] = (3, 4) -> 3 + 8; edge 1: (1, -2) -> 1 + 2 * -0.4; edge 2: (-1, 4) -> -0.2 + 8
    got = scatterx.gatv2_logits(ptr, index, a, b, att)
    torch.testing.assert_close(got, torch.tensor([11.0, 0.2, 7.8]))
    # heads: (N, 2 heads, 1 channel) -> (E, 2), each head its own att entry
    got = scatterx.gatv2_logits(ptr, index, a.view(2, 2, 1), b.view(3, 2, 1), att.view(1, 2, 1), 0.5)
    torch.testing.assert_close(got, torch.tensor([[3.0, 8.0], [1.0, -2.0], [-0.5, 8.0]]))
    # the gradient at z == 0 takes the slope, as torch's leaky_relu
    a0 = torch.zeros(1, 1, requires_grad=True)
    scatterx.gatv2_logits(
        torch.tensor([0, 1]), torch.tensor([0]), a0, torch.zeros(1, 1), torch.ones(1), 0.25
    ).backward()
    assert a0.grad.item() == 0.25


def test_gradcheck():
    g = torch.Generator().manual_seed(7)
    ptr, index = torch.tensor([0, 3, 3, 7]), torch.tensor([1, 0, 1, 3, 2, 2, 0])
    a = torch.randn(4, 2, 3, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(3, 2, 3, dtype=torch.float64, generator=g, requires_grad=True)
    att = torch.randn(1, 2, 3, dtype=torch.float64, generator=g, requires_grad=True)
    assert gradcheck(lambda x, y, w: scatterx.gatv2_logits(ptr, index, x, y, w, 0.3), (a, b, att))


def test_double_backward():
    """Under create_graph the backward is made of torch ops: differentiable again (a gradient penalty)."""
    g = torch.Generator().manual_seed(3)
    ptr, index = torch.tensor([0, 3, 3, 5]), torch.tensor([1, 0, 1, 2, 2])
    a = torch.randn(3, 2, 2, dtype=torch.float64, generator=g, requires_grad=True)
    b = torch.randn(3, 2, 2, dtype=torch.float64, generator=g, requires_grad=True)
    att = torch.randn(2, 2, dtype=torch.float64, generator=g, requires_grad=True)
    assert gradgradcheck(lambda x, y, w: scatterx.gatv2_logits(ptr, index, x, y, w, 0.3), (a, b, att))


def test_any_ptr_dtype_and_strides(backend):
    """ptr as int32 and as a strided view: the backward gets the caller's ptr, not the forward's checked copy."""
    dense = torch.tensor([0, 9, 2, 9, 2, 9, 3, 9])
    g = torch.Generator().manual_seed(5)
    a, b, att = (torch.randn(shape, dtype=torch.float64, generator=g) for shape in ((4, 2, 3), (3, 2, 3), (2, 3)))
    index = torch.tensor([3, 0, 1])
    want = [t.clone().requires_grad_() for t in (a, b, att)]
    reference.gatv2_logits(torch.tensor([0, 2, 2, 3]), index, *want).sum().backward()
    for ptr in (dense[::2], dense[::2].to(torch.int32)):
        leaves = [t.clone().requires_grad_() for t in backend.put((a, b, att))]
        with backend:
            scatterx.gatv2_logits(backend.put(ptr), backend.put(index), *leaves).sum().backward()
        for got, expected in zip(leaves, want):
            assert_matches(got.grad, expected.grad, "sum")


def test_rows_without_edges_get_zero_gradient(backend):
    """A target with no edge (and a source with none, in the transposed pass) gets 0, even for an infinite att."""
    att = torch.tensor([[float("inf"), 1.0]])
    a = torch.zeros(2, 1, 2, requires_grad=True)
    b = torch.ones(2, 1, 2, requires_grad=True)
    a_, b_, att_ = (t.detach().clone().requires_grad_() for t in backend.put((a, b, att)))
    with backend:
        scatterx.gatv2_logits(
            backend.put(torch.tensor([0, 1, 1])), backend.put(torch.tensor([0])), a_, b_, att_
        ).sum().backward()
    assert a_.grad[1].tolist() == [[0.0, 0.0]] and b_.grad[1].tolist() == [[0.0, 0.0]]


def test_the_gradients_do_not_depend_on_the_thread_count():
    """att's gradient sums one partial per work item: its bits, and the others', are the same on 1, 2 and 3
    threads (the work items were chunks per thread, and so were the partials)."""
    from scatterx.backends.cpu import routes

    g = torch.Generator().manual_seed(0)
    sources, targets, edges = 300, 200, 3000
    ptr = scatterx.index_to_ptr(torch.randint(0, targets, (edges,), generator=g).sort().values, targets)
    index = torch.randint(0, sources, (edges,), generator=g)
    a, b = torch.randn(sources, 2, 8, generator=g), torch.randn(targets, 2, 8, generator=g)
    att, grad = torch.randn(2, 8, generator=g), torch.randn(edges, 2, generator=g)

    def gradients(threads):
        torch.set_num_threads(threads)
        leaves = [t.clone().requires_grad_() for t in (a, b, att)]
        logits = scatterx.gatv2_logits(ptr, index, *leaves, 0.2)
        return torch.autograd.grad(logits, leaves, grad)

    before = torch.get_num_threads()
    try:
        with routes.tuned(parallel_min_elements=1):  # parallel at this size
            one, *others = [gradients(threads) for threads in (1, 2, 3)]
    finally:
        torch.set_num_threads(before)
    for other in others:
        for x, y in zip(one, other):
            assert torch.equal(x.view(torch.int32), y.view(torch.int32))


def test_opcheck():
    ptr, index = torch.tensor([0, 2, 5]), torch.tensor([4, 0, 1, 1, 3])
    a = torch.randn(5, 2, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, 2, 3, dtype=torch.float64, requires_grad=True)
    att = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    torch.library.opcheck(torch.ops.scatterx.gatv2_logits.default, (ptr, index, a, b, att, 0.2))
    grad = torch.randn(5, 2, dtype=torch.float64)
    for want_att in (True, False):
        torch.library.opcheck(
            torch.ops.scatterx.gatv2_logits_grad.default,
            (b.detach(), a.detach(), att.detach(), ptr, index, grad, 0.2, want_att),
        )


def test_compiles_without_graph_breaks():
    """A GATv2 step: logits, softmax per target, weighted aggregation, with gradients."""
    ptr, index = torch.tensor([0, 2, 5]), torch.tensor([4, 0, 1, 1, 3])
    x = torch.randn(5, 2, 4, requires_grad=True)
    att = torch.randn(1, 2, 4, requires_grad=True)

    def step(x, att):
        logits = scatterx.gatv2_logits(ptr, index, x, x[:2] * 0.5, att)
        alpha = scatterx.segment_softmax(logits, ptr=ptr)
        return scatterx.gather_segment_reduce(x, ptr, index, "sum", weight=alpha).sum()

    eager = torch.autograd.grad(step(x, att), (x, att))
    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    for got, want in zip(torch.autograd.grad(compiled(x, att), (x, att)), eager):
        torch.testing.assert_close(got, want)


def test_bad_input_raises():
    ptr, index = torch.tensor([0, 2, 3]), torch.tensor([0, 1, 1])
    a, b, att = torch.ones(2, 3), torch.ones(2, 3), torch.ones(3)
    cases = [
        (dict(b=torch.ones(2, 3, dtype=torch.float64)), TypeError, "b has dtype"),
        (dict(att=torch.ones(3, dtype=torch.float64)), TypeError, "att has dtype"),
        (
            dict(
                a=torch.ones(2, 3, dtype=torch.int64),
                b=torch.ones(2, 3, dtype=torch.int64),
                att=torch.ones(3, dtype=torch.int64),
            ),
            TypeError,
            "floating point",
        ),
        (dict(b=torch.ones(2, 4)), ValueError, "same feature shape"),
        (dict(att=torch.ones(4)), ValueError, "att must have shape"),
        (dict(att=torch.ones(2, 3)), ValueError, "att must have shape"),
        (dict(a=torch.ones(2), b=torch.ones(2), att=torch.ones(())), ValueError, "rows, channels"),
        (dict(b=torch.ones(3, 3)), ValueError, "ptr has 3 entries; b has 3 rows"),
        (dict(index=torch.tensor([0, 2, 1])), IndexError, r"index\[1\]=2 is out of range"),
        (dict(index=torch.tensor([0, -1, 1])), IndexError, r"index\[1\]=-1"),
        (dict(ptr=torch.tensor([0, 2, 4])), ValueError, r"ptr must end at index.numel\(\)=3"),
        (dict(ptr=torch.tensor([0, 3, 2])), ValueError, "ptr must"),
        (dict(index=torch.tensor([0.0, 1.0, 1.0])), TypeError, "int32 or int64"),
        (dict(a=[[1.0]]), TypeError, "a must be a torch.Tensor"),
        (dict(negative_slope="0.2"), TypeError, "negative_slope must be a number"),
        (dict(att=torch.ones(3, device="meta")), (ValueError, NotImplementedError), "meta"),
    ]
    for change, error, match in cases:
        args = dict(ptr=ptr, index=index, a=a, b=b, att=att) | change
        with pytest.raises(error, match=match):
            scatterx.gatv2_logits(**args)
