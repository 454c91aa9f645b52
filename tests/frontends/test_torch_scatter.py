"""``scatterx.torch_scatter``'s scatter family against the plain reference of torch_scatter's semantics
(``scatterx.reference.ts_scatter``), on both backends, and torch_scatter's conventions by hand."""

import math

import numpy as np
import pytest
import torch
from conftest import TOLERANCES
from hypothesis import given, settings
from hypothesis import strategies as st

import scatterx.torch_scatter as ts
from scatterx import reference

REDUCES = ["sum", "add", "mul", "mean", "min", "max"]
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int16]


def values(shape, dtype, g, reduce, special):
    """Small integers (ties) or uniform values, with NaN and infinities planted when ``special``."""
    if dtype.is_floating_point:
        x = torch.randint(-3, 4, shape, generator=g).to(torch.float64)
        if reduce != "mul" and torch.rand((), generator=g) < 0.5:
            x = torch.rand(shape, generator=g, dtype=torch.float64) * 8 - 4
        if special and x.numel():
            pick = torch.rand(shape, generator=g)
            x[pick < 0.1] = math.nan
            x[(pick >= 0.1) & (pick < 0.2)] = -math.inf
            x[(pick >= 0.2) & (pick < 0.25)] = math.inf
        x = x.to(dtype)
    else:
        x = torch.randint(-5 if reduce == "mul" else -50, 6 if reduce == "mul" else 51, shape, generator=g).to(dtype)
    if special and x.numel() and reduce in ("min", "max"):  # the dtype's extremes: torch_scatter's start values
        info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
        pick = torch.rand(shape, generator=g)
        x[pick > 0.9] = info.min
        x[pick > 0.95] = info.max
    return x


@st.composite
def problems(draw, reduce=None):
    """A torch_scatter scatter call: src, an index of one of torch_scatter's broadcast forms, dim, out/dim_size."""
    reduce = draw(st.sampled_from(REDUCES)) if reduce is None else reduce
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    d = dim % ndim
    shape[d] = draw(st.integers(0, 9))
    size = draw(st.integers(1, 6))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    form = draw(st.sampled_from(["1d", "full", "lead"]))
    if form == "1d":
        index = torch.randint(0, size, (shape[d],), generator=g)
        if draw(st.booleans()):
            index = index.sort().values
    elif form == "full":  # a different index per position: element by element
        index = torch.randint(0, size, shape, generator=g)
    else:  # leading dims only (trailing ones broadcast): slices of the trailing dims
        index = torch.randint(0, size, shape[: d + 1], generator=g)
    src = values(shape, dtype, g, reduce, draw(st.booleans()) and reduce not in ("sum", "add", "mul", "mean"))
    mode = draw(st.sampled_from(["none", "dim_size", "out"]))
    out_shape = list(shape)
    out_shape[d] = size
    out = values(out_shape, dtype, g, reduce, False) if mode == "out" else None
    dim_size = size if mode == "dim_size" else None
    return dict(src=src, index=index, dim=dim, out=out, dim_size=dim_size, reduce=reduce)


def check(actual, expected, dtype, reduce):
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    if reduce in ("min", "max") or not dtype.is_floating_point:
        torch.testing.assert_close(actual, expected, atol=0, rtol=0, equal_nan=True)
    else:
        atol, rtol = TOLERANCES.get(dtype, (1e-4, 1e-5))
        torch.testing.assert_close(actual, expected, atol=atol * 10, rtol=rtol * 10, equal_nan=True)


