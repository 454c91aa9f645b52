"""The compile budget's own counting (``compile_budget.py``): it sees every kernel this process compiled, with its
variants, and its report totals them against the budget."""

import compile_budget
import numpy as np

from scatterx.kernels.cpu.segments import index_bound


def test_a_new_variant_is_counted_under_its_kernel():
    before = dict(compile_budget.variants()).get("segments.index_bound_kernel", 0)
    index_bound(np.array([1, 2], dtype=np.int64))
    index_bound(np.array([1, 2], dtype=np.uint8))  # a dtype the backend never passes: one more variant
    after = dict(compile_budget.variants())["segments.index_bound_kernel"]
    assert after >= 2 and after >= before


def test_the_report_totals_the_variants_against_the_budget():
    lines = compile_budget.report([("a.kernel", 3), ("b.kernel", 2)])
    assert lines[1].split() == ["a.kernel", "3"] and lines[2].split() == ["b.kernel", "2"]
    assert lines[-1].split()[:2] == ["total", "5"] and f"budget {compile_budget.BUDGET}" in lines[-1]
