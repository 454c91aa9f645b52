"""index_scatter_reduce against the reference (random and hand-written cases) and against torch's own ops."""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import scatterx
import scatterx.ops.index_scatter as index_scatter_module
from scatterx import reference
from conftest import assert_matches
from strategies import ALIASES, OUT_MODES, REDUCES, random_values, scatter_problems


def run_both(p):
    """Run scatterx and the reference on problem ``p``; scatterx's ``out`` is a copy, so both see the same."""
    out = p["out"]
    kwargs = dict(dim_size=p["dim_size"], include_self=p["include_self"])
    got = scatterx.index_scatter_reduce(
        p["dim"], p["index"], p["src"], p["reduce"], p["sorted"], out=None if out is None else out.clone(), **kwargs
    )
    want = reference.index_scatter_reduce(p["dim"], p["index"], p["src"], p["reduce"], out=out, **kwargs)
    return got, want


# The three paths: sorted, and the two strategies of the unsorted path (forced; "auto" picks one per call).
PATHS = ["sorted", "unsorted-gather", "unsorted-slices"]


@pytest.fixture
def path(request, monkeypatch):
    name = request.param
    if name.startswith("unsorted-"):
        monkeypatch.setattr(index_scatter_module, "UNSORTED_STRATEGY", name.split("-")[1])
    return name


# --------------------------------------------------------------------------------------- random vs the reference
@pytest.mark.parametrize("out_mode", OUT_MODES)
@pytest.mark.parametrize("path", PATHS, indirect=True)
@pytest.mark.parametrize("dtype", scatterx.SUPPORTED_DTYPES, ids=str)
@pytest.mark.parametrize("reduce", REDUCES)
@settings(max_examples=10)
@given(data=st.data())
def test_matches_reference(reduce, dtype, path, out_mode, data):
    p = data.draw(scatter_problems(dtype=dtype, reduce=reduce, sorted=path == "sorted", out_mode=out_mode))
    got, want = run_both(p)
    assert_matches(got, want, reduce)


@pytest.mark.parametrize("path", PATHS, indirect=True)
@given(p=scatter_problems())
def test_matches_reference_any_combination(path, p):
    """Everything drawn at once, aliases included."""
    got, want = run_both(p)
    assert_matches(got, want, ALIASES.get(p["reduce"], p["reduce"]))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("reduce", REDUCES)
def test_every_dim_of_a_3d_tensor(dim, reduce):
    g = torch.Generator().manual_seed(dim + 10)
    src = random_values((5, 6, 7), torch.float64, g, reduce)
    n = src.size(dim)
    index = torch.randint(0, 4, (n - 1,), generator=g)  # shorter than src along dim, unsorted
    for is_sorted, idx in ((False, index), (True, index.sort().values)):
        got = scatterx.index_scatter_reduce(dim, idx, src, reduce, sorted=is_sorted, dim_size=5)
        assert_matches(got, reference.index_scatter_reduce(dim, idx, src, reduce, dim_size=5), reduce)


