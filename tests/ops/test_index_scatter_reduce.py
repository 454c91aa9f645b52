"""index_scatter_reduce against the reference (random and hand-written cases) and against torch's own ops, on
every backend and every route of each (the ``route`` and ``backend`` fixtures of conftest.py)."""

import contextlib
import functools
import math

import pytest
import torch
from conftest import INTO_NEW_ROUTES, ROUTES, assert_matches, route_id
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import ALIASES, OUT_MODES, REDUCES, random_values, scatter_problems

import scatterx
from scatterx import backends, reference
from scatterx._reductions import BY_NAME
from scatterx.ops import index_scatter_reduce_from


def run(backend, p):
    """scatterx on ``backend`` for problem ``p`` (``out`` is a copy, so the reference sees the original)."""
    q = backend.put(p)
    out = q["out"]
    with backend:
        got = scatterx.index_scatter_reduce(
            q["dim"],
            q["index"],
            q["src"],
            q["reduce"],
            q["sorted"],
            dim_size=q["dim_size"],
            out=None if out is None else out.clone(),
            include_self=q["include_self"],
        )
    return got.cpu()


def run_reference(p):
    return reference.index_scatter_reduce(
        p["dim"],
        p["index"],
        p["src"],
        p["reduce"],
        dim_size=p["dim_size"],
        out=p["out"],
        include_self=p["include_self"],
    )


def call(backend, *args, **kwargs):
    """``index_scatter_reduce(*args, **kwargs)`` on ``backend``, the result back on the CPU."""
    args, kwargs = backend.put(args), backend.put(kwargs)
    with backend:
        return scatterx.index_scatter_reduce(*args, **kwargs).cpu()


# --------------------------------------------------------------------------------------- random vs the reference
def serves(route, reduce, out_mode="none") -> bool:
    """Whether ``route`` serves such calls: the routes that write new tensors only take no ``out=``, the GPU's
    atomic route only the reductions the table marks atomic."""
    if route[1] in INTO_NEW_ROUTES and out_mode.startswith("out"):
        return False
    return not (route == ("gpu", "atomic") and not BY_NAME[ALIASES.get(reduce, reduce)].atomic)


#: (route, out mode, reduction) triples the route serves
MATRIX = [(r, m, red) for r in ROUTES for m in OUT_MODES for red in REDUCES if serves(r, red, m)]


@pytest.mark.parametrize(
    "route, out_mode, reduce", MATRIX, indirect=["route"], ids=[f"{red}-{route_id(r)}-{m}" for r, m, red in MATRIX]
)
@pytest.mark.parametrize("dtype", scatterx.SUPPORTED_DTYPES, ids=str)
def test_matches_reference(route, reduce, dtype, out_mode):
    @settings(max_examples=route.examples(10))
    @given(data=st.data())
    def check(data):
        p = data.draw(scatter_problems(dtype=dtype, reduce=reduce, sorted=route.sorted, out_mode=out_mode))
        assert_matches(run(route, p), run_reference(p), reduce)

    check()


def test_matches_reference_any_combination(route):
    """Everything drawn at once, aliases included."""

    @settings(max_examples=route.examples(150))
    @given(data=st.data())
    def check(data):
        out_mode = data.draw(st.sampled_from(["none", "dim_size"])) if route.into_new else None
        served = [r for r in REDUCES + list(ALIASES) if serves((route.name, route.strategy), r)]
        reduce = data.draw(st.sampled_from(served))
        p = data.draw(scatter_problems(out_mode=out_mode, sorted=True if route.sorted else None, reduce=reduce))
        p = p if route.sorted else dict(p, sorted=False)
        assert_matches(run(route, p), run_reference(p), ALIASES.get(p["reduce"], p["reduce"]))

    check()


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("reduce", REDUCES)
def test_every_dim_of_a_3d_tensor(backend, dim, reduce):
    if dim < 0 and backend.interpreted:
        pytest.skip("a negative dim is resolved before the backend is chosen: checked once, on the CPU backend")
    g = torch.Generator().manual_seed(dim + 10)
    shape = (5, 6, 7) if not backend.interpreted else (3, 5, 4)
    src = random_values(shape, torch.float64, g, reduce)
    n = src.size(dim)
    index = torch.randint(0, 4, (n - 1,), generator=g)  # shorter than src along dim, unsorted
    for is_sorted, idx in ((False, index), (True, index.sort().values)):
        got = call(backend, dim, idx, src, reduce, sorted=is_sorted, dim_size=5)
        assert_matches(got, reference.index_scatter_reduce(dim, idx, src, reduce, dim_size=5), reduce)


