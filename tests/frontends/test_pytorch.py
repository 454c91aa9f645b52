"""scatterx.scatter_reduce / scatter / gather give exactly torch's results (values and gradients), on expanded
(slice plan) and general (element plan) indices, every reduction, dtype and dim; bad input raises before any
write."""

import pytest
import torch
from conftest import _backend, assert_matches
from hypothesis import given
from hypothesis import strategies as st

import scatterx
from scatterx import planner, reference

REDUCES = ["sum", "prod", "mean", "amax", "amin"]
DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16, torch.bfloat16]


@st.composite
def problems(draw):
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    d = dim % ndim
    ishape = [draw(st.integers(0, 5)) if i == d else draw(st.integers(1, s)) for i, s in enumerate(shape)]
    sshape = [s + draw(st.integers(0, 1)) for s in ishape]  # src may be larger than index
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    kind = draw(st.sampled_from(["general", "expanded", "materialised"]))
    if kind == "general":
        index = torch.randint(0, shape[d], ishape, generator=g)
    else:
        line = torch.randint(0, shape[d], (ishape[d],), generator=g)
        if draw(st.booleans()):
            line = line.sort().values
        view = [1] * ndim
        view[d] = ishape[d]
        index = line.view(view).expand(ishape)
        index = index.contiguous() if kind == "materialised" else index
    dtype = draw(st.sampled_from(DTYPES))
    make = lambda s: (torch.randint(-3, 4, s, generator=g).to(dtype) / (4 if dtype.is_floating_point else 1)).to(dtype)  # noqa: E731
    return make(shape), dim, index, make(sshape), dtype


@given(p=problems(), reduce=st.sampled_from(REDUCES), include_self=st.booleans())
def test_scatter_reduce_equals_torch(p, reduce, include_self):
    inp, dim, index, src, dtype = p
    if dtype in (torch.float16, torch.bfloat16) and reduce in ("prod", "mean"):
        pass  # torch accumulates in the half type; compared with tolerance below
    got = scatterx.scatter_reduce(inp, dim, index, src, reduce, include_self=include_self)
    want = torch.scatter_reduce(inp, dim, index, src, reduce, include_self=include_self)
    assert_matches(got, want, reduce)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@given(p=problems(), mode=st.sampled_from([None, "add", "multiply"]))
def test_scatter_equals_torch(p, mode):
    inp, dim, index, src, _dtype = p
    got = scatterx.scatter(inp, dim, index, src, reduce=mode)
    want = torch.scatter(inp, dim, index, src) if mode is None else torch.scatter(inp, dim, index, src, reduce=mode)
    if mode is None:
        # duplicate targets: torch promises no order, scatterx keeps the last write (the reference's rule);
        # positions written at most once must equal torch's
        last = reference.x_scatter(planner_map(inp, dim, index), inp, narrow(src, index), "assign")
        assert torch.equal(got, last)
        hits = torch.scatter_add(torch.zeros(inp.shape), dim, index, torch.ones(index.shape))
        assert torch.equal(got[hits <= 1], want[hits <= 1])
    else:
        assert_matches(got, want, "sum")


@given(p=problems())
def test_scatter_of_a_number_equals_torch(p):
    inp, dim, index, _, dtype = p
    value = 2 if not dtype.is_floating_point else 0.5
    assert torch.equal(scatterx.scatter(inp, dim, index, value), torch.scatter(inp, dim, index, value))


