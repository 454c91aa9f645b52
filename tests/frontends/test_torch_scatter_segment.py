"""``scatterx.torch_scatter``'s segment_csr / segment_coo / gather_csr / gather_coo families against the plain
reference of torch_scatter's semantics (``scatterx.reference.ts_*``), on both backends."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from test_torch_scatter import DTYPES, check, values

import scatterx.torch_scatter as ts
from scatterx import reference

REDUCES = ["sum", "add", "mean", "min", "max"]


@st.composite
def segment_problems(draw):
    """src with a batch of ``lead`` dims, a sorted index / CSR offsets per batch (the same for every batch, given
    once and broadcast, or varying), out or not."""
    reduce = draw(st.sampled_from(REDUCES))
    dtype = draw(st.sampled_from(DTYPES))
    lead = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))
    n = draw(st.integers(0, 8))
    rest = draw(st.lists(st.integers(1, 3), min_size=0, max_size=1))
    size = draw(st.integers(1, 5))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    varying = draw(st.booleans()) and lead
    batch = lead if varying else [1] * len(lead)
    index = torch.randint(0, size, batch + [n], generator=g).sort(-1).values
    counts = (
        torch.stack([torch.bincount(row, minlength=size) for row in index.reshape(-1, n)])
        if n
        else torch.zeros(max(1, torch.Size(batch).numel()), size, dtype=torch.long)
    )
    indptr = torch.cat([torch.zeros(counts.size(0), 1, dtype=torch.long), counts.cumsum(1)], 1).view(batch + [size + 1])
    if draw(st.booleans()) and not lead:  # offsets that do not start at 0 / end at n: positions in no segment
        lo = draw(st.integers(0, n))
        hi = draw(st.integers(lo, n))
        indptr = torch.cat(
            [torch.tensor([lo]), torch.randint(lo, hi + 1, (size - 1,), generator=g).sort().values, torch.tensor([hi])]
        )
    src = values(lead + [n] + rest, dtype, g, reduce, draw(st.booleans()) and reduce in ("min", "max"))
    out = values(lead + [size] + rest, dtype, g, reduce, False) if draw(st.booleans()) else None
    return dict(src=src, index=index, indptr=indptr, out=out, reduce=reduce)


def _run(fn, backend, *args):
    with backend:
        return fn(*backend.put(list(args)))


def _compare(result, expected, p, arg_too=True):
    if p["reduce"] in ("min", "max"):
        (result, arg), (expected, expected_arg) = result, expected
        if arg_too:
            torch.testing.assert_close(arg.cpu(), expected_arg, atol=0, rtol=0)
    check(result.cpu(), expected, p["src"].dtype, p["reduce"])


def test_segment_csr_matches_reference(backend):
    @settings(max_examples=backend.examples(120))
    @given(p=segment_problems())
    def examples(p):
        """``out`` is written (in place), never read (returned untouched for an empty ``src``); empty segments 0;
        argindex as the reference (src.size(dim) where nothing was selected)."""
        name = {"add": "sum"}.get(p["reduce"], p["reduce"])
        M = max(p["indptr"].size(-1) - 1, 0)
        out = None
        if p["out"] is not None and p["out"].size(p["indptr"].dim() - 1) == M:
            out = backend.put(p["out"].clone())
        expected = reference.ts_segment_csr(p["src"], p["indptr"], None if out is None else p["out"], p["reduce"])
        result = _run(lambda s, i: getattr(ts, f"segment_{name}_csr")(s, i, out), backend, p["src"], p["indptr"])
        _compare(result, expected, p)
        if out is not None:
            assert (result[0] if isinstance(result, tuple) else result) is out

    examples()


def test_segment_coo_matches_reference(backend):
    @settings(max_examples=backend.examples(120))
    @given(p=segment_problems())
    def examples(p):
        """``out``'s values take part; rows of nothing keep them (0 without out)."""
        name = {"add": "sum"}.get(p["reduce"], p["reduce"])
        out = backend.put(p["out"].clone()) if p["out"] is not None else None
        expected = reference.ts_segment_coo(p["src"], p["index"], p["out"], None, p["reduce"])
        result = _run(lambda s, i: getattr(ts, f"segment_{name}_coo")(s, i, out), backend, p["src"], p["index"])
        _compare(result, expected, p)

    examples()