def test_scatter_matches_reference(backend):
    @settings(max_examples=backend.examples(150))
    @given(p=problems())
    def examples(p):
        """Every reduction x dtype x index form x sorted/unsorted x out/dim_size, against the reference; ``out`` is
        written in place and returned, argindex as torch_scatter's."""
        expected = reference.ts_scatter(p["src"], p["index"], p["dim"], p["out"], p["dim_size"], p["reduce"])
        q = backend.put(p)
        out = q["out"].clone() if q["out"] is not None else None
        with backend:
            fn = getattr(ts, f"scatter_{p['reduce']}")
            result = fn(q["src"], q["index"], q["dim"], out, q["dim_size"])
        if p["reduce"] in ("min", "max"):
            (values_, arg), (expected, expected_arg) = result, expected
            torch.testing.assert_close(arg.cpu(), expected_arg, atol=0, rtol=0)
            result = values_
        check(result.cpu(), expected, p["src"].dtype, p["reduce"])
        if out is not None:
            assert result is out
        plain = (
            ts.scatter(
                q["src"],
                q["index"],
                q["dim"],
                None,
                q["dim_size"] or (q["out"].size(q["dim"]) if q["out"] is not None else None),
                p["reduce"],
            )
            if backend.name == "cpu"
            else None
        )
        if plain is not None:
            if p["reduce"] in ("min", "max"):
                want = reference.ts_scatter(p["src"], p["index"], p["dim"], None, plain.size(p["dim"]), p["reduce"])[0]
            else:
                want = reference.ts_scatter(p["src"], p["index"], p["dim"], None, plain.size(p["dim"]), p["reduce"])
            check(plain, want, p["src"].dtype, p["reduce"])

    examples()


# ---------------------------------------------------------------------------------------------------- by hand
def test_torch_scatter_conventions_where_scatterx_core_differs():
    """The held-out list of the issue, each as torch_scatter has it."""
    idx = torch.tensor([0, 0, 2])
    # mul of an empty row is 1 (scatterx.index_scatter_reduce: 0)
    assert ts.scatter_mul(torch.tensor([2.0, 3.0, 4.0]), idx).tolist() == [6.0, 1.0, 4.0]
    # mean with out= divides (out + sum) by the members only (the core's include_self counts out)
    out = torch.tensor([10.0, 5.0, 1.0])
    assert ts.scatter_mean(torch.tensor([2.0, 3.0, 4.0]), idx, out=out).tolist() == [7.5, 5.0, 5.0]
    # integer mean rounds down in scatter_mean (-3 / 2 -> -2), and toward zero in the segment means (-1)
    assert ts.scatter_mean(torch.tensor([-3, 0]), torch.tensor([0, 0])).tolist() == [-2]
    assert ts.segment_mean_csr(torch.tensor([-3, 0]), torch.tensor([0, 2])).tolist() == [-1]
    assert ts.segment_mean_coo(torch.tensor([-3, 0]), torch.tensor([0, 0])).tolist() == [-1]
    # max skips NaN (scatterx's amax propagates it); a row of only -inf is 0 with argindex src.size(dim)
    v, a = ts.scatter_max(torch.tensor([math.nan, 1.0, -math.inf, -math.inf]), torch.tensor([0, 0, 1, 1]))
    assert v.tolist() == [1.0, 0.0] and a.tolist() == [1, 4]
    # the first of tied members wins
    v, a = ts.scatter_min(torch.tensor([2.0, 1.0, 1.0, 1.0]), torch.tensor([0, 0, 0, 1]))
    assert v.tolist() == [1.0, 1.0] and a.tolist() == [1, 3]
    # segment_max_csr keeps the finite extreme in a non-empty segment where nothing was selected
    v, a = ts.segment_max_csr(torch.tensor([-math.inf, 2.0]), torch.tensor([0, 1, 1, 2]))
    assert v.tolist() == [torch.finfo(torch.float32).min, 0.0, 2.0] and a.tolist() == [2, 2, 1]


def test_scatter_max_with_out_compares_against_out():
    out = torch.tensor([5.0, -1.0])
    v, a = ts.scatter_max(torch.tensor([3.0, 4.0, 0.0]), torch.tensor([0, 0, 1]), out=out)
    assert v is out and out.tolist() == [5.0, 0.0] and a.tolist() == [3, 2]