def test_a_number_its_dtype_cannot_hold_is_refused_as_torch_refuses_it():
    """torch.scatter refuses a value beyond the dtype's range (no inf, no wrapped integer); so does scatterx,
    before writing ``out``. Infinities and NaN are values a float holds; a float is truncated into an int."""
    cases = {
        torch.float16: [65504.0, 65519.0, -1e10, float("inf"), float("nan")],
        torch.bfloat16: [3.3e38, 3.4e38],
        torch.float32: [3.4e38, 3.5e38],
        torch.int32: [2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 1.5, 1e10, float("nan")],
        torch.int64: [2**63 - 1, 2**63],
        torch.bool: [2, 1e10],
    }
    index = torch.tensor([0])
    for dtype, values in cases.items():
        for value in values:
            try:
                want = torch.scatter(torch.ones(2, dtype=dtype), 0, index, value)
            except RuntimeError:
                want = None
            out = torch.full((2,), 3, dtype=dtype)
            if want is None:
                with pytest.raises(ValueError, match="without overflow"):
                    scatterx.scatter(torch.ones(2, dtype=dtype), 0, index, value, out=out)
                assert (out == 3).all()
            else:
                got = scatterx.scatter(torch.ones(2, dtype=dtype), 0, index, value)
                torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)


@given(p=problems())
def test_gather_equals_torch(p):
    inp, dim, index, _, _ = p
    assert torch.equal(scatterx.gather(inp, dim, index), torch.gather(inp, dim, index))


def planner_map(inp, dim, index):
    return planner.XMap.along_dim(index, inp.shape, dim % inp.dim())


def narrow(src, index):
    for d in range(index.dim()):
        src = src.narrow(d, 0, index.size(d))
    return src


def test_scalar_tensors_as_in_torch():
    x, i, s = torch.tensor(1.0), torch.tensor(0), torch.tensor(5.0)
    assert torch.equal(scatterx.scatter_reduce(x, 0, i, s, "sum"), torch.scatter_reduce(x, 0, i, s, "sum"))
    assert torch.equal(scatterx.gather(x, 0, i), torch.gather(x, 0, i))


# Found by running PyTorch's own OpInfo sample inputs: 0-d tensors count as one element, an empty index is
# accepted whatever its dtype and shape. Each call is compared with torch's (values, shapes, dtypes).
ZERO_D_AND_EMPTY = {
    "gather 0-d input, 1-d index": lambda f: f.gather(torch.tensor(3.0), 0, torch.tensor([0])),
    "gather 0-d input, repeated index": lambda f: f.gather(torch.tensor(3.0), 0, torch.tensor([0, 0])),
    "gather 1-d input, 0-d index": lambda f: f.gather(torch.arange(4.0), 0, torch.tensor(1)),
    "gather 0-d input, dim -1": lambda f: f.gather(torch.tensor(3.0), -1, torch.tensor(0)),
    "gather empty uint8 index": lambda f: f.gather(torch.arange(4.0), 0, torch.tensor([], dtype=torch.uint8)),
    "gather empty index of another rank": lambda f: f.gather(
        torch.zeros(3, 3), 1, torch.zeros(0, 5, dtype=torch.uint8)
    ),
    "gather empty float index": lambda f: f.gather(torch.zeros(3, 3), 0, torch.zeros(0)),
    "scatter 1-d input, 0-d index": lambda f: f.scatter(
        torch.arange(4.0), 0, torch.tensor(1), torch.tensor([9.0, 8.0])
    ),
    "scatter 0-d everything": lambda f: f.scatter(torch.tensor(3.0), 0, torch.tensor(0), torch.tensor(9.0)),
    "scatter a number, 0-d index": lambda f: f.scatter(torch.arange(4.0), 0, torch.tensor(2), 5.0),
    "scatter empty uint8 index": lambda f: f.scatter(
        torch.arange(4.0), 0, torch.tensor([], dtype=torch.uint8), torch.ones(2)
    ),
    "scatter_add 0-d index": lambda f: f.scatter_add(torch.arange(4.0), 0, torch.tensor(1), torch.tensor([9.0, 8.0])),
    "scatter_add empty index": lambda f: f.scatter_add(
        torch.zeros(3, 3), 0, torch.zeros(0, dtype=torch.uint8), torch.ones(2)
    ),
    "scatter_reduce 0-d index": lambda f: f.scatter_reduce(
        torch.arange(3.0), 0, torch.tensor(2), torch.tensor([9.0, 8.0]), "amax"
    ),
    "scatter_reduce 0-d src": lambda f: f.scatter_reduce(
        torch.arange(3.0), 0, torch.tensor([0]), torch.tensor(9.0), "sum"
    ),
    "scatter_reduce 0-d input": lambda f: f.scatter_reduce(
        torch.tensor(3.0), 0, torch.tensor(0), torch.tensor(2.0), "amax", include_self=False
    ),
    "scatter_reduce empty index": lambda f: f.scatter_reduce(
        torch.zeros(3, 3), 0, torch.zeros(0, dtype=torch.uint8), torch.zeros(2, 3, 4), "amax"
    ),
    "gather 0-d into out": lambda f: f.gather(torch.tensor(2.0), 0, torch.tensor(0), out=torch.tensor(0.0)),
    "gather 0-d index into out": lambda f: f.gather(torch.arange(3.0), 0, torch.tensor(2), out=torch.tensor(0.0)),
    "scatter_reduce 0-d into out": lambda f: f.scatter_reduce(
        torch.tensor(3.0), 0, torch.tensor(0), torch.tensor(5.0), "sum", out=torch.tensor(0.0)
    ),
    "scatter 0-d into out": lambda f: f.scatter(
        torch.arange(3.0), 0, torch.tensor(1), torch.tensor([7.0]), out=torch.zeros(3)
    ),
}