def test_gathers_match_reference(backend):
    @settings(max_examples=backend.examples(60))
    @given(p=segment_problems())
    def examples(p):
        src = p["src"]
        dim = p["index"].dim() - 1
        M = max(p["indptr"].size(-1) - 1, 0)
        rows = src.narrow(dim, 0, min(M, src.size(dim)))
        if rows.size(dim) == M:
            expected = reference.ts_gather_csr(rows, p["indptr"])
            got = _run(ts.gather_csr, backend, rows, p["indptr"])
            torch.testing.assert_close(got.cpu(), expected, atol=0, rtol=0, equal_nan=True)
        index = p["index"].expand(list(src.shape[:dim]) + [p["index"].size(-1)])
        table = values(
            list(src.shape[:dim]) + [5] + list(src.shape[dim + 1 :]), src.dtype, torch.Generator(), "sum", True
        )
        got = _run(ts.gather_coo, backend, table, index)
        if index.numel():
            expected = torch.gather(
                table,
                dim,
                index.reshape(list(index.shape) + [1] * (table.dim() - dim - 1)).expand(
                    list(index.shape) + list(table.shape[dim + 1 :])
                ),
            )
            torch.testing.assert_close(got.cpu(), expected, atol=0, rtol=0, equal_nan=True)

    examples()


def test_torch_scatter_readme_example():
    src = torch.randn(10, 6, 64)
    indptr = torch.tensor([0, 2, 5, 6]).view(1, -1)
    out = ts.segment_csr(src, indptr, reduce="sum")
    assert out.shape == (10, 3, 64)
    torch.testing.assert_close(out[:, 1], src[:, 2:5].sum(1))


@pytest.mark.parametrize("reduce", REDUCES)
def test_unsorted_coo_index_raises_with_advice_this_family_can_follow(reduce):
    """The core op's advice (``sorted=False``, ``index_to_ptr``) names arguments torch_scatter's functions lack."""
    with pytest.raises(ValueError, match=r"index\[1\]=0 < index\[0\]=1; segment_coo takes a sorted index") as error:
        ts.segment_coo(torch.ones(3), torch.tensor([1, 0, 1]), reduce=reduce)
    assert "sorted=False" not in str(error.value) and "index_to_ptr" not in str(error.value)


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_bad_offsets_name_the_function_called(reduce):
    with pytest.raises(IndexError, match=f"^segment_{reduce}_csr: indptr"):
        getattr(ts, f"segment_{reduce}_csr")(torch.arange(3.0), torch.tensor([0, 5]))


@pytest.mark.parametrize("reduce", REDUCES)
def test_gradcheck(reduce):
    g = torch.Generator().manual_seed(1)
    src = (torch.randperm(30, generator=g).to(torch.float64) / 9 + 0.25).view(2, 5, 3).requires_grad_()
    indptr = torch.tensor([[0, 2, 2, 5], [0, 1, 4, 5]])
    index = torch.tensor([[0, 0, 2, 2, 2], [0, 1, 1, 1, 2]])
    assert torch.autograd.gradcheck(lambda x: ts.segment_csr(x, indptr, None, reduce), (src,))
    assert torch.autograd.gradcheck(lambda x: ts.segment_coo(x, index, None, None, reduce), (src,))
    assert torch.autograd.gradcheck(lambda x: ts.segment_csr(x[0], indptr[0], None, reduce), (src,))
    table = src[:, :3].detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(lambda x: ts.gather_csr(x, indptr), (table,))
    assert torch.autograd.gradcheck(lambda x: ts.gather_coo(x, index.clamp(max=2)), (table,))


