"""``backends/cpu/routes.py`` and the CPU backend's use of it: ``choose_route`` on a table of shapes, forced routes
(taken, or refused by name), what the backend launches (``routes.recording``), every route giving the bits of the
others, and which outputs are written with streaming (non-temporal) stores."""

import itertools

import pytest
import torch
from kernel_calls import bits
from strategies import REDUCES, SUPPORTED_DTYPES, random_values

import scatterx
from scatterx import reference
from scatterx._reductions import BY_NAME
from scatterx.backends import cpu
from scatterx.backends.cpu import routes
from scatterx.backends.cpu.routes import Route
from scatterx.kernels.cpu import openmp
from scatterx.kernels.cpu.index_scatter_reduce_owner import LANES

T = routes.TUNING


def choose(
    sorted=True,
    into_new=True,
    outer=1,
    n=10**6,
    inner=64,
    m=None,
    segments=10**5,
    itemsize=4,
    threads=2,
    from_base=False,
):
    return routes.choose_route(
        sorted=sorted,
        into_new=into_new,
        from_base=from_base,
        outer=outer,
        n=n,
        inner=inner,
        m=n if m is None else m,
        segments=segments,
        itemsize=itemsize,
        threads=threads,
    )


@pytest.mark.parametrize(
    "shape, expected",
    [
        # small calls into a new tensor: serial, whatever the order
        (dict(n=100, inner=8, segments=10), Route.SERIAL),
        (dict(n=100, inner=8, segments=10, sorted=False), Route.SERIAL),
        # ... and into a new tensor computed from a base or from out= (then copied in): serial too
        (dict(n=100, inner=8, segments=10, into_new=False, from_base=True), Route.SERIAL),
        (dict(n=100, inner=8, segments=10, into_new=False, from_base=True, sorted=False), Route.SERIAL),
        (dict(n=10**6, inner=8, segments=10, into_new=False, from_base=True, sorted=False), Route.GATHER),
        # wide rows are small up to a larger size, shrinking with threads
        (dict(n=(T.small_call_elements * 2) // 16 - 16, inner=16, segments=16, threads=2), Route.SERIAL),
        (dict(n=(T.small_call_elements * 2) // 16 - 16, inner=16, segments=16, threads=16), Route.RUNS),
        (dict(n=(T.small_call_elements * 2) // 15, inner=15, segments=15, threads=1), Route.RUNS),  # not wide
        # sorted into a new tensor: runs for rows of one element, and for any row with a position per target
        (dict(inner=1), Route.RUNS),
        (dict(inner=1, outer=16), Route.RUNS),
        (dict(inner=16), Route.RUNS),
        (dict(inner=8, itemsize=8), Route.RUNS),
        (dict(inner=2), Route.RUNS),
        (dict(inner=1, m=10**5, segments=2 * 10**5), Route.RUNS),
        (dict(inner=16, m=10**5, segments=2 * 10**5), Route.SEGMENTS),  # fewer positions than targets
        (dict(inner=16, into_new=False, from_base=True), Route.SEGMENTS),
        # sorted from a base: serial for rows of one element (inner x threads small), the segment kernel otherwise
        (dict(inner=1, into_new=False, from_base=True), Route.SERIAL),
        (dict(inner=1, into_new=False, from_base=True, threads=16), Route.SEGMENTS),
        (dict(inner=2, into_new=False, from_base=True), Route.SEGMENTS),
        # unsorted: serial for narrow rows of one outer slice (inner x threads small), into a new tensor or from a
        # base
        (dict(sorted=False, inner=1), Route.SERIAL),
        (dict(sorted=False, inner=4, threads=2), Route.SERIAL),
        (
            dict(sorted=False, inner=4, threads=4),
            Route.SLICES if T.slices_max_row_bytes >= 4 * 4 and 1 >= 4 else Route.GATHER,
        ),
        (dict(sorted=False, inner=1, into_new=False, from_base=True), Route.SERIAL),
        (dict(sorted=False, inner=1, into_new=False, from_base=True, threads=16), Route.GATHER),
        # ... slices for tiny rows of many outer slices with a cache-sized accumulator, gather otherwise
        (dict(sorted=False, outer=64, inner=1, n=10**6, segments=10**5), Route.SLICES),
        (dict(sorted=False, outer=64, inner=1, segments=10**7), Route.GATHER),  # accumulator beyond the budget
        (dict(sorted=False, outer=1, inner=64), Route.GATHER),  # rows of 256 bytes: gather them
        # ... but serial while the output stays in L2 and src is mid-size (the cap shrinking with threads)
        (dict(sorted=False, n=10**4, inner=64, segments=10**3), Route.SERIAL),
        (dict(sorted=False, n=10**5, inner=16, segments=10**4), Route.SERIAL),
        (dict(sorted=False, n=10**5, inner=16, segments=10**4, threads=16), Route.GATHER),
        (dict(sorted=False, n=2 * 10**4, inner=256, segments=2 * 10**3), Route.GATHER),  # a 2 MB output
        (dict(sorted=False, n=10**4, inner=64, segments=10**3, into_new=False, from_base=True), Route.GATHER),
        (dict(sorted=False, outer=2, inner=2, threads=4), Route.GATHER),  # fewer slices than threads
    ],
)
def test_choose_route(shape, expected):
    assert choose(**shape) is expected


def test_thresholds_change_the_choice_only_within_tuned():
    assert choose(n=100, inner=8, segments=10) is Route.SERIAL
    with routes.tuned(small_call_elements=0, small_wide_factor=0):
        assert routes.tuning().small_call_elements == 0
        assert (
            routes.choose_route(
                sorted=True,
                into_new=True,
                outer=1,
                n=100,
                inner=8,
                m=100,
                segments=10,
                itemsize=4,
                threads=2,
                t=routes.tuning(),
            )
            is Route.RUNS
        )
    assert routes.tuning() is routes.TUNING
    with pytest.raises(TypeError), routes.tuned(no_such_threshold=1):
        pass


def launched(call):
    with routes.recording() as log:
        result = call()
    return [launch.route for launch in log], result


def test_the_backend_takes_the_chosen_route():
    big = torch.ones(100_000, 16)
    index = torch.arange(100_000) // 7
    assert launched(lambda: scatterx.index_scatter_reduce(0, index[:8], big[:8], "sum"))[0] == ["serial"]
    assert launched(lambda: scatterx.index_scatter_reduce(0, index, big, "sum"))[0] == ["runs"]
    assert launched(lambda: scatterx.index_scatter_reduce(0, index, big[:, :8], "sum"))[0] == ["runs"]
    spread = torch.arange(100_000) * 2  # fewer positions than targets
    assert launched(lambda: scatterx.index_scatter_reduce(0, spread, big[:, :8], "sum"))[0] == ["segments"]
    assert launched(lambda: scatterx.index_scatter_reduce(0, index.flip(0), big, "sum", sorted=False))[0] == ["gather"]
    assert launched(lambda: scatterx.index_scatter_reduce(0, index.flip(0), big[:, 0], "amax", sorted=False))[0] == [
        "serial"
    ]
    assert launched(lambda: scatterx.index_scatter_reduce(1, index.flip(0), big.t().contiguous(), "sum", sorted=False))[
        0
    ] == ["slices"]


@pytest.mark.parametrize("route", list(Route))
def test_a_forced_route_is_taken_with_the_same_bits(route):
    g = torch.Generator().manual_seed(2)
    src = torch.randn(3000, 5, generator=g)
    index = torch.randint(0, 400, (3000,), generator=g).sort().values
    for reduce in REDUCES:
        want = scatterx.index_scatter_reduce(0, index, src, reduce)
        with routes.force(route):
            names, got = launched(lambda reduce=reduce: scatterx.index_scatter_reduce(0, index, src, reduce))
        assert names == [route.value]
        assert torch.equal(bits(got), bits(want)), reduce


def test_a_long_1d_unsorted_call_into_a_small_output_takes_the_small_path():
    """Past the small size, a 1-D unsorted call still skips the general path's bookkeeping when that path would take
    the serial route too (the output as small as a small call's); same bits as the gather route; a bad entry, or
    an output past that size, is left to the general path."""
    t = routes.tuning()
    g = torch.Generator().manual_seed(5)
    n = t.small_call_elements + 1000
    src = torch.randn(n, generator=g)
    index = torch.randint(0, 1000, (n,), generator=g)
    assert not routes.small(outer=1, n=n, inner=1, segments=1000, threads=torch.get_num_threads(), t=t)
    for reduce in ("sum", "mean", "amax"):
        got = cpu.small_index_scatter_reduce(src, index, 0, BY_NAME[reduce], False, 1000)
        assert got is not None
        with routes.force(Route.GATHER):
            want = scatterx.index_scatter_reduce(0, index, src, reduce, sorted=False, dim_size=1000)
        assert torch.equal(bits(got), bits(want)), reduce
    bad = index.clone()
    bad[-1] = 1000
    assert cpu.small_index_scatter_reduce(src, bad, 0, BY_NAME["sum"], False, 1000) is None
    with pytest.raises(IndexError, match="index"):
        scatterx.index_scatter_reduce(0, bad, src, "sum", sorted=False, dim_size=1000)
    wide = t.small_call_elements + 1
    assert cpu.small_index_scatter_reduce(src, index, 0, BY_NAME["sum"], False, wide) is None
    with routes.recording() as log:
        scatterx.index_scatter_reduce(0, index, src, "sum", sorted=False, dim_size=wide)
    assert [launch.route for launch in log] == ["serial"]


@pytest.mark.parametrize("route", list(Route))
@pytest.mark.parametrize("inner", [1, 3])
def test_an_integer_mean_divides_the_wrapped_sum_on_every_route(route, inner):
    """An int32 sum past 2**31 wraps before the divide, as torch's mean does, on every route -- the runs route's
    accumulator, kept in a register, once did not wrap."""
    src = torch.tensor([2**31 - 1, 2**31 - 1, 5, -7], dtype=torch.int32).repeat_interleave(inner).view(4, inner)
    index = torch.tensor([0, 0, 1, 1])
    want = torch.zeros(2, inner, dtype=torch.int32).scatter_reduce(
        0, index.view(4, 1).expand(4, inner), src, "mean", include_self=False
    )
    assert want.flatten().tolist() == [-1] * 2 * inner
    with routes.force(route):
        names, got = launched(lambda: scatterx.index_scatter_reduce(0, index, src, "mean"))
    assert names == [route.value]
    assert torch.equal(got, want)


@pytest.mark.parametrize(
    "route, kwargs, why",
    [
        (Route.RUNS, dict(out=torch.zeros(4, 2)), "'runs'.*writes a new tensor only"),
        (Route.RUNS, dict(sorted=False), "'runs'.*needs a sorted index"),
        (Route.SEGMENTS, dict(sorted=False), "'segments'.*needs a sorted index"),
    ],
)
def test_a_forced_route_that_cannot_serve_the_call_is_refused_by_name(route, kwargs, why):
    with routes.force(route), pytest.raises(ValueError, match=why):
        scatterx.index_scatter_reduce(0, torch.tensor([0, 1, 3]), torch.ones(3, 2), "sum", dim_size=4, **kwargs)


def test_order_not_known_takes_a_sorted_route_or_falls_back():
    src = torch.arange(6.0)
    for index in (torch.tensor([0, 0, 1, 2, 3, 3]), torch.tensor([3, 0, 2, 1, 3, 0])):
        names, got = launched(lambda index=index: cpu.index_scatter_reduce(src, index, 0, BY_NAME["sum"], None, 4))
        assert torch.equal(got, torch.zeros(4).index_add_(0, index, src))
        with routes.force(Route.RUNS):  # taken if the index turns out sorted, else refused by name
            if index[0] == 0:
                names, got = launched(
                    lambda index=index: cpu.index_scatter_reduce(src, index, 0, BY_NAME["sum"], None, 4)
                )
                assert names == ["runs"] and torch.equal(got, torch.zeros(4).index_add_(0, index, src))
            else:
                with pytest.raises(ValueError, match=r"'runs'.*order not given"):
                    cpu.index_scatter_reduce(src, index, 0, BY_NAME["sum"], None, 4)
    with pytest.raises(ValueError, match="not sorted"):
        scatterx.index_scatter_reduce(0, torch.tensor([0, 0, 2, 1, 3, 3]), src, "sum", sorted=True)
    shuffled_tail = torch.cat([torch.arange(2000) // 2, torch.tensor([0])])  # sorted head, unsorted tail
    values = torch.ones(2001)
    with routes.tuned(small_call_elements=-1):
        names, got = launched(lambda: cpu.index_scatter_reduce(values, shuffled_tail, 0, BY_NAME["sum"], None, 1000))
    assert names == ["runs", "serial"]  # the runs route rejected the tail: the unsorted route for one-element rows
    assert torch.equal(got, torch.zeros(1000).index_add_(0, shuffled_tail, values))


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
@pytest.mark.parametrize("sorted", [True, False])
def test_every_route_gives_the_same_bits_on_every_dim(dtype, sorted):
    g = torch.Generator().manual_seed(1)
    src = random_values((3, 40, 4), dtype, g, "sum")
    candidates = [Route.SERIAL, Route.GATHER, Route.SLICES] + ([Route.RUNS, Route.SEGMENTS] if sorted else [])
    for dim in (0, 1, 2, -1):
        index = torch.randint(0, 3, (src.size(dim) - 1,), generator=g)
        index = index.sort().values if sorted else index
        for reduce in REDUCES:
            results = []
            for route in candidates:
                with routes.force(route):
                    results.append(scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=sorted))
            for result in results[1:]:
                assert torch.equal(bits(result), bits(results[0])), (dim, reduce)


def _streamed(call):
    with routes.recording() as log:
        result = call()
    assert len(log) == 1
    return log[0].stream, result


def test_outputs_are_streamed_only_where_the_aligned_stores_allow_it():
    g = torch.Generator().manual_seed(0)
    index = torch.randint(0, 40, (200,), generator=g).sort().values
    ptr = scatterx.index_to_ptr(index, 40)
    # below the size threshold nothing streams
    assert _streamed(lambda: scatterx.segment_reduce(torch.ones(200, 16), ptr, "sum"))[0] is False
    with routes.tuned(stream_min_bytes=0, small_call_elements=-1):
        assert _streamed(lambda: scatterx.segment_reduce(torch.ones(200, 16), ptr, "sum"))[0] is True
        assert _streamed(lambda: scatterx.index_scatter_reduce(0, index, torch.ones(200, 16), "amax"))[0] is True
        assert _streamed(lambda: scatterx.segment_reduce(torch.ones(200, 8, dtype=torch.float64), ptr))[0] is True
        # rows that are not whole 64-byte blocks, half types, rows beyond 512 bytes, the gather route
        assert _streamed(lambda: scatterx.segment_reduce(torch.ones(200, 8), ptr, "sum"))[0] is False
        assert _streamed(lambda: scatterx.segment_reduce(torch.ones(200, 24), ptr, "sum"))[0] is False
        assert _streamed(lambda: scatterx.segment_reduce(torch.ones(200, 32, dtype=torch.float16), ptr))[0] is False
        assert _streamed(lambda: scatterx.segment_reduce(torch.ones(200, 256), ptr, "sum"))[0] is False
        shuffled = index[torch.randperm(200, generator=g)]
        assert (
            _streamed(
                lambda: scatterx.index_scatter_reduce(
                    0, shuffled, torch.ones(200, 16), "sum", sorted=False, dim_size=40
                )
            )[0]
            is False
        )


@pytest.mark.parametrize("reduce", REDUCES)
def test_out_at_an_address_off_the_64_byte_grid_is_written_without_streaming(reduce):
    """Aligned non-temporal stores fault on a misaligned address: ``out=`` a view 4 bytes off the grid (rows of
    64 bytes, otherwise streamable) must take the plain stores and give the same values as an aligned ``out``."""
    g = torch.Generator().manual_seed(1)
    src = torch.rand(300, 16, generator=g)
    index = torch.randint(0, 50, (300,), generator=g).sort().values
    start = torch.rand(50, 16, generator=g)
    buffer = torch.zeros(50 * 16 + 32)
    skip = next(k for k in range(1, 17) if (buffer.data_ptr() + 4 * k) % 64 != 0)
    misaligned = buffer[skip : skip + 50 * 16].view(50, 16).copy_(start)
    aligned = start.clone()
    assert aligned.data_ptr() % 64 == 0
    flags = []
    with routes.tuned(stream_min_bytes=0, small_call_elements=-1):
        for out in (aligned, misaligned):
            flags.append(
                _streamed(
                    lambda out=out: scatterx.index_scatter_reduce(0, index, src, reduce, out=out, include_self=True)
                )[0]
            )
    assert flags == [True, False]
    assert torch.equal(misaligned, aligned)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape, dim", [((3000,), 0), ((1, 3000, 3), 1), ((3000, 4), 0), ((4, 3000), 1)])
def test_unsorted_narrow_rows_take_the_serial_route_at_any_size_with_the_gather_route_s_bits(shape, dim, threads):
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with routes.tuned(small_call_elements=-1):  # the rule for narrow rows, not for small calls
            _check_narrow_rows(shape, dim, threads)
    finally:
        torch.set_num_threads(before)


def _check_narrow_rows(shape, dim, threads):
    g = torch.Generator().manual_seed(4)
    src = random_values(shape, torch.float32, g, "sum")
    index = torch.randint(0, 400, (3000,), generator=g)
    outer, inner = (1, src[0].numel()) if dim == 0 else (shape[0], shape[2] if len(shape) == 3 else 1)
    for reduce in REDUCES:
        names, got = launched(
            lambda reduce=reduce: scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=False, dim_size=450)
        )
        assert (names == ["serial"]) == (outer == 1 and inner * threads <= T.serial_unsorted_max_work)
        with routes.force(Route.GATHER):
            want = scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=False, dim_size=450)
        assert torch.equal(bits(got), bits(want)), reduce


def test_threads_for_small_work_is_one_and_each_caller_may_set_its_own_minimum():
    assert routes.threads_for(T.parallel_min_elements - 1, 4, T) == 1
    assert routes.threads_for(T.parallel_min_elements, 4, T) == 4
    # the memory-bound reductions go parallel later (their own threshold), the others keep the general one
    assert T.reduce_parallel_min_elements > T.parallel_min_elements
    assert routes.threads_for(T.parallel_min_elements, 4, T, T.reduce_parallel_min_elements) == 1
    assert routes.threads_for(T.reduce_parallel_min_elements, 4, T, T.reduce_parallel_min_elements) == 4
    assert routes.threads_for(10**9, 0, T) == 1  # never fewer than one thread


def test_lanes_take_a_whole_group_per_thread_whose_accumulators_stay_in_cache():
    """Rows of one element take the lanes kernel only with a whole group of ``LANES`` slices per thread and the
    group's accumulators within ``lanes_max_acc_bytes``: past either, a slice at a time was measured faster (up to
    4x: element-scatter.md, "When lanes pay"). The result is the same bits either way."""
    fits = T.lanes_max_acc_bytes // (LANES * 4)  # float32 targets whose group's accumulators fit
    assert routes.lanes_pay(outer=2 * LANES, inner=1, segments=fits, itemsize=4, threads=2)
    assert not routes.lanes_pay(outer=2 * LANES, inner=1, segments=fits + 1, itemsize=4, threads=2)
    assert not routes.lanes_pay(outer=2 * LANES - 1, inner=1, segments=fits, itemsize=4, threads=2)
    assert routes.lanes_pay(outer=LANES, inner=1, segments=fits, itemsize=4, threads=1)
    assert routes.lanes_pay(outer=LANES, inner=1, segments=fits, itemsize=2, threads=1)  # half types: float32 sums
    assert not routes.lanes_pay(outer=LANES, inner=1, segments=fits, itemsize=8, threads=1)  # float64: twice the bytes
    assert not routes.lanes_pay(outer=LANES, inner=2, segments=fits, itemsize=4, threads=1)
    src, index = torch.randn(LANES, 50), torch.randint(0, 7, (50,))
    with routes.tuned(lanes_max_acc_bytes=0):
        by_slice = scatterx.index_scatter_reduce(1, index, src, "sum", sorted=False)
    assert torch.equal(by_slice, scatterx.index_scatter_reduce(1, index, src, "sum", sorted=False))


@pytest.mark.parametrize("reduce, special", [("sum", -0.0), ("amax", float("-inf")), ("amin", float("inf"))])
@pytest.mark.parametrize("with_special", [False, True])
def test_the_slices_route_tells_empty_targets_by_their_bits_with_the_gather_route_s_bits(reduce, special, with_special):
    """Rows of one element of a few slices into a new tensor: the slices route tells empty targets by the
    identity's bits instead of counting entries, and counts after all when a value has those bits (a -0.0 in a
    sum, whose target must stay -0.0, not become 0): the same bits as the gather route either way."""
    g = torch.Generator().manual_seed(11)
    src = torch.randn(3, 4000, generator=g)
    index = torch.randint(0, 700, (4000,), generator=g)  # some of the 1,000 targets receive nothing
    if with_special:
        src[1, :50] = special
        index[:50] = 999  # a target that receives only the identity's bits
    with routes.force(Route.SLICES):
        names, got = launched(lambda: scatterx.index_scatter_reduce(1, index, src, reduce, sorted=False, dim_size=1000))
    assert names == ["slices"]
    with routes.force(Route.GATHER):
        want = scatterx.index_scatter_reduce(1, index, src, reduce, sorted=False, dim_size=1000)
    assert torch.equal(bits(got), bits(want))
    if with_special:
        assert torch.equal(bits(got[1, 999]), bits(torch.tensor(special)))
    assert torch.equal(bits(got[:, 998]), bits(torch.zeros(3)))  # received nothing: 0


@pytest.mark.parametrize("sorted", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("include_self", [True, False])
def test_a_narrow_call_into_out_takes_the_serial_route_through_a_new_tensor(reduce, sorted, include_self):
    """``out=`` with rows of one element: the serial kernel computes a new tensor from ``out`` (no counting pass for
    a reduction that does not divide, with ``include_self``) and copies it in -- the reference's values, and a
    bad index leaves ``out`` as it was."""
    g = torch.Generator().manual_seed(14)
    src = random_values((50_000,), torch.float64, g, reduce)
    index = torch.randint(0, 5_000, (50_000,), generator=g)
    index[:100] = 4_999  # (and some targets receive nothing)
    index = index.sort().values if sorted else index
    out = random_values((6_000,), torch.float64, g, reduce)
    want = reference.index_scatter_reduce(0, index, src, reduce, out=out.clone(), include_self=include_self)
    names, got = launched(
        lambda: scatterx.index_scatter_reduce(0, index, src, reduce, sorted, out=out, include_self=include_self)
    )
    assert names == ["serial"] and got is out
    torch.testing.assert_close(out, want, rtol=1e-12, atol=1e-12)
    before = out.clone()
    bad = index.clone()
    bad[-1] = 6_000
    with pytest.raises(IndexError, match=r"index\[49999\]=6000 is out of range"):
        scatterx.index_scatter_reduce(0, bad, src, reduce, sorted, out=out, include_self=include_self)
    assert torch.equal(out, before)


def test_dense_order_names_the_layout_of_permuted_views_only():
    from scatterx.backends.cpu._arguments import dense_order

    x = torch.randn(4, 5, 6)
    assert dense_order(x) is None  # contiguous
    assert dense_order(x.permute(2, 0, 1)) == (1, 2, 0)  # memory order: dim 1 (size 4), then dim 2, then dim 0
    assert dense_order(x.permute(2, 0, 1)[..., :3]) is None  # a gap between rows: a copy
    assert dense_order(torch.randn(5, 1).expand(5, 3)) is None  # overlapping elements
    assert dense_order(torch.randn(1, 5).t()) is None  # contiguous as torch sees it (a dim of size 1)


@pytest.mark.parametrize("sorted", [True, False])
@pytest.mark.parametrize("reduce", REDUCES)
def test_a_permuted_src_is_reduced_as_it_lies_with_the_bits_of_its_contiguous_copy(reduce, sorted):
    """A transposed or permuted ``src`` is not copied (``dense_order``): the kernels reduce along the permuted dim and
    the result comes back in the caller's order of dims, contiguous, bit for bit what the contiguous copy gives --
    on both paths: the small path, and the general one's routes."""
    g = torch.Generator().manual_seed(13)
    for shape, n, small in (((3, 4, 5), 9, True), ((3, 20, 50), 30, True), ((3, 20, 50), 30, False)):
        for order in itertools.permutations(range(3)):
            src = random_values(shape, torch.float32, g, reduce).permute(order)
            for dim in range(3):
                index = torch.randint(0, n, (src.size(dim),), generator=g)
                index = index.sort().values if sorted else index
                with routes.tuned(**({} if small else dict(small_call_elements=0))):
                    got = scatterx.index_scatter_reduce(dim, index, src, reduce, sorted, dim_size=n)
                    want = scatterx.index_scatter_reduce(dim, index, src.contiguous(), reduce, sorted, dim_size=n)
                assert got.is_contiguous() and got.shape == want.shape
                assert torch.equal(bits(got), bits(want)), (order, dim)


def test_the_lanes_limit_is_half_the_l2_cache_sysfs_names(tmp_path):
    """``lanes_max_acc_bytes`` follows the machine: half the L2 that Linux's sysfs gives (lanes paid up to 256 KB on
    a 512 KB L2 and up to 1.5 MB on a 2 MB one), 256 KB where none is given."""

    def cache(index, level, kind, size):
        entry = tmp_path / "cpu0" / "cache" / f"index{index}"
        entry.mkdir(parents=True)
        for name, text in (("level", level), ("type", kind), ("size", size)):
            (entry / name).write_text(f"{text}\n")

    assert routes.l2_cache_bytes(tmp_path) is None  # no cache directory
    cache(0, 1, "Data", "48K")
    cache(1, 1, "Instruction", "32K")
    assert routes.l2_cache_bytes(tmp_path) is None  # no level 2
    cache(2, 2, "Unified", "2048K")
    cache(3, 3, "Unified", "32M")
    assert routes.l2_cache_bytes(tmp_path) == 2 << 20
    l2 = routes.l2_cache_bytes()
    assert T.lanes_max_acc_bytes == (l2 // 2 if l2 else 256 << 10)


def test_the_reductions_keep_a_threshold_of_their_own_only_on_the_pool(monkeypatch):
    """A pool launch costs 50-150 us, one on torch's OpenMP team a few: the memory-bound reductions wait for more
    work before going parallel on the pool only."""
    if openmp.runtime() is not None:
        assert routes.reduce_minimum(T) is None
    monkeypatch.setitem(openmp._state, "runtime", None)
    assert routes.reduce_minimum(T) == T.reduce_parallel_min_elements


def test_an_unknown_route_or_threshold_is_refused_with_the_valid_names():
    with pytest.raises(ValueError, match=r"unknown CPU route 'fastest'.*gather"), routes.force("fastest"):
        pass
    why = r"unknown CPU threshold.*chunk_per_thread.*chunks_per_thread"
    with pytest.raises(TypeError, match=why), routes.tuned(chunk_per_thread=2):
        pass
    for value in ("big", 2.5, True):  # (not a threshold: the route choice's comparison would fail naming nothing)
        must = r"Tuning.lanes_max_acc_bytes must be an int"
        with pytest.raises(TypeError, match=must), routes.tuned(lanes_max_acc_bytes=value):
            pass
    assert routes.forced() is None and routes.tuning() is routes.TUNING


@pytest.mark.parametrize("dtype", SUPPORTED_DTYPES)
def test_a_small_call_from_a_base_is_serial_with_the_general_routes_bits(dtype):
    """The functional form with a base (the planner's scatters into data): a small call takes the serial route,
    every reduction and include_self gives the gather route's bits, and the base is never written."""
    from scatterx.ops import index_scatter_reduce_from

    g = torch.Generator().manual_seed(5)
    src = random_values((2, 50, 4), dtype, g, "sum")
    base = random_values((2, 7, 4), dtype, g, "sum")
    before = base.clone()
    index = torch.randint(0, 7, (45,), generator=g)
    for reduce in REDUCES:
        for include_self in (True, False):
            with routes.recording() as log:
                got = index_scatter_reduce_from(1, index, src, reduce, None, base, include_self)
            assert [launch.route for launch in log] == [Route.SERIAL.value]
            with routes.force(Route.GATHER):
                want = index_scatter_reduce_from(1, index, src, reduce, None, base, include_self)
            assert torch.equal(bits(got), bits(want)), (reduce, include_self)
    bad = index.clone()
    bad[-1] = 7
    with pytest.raises(IndexError):
        index_scatter_reduce_from(1, bad, src, "sum", None, base)
    assert torch.equal(bits(base), bits(before))


def test_the_counting_sort_places_positions_on_one_thread_below_the_l2_with_the_same_permutation(torch_threads):
    """``segments`` of an unsorted index: the placing pass on one thread while the permutation fits in L2 (two
    threads' writes shared cache lines), on all of them above -- the same stable permutation either way."""
    g = torch.Generator().manual_seed(15)
    index = torch.randint(0, 5_000, (60_000,), generator=g)  # (past the parallel threshold: 2 histogram chunks)
    want = torch.sort(index, stable=True).indices
    for limit in (0, 1 << 30):
        with routes.tuned(positions_serial_max_bytes=limit):
            ptr, perm = cpu.segments(index, 5_000, False)
        assert torch.equal(perm, want)
        assert torch.equal(
            ptr, torch.cat([torch.zeros(1, dtype=torch.int64), torch.bincount(index, minlength=5_000).cumsum(0)])
        )
    l2 = routes.l2_cache_bytes()
    assert T.positions_serial_max_bytes == (l2 if l2 else 512 << 10)