class _TorchScatterAdd:
    """torch's functions, and scatterx's under the same names (scatter_add = scatter with reduce='add')."""

    def __init__(self, module):
        self.module = module

    def __getattr__(self, name):
        if name == "scatter_add" and self.module is scatterx:
            return lambda input, dim, index, src: scatterx.scatter(input, dim, index, src, reduce="add")
        return getattr(self.module, name)


@pytest.mark.parametrize("case", list(ZERO_D_AND_EMPTY))
def test_zero_d_tensors_and_empty_indices_as_torch_takes_them(case):
    want = ZERO_D_AND_EMPTY[case](_TorchScatterAdd(torch))
    got = ZERO_D_AND_EMPTY[case](_TorchScatterAdd(scatterx))
    assert got.shape == want.shape and got.dtype == want.dtype, (got, want)
    assert torch.equal(got, want)


def test_gather_of_a_0d_input_differentiates_like_torch():
    grads = []
    for module in (torch, scatterx):
        x = torch.tensor(3.0, requires_grad=True)
        (module.gather(x, 0, torch.tensor([0, 0])) * torch.tensor([2.0, 5.0])).sum().backward()
        grads.append(x.grad)
    assert grads[0].shape == grads[1].shape == () and torch.equal(grads[0], grads[1])


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("kind", ["expanded", "general"])
def test_tie_gradient_with_the_input_s_own_value_equals_torch(reduce, kind):
    """include_self=False, and the input's value equals the result: torch counts it among the ties (its
    gradient is split with it, though the input itself gets 0); the torch-compatible frontend does the same."""
    inp = torch.tensor([[5.0, 1.0], [2.0, 7.0]], dtype=torch.float64)
    src = torch.tensor([[5.0, 1.0], [5.0, 7.0], [2.0, 7.0]], dtype=torch.float64)
    index = (
        torch.tensor([0, 0, 1]).view(-1, 1).expand(3, 2)
        if kind == "expanded"
        else torch.tensor([[0, 0], [0, 1], [1, 1]])
    )
    grads = []
    for module in (torch, scatterx):
        a, b = inp.clone().requires_grad_(), src.clone().requires_grad_()
        out = module.scatter_reduce(a, 0, index, b, reduce, include_self=False)
        (out * torch.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=torch.float64)).sum().backward()
        grads.append((out.detach(), a.grad, b.grad))
    for ours, theirs in zip(grads[1], grads[0]):
        torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("reduce", ["sum", "amax", "mean"])