def test_dim_size_from_index_and_empty_index():
    assert ts.scatter_sum(torch.ones(3), torch.tensor([0, 4, 4])).shape == (5,)
    assert ts.scatter_sum(torch.ones(0, 2), torch.tensor([], dtype=torch.long), 0).shape == (0, 2)
    assert (
        ts.scatter_max(torch.ones(0, 2), torch.tensor([], dtype=torch.long), 0, dim_size=3)[1].tolist() == [[0, 0]] * 3
    )


def test_output_size_and_1d_form_of_expanded_and_materialised_indices():
    """Without dim_size the size is the index's max + 1 wherever the max sits (an expanded index is read once per
    distinct value); an index that does not vary off ``dim`` is recognised as 1-D, stored expanded or not."""
    from scatterx.torch_scatter import _engine
    from scatterx.torch_scatter.utils import broadcast

    src = torch.randn(2, 5, 3)
    rows = torch.tensor([1, 0, 6, 2, 2])
    for index in (rows, rows.view(1, -1), rows.view(1, -1, 1).expand(2, 5, 3).contiguous()):
        full = broadcast(index, src, 1)
        assert _engine.size_from_index(full) == 7
        assert torch.equal(_engine.vector_along(full, src, 1), rows)
        got = ts.scatter_sum(src, index, 1)
        assert got.shape == (2, 7, 3)
        torch.testing.assert_close(got, torch.zeros(2, 7, 3).index_add_(1, rows, src))
    general = torch.tensor([[0, 3, 1, 1, 2], [4, 0, 0, 1, 2]])  # varies along dim 0 too: no 1-D form
    full = broadcast(general, src, 1)
    assert _engine.size_from_index(full) == 5 and _engine.vector_along(full, src, 1) is None
    assert torch.equal(ts.scatter_max(src, general, 1)[0], reference.ts_scatter(src, general, 1, None, None, "max")[0])


def test_broadcast_forms():
    """torch_scatter's README example and its broadcasting test's forms."""
    src = torch.randn(10, 6, 64)
    index = torch.tensor([0, 1, 0, 1, 2, 1])
    out = ts.scatter(src, index, dim=1, reduce="sum")
    assert out.shape == (10, 3, 64)
    torch.testing.assert_close(out, torch.zeros(10, 3, 64).index_add_(1, index, src))
    index = torch.randint(0, 6, (10, 6))  # leading dims given, trailing broadcast
    want = reference.ts_scatter(src, index, 1, None, 6, "max")
    got = ts.scatter_max(src, index, 1, dim_size=6)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


@pytest.mark.parametrize("reduce", REDUCES)
def test_gradcheck(reduce):
    """Gradients in float64 for every reduction, with a general (element) index and with a 1-D one; for min/max
    the gradient goes to the selected member (values kept distinct, so that finite differences agree)."""
    g = torch.Generator().manual_seed(0)
    src = (torch.randperm(24, generator=g).to(torch.float64) / 7 + 0.5).view(4, 6).requires_grad_()
    for index, dim in [
        (torch.tensor([0, 2, 0, 1, 2, 2]), 1),
        (torch.randint(0, 3, (4, 6), generator=g), 1),
        (torch.tensor([1, 0, 1, 1]), 0),
    ]:
        assert torch.autograd.gradcheck(
            lambda x, index=index, dim=dim: ts.scatter(x, index, dim, None, None, reduce), (src,)
        )


def test_mul_gradient_is_exact_with_zeros():
    """torch_scatter divides by ``src`` (a zero member gets 0 or NaN); the drop-in's product rule is exact."""
    src = torch.tensor([0.0, 3.0, 2.0, 0.0, 0.0], dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 0, 1, 1])
    ts.scatter_mul(src, index).sum().backward()
    assert src.grad.tolist() == [6.0, 0.0, 0.0, 0.0, 0.0]
    assert torch.autograd.gradcheck(lambda x: ts.scatter_mul(x, index), (src.detach().requires_grad_(),))