def test_bad_offsets_raise_before_out_is_written():
    src = torch.ones(5, 2)
    out = torch.full((3, 2), 7.0)
    for indptr, error in [
        (torch.tensor([0, 2, 1, 5]), ValueError),
        (torch.tensor([0, 2, 3, 6]), IndexError),
        (torch.tensor([-1, 2, 3, 5]), IndexError),
    ]:
        with pytest.raises(error):
            ts.segment_csr(src, indptr, out, "max")
        assert torch.equal(out, torch.full((3, 2), 7.0))
    with pytest.raises(IndexError):
        ts.segment_coo(src, torch.tensor([0, 0, 1, 2, 3]), out)
    assert torch.equal(out, torch.full((3, 2), 7.0))
    with pytest.raises(ValueError):
        ts.gather_csr(torch.ones(2), torch.tensor([0, 2, 1]))
    with pytest.raises(IndexError):
        ts.gather_coo(torch.ones(2), torch.tensor([0, 2]))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_csr_half_types_compare_from_float32s_extreme(dtype):
    """torch_scatter's CSR kernel compares half types in float32: half's own extreme is selected, and a segment
    of only NaN writes float32's extreme rounded, an infinity."""
    low = torch.finfo(dtype).min
    src = torch.tensor([low, low, math.nan], dtype=dtype)
    values_, arg = ts.segment_max_csr(src, torch.tensor([0, 2, 3, 3]))
    expected, expected_arg = reference.ts_segment_csr(src, torch.tensor([0, 2, 3, 3]), reduce="max")
    assert values_.tolist() == expected.tolist() == [low, -math.inf, 0]
    assert arg.tolist() == expected_arg.tolist() == [0, 3, 3]


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16])
def test_coo_small_integers_start_from_their_own_extreme(dtype):
    low = torch.iinfo(dtype).min
    src = torch.tensor([low, low, 7], dtype=dtype)
    values_, arg = ts.segment_max_coo(src, torch.tensor([0, 0, 1]))
    assert values_.tolist() == [0, 7] and arg.tolist() == [3, 2]


@pytest.mark.parametrize(
    "fn", [ts.segment_sum_coo, ts.segment_mean_coo, lambda *a, **k: ts.segment_max_coo(*a, **k)[0]]
)
def test_coo_out_with_src_requiring_grad(fn):
    src = torch.rand(6, 3, dtype=torch.float64, requires_grad=True)
    index = torch.tensor([0, 0, 1, 1, 2, 2])
    start = torch.rand(3, 3, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda s: fn(s, index, out=start.clone()), (src,))


def test_empty_src_leaves_out_untouched():
    out = torch.full((2, 3), 7.0)
    assert ts.segment_csr(torch.zeros(0, 3), torch.tensor([0, 0, 0]), out=out) is out
    values_, arg = ts.segment_max_csr(torch.zeros(0, 3), torch.tensor([0, 0, 0]), out=out)
    assert values_ is out and (out == 7).all() and (arg == 0).all()


def test_batch_of_size_zero():
    assert ts.segment_sum_coo(torch.zeros(0, 4, 3), torch.zeros(0, 4, dtype=torch.long)).shape == (0, 0, 3)
    assert ts.segment_sum_csr(torch.zeros(0, 4, 3), torch.zeros(0, 3, dtype=torch.long)).shape == (0, 2, 3)
    # the index broadcast over the empty batch (one row for all of it), as torch_scatter allows
    assert ts.segment_csr(torch.zeros(0, 3), torch.tensor([[0, 1, 3]])).shape == (0, 2)
    assert [t.shape for t in ts.segment_max_csr(torch.zeros(0, 3), torch.tensor([[0, 1, 3]]))] == [(0, 2), (0, 2)]
    assert ts.segment_coo(torch.zeros(0, 3, 2), torch.tensor([[0, 1, 1]]), dim_size=2, reduce="mean").shape == (0, 2, 2)


def test_gathers_refuse_an_index_on_another_device_or_of_other_leading_sizes():
    """As every other function does: a ValueError, not a RuntimeError from deep inside (the meta device stands in
    for a GPU here)."""
    out = torch.full((2,), 7.0)
    with pytest.raises(ValueError, match="indptr is on meta"):
        ts.gather_csr(torch.ones(2), torch.tensor([0, 1, 2], device="meta"), out)
    with pytest.raises(ValueError, match="index is on meta"):
        ts.gather_coo(torch.ones(2), torch.tensor([0, 1], device="meta"), out)
    assert torch.equal(out, torch.full((2,), 7.0))
    with pytest.raises(ValueError, match="does not match src's leading sizes"):
        ts.gather_csr(torch.ones(2, 3), torch.zeros(3, 2, dtype=torch.long))