def test_long_segments_and_wide_rows_cover_several_tiles(backend):
    """Segments longer than a GPU program's rows tile and rows wider than its feature block (128)."""
    g = torch.Generator().manual_seed(3)
    src = random_values((150, 130), torch.float32, g, "sum")
    index = torch.tensor([0] * 100 + [2] * 50)
    for reduce in ("sum", "amax"):
        for sorted in (True, False):
            got = call(backend, 0, index, src, reduce, sorted, dim_size=3)
            assert_matches(got, reference.index_scatter_reduce(0, index, src, reduce, dim_size=3), reduce)


#: the CPU's parallel routes, each forced (``sorted``: the backend's own choice for a sorted index)
CPU_PATHS = ["sorted", "runs", "segments", "gather", "slices"]


@pytest.fixture
def cpu_path(request):
    if request.param == "sorted":
        yield request.param
        return
    with backends.cpu.routes.force(request.param):
        yield request.param


def _sorted_path(cpu_path):
    return cpu_path in ("sorted", "runs", "segments")


@pytest.mark.parametrize("cpu_path", CPU_PATHS, indirect=True)
def test_parallel_path_with_hub_segments_matches_reference(torch_threads, cpu_path):
    """Large enough to run on several chunks; a few huge segments (hubs) and many empty ones (CPU: the
    interpreter would take minutes at this size)."""
    index, src, num_nodes = _hub_problem()
    for reduce in REDUCES:
        is_sorted = _sorted_path(cpu_path)
        idx, s = _sorted_pair(index, src) if is_sorted else (index, src)
        got = scatterx.index_scatter_reduce(0, idx, s, reduce, sorted=is_sorted, dim_size=num_nodes)
        assert_matches(got, _hub_reference(reduce), reduce)