def test_max_gradient_goes_to_the_first_tied_member():
    src = torch.tensor([1.0, 3.0, 3.0, 2.0], requires_grad=True)
    ts.scatter_max(src, torch.tensor([0, 0, 0, 1]))[0].sum().backward()
    assert src.grad.tolist() == [0.0, 1.0, 0.0, 1.0]


# ------------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("fn", [ts.scatter_sum, ts.scatter_mean, ts.scatter_mul, ts.scatter_max, ts.scatter_min])
def test_bad_index_raises_before_out_is_written(fn):
    src = torch.ones(4, 3)
    out = torch.full((3, 3), 7.0)
    for index, error in [
        (torch.tensor([0, 1, 3, 0]), IndexError),
        (torch.tensor([0, -1, 2, 0]), IndexError),
        (torch.tensor([0.0, 1, 2, 0]), TypeError),
        (torch.tensor([0, 1, 2]), ValueError),
    ]:
        with pytest.raises(error):
            fn(src, index, 0, out)
        assert torch.equal(out, torch.full((3, 3), 7.0))
    with pytest.raises(TypeError):
        fn(src, torch.tensor([0, 1, 2, 0]), 0, out.double())
    with pytest.raises(ValueError):
        fn(src, torch.tensor([0, 1, 2, 0]), 0, torch.zeros(3, 2))
    with pytest.raises(IndexError):
        fn(src, torch.tensor([0, 1, 2, 0]), 2)
    with pytest.raises(ValueError):
        ts.scatter(src, torch.tensor([0, 1, 2, 0]), 0, reduce="median")


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16])
@pytest.mark.parametrize("reduce", ["min", "max"])
def test_small_integers_start_from_their_own_extreme(dtype, reduce):
    """int8/uint8/int16 run widened to int64, but torch_scatter compares from the small dtype's extreme: a row of
    only that extreme selects nothing (0, argindex src.size(dim))."""
    info = torch.iinfo(dtype)
    extreme = info.min if reduce == "max" else info.max
    src = torch.tensor([extreme, extreme, 3, extreme], dtype=dtype)
    index = torch.tensor([0, 0, 1, 1])
    values_, arg = getattr(ts, f"scatter_{reduce}")(src, index)
    expected, expected_arg = reference.ts_scatter(src, index, reduce=reduce)
    assert values_.tolist() == expected.tolist() == [0, 3]
    assert arg.tolist() == expected_arg.tolist() == [4, 2]


@pytest.mark.parametrize(
    "fn", [ts.scatter_sum, ts.scatter_mul, ts.scatter_mean, lambda *a, **k: ts.scatter_max(*a, **k)[0], ts.scatter_std]
)
def test_out_with_src_requiring_grad(fn):
    """``out`` is overwritten after the reduction; the backward must not see the overwritten values."""
    src = torch.rand(6, 3, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 1, 1, 2, 2])
    start = torch.rand(3, 3, dtype=torch.float64)
    result = fn(src, index, 0, out=start.clone())
    result.sum().backward()
    expected = torch.autograd.grad(fn(src, index, 0, out=start.clone()).sum(), src)[0]
    torch.testing.assert_close(src.grad, expected)
    assert torch.autograd.gradcheck(lambda s: fn(s, index, 0, out=start.clone()), (src,))


def test_std_of_integers_is_floating():
    """torch_scatter's std of an integer src divides by the counts: a float result."""
    src = torch.tensor([1, 2, 3, 10])
    index = torch.tensor([0, 0, 1, 1])
    result = ts.scatter_std(src, index)
    expected = reference.ts_softmax_family(src.double(), index, kind="std")
    assert result.is_floating_point()
    torch.testing.assert_close(result.double(), expected.double(), atol=1e-6, rtol=1e-6)