# ------------------------------------------------------------------------------------ negative index entries
SEGMENT_COO = [
    "segment_coo",
    "segment_sum_coo",
    "segment_add_coo",
    "segment_mean_coo",
    "segment_min_coo",
    "segment_max_coo",
]
SEGMENT_CSR = [
    "segment_csr",
    "segment_sum_csr",
    "segment_add_csr",
    "segment_mean_csr",
    "segment_min_csr",
    "segment_max_csr",
]


@pytest.mark.parametrize("name", SEGMENT_COO)
@pytest.mark.parametrize("size", ["inferred", "dim_size", "out"])
def test_coo_negative_index_entry_raises_index_error_naming_it(name, size):
    """A negative entry is an IndexError naming it, with or without dim_size, before ``out`` is written -- also
    where it makes the index unsorted (named first: it is wrong whatever the order). At the end of the index it
    used to vanish without dim_size: the size was read from that entry (0) and nothing was reduced."""
    from test_torch_scatter import NEGATIVE, names_entry

    fn = getattr(ts, name)
    good = torch.tensor([0, 0, 1, 1, 2, 2, 2])
    for case, index in NEGATIVE.items():
        for form, src, named in [
            (index, torch.arange(14.0).view(7, 2), index),  # 1-D
            (index.view(1, 7), torch.arange(28.0).view(2, 7, 2), index),  # a batch sharing one index
            (torch.stack([good, index]), torch.arange(28.0).view(2, 7, 2), torch.stack([good, index])),  # varying
        ]:
            out_shape = list(src.shape)
            out_shape[form.dim() - 1] = 3
            out = torch.full(out_shape, 7.0) if size == "out" else None
            with pytest.raises(IndexError, match=names_entry(named)):
                fn(src, form, out=out, dim_size=3 if size == "dim_size" else None)
            if out is not None:
                assert torch.equal(out, torch.full(out_shape, 7.0)), case


def test_defect_negative_entry_at_the_end_of_a_coo_index():
    x = torch.arange(7.0)
    with pytest.raises(IndexError, match=r"index\[6\]=-1 is negative"):
        ts.segment_coo(x, torch.tensor([0, 1, 2, 2, 2, 2, -1]), reduce="mean")


@pytest.mark.parametrize("with_out", [False, True])
def test_gather_coo_negative_index_entry_raises_index_error_naming_it(with_out):
    """Any order is allowed; the entry is named at its position in the caller's index (it was named in the
    index broadcast to ``src``'s shape, one position too many for a 1-D index)."""
    from test_torch_scatter import NEGATIVE, names_entry

    for case, index in NEGATIVE.items():
        for form, src in [
            (index, torch.arange(6.0).view(3, 2)),
            (torch.stack([index.clamp(min=0), index]), torch.arange(12.0).view(2, 3, 2)),
        ]:
            out = torch.full(list(src.shape[: form.dim() - 1]) + [7, 2], 7.0) if with_out else None
            with pytest.raises(IndexError, match=names_entry(form)):
                ts.gather_coo(src, form, out)
            if out is not None:
                assert (out == 7.0).all(), case


@pytest.mark.parametrize("name", SEGMENT_CSR)
def test_csr_negative_offset_raises_index_error_naming_it(name):
    """A negative offset is an IndexError naming it (position and value), before ``out`` is written, in the
    segment functions and in ``gather_csr`` (which raised ValueError)."""
    from test_torch_scatter import names_entry

    fn = getattr(ts, name)
    src = torch.arange(14.0).view(7, 2)
    for indptr in (torch.tensor([0, 2, 5, -1]), torch.tensor([0, -2, 5, 7]), torch.tensor([-1, 2, 5, 7])):
        batched = torch.stack([torch.tensor([0, 1, 2, 7]), indptr])
        for form, values_ in [(indptr, src), (batched, src.expand(2, 7, 2))]:
            out = torch.full(list(values_.shape[: form.dim() - 1]) + [3, 2], 7.0)
            with pytest.raises(IndexError, match=names_entry(form, "indptr")):
                fn(values_, form, out)
            assert (out == 7.0).all()
            with pytest.raises(IndexError, match=names_entry(form, "indptr")):
                fn(values_, form)
    for indptr in (torch.tensor([0, 2, -1]), torch.tensor([-1, 2, 7]), torch.tensor([0, -2, 5])):
        out = torch.full((7, 2), 7.0)
        with pytest.raises(IndexError, match=names_entry(indptr, "indptr")):
            ts.gather_csr(src[:2], indptr, out)
        assert (out == 7.0).all()
        with pytest.raises(IndexError, match=names_entry(indptr, "indptr")):
            ts.gather_csr(src[:2], indptr)