def test_frontends_run_on_the_gpu_backend(reduce):
    """The planner's slice plans (PyG's expanded index), element plans (a general index) and assign (scatter)
    on the GPU backend, against the CPU."""
    gpu = _backend("gpu")
    g = torch.Generator().manual_seed(9)
    src = torch.randn(8, 3, generator=g)
    expanded = torch.randint(0, 4, (8,), generator=g).view(-1, 1).expand(8, 3)
    general = torch.randint(0, 4, (8, 3), generator=g)
    data = torch.randn(4, 3, generator=g)
    for index in (expanded, general):
        want = scatterx.scatter_reduce(data, 0, index, src, reduce, include_self=False)
        with gpu:
            got = scatterx.scatter_reduce(gpu.put(data), 0, gpu.put(index), gpu.put(src), reduce, include_self=False)
        assert_matches(got, want, reduce)
        want = scatterx.scatter(data, 0, index, src)
        with gpu:
            got = scatterx.scatter(gpu.put(data), 0, gpu.put(index), gpu.put(src))
        assert torch.equal(got.cpu(), want)


# ------------------------------------------------------------------------------------------------ plans chosen
def test_pyg_style_expanded_index_runs_on_the_slice_kernel(monkeypatch):
    calls = []
    real = planner.plan
    monkeypatch.setattr(planner, "plan", lambda m: calls.append(real(m)) or calls[-1])
    index = torch.tensor([0, 2, 2, 1])
    src = torch.randn(4, 8)
    scatterx.scatter_reduce(torch.zeros(3, 8), 0, index.view(-1, 1).expand_as(src), src, "sum")
    assert calls[-1].kind == "slice" and calls[-1].inner == 8 and torch.equal(calls[-1].rows, index)
    scatterx.scatter_reduce(torch.zeros(3, 8), 0, torch.randint(0, 3, (4, 8)), src, "sum")
    assert calls[-1].kind == "element"


# ---------------------------------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("kind", ["expanded", "general"])
def test_scatter_reduce_gradients_equal_torch(reduce, include_self, kind):
    g = torch.Generator().manual_seed(3)
    inp = torch.randn(4, 5, dtype=torch.float64, generator=g)
    src = torch.randn(6, 5, dtype=torch.float64, generator=g)
    if kind == "expanded":
        index = torch.tensor([0, 2, 2, 3, 0, 2]).view(-1, 1).expand(6, 5)
    else:
        index = torch.randint(0, 4, (6, 5), generator=g)
    grads = []
    for fn in (scatterx.scatter_reduce, torch.scatter_reduce):
        a, b = inp.clone().requires_grad_(), src.clone().requires_grad_()
        out = fn(a, 0, index, b, reduce, include_self=include_self)
        (out * torch.arange(out.numel(), dtype=out.dtype).view_as(out)).sum().backward()
        grads.append((out.detach(), a.grad, b.grad))
    for x, y in zip(*grads):
        torch.testing.assert_close(x, y)


@pytest.mark.parametrize("reduce", REDUCES)
def test_scatter_reduce_gradcheck(reduce):
    g = torch.Generator().manual_seed(4)
    inp = torch.randn(3, 4, dtype=torch.float64, generator=g).requires_grad_()
    src = torch.randn(5, 4, dtype=torch.float64, generator=g).requires_grad_()
    index = torch.randint(0, 3, (5, 4), generator=g)
    torch.autograd.gradcheck(lambda a, b: scatterx.scatter_reduce(a, 0, index, b, reduce), (inp, src))


def test_scatter_and_gather_gradients_equal_torch():
    inp = torch.randn(4, 3, dtype=torch.float64)
    src = torch.randn(2, 3, dtype=torch.float64)
    index = torch.tensor([[3, 0, 1], [1, 2, 0]])  # no duplicate targets: torch's assign is then defined
    for fn_sx, fn_t in ((scatterx.scatter, torch.scatter),):
        grads = []
        for fn in (fn_sx, fn_t):
            a, b = inp.clone().requires_grad_(), src.clone().requires_grad_()
            (fn(a, 0, index, b) ** 2).sum().backward()
            grads.append((a.grad, b.grad))
        torch.testing.assert_close(grads[0], grads[1])
    a = inp.clone().requires_grad_()
    torch.autograd.gradcheck(lambda t: scatterx.gather(t, 0, index), (a,))