# the whole family, called on a good src with each function's own index form (src is the first argument of all)
_INDEX = torch.tensor([0, 0, 1, 1])
_FAMILY = {
    **{
        name: (lambda f: lambda src, **k: f(src, _INDEX, **k))(getattr(ts, name))
        for name in [
            "scatter",
            "scatter_sum",
            "scatter_add",
            "scatter_mul",
            "scatter_mean",
            "scatter_min",
            "scatter_max",
            "scatter_std",
            "scatter_logsumexp",
            "scatter_softmax",
            "scatter_log_softmax",
            "segment_coo",
            "segment_sum_coo",
            "segment_add_coo",
            "segment_mean_coo",
            "segment_min_coo",
            "segment_max_coo",
        ]
    },
    **{
        name: (lambda f: lambda src, **k: f(src, torch.tensor([0, 2, 4]), **k))(getattr(ts, name))
        for name in [
            "segment_csr",
            "segment_sum_csr",
            "segment_add_csr",
            "segment_mean_csr",
            "segment_min_csr",
            "segment_max_csr",
        ]
    },
    "gather_csr": lambda src, **k: ts.gather_csr(src, torch.tensor([0, 1, 2, 3, 4]), **k),
    "gather_coo": lambda src, **k: ts.gather_coo(src, _INDEX, **k),
}


@pytest.mark.parametrize("name", sorted(_FAMILY))
def test_src_that_is_not_a_tensor_raises_type_error(name):
    """A list (or a number) as ``src`` is a TypeError, as a NumPy array is, in every function (the scatter and
    segment reductions used to read ``src.dtype`` first: AttributeError)."""
    fn = _FAMILY[name]
    fn(torch.tensor([1.0, 2.0, 3.0, 4.0]))  # the call is good with a tensor
    for bad in ([1.0, 2.0, 3.0, 4.0], 1.0):
        with pytest.raises(TypeError, match=r"src must be a torch\.Tensor"):
            fn(bad)


def test_list_src_raises_the_same_type_error_as_a_numpy_array():
    index = torch.tensor([0, 0])
    for fn in (ts.segment_coo, ts.scatter, ts.segment_max_coo):
        with pytest.raises(TypeError, match=r"src must be a torch\.Tensor, got ndarray"):
            fn(np.array([1.0, 2.0]), index)
        with pytest.raises(TypeError, match=r"src must be a torch\.Tensor, got list"):
            fn([1.0, 2.0], index)
    with pytest.raises(TypeError, match=r"src must be a torch\.Tensor, got list"):
        ts.segment_csr([1.0, 2.0], torch.tensor([0, 2]))


@pytest.mark.parametrize(
    "name",
    ["scatter_sum", "scatter_max", "scatter_std", "scatter_logsumexp", "segment_coo", "segment_max_csr", "gather_csr"],
)
def test_out_that_is_not_a_tensor_raises_type_error(name):
    fn = _FAMILY[name]
    src = torch.tensor([1.0, 2.0, 3.0, 4.0])
    for bad in ([0.0, 0.0, 0.0, 0.0], np.zeros(4, dtype=np.float32)):
        with pytest.raises(TypeError, match=r"out must be a torch\.Tensor"):
            fn(src, out=bad)


@pytest.mark.parametrize(
    "name",
    [
        "scatter",
        "scatter_sum",
        "scatter_mul",
        "scatter_mean",
        "scatter_min",
        "scatter_max",
        "scatter_std",
        "scatter_logsumexp",
        "scatter_softmax",
        "scatter_log_softmax",
    ],
)
@pytest.mark.parametrize("with_out", [False, True])
def test_out_of_range_dim_raises_index_error_naming_it(name, with_out):
    """A dim out of range is an IndexError that names the caller's dim, with or without ``out`` (scatter_std
    took ``dim=-2`` of a 1-D src as ``-1``, and named ``-2`` for ``-3``)."""
    fn = getattr(ts, name)
    if with_out and name in ("scatter_softmax", "scatter_log_softmax"):
        pytest.skip("no out= argument")
    index = torch.tensor([0, 1, 1, 2, 2, 2])
    for src, dims in [(torch.randn(6), [-2, -3, 1, 2]), (torch.randn(6, 2), [-3, 2])]:
        for dim in dims:
            kwargs = {"out": torch.zeros(3, *src.shape[1:])} if with_out else {}
            with pytest.raises(IndexError, match=rf"dim {dim} is out of range"):
                fn(src, index, dim=dim, **kwargs)


