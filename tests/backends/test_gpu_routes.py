"""``backends/gpu/routes.py``: the route choice, read from the reduction table and torch's determinism flag, and a
forced route that cannot serve a call refused by name."""

import pytest
import torch

import scatterx
from scatterx._reductions import REDUCTIONS, resolve
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@pytest.mark.parametrize(
    "reduce, sorted, expected",
    [
        ("sum", True, "segments"),
        ("amax", True, "segments"),
        ("sum", False, "atomic"),
        ("mean", False, "atomic"),
        ("prod", False, "sort"),
        ("amax", False, "sort"),
        ("amin", False, "sort"),
    ],
)
def test_route_per_reduction_and_order(reduce, sorted, expected):
    from scatterx.backends.gpu import routes

    assert routes.choose_route(resolve(reduce), sorted, deterministic=False).value == expected


def test_atomics_only_where_the_table_allows_them():
    from scatterx.backends.gpu import routes

    for red in REDUCTIONS:
        assert (routes.choose_route(red, False, False) is routes.Route.ATOMIC) == red.atomic


def test_deterministic_algorithms_make_unsorted_sum_sort():
    from scatterx.backends.gpu import routes

    assert routes.choose_route(resolve("sum"), False, deterministic=True) is routes.Route.SORT
    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert routes.route_for(resolve("sum"), False) is routes.Route.SORT
    finally:
        torch.use_deterministic_algorithms(before)


def test_a_forced_route_is_taken_or_refused_by_name():
    from scatterx.backends.gpu import routes

    with routes.force(routes.Route.SORT):
        assert routes.route_for(resolve("sum"), False) is routes.Route.SORT
    with routes.force(routes.Route.ATOMIC), pytest.raises(ValueError, match=r"'atomic'.*amax has no atomic form"):
        routes.route_for(resolve("amax"), False)
    with routes.force(routes.Route.SEGMENTS), pytest.raises(ValueError, match=r"'segments'.*needs a sorted index"):
        routes.route_for(resolve("sum"), False)
    assert routes.route_for(resolve("sum"), False) is routes.Route.ATOMIC  # the block is over


def test_a_tile_size_no_kernel_can_take_is_refused_by_tuned():
    """``max_elements`` below one row of the widest feature block, or not a power of two, would launch a block of no
    rows (or of a size Triton refuses): ``tuned`` says so before anything runs; the sizes a sweep takes pass."""
    from scatterx.backends.gpu import routes

    for size in (64, 100, 1000, 0, 2048.0, True):
        with pytest.raises(ValueError, match="max_elements must be a power of two"), routes.tuned(max_elements=size):
            pass
    for size in (128, 512, 4096):
        with routes.tuned(max_elements=size) as t:
            assert t.max_elements == size
    with routes.tuned(programs_per_sm=3) as t:  # other fields alone: the default tile stands
        assert t.max_elements == routes.TUNING.max_elements


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the sync debug mode is CUDA's")
def test_no_op_syncs_with_the_host():
    """Forward and backward of the ops on CUDA run under ``torch.cuda.set_sync_debug_mode("error")``: any call
    that waits for the device (a ``.item()``, a host copy, an output whose size is read from the device) raises.
    The documented syncs are left out: no ``dim_size`` (the output size is ``index.max() + 1``), ``sorted=None``
    (the planner's), ``ptr_to_index`` (its output size is ``ptr[-1]``)."""
    import scatterx

    g = torch.Generator().manual_seed(0)
    index = torch.randint(0, 50, (400,), generator=g).sort().values.cuda()
    shuffled = index[torch.randperm(400, generator=g).cuda()]
    src = torch.randn(400, 8, generator=g).cuda().requires_grad_()
    ptr = scatterx.index_to_ptr(index, 50)
    rows = torch.randint(0, 400, (400,), generator=g).cuda()
    weight = torch.rand(400, 2, generator=g).cuda()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        outs = []
        for reduce in ("sum", "mean", "amax", "prod"):
            for order, sorted_ in ((index, True), (shuffled, False)):
                outs.append(scatterx.index_scatter_reduce(0, order, src, reduce, sorted_, dim_size=50))
        outs.append(scatterx.segment_reduce(src, ptr, "amax"))
        outs.append(scatterx.gather_segment_reduce(src, ptr, rows, "sum"))
        outs.append(scatterx.gather_segment_reduce(src.view(400, 2, 4), ptr, rows, "sum", weight=weight))
        outs.append(scatterx.segment_softmax(src, index, num_segments=50, sorted=True))
        total = sum(o.float().sum() for o in outs)
        total.backward()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    torch.cuda.synchronize()
    assert src.grad is not None and bool(torch.isfinite(src.grad).all())


def test_a_segment_launch_has_at_least_two_programs(monkeypatch):
    """With one program, Inductor passes ``P`` to the fix-up kernel as the constant 1 under ``torch.compile``, and
    Triton 3.6 fails to compile it (found on an H200): every segment launch takes two programs or more, the second's
    share empty when the call is that small -- and the result stays right."""
    import sys

    from conftest import _backend

    launches = sys.modules["scatterx.backends.gpu.segment_reduce"]
    seen = []
    real = launches.launch

    def recording(kernel, grid, args, **constexprs):
        seen.append(args["P"])
        return real(kernel, grid, args, **constexprs)

    monkeypatch.setattr(launches, "launch", recording)
    backend = _backend("gpu")
    index, src = torch.tensor([0, 0, 1, 2, 2]), torch.arange(5.0).view(5, 1)
    with backend:
        got = scatterx.index_scatter_reduce(0, backend.put(index), backend.put(src), "mean", sorted=True)
    assert seen and min(seen) == 2, seen  # the reduce and the fix-up, each on two programs for five rows
    assert got.cpu().view(-1).tolist() == [0.5, 2.0, 3.5]