# ------------------------------------------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda x: scatterx.scatter_reduce(x, 0, torch.tensor([[3]]), torch.ones(1, 1), "sum"),
            IndexError,
            r"index\[0, 0\] = 3 is out of bounds for dimension 0 with size",
        ),
        (
            lambda x: scatterx.scatter_reduce(x, 0, torch.tensor([[0, 3]]), torch.ones(1, 2), "sum"),
            IndexError,
            "out of bounds",
        ),
        (
            lambda x: scatterx.scatter_reduce(x, 0, torch.tensor([[-1]]), torch.ones(1, 1), "sum"),
            IndexError,
            r"index\[0, 0\] = -1 is out of bounds for dimension 0 with size",
        ),
        (lambda x: scatterx.scatter_reduce(x, 2, torch.tensor([[0]]), torch.ones(1, 1), "sum"), IndexError, "dim"),
        (lambda x: scatterx.scatter_reduce(x, 0, torch.tensor([0]), torch.ones(1), "sum"), ValueError, "dimension"),
        (
            lambda x: scatterx.scatter_reduce(x, 0, torch.zeros(1, 4, dtype=torch.long), torch.ones(1, 4), "sum"),
            ValueError,
            "exceeds",
        ),
        (
            lambda x: scatterx.scatter_reduce(x, 0, torch.zeros(2, 1, dtype=torch.long), torch.ones(1, 1), "sum"),
            ValueError,
            "exceeds src",
        ),
        (
            lambda x: scatterx.scatter_reduce(x, 0, torch.zeros(1, 1), torch.ones(1, 1), "sum"),
            TypeError,
            "int32 or int64",
        ),
        (
            lambda x: scatterx.scatter_reduce(
                x, 0, torch.zeros(1, 1, dtype=torch.long), torch.ones(1, 1, dtype=torch.float64), "sum"
            ),
            TypeError,
            "dtype",
        ),
        (
            lambda x: scatterx.scatter_reduce(x, 0, torch.zeros(1, 1, dtype=torch.long), torch.ones(1, 1), "max"),
            ValueError,
            "reduce",
        ),
        (lambda x: scatterx.scatter(x, 0, torch.tensor([[0, 5]]), 1.0), IndexError, "out of bounds"),
        (lambda x: scatterx.gather(x, 1, torch.tensor([[0, 3]])), IndexError, "out of bounds"),
        # flags of another type: a TypeError, as torch's (not silently taken as true)
        (
            lambda x: scatterx.scatter_reduce(
                x, 0, torch.zeros(1, 1, dtype=torch.long), torch.ones(1, 1), "sum", include_self="no"
            ),
            TypeError,
            "include_self must be a bool",
        ),
        (
            lambda x: scatterx.gather(x, 1, torch.tensor([[0]]), sparse_grad="no"),
            TypeError,
            "sparse_grad must be a bool",
        ),
    ],
)
def test_bad_input_raises_and_writes_nothing(call, error, match):
    x = torch.arange(6.0).view(2, 3)
    before = x.clone()
    with pytest.raises(error, match=match):
        call(x)
    assert torch.equal(x, before)


def test_int32_index_with_large_flat_offsets_does_not_overflow():
    # an element plan whose flat offsets exceed int32 only after multiplying by the row stride
    index = torch.tensor([[3, 1]], dtype=torch.int32)
    m = planner.XMap((1, 2), (4, 2**30), index, (0, 1), (0,), ((1, 1),))
    assert planner.plan(m).kind == "element"
    rows = planner.element_rows(m)  # the kernels compute the same offsets in int64 from the int32 index
    assert rows.dtype == torch.int64 and rows.tolist() == [3 * 2**30, 2**30 + 1]