@pytest.mark.parametrize("path", PATHS, indirect=True)
def test_parallel_path_with_hub_segments_matches_reference(torch_threads, path):
    """Large enough to run on several chunks; a few huge segments (hubs) and many empty ones."""
    g = torch.Generator().manual_seed(0)
    num_nodes, num_edges = 3000, 60000
    hubs = torch.randint(0, num_nodes, (5,), generator=g)
    index = torch.cat([hubs.repeat_interleave(8000), torch.randint(0, num_nodes // 2, (num_edges - 40000,), generator=g)])
    index = index[torch.randperm(num_edges, generator=g)]
    src = torch.randn(num_edges, 3, dtype=torch.float64, generator=g)
    for reduce in REDUCES:
        want = reference.index_scatter_reduce(0, index, src, reduce, dim_size=num_nodes)
        is_sorted = path == "sorted"
        idx, s = _sorted_pair(index, src) if is_sorted else (index, src)
        got = scatterx.index_scatter_reduce(0, idx, s, reduce, sorted=is_sorted, dim_size=num_nodes)
        assert_matches(got, want, reduce)


def _sorted_pair(index, src):
    order = index.argsort(stable=True)
    return index[order], src[order]


# ----------------------------------------------------------------------------------------------- hand-written
def test_hand_written_sum_mean_prod_amax_amin():
    index = torch.tensor([0, 0, 2, 2, 2])
    src = torch.tensor([1.0, 2.0, -3.0, 4.0, 0.5])
    expected = {
        "sum": [3.0, 0.0, 1.5],
        "mean": [1.5, 0.0, 0.5],
        "prod": [2.0, 0.0, -6.0],
        "amax": [2.0, 0.0, 4.0],
        "amin": [1.0, 0.0, -3.0],
    }
    for reduce, want in expected.items():
        for is_sorted in (True, False):
            got = scatterx.index_scatter_reduce(0, index, src, reduce, sorted=is_sorted)
            assert got.tolist() == want, (reduce, is_sorted)


def test_hand_written_out_with_and_without_self():
    out = torch.tensor([10.0, 20.0, 30.0])
    index = torch.tensor([0, 0, 2])
    src = torch.tensor([1.0, 3.0, 5.0])
    cases = {  # (reduce, include_self): expected out; row 1 receives nothing and keeps 20 either way
        ("sum", True): [14.0, 20.0, 35.0],
        ("sum", False): [4.0, 20.0, 5.0],
        ("mean", True): [14.0 / 3, 20.0, 17.5],
        ("mean", False): [2.0, 20.0, 5.0],
        ("prod", True): [30.0, 20.0, 150.0],
        ("amax", True): [10.0, 20.0, 30.0],
        ("amax", False): [3.0, 20.0, 5.0],
        ("amin", True): [1.0, 20.0, 5.0],
    }
    for (reduce, include_self), want in cases.items():
        o = out.clone()
        got = scatterx.index_scatter_reduce(0, index, src, reduce, out=o, include_self=include_self)
        assert got is o
        torch.testing.assert_close(o, torch.tensor(want))


def test_hand_written_dim_1_and_short_index():
    src = torch.tensor([[1, 2, 3, 100], [4, 5, 6, 100]], dtype=torch.int32)
    got = scatterx.index_scatter_reduce(1, torch.tensor([1, 0, 1]), src, "sum", sorted=False)
    assert got.tolist() == [[2, 4], [5, 10]]  # the 4th column is not indexed and takes no part
    assert got.dtype == torch.int32


def test_integer_mean_rounds_down_like_torch():
    src = torch.tensor([-3, 0, 7, 0], dtype=torch.int64)
    got = scatterx.index_scatter_reduce(0, torch.tensor([0, 0, 1, 1]), src, "mean")
    assert got.tolist() == [-2, 3]  # floor(-1.5), floor(3.5)
    torch_mean = torch.zeros(2, dtype=torch.int64).index_reduce_(0, torch.tensor([0, 0, 1, 1]), src, "mean", include_self=False)
    assert got.tolist() == torch_mean.tolist()


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("sorted", [True, False])
def test_amax_amin_propagate_nan(reduce, sorted):
    nan = math.nan
    src = torch.tensor([1.0, nan, 3.0, 2.0, nan, nan])
    index = torch.tensor([0, 0, 1, 1, 2, 2])
    got = scatterx.index_scatter_reduce(0, index, src, reduce, sorted=sorted)
    assert math.isnan(got[0]) and got[1] == (3.0 if reduce == "amax" else 2.0) and math.isnan(got[2])
    # NaN already in out propagates with include_self
    out = torch.tensor([0.0, nan, 0.0])
    scatterx.index_scatter_reduce(0, index, src, reduce, sorted=sorted, out=out)
    assert math.isnan(out[1])


def test_half_precision_accumulates_in_float32():
    # 4096 ones + small values: a float16 accumulator would stall at 2048
    src = torch.ones(4096, dtype=torch.float16)
    got = scatterx.index_scatter_reduce(0, torch.zeros(4096, dtype=torch.int64), src, "sum")
    assert got.item() == 4096.0
    got = scatterx.index_scatter_reduce(0, torch.zeros(4096, dtype=torch.int64), src.bfloat16(), "mean")
    assert got.item() == 1.0


def test_empty_index_and_empty_src():
    src = torch.randn(0, 3)
    assert scatterx.index_scatter_reduce(0, torch.empty(0, dtype=torch.long), src).shape == (0, 3)
    got = scatterx.index_scatter_reduce(0, torch.empty(0, dtype=torch.long), src, "amax", dim_size=4)
    assert got.shape == (4, 3) and not got.any()
    out = torch.full((2, 3), 7.0)
    scatterx.index_scatter_reduce(0, torch.empty(0, dtype=torch.long), torch.randn(5, 3), "prod", out=out)
    assert (out == 7.0).all()


def test_int32_and_int64_index_agree():
    g = torch.Generator().manual_seed(3)
    index = torch.randint(0, 50, (400,), generator=g)
    src = torch.randn(400, 8, generator=g)
    for reduce in REDUCES:
        a = scatterx.index_scatter_reduce(0, index, src, reduce, sorted=False)
        b = scatterx.index_scatter_reduce(0, index.int(), src, reduce, sorted=False)
        assert torch.equal(a, b)


def test_out_overlapping_src_gives_the_same_as_a_separate_out():
    base = torch.arange(12, dtype=torch.float64).reshape(6, 2)
    index = torch.tensor([5, 4, 3, 2, 1, 0])
    want = reference.index_scatter_reduce(0, index, base, "sum", out=base)
    got = scatterx.index_scatter_reduce(0, index, base, "sum", sorted=False, out=base)
    assert got is base
    torch.testing.assert_close(base, want)


def test_non_contiguous_out_is_written_in_place():
    out = torch.zeros(3, 4).t()  # (4, 3), not contiguous
    index = torch.tensor([0, 1, 1])
    src = torch.ones(4, 3)
    got = scatterx.index_scatter_reduce(1, index, src, "sum", out=out)
    assert got is out
    assert out.tolist() == [[1.0, 2.0, 0.0]] * 4


# ------------------------------------------------------------------------------- cross-check with torch's ops
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_matches_torch_index_reduce(dtype, reduce, include_self):
    g = torch.Generator().manual_seed(7)
    src = random_values((300, 5), dtype, g, reduce)
    index = torch.randint(0, 40, (300,), generator=g)
    out = random_values((40, 5), dtype, g, reduce)
    if reduce == "sum":
        want = out.clone().index_add_(0, index, src) if include_self else torch.zeros_like(out).index_add_(0, index, src)
        received = torch.zeros(40, dtype=torch.bool).index_fill_(0, index, True)
        want = torch.where(received[:, None], want, out)
    else:
        want = out.clone().index_reduce_(0, index, src, reduce, include_self=include_self)
    got = scatterx.index_scatter_reduce(0, index, src, reduce, sorted=False, out=out.clone(), include_self=include_self)
    assert_matches(got, want, reduce)


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
def test_matches_torch_scatter_reduce_with_expanded_index(reduce):
    """PyG's path: scatter_reduce with the index broadcast to src's shape, include_self=False on zeros."""
    g = torch.Generator().manual_seed(11)
    src = torch.randn(500, 16, generator=g, dtype=torch.float64)
    index = torch.randint(0, 60, (500,), generator=g)
    want = torch.zeros(60, 16, dtype=torch.float64).scatter_reduce(
        0, index[:, None].expand_as(src), src, reduce, include_self=False
    )
    got = scatterx.index_scatter_reduce(0, index, src, reduce, sorted=False, dim_size=60)
    assert_matches(got, want, reduce)


# ---------------------------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("path", PATHS, indirect=True)
def test_same_bits_whatever_the_thread_count(path):
    """The documented guarantee, for every path: results do not depend on torch.get_num_threads()."""
    g = torch.Generator().manual_seed(5)
    index = torch.randint(0, 1000, (200_000,), generator=g)
    if path == "sorted":
        index = index.sort().values
    src = torch.randn(200_000, 4, generator=g)
    before = torch.get_num_threads()
    try:
        for reduce in ("sum", "mean", "prod"):
            results = []
            for threads in (1, 2, 1):
                torch.set_num_threads(threads)
                results.append(scatterx.index_scatter_reduce(0, index, src, reduce, path == "sorted"))
            assert torch.equal(results[0], results[1]) and torch.equal(results[0], results[2]), reduce
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("strategy", ["gather", "slices", "auto"])
@pytest.mark.parametrize("dim", [0, -1])
def test_unsorted_path_equals_sorted_path_on_the_stably_sorted_input(strategy, dim, monkeypatch):
    """The documented guarantee: each segment is reduced in original position order, from its first value
    (or from the identity, which is exact: -0.0 for sums), so both strategies give the sorted path's bits."""
    monkeypatch.setattr(index_scatter_module, "UNSORTED_STRATEGY", strategy)
    g = torch.Generator().manual_seed(6)
    index = torch.randint(0, 500, (100_000,), generator=g)
    src = torch.randn(100_000, 8, generator=g)
    index[:3] = 599  # a segment that receives only -0.0: its sum is -0.0 unless a +0.0 identity sneaks in
    src[:3] = -0.0
    order = index.argsort(stable=True)
    if dim == -1:
        src = src.t().contiguous()
    for reduce in REDUCES:
        unsorted = scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=False, dim_size=600)
        sorted_result = scatterx.index_scatter_reduce(dim, index[order], src.index_select(dim, order), reduce, dim_size=600)
        assert torch.equal(unsorted, sorted_result), reduce
        assert torch.equal(unsorted.signbit(), sorted_result.signbit()), reduce