def test_gathers_from_src_with_no_element_still_check_the_index():
    """A src with no element (an empty trailing dim) gives nothing to read, yet gather_coo's entries must name its
    rows and gather_csr's offsets must be non-decreasing (and within out's size), as with elements: both passed
    silently. ``out`` is neither written nor attached to a graph; a good index still gives an empty result."""
    src = torch.zeros(3, 0, dtype=torch.float64, requires_grad=True)
    for index, message in [
        (torch.tensor([0, 5]), r"^index\[1\] = 5 is out of bounds for dimension 0 with size 3"),
        (torch.tensor([-1, 0]), r"^index\[0\] = -1 is out of bounds for dimension 0 with size 3"),
    ]:
        for with_out in (False, True):
            out = torch.zeros(2, 0, dtype=torch.float64) if with_out else None
            with pytest.raises(IndexError, match=message):
                ts.gather_coo(src, index, out)
            assert out is None or out.grad_fn is None
    batched = torch.zeros(2, 3, 0)
    with pytest.raises(IndexError, match=r"^index\[1, 0\] = 3 is out of bounds for dimension 1 with size 3"):
        ts.gather_coo(batched, torch.tensor([[0, 2], [3, 0]]))
    assert ts.gather_coo(src, torch.tensor([2, 0, 2])).shape == (3, 0)
    with pytest.raises(ValueError, match=r"^gather_csr: indptr must be non-decreasing$"):
        ts.gather_csr(src, torch.tensor([0, 2, 1, 3]))
    out = torch.zeros(3, 0, dtype=torch.float64)
    for indptr in (torch.tensor([0, 2, 1, 3]), torch.tensor([0, 1, 2, 9])):
        with pytest.raises(ValueError, match=r"non-decreasing within \[0, 3\] \(the output's size\)"):
            ts.gather_csr(src, indptr, out)
        assert out.grad_fn is None
    assert ts.gather_csr(src, torch.tensor([0, 1, 2, 9])).shape == (0, 0)  # torch_scatter's: no row without out
    assert ts.gather_csr(src, torch.tensor([0, 1, 1, 3]), out) is out


@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_pyg_s_segment_csr_takes_the_core_op_with_the_general_path_s_bits(monkeypatch, reduce):
    """Offsets over all of dim 0 (PyG's call, scatterx's own CSR form) go to the core op without the general path's
    batch broadcasting and spacer segments: the same bits; any other form, and a bad indptr, still take it."""
    import importlib

    module = importlib.import_module("scatterx.torch_scatter.segment_csr")
    g = torch.Generator().manual_seed(4)
    src = torch.randn(300, 8, generator=g)
    indptr = torch.tensor([0, 10, 10, 150, 299, 300])
    want = module._segment(src, indptr, torch.zeros(5, 8), reduce)  # (out=: the general path)

    def general(*args):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(module, "_structure", general)
    assert torch.equal(ts.segment_csr(src, indptr, reduce=reduce), want)
    for other in (torch.tensor([2, 10, 300]), torch.tensor([0, 10, 299])):  # not from 0 / not to the end
        with pytest.raises(AssertionError, match="general path"):
            ts.segment_csr(src, other, reduce=reduce)
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"indptr must be non-decreasing"):  # the drop-in's own message
        ts.segment_csr(src, torch.tensor([0, 20, 10, 300]), reduce=reduce)