def test_a_1d_scatter_rejects_a_bad_index_before_writing():
    # a slice plan of one-element rows: the core op's pass over the index finds it, and the message is gather's
    # and torch's (the position in the caller's index, the dimension and its size; not the op's ``dim_size``)
    x = torch.arange(4.0)
    with pytest.raises(IndexError, match=r"^index\[1\] = 4 is out of bounds for dimension 0 with size 4$"):
        scatterx.scatter_reduce(x, 0, torch.tensor([1, 4]), torch.ones(2), "sum")
    with pytest.raises(IndexError, match=r"^index\[0\] = -1 is out of bounds for dimension 0 with size 4$"):
        scatterx.scatter(x, 0, torch.tensor([-1]), torch.ones(1))
    with pytest.raises(IndexError, match=r"^index\[0, 0\] = 5 is out of bounds for dimension 1 with size 3$"):
        scatterx.scatter(torch.ones(2, 3), 1, torch.tensor([[5]]), 2.0)
    assert torch.equal(x, torch.arange(4.0))


def test_an_input_with_no_element_still_checks_every_index_entry():
    """An index with entries into an ``input`` with no element raises, as torch does; an index with no entry
    (here a view expanded from a bad value) reads nothing and is accepted, as torch accepts it. (torch's ``src``
    covers the index, so a ``src`` with no element comes with an index with none.)"""
    x = torch.zeros(0, 3)
    index = torch.tensor([[5, 0, 1]])
    for call in (
        lambda: scatterx.scatter_reduce(x, 0, index, torch.ones(1, 3), "sum"),
        lambda: scatterx.scatter(x, 0, index, torch.ones(1, 3)),
        lambda: scatterx.scatter(x, 0, index, 2.0, reduce="add"),
        lambda: scatterx.gather(x, 0, index),
    ):
        with pytest.raises(IndexError, match=r"index\[0, 0\] = 5 is out of bounds for dimension 0 with size 0"):
            call()
    nothing = torch.tensor([[5]]).expand(1, 0)
    want = torch.zeros(3, 0).scatter_reduce(0, nothing, torch.ones(1, 0), "sum")
    assert torch.equal(scatterx.scatter_reduce(torch.zeros(3, 0), 0, nothing, torch.ones(1, 0), "sum"), want)


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.bool, torch.complex64], ids=str)
def test_dtypes_the_kernels_do_not_take_give_torch_s_results(dtype):
    index = torch.tensor([[0, 1], [0, 1], [2, 2]])
    inp = torch.tensor([[1, 0], [0, 1], [1, 1]]).to(dtype)
    src = torch.tensor([[100, 1], [100, 0], [1, 1]]).to(dtype)
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        try:
            want = torch.scatter_reduce(inp, 0, index, src, reduce)
        except RuntimeError:  # torch has no such kernel (e.g. amax of complex): neither has the frontend
            with pytest.raises(RuntimeError):
                scatterx.scatter_reduce(inp, 0, index, src, reduce)
            continue
        assert torch.equal(scatterx.scatter_reduce(inp, 0, index, src, reduce), want), reduce
    assert torch.equal(
        scatterx.scatter(inp, 0, index, src, reduce="add"), torch.scatter(inp, 0, index, src, reduce="add")
    )
    unique = torch.tensor([[0, 1], [1, 0], [2, 2]])  # assign: no duplicate targets, so torch's result is defined
    assert torch.equal(scatterx.scatter(inp, 0, unique, src), torch.scatter(inp, 0, unique, src))
    assert torch.equal(scatterx.gather(inp, 0, index), torch.gather(inp, 0, index))