@pytest.mark.parametrize(
    "name",
    [
        "scatter",
        "scatter_sum",
        "scatter_add",
        "scatter_mul",
        "scatter_mean",
        "scatter_min",
        "scatter_max",
        "scatter_std",
        "scatter_logsumexp",
        "segment_csr",
        "segment_sum_csr",
        "segment_mean_csr",
        "segment_min_csr",
        "segment_max_csr",
        "segment_coo",
        "segment_mean_coo",
        "segment_max_coo",
        "gather_csr",
        "gather_coo",
    ],
)
def test_empty_src_with_out_stays_on_the_graph(name):
    """An empty ``src`` that requires grad, with ``out=``: the result is attached to ``src``'s graph (as with
    ``dim_size=``, and as torch_scatter's in-place ops on ``out`` attach it), out's values unchanged, and a
    backward gives ``src`` a zero gradient."""
    src = torch.zeros(0, 2, dtype=torch.float64, requires_grad=True)
    start = torch.tensor([[-0.0, 1.0], [math.nan, -2.0], [3.0, 4.0]], dtype=torch.float64)
    out = start.clone()
    fn = getattr(ts, name)
    if name.startswith("segment") and name.endswith("csr"):
        result = fn(src, torch.zeros(4, dtype=torch.long), out=out)
    elif name == "gather_csr":
        result = fn(src, torch.zeros(1, dtype=torch.long), out=out)
    elif name == "gather_coo":
        src = torch.ones(2, 2, dtype=torch.float64, requires_grad=True)
        out = torch.zeros(0, 2, dtype=torch.float64)
        start = out.clone()
        result = fn(src, torch.zeros(0, dtype=torch.long), out=out)
    elif name.startswith("segment"):
        result = fn(src, torch.zeros(0, dtype=torch.long), out=out)
    else:
        result = fn(src, torch.zeros(0, dtype=torch.long), 0, out=out)
    result = result[0] if isinstance(result, tuple) else result
    assert result.requires_grad
    if name != "scatter_std":  # scatter_std returns a new tensor (out holds the sum of squares), as torch_scatter's
        assert result is out
        assert torch.equal(torch.signbit(out), torch.signbit(start))
        torch.testing.assert_close(out, start, equal_nan=True)
    result.sum().backward()
    assert src.grad is not None and torch.equal(src.grad, torch.zeros_like(src))


# ------------------------------------------------------------------------------------ negative index entries
#: 1-D indices of 7 entries over 3 rows, each with a negative entry: at the end of an otherwise sorted index (the
#: entry the inferred size was read from), in the middle, in an unsorted index, at the start of a sorted one,
#: everywhere (no row at all without dim_size)
NEGATIVE = {
    "end": torch.tensor([0, 1, 2, 2, 2, 2, -1]),
    "middle": torch.tensor([0, 1, -1, 2, 2, 2, 2]),
    "unsorted": torch.tensor([2, 0, 1, -3, 2, 0, 1]),
    "start": torch.tensor([-2, -1, 0, 0, 1, 2, 2]),
    "everywhere": torch.full((7,), -1),
}

SCATTERS = ["scatter", "scatter_sum", "scatter_add", "scatter_mul", "scatter_mean", "scatter_min", "scatter_max"]


def names_entry(index: torch.Tensor, name: str = "index") -> str:
    """The pattern of a message that names the first negative entry of ``index``: its position and value."""
    where = tuple(int(i) for i in torch.nonzero(index < 0)[0])
    return rf"{name}\[{', '.join(map(str, where))}\] ?= ?{int(index[where])}\b"


