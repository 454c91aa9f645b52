"""``backends/gpu/routes.py``: the route choice, read from the reduction table and torch's determinism flag, and a
forced route that cannot serve a call refused by name."""

import pytest
import torch

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