# ---------------------------------------------------------------------------------------------------------- out=
@pytest.mark.filterwarnings("ignore:An output with one or more elements was resized")
@given(p=problems(), reduce=st.sampled_from(REDUCES), fresh=st.booleans())
def test_out_receives_what_torch_writes_there(p, reduce, fresh):
    """``out=`` of the three functions: torch's result in ``out`` (given at the right shape, or empty and
    resized), ``out`` returned; ``out`` may be the input itself."""
    inp, dim, index, src, _dtype = p
    calls = [
        (
            lambda out: scatterx.scatter_reduce(inp, dim, index, src, reduce, out=out),
            torch.scatter_reduce(inp, dim, index, src, reduce),
            reduce,
        ),
        (lambda out: scatterx.gather(inp, dim, index, out=out), torch.gather(inp, dim, index), None),
    ]
    for call, want, tolerance in calls:
        out = torch.empty(0, dtype=want.dtype) if fresh else torch.full_like(want, 7)
        assert call(out) is out
        if tolerance:
            assert_matches(out, want, tolerance)
        else:
            assert torch.equal(out, want)
    into_input = inp.clone()
    got = scatterx.scatter(into_input, dim, index, src, reduce="add", out=into_input)
    assert got is into_input
    assert_matches(into_input, torch.scatter(inp, dim, index, src, reduce="add"), "sum")


@pytest.mark.parametrize("index_kind", ["general", "expanded"])
def test_a_failed_call_leaves_out_untouched(index_kind):
    x = torch.arange(12.0).view(4, 3)
    index = torch.tensor([[0, 1, 2], [3, 4, 0]]) if index_kind == "general" else torch.tensor([[0], [4]]).expand(2, 3)
    for call, shape in (
        (lambda out: scatterx.gather(x, 0, index, out=out), (2, 3)),
        (lambda out: scatterx.scatter_reduce(x, 0, index, torch.ones(2, 3), "sum", out=out), (4, 3)),
        (lambda out: scatterx.scatter(x, 0, index, 1.0, out=out), (4, 3)),
    ):
        out = torch.full(shape, -1.0)
        with pytest.raises(IndexError):
            call(out)
        assert bool((out == -1).all())


def test_out_of_the_wrong_kind_raises_before_anything():
    x, index = torch.randn(3, 2), torch.tensor([[0, 1]])
    with pytest.raises(TypeError, match="dtype"):
        scatterx.gather(x, 0, index, out=torch.empty(1, 2, dtype=torch.float64))
    with pytest.raises(TypeError, match=r"out must be a torch\.Tensor"):
        scatterx.gather(x, 0, index, out=[0.0, 0.0])
    with pytest.raises(ValueError, match="automatic differentiation"):
        scatterx.scatter_reduce(x.requires_grad_(), 0, index, torch.ones(1, 2), "sum", out=torch.empty(3, 2))


@pytest.mark.parametrize("index_kind", ["general", "expanded"])
def test_out_traces_with_fullgraph_and_a_failed_compiled_call_leaves_it_untouched(index_kind):
    """``out=`` of the three functions under ``torch.compile(fullgraph=True)`` (aot_eager): eager's result in
    ``out``; a bad index raises (the scatters their eager IndexError, gather torch's error: the module docstring)
    and ``out`` keeps its values."""
    x = torch.arange(12.0).view(4, 3)
    good = torch.tensor([[0, 1, 2], [3, 2, 0]]) if index_kind == "general" else torch.tensor([[0], [3]]).expand(2, 3)
    calls = {
        "gather": (lambda i, out: scatterx.gather(x, 0, i, out=out), (2, 3), (IndexError, RuntimeError)),
        "scatter_reduce": (
            lambda i, out: scatterx.scatter_reduce(x, 0, i, torch.ones(2, 3), "amax", out=out),
            (4, 3),
            IndexError,
        ),
        "scatter": (lambda i, out: scatterx.scatter(x, 0, i, -2.0, reduce="add", out=out), (4, 3), IndexError),
    }
    for name, (call, shape, error) in calls.items():
        torch._dynamo.reset()
        compiled = torch.compile(call, fullgraph=True, backend="aot_eager")
        want, got = call(good, torch.empty(shape)), torch.full(shape, -1.0)
        assert compiled(good, got) is got
        assert torch.equal(got, want), name
        out = torch.full(shape, -1.0)
        with pytest.raises(error):
            compiled(good + 2, out)
        assert bool((out == -1).all()), name
    torch._dynamo.reset()
