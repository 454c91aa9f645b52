"""backends/gpu.py's strategy choice, read from the reduction table and torch's determinism flag."""

import pytest
import torch

from scatterx._reductions import REDUCTIONS, resolve
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@pytest.mark.parametrize(
    "reduce, sorted, expected",
    [
        ("sum", True, "segments"), ("amax", True, "segments"), ("sum", False, "atomic"), ("mean", False, "atomic"),
        ("prod", False, "sort"), ("amax", False, "sort"), ("amin", False, "sort"),
    ],
)
def test_strategy_per_reduction_and_order(reduce, sorted, expected):
    from scatterx.backends import gpu

    assert gpu.strategy(resolve(reduce), sorted) == expected


def test_atomics_only_where_the_table_allows_them():
    from scatterx.backends import gpu

    for red in REDUCTIONS:
        assert (gpu.strategy(red, False) == "atomic") == red.atomic


def test_deterministic_algorithms_make_unsorted_sum_sort():
    from scatterx.backends import gpu

    before = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        assert gpu.strategy(resolve("sum"), False) == "sort"
    finally:
        torch.use_deterministic_algorithms(before)