def general(index: torch.Tensor) -> torch.Tensor:
    """``index`` (7 entries) as the first column of a 7 x 2 index that varies along dim 1 (no 1-D form: the
    element-by-element path); the second column is in range."""
    return torch.stack([index, index.flip(0).clamp(min=0)], 1)


@pytest.mark.parametrize("name", SCATTERS)
@pytest.mark.parametrize("size", ["inferred", "dim_size", "out"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_negative_index_entry_raises_index_error_naming_it(name, size, dtype):
    """A negative entry anywhere, sorted or not, is an IndexError that names it (position and value), with or
    without dim_size, before anything is written. Without dim_size it used to vanish: the size was inferred as
    ``index.max() + 1``, 0 when every entry is negative, and nothing was reduced (torch_scatter raises)."""
    fn = getattr(ts, name)
    src = torch.arange(14.0).view(7, 2)
    for case, index in NEGATIVE.items():
        for form in (index.to(dtype), general(index).to(dtype)):
            out = torch.full((3, 2), 7.0) if size == "out" else None
            with pytest.raises(IndexError, match=names_entry(form)):
                fn(src, form, 0, out=out, dim_size=3 if size == "dim_size" else None)
            if out is not None:
                assert torch.equal(out, torch.full((3, 2), 7.0)), case


@pytest.mark.parametrize("name", ["scatter", "scatter_mean", "scatter_max"])
def test_negative_index_entry_raises_on_every_backend(backend, name):
    """Without dim_size the entry is found while the size is read, before any kernel: the same IndexError on
    every backend."""
    fn = getattr(ts, name)
    with backend:
        for index in (NEGATIVE["end"], NEGATIVE["everywhere"]):
            with pytest.raises(IndexError, match=names_entry(index)):
                fn(backend.put(torch.ones(7, 2)), backend.put(index), 0)


def test_negative_index_entry_message():
    """The message a user gets: the core ops' own, naming the entry."""
    with pytest.raises(IndexError, match=r"^index\[0\]=-1 is negative"):
        ts.scatter(torch.ones(1), torch.tensor([-1]), dim=0)
    with pytest.raises(IndexError, match=r"^index\[2\]=-1 is negative; indices must be in \[0, 3\)$"):
        ts.scatter(torch.ones(4), torch.tensor([0, 2, -1, 1]), dim=0)


def test_negative_index_entry_raises_in_a_scripted_function():
    scripted = torch.jit.script(ts.scatter)
    with pytest.raises(Exception, match=names_entry(NEGATIVE["everywhere"])):
        scripted(torch.ones(7), NEGATIVE["everywhere"], 0)


# ---------------------------------------------------------------------------------------- src with no element
COMPOSITES = ["scatter_std", "scatter_logsumexp", "scatter_softmax", "scatter_log_softmax"]

#: (src shape, dim, index, messages): a src with no element, so that nothing is reduced, but the caller's index has
#: entries -- 1-D, of src's rank varying along dim only, varying along another dim, and of one entry along an
#: empty dim (torch_scatter broadcasts it to none). The index's bad entry is 5 (with a size of 3: ``dim_size`` or
#: ``out``), or -1 (inferred), with the message for each.
NO_ELEMENT = {
    "1d": ((3, 0), 0, [0, 1, "bad"], [r"^index\[2\]=5 is out of range for dim_size=3", r"^index\[2\]=-1 is negative"]),
    "column": (
        (3, 0),
        0,
        [[0], [1], ["bad"]],
        [r"^index\[2\]=5 is out of range for dim_size=3", r"^index\[2\]=-1 is negative"],
    ),
    "general": (
        (2, 3, 0),
        1,
        [[[0], [1], [2]], [[0], ["bad"], [1]]],
        [
            r"^index\[1, 1, 0\] = 5 is out of bounds for dimension 1 with size 3",
            r"^index\[1, 1, 0\] = -1 is out of bounds for dimension 1",
        ],
    ),
    "along_dim": ((0, 2), 0, ["bad"], [r"^index\[0\]=5 is out of range for dim_size=3", r"^index\[0\]=-1 is negative"]),
}


def _with(index, value: int) -> torch.Tensor:
    """``index`` (nested lists) with ``value`` for its "bad" entry."""

    def fill(x):
        return [fill(y) for y in x] if isinstance(x, list) else (value if x == "bad" else x)

    return torch.tensor(fill(index))


def _no_element_call(name, src, index, dim, size, out):
    fn = getattr(ts, name)
    if size == "out":
        return fn(src, index, dim, out=out)
    return fn(src, index, dim, dim_size=3 if size == "dim_size" else None)


@pytest.mark.parametrize("name", SCATTERS + COMPOSITES)
@pytest.mark.parametrize("size", ["inferred", "dim_size", "out"])
@pytest.mark.parametrize("case", list(NO_ELEMENT))
def test_src_with_no_element_still_checks_every_index_entry(name, size, case):
    """Nothing is reduced, yet each entry of the caller's index is checked against the output's size, before
    ``out`` is written or attached to a graph (it passed silently); without a size (torch_scatter's 0 rows here)
    a negative entry is the error. A good index still gives torch_scatter's result."""
    if size == "out" and name in ("scatter_softmax", "scatter_log_softmax"):
        pytest.skip("no out= argument")
    shape, dim, index, (sized, inferred) = NO_ELEMENT[case]
    out_shape = list(shape)
    out_shape[dim] = 3
    src = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    bad = _with(index, -1 if size == "inferred" else 5)
    for dtype in (torch.int64, torch.int32):
        out = torch.full(out_shape, 7.0, dtype=torch.float64)
        with pytest.raises(IndexError, match=inferred if size == "inferred" else sized):
            _no_element_call(name, src, bad.to(dtype), dim, size, out)
        assert torch.equal(out, torch.full(out_shape, 7.0, dtype=torch.float64)) and out.grad_fn is None
    result = _no_element_call(name, src, _with(index, 2), dim, size, torch.zeros(out_shape, dtype=torch.float64))
    result = result[0] if isinstance(result, tuple) else result
    if name in ("scatter_softmax", "scatter_log_softmax"):
        assert result.shape == shape
    else:
        assert result.shape[dim] == (0 if size == "inferred" else 3) and not result.any()


def test_src_with_no_element_names_the_entry():
    """The messages a user gets (the brief's case): as with elements to move."""
    with pytest.raises(IndexError, match=r"^index\[2\]=5 is out of range for dim_size=3 \(must be < 3\)$"):
        ts.scatter(torch.ones(3, 0), torch.tensor([0, 1, 5]), 0, dim_size=3)
    with pytest.raises(IndexError, match=r"^index\[1\]=-1 is negative; indices must be in \[0, 3\)$"):
        ts.scatter_max(torch.ones(3, 0), torch.tensor([0, -1, 2]), 0)


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_pyg_s_call_takes_the_core_op_without_the_general_checks(monkeypatch, reduce):
    """A 1-D index along ``dim`` into ``dim_size`` rows (PyG's call) skips the broadcasting and checks of the
    general path, ~12 us of a 2,000 x 16 call: its result is the general path's, bit for bit."""
    import importlib

    module = importlib.import_module("scatterx.torch_scatter.scatter")  # (the package's name is the function)
    g = torch.Generator().manual_seed(3)
    src, index = torch.randn(200, 16, generator=g), torch.randint(0, 20, (200,), generator=g)
    want = ts.scatter(src, index, 0, out=torch.zeros(25, 16), reduce=reduce)  # (out=: the general path)

    def general(*args):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(module, "_prepare", general)
    for dim in (0, -2):
        assert torch.equal(ts.scatter(src, index, dim, dim_size=25, reduce=reduce), want)
    with pytest.raises(AssertionError, match="general path"):  # (any other form still takes it)
        ts.scatter(src, index.view(-1, 1), 0, dim_size=25, reduce=reduce)