@functools.cache
def _hub_problem():
    g = torch.Generator().manual_seed(0)
    num_nodes, num_edges = 3000, 60000
    hubs = torch.randint(0, num_nodes, (5,), generator=g)
    index = torch.cat(
        [hubs.repeat_interleave(8000), torch.randint(0, num_nodes // 2, (num_edges - 40000,), generator=g)]
    )
    index = index[torch.randperm(num_edges, generator=g)]
    return index, torch.randn(num_edges, 3, dtype=torch.float64, generator=g), num_nodes


@functools.cache
def _hub_reference(reduce):
    """The reference's result on the hub problem (a plain loop: computed once for all routes and thread counts)."""
    index, src, num_nodes = _hub_problem()
    return reference.index_scatter_reduce(0, index, src, reduce, dim_size=num_nodes)


def _sorted_pair(index, src):
    order = index.argsort(stable=True)
    return index[order], src[order]


# ----------------------------------------------------------------------------------------------- hand-written
def test_hand_written_sum_mean_prod_amax_amin(backend):
    index = torch.tensor([0, 0, 2, 2, 2])
    src = torch.tensor([1.0, 2.0, -3.0, 4.0, 0.5])
    expected = {
        "sum": [3.0, 0.0, 1.5],
        "mean": [1.5, 0.0, 0.5],
        "prod": [2.0, 0.0, -6.0],
        "amax": [2.0, 0.0, 4.0],
        "amin": [1.0, 0.0, -3.0],
    }
    shuffle = torch.tensor([2, 0, 4, 1, 3])
    for reduce, want in expected.items():
        assert call(backend, 0, index, src, reduce, sorted=True).tolist() == want, reduce
        assert call(backend, 0, index[shuffle], src[shuffle], reduce, sorted=False).tolist() == want, reduce


def test_hand_written_out_with_and_without_self(backend):
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
        for sorted in (True, False):
            o = backend.put(out.clone())
            with backend:
                got = scatterx.index_scatter_reduce(
                    0, backend.put(index), backend.put(src), reduce, sorted, out=o, include_self=include_self
                )
            assert got is o
            torch.testing.assert_close(o.cpu(), torch.tensor(want))


def test_hand_written_dim_1_and_short_index(backend):
    src = torch.tensor([[1, 2, 3, 100], [4, 5, 6, 100]], dtype=torch.int32)
    got = call(backend, 1, torch.tensor([1, 0, 1]), src, "sum", sorted=False)
    assert got.tolist() == [[2, 4], [5, 10]]  # the 4th column is not indexed and takes no part
    assert got.dtype == torch.int32


def test_integer_mean_rounds_down_like_torch(backend):
    src = torch.tensor([-3, 0, 7, 0], dtype=torch.int64)
    got = call(backend, 0, torch.tensor([0, 0, 1, 1]), src, "mean")
    assert got.tolist() == [-2, 3]  # floor(-1.5), floor(3.5)
    torch_mean = torch.zeros(2, dtype=torch.int64).index_reduce_(
        0, torch.tensor([0, 0, 1, 1]), src, "mean", include_self=False
    )
    assert got.tolist() == torch_mean.tolist()


def test_integer_mean_divides_the_wrapped_sum_like_torch(backend):
    """An int32 sum past 2^31 wraps before the divide, as torch's mean does (and the reference, the oracle of the
    random tests)."""
    src = torch.tensor([2**31 - 1, 2**31 - 1, 5, -7], dtype=torch.int32)
    index = torch.tensor([0, 0, 1, 1])
    got = call(backend, 0, index, src, "mean")
    want = torch.zeros(2, dtype=torch.int32).scatter_reduce(0, index, src, "mean", include_self=False)
    assert got.tolist() == want.tolist() == [-1, -1]
    assert reference.index_scatter_reduce(0, index, src, "mean").tolist() == want.tolist()


@pytest.mark.parametrize("reduce", ["amax", "amin"])
@pytest.mark.parametrize("sorted", [True, False])
def test_amax_amin_propagate_nan(backend, reduce, sorted):
    nan = math.nan
    src = torch.tensor([1.0, nan, 3.0, 2.0, nan, nan])
    index = torch.tensor([0, 0, 1, 1, 2, 2])
    got = call(backend, 0, index, src, reduce, sorted=sorted)
    assert math.isnan(got[0]) and got[1] == (3.0 if reduce == "amax" else 2.0) and math.isnan(got[2])
    # NaN already in out propagates with include_self
    out = call(backend, 0, index, src, reduce, sorted=sorted, out=torch.tensor([0.0, nan, 0.0]))
    assert math.isnan(out[1])
    # a NaN anywhere in a segment (first, inside a GPU rows tile, last; short and long segments) makes it NaN
    for length in (2, 5, 40):
        for at in sorted_positions(length):
            values = torch.arange(length + 2, dtype=torch.float32)
            values[at] = nan
            got = call(backend, 0, torch.tensor([0] * length + [1, 1]), values, reduce, sorted, dim_size=2)
            assert got[0].isnan(), (length, at)
            assert got[1] == (length + 1 if reduce == "amax" else length)


def sorted_positions(length):
    return sorted({0, 1, length // 2, length - 1})


@pytest.mark.parametrize("sorted", [True, False])
def test_half_precision_accumulates_in_float32(backend, sorted):
    # 4096 ones: a float16 accumulator would stall at 2048, a bfloat16 one at 256
    index = torch.zeros(4096, dtype=torch.int64)
    for dtype in (torch.float16, torch.bfloat16):
        src = torch.ones(4096, 1, dtype=dtype)
        assert call(backend, 0, index, src, "sum", sorted, dim_size=1).item() == 4096.0
        assert call(backend, 0, index, src, "mean", sorted, dim_size=1).item() == 1.0


def test_empty_index_and_empty_src(backend):
    src = torch.randn(0, 3)
    empty = torch.empty(0, dtype=torch.long)
    assert call(backend, 0, empty, src).shape == (0, 3)
    got = call(backend, 0, empty, src, "amax", dim_size=4)
    assert got.shape == (4, 3) and not got.any()
    out = torch.full((2, 3), 7.0)
    assert (call(backend, 0, empty, torch.randn(5, 3), "prod", out=out) == 7.0).all()


def test_int32_and_int64_index_agree():
    g = torch.Generator().manual_seed(3)
    index = torch.randint(0, 50, (400,), generator=g)
    src = torch.randn(400, 8, generator=g)
    for reduce in REDUCES:
        a = scatterx.index_scatter_reduce(0, index, src, reduce, sorted=False)
        b = scatterx.index_scatter_reduce(0, index.int(), src, reduce, sorted=False)
        assert torch.equal(a, b)


def test_out_overlapping_src_gives_the_same_as_a_separate_out(backend):
    base = torch.arange(12, dtype=torch.float64).reshape(6, 2)
    index = torch.tensor([5, 4, 3, 2, 1, 0])
    want = reference.index_scatter_reduce(0, index, base, "sum", out=base)
    b = backend.put(base)
    with backend:
        got = scatterx.index_scatter_reduce(0, backend.put(index), b, "sum", sorted=False, out=b)
    assert got is b
    torch.testing.assert_close(b.cpu(), want)


def test_non_contiguous_out_is_written_in_place(backend):
    out = backend.put(torch.zeros(3, 4)).t()  # (4, 3), not contiguous
    with backend:
        got = scatterx.index_scatter_reduce(
            1, backend.put(torch.tensor([0, 1, 1])), backend.put(torch.ones(4, 3)), "sum", out=out
        )
    assert got is out
    assert out.cpu().tolist() == [[1.0, 2.0, 0.0]] * 4


def test_zero_dim_src_out_and_index_are_one_slice_as_in_torch(backend):
    """torch's index_add/index_reduce take 0-d self, source and index: one slice along dim 0 (or -1)."""
    got = call(backend, 0, torch.tensor(0), torch.tensor(5.0), "sum", dim_size=2)
    assert got.tolist() == [5.0, 0.0]
    for reduce, torch_reduce in (("sum", None), ("amax", "amax"), ("mean", "mean"), ("prod", "prod")):
        for include_self in (True, False):
            out = backend.put(torch.tensor(2.0))
            with backend:
                result = scatterx.index_scatter_reduce(
                    -1,
                    backend.put(torch.tensor([0])),
                    backend.put(torch.tensor(5.0)),
                    reduce,
                    out=out,
                    include_self=include_self,
                )
            assert result is out and out.dim() == 0
            if torch_reduce is None:
                want = torch.tensor(2.0 if include_self else 0.0).index_add(0, torch.tensor([0]), torch.tensor(5.0))
            else:
                want = torch.tensor(2.0).index_reduce(
                    0, torch.tensor([0]), torch.tensor(5.0), torch_reduce, include_self=include_self
                )
            assert out.item() == want.item(), (reduce, include_self)


# ------------------------------------------------------------------------------- cross-check with torch's ops
@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_matches_torch_index_reduce(backend, dtype, reduce, include_self):
    g = torch.Generator().manual_seed(7)
    rows, targets = (60, 12) if backend.interpreted else (300, 40)  # (the interpreter: a few programs)
    src = random_values((rows, 5), dtype, g, reduce)
    index = torch.randint(0, targets, (rows,), generator=g)
    out = random_values((targets, 5), dtype, g, reduce)
    if reduce == "sum":
        want = (
            out.clone().index_add_(0, index, src) if include_self else torch.zeros_like(out).index_add_(0, index, src)
        )
        received = torch.zeros(targets, dtype=torch.bool).index_fill_(0, index, True)
        want = torch.where(received[:, None], want, out)
    else:
        want = out.clone().index_reduce_(0, index, src, reduce, include_self=include_self)
    got = call(backend, 0, index, src, reduce, sorted=False, out=out.clone(), include_self=include_self)
    assert_matches(got, want, reduce)


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
def test_matches_torch_scatter_reduce_with_expanded_index(backend, reduce):
    """PyG's path: scatter_reduce with the index broadcast to src's shape, include_self=False on zeros."""
    g = torch.Generator().manual_seed(11)
    rows, targets = (100, 12) if backend.interpreted else (500, 60)  # (the interpreter: a few programs)
    src = torch.randn(rows, 16, generator=g, dtype=torch.float64)
    index = torch.randint(0, targets, (rows,), generator=g)
    want = torch.zeros(targets, 16, dtype=torch.float64).scatter_reduce(
        0, index[:, None].expand_as(src), src, reduce, include_self=False
    )
    got = call(backend, 0, index, src, reduce, sorted=False, dim_size=targets)
    assert_matches(got, want, reduce)


# ---------------------------------------------------------------------------------------------- determinism
@pytest.mark.parametrize("cpu_path", CPU_PATHS, indirect=True)
def test_same_bits_whatever_the_thread_count(cpu_path):
    """The documented guarantee, for every CPU path: results do not depend on torch.get_num_threads()."""
    g = torch.Generator().manual_seed(5)
    index = torch.randint(0, 1000, (200_000,), generator=g)
    if _sorted_path(cpu_path):
        index = index.sort().values
    src = torch.randn(200_000, 4, generator=g)
    before = torch.get_num_threads()
    try:
        for reduce in ("sum", "mean", "prod"):
            results = []
            for threads in (1, 2, 1):
                torch.set_num_threads(threads)
                results.append(scatterx.index_scatter_reduce(0, index, src, reduce, _sorted_path(cpu_path)))
            assert torch.equal(results[0], results[1]) and torch.equal(results[0], results[2]), reduce
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("strategy", ["gather", "slices", "serial", "auto"])
@pytest.mark.parametrize("dim", [0, -1])
def test_unsorted_path_equals_sorted_path_on_the_stably_sorted_input(strategy, dim):
    """The documented guarantee (CPU): each segment is reduced in original position order, from its first value
    (or from the identity, which is exact: -0.0 for sums), so every unsorted route gives the sorted path's bits."""
    with contextlib.ExitStack() as stack:
        if strategy != "auto":
            stack.enter_context(backends.cpu.routes.force(strategy))
        _check_unsorted_equals_sorted(dim)


def _check_unsorted_equals_sorted(dim):
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
        sorted_result = scatterx.index_scatter_reduce(
            dim, index[order], src.index_select(dim, order), reduce, dim_size=600
        )
        assert torch.equal(unsorted, sorted_result), reduce
        assert torch.equal(unsorted.signbit(), sorted_result.signbit()), reduce


def test_gpu_deterministic_unsorted_sum_equals_sorted_path_on_stably_sorted_input():
    """The GPU's deterministic unsorted strategy (stable sort + segments) gives the sorted path's bits."""
    from conftest import _backend

    gpu_backend = _backend("gpu")
    from scatterx.backends import gpu

    g = torch.Generator().manual_seed(11)
    src = torch.randn(40, 3, generator=g)
    index = torch.randint(0, 6, (40,), generator=g)
    order = torch.sort(index, stable=True).indices
    with gpu.routes.force(gpu.routes.Route.SORT):
        unsorted = call(gpu_backend, 0, index, src, "sum", False, dim_size=6)
    sorted_ = call(gpu_backend, 0, index[order], src[order], "sum", True, dim_size=6)
    assert torch.equal(unsorted, sorted_)


@pytest.mark.parametrize("sorted", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_strided_index_is_read_by_its_strides(backend, reduce, sorted):
    """An index that is a strided view (the planner's rows of an expanded 2-D index are ``index[:, 0]``): the
    kernels must not read it as a flat array (the GPU's atomic path once did)."""
    g = torch.Generator().manual_seed(3)
    rows = torch.randint(0, 4, (7,), generator=g)
    if sorted:
        rows = rows.sort().values
    index = rows.view(-1, 1).repeat(1, 3)[:, 1]  # stride 3
    assert index.stride() == (3,)
    src = torch.randn(7, 5, generator=g)
    expected = reference.index_scatter_reduce(0, rows, src, reduce, dim_size=4)
    with backend:
        got = scatterx.index_scatter_reduce(0, *backend.put([index, src]), reduce, sorted=sorted, dim_size=4)
        got_from = index_scatter_reduce_from(0, *backend.put([index, src]), reduce, None, None, dim_size=4)
    torch.testing.assert_close(got.cpu(), expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_from.cpu(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("reduce", ["sum", "mean", "prod", "amax", "amin"])
def test_functional_form_of_a_small_call_in_unknown_order(reduce):
    """``index_scatter_reduce_from(sorted=None, base=None)`` of a small call (the serial kernel, any order) gives
    the sorted path's bits, and a bad index raises before anything is computed."""
    g = torch.Generator().manual_seed(5)
    index = torch.randint(0, 6, (40,), generator=g)
    src = torch.randn(40, 3, generator=g, dtype=torch.float64)
    order = index.argsort(stable=True)
    want = scatterx.index_scatter_reduce(0, index[order], src[order], reduce, sorted=True, dim_size=7)
    assert torch.equal(index_scatter_reduce_from(0, index, src, reduce, None, None, dim_size=7), want)
    assert torch.equal(index_scatter_reduce_from(0, index[order], src[order], reduce, None, None, dim_size=7), want)
    with pytest.raises(IndexError, match="out of range"):
        index_scatter_reduce_from(0, index, src, reduce, None, None, dim_size=5)


def test_dim_size_takes_what_torch_s_sizes_take():
    """An int, a NumPy integer or a one-element integer tensor (bools are refused: tests/ops/test_validation.py)."""
    import numpy as np

    index, src = torch.tensor([0, 1]), torch.ones(2)
    for size in (3, np.int64(3), np.int32(3), torch.tensor(3), torch.tensor([3], dtype=torch.int32)):
        assert scatterx.index_scatter_reduce(0, index, src, dim_size=size).tolist() == [1.0, 1.0, 0.0]
