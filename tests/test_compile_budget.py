"""The compile budget's own counting (``compile_budget.py``): it sees every kernel this process compiled, with its
variants, and its report totals them against the budget."""

import compile_budget
import numpy as np

from scatterx.kernels.cpu.segments import index_bound


def test_a_new_variant_is_counted_under_its_kernel():
    before = {name: n for name, n, _ in compile_budget.variants()}.get("segments.index_bound_kernel", 0)
    index_bound(np.array([1, 2], dtype=np.int64))
    index_bound(np.array([1, 2], dtype=np.uint8))  # a dtype the backend never passes: one more variant
    after = {name: n for name, n, _ in compile_budget.variants()}["segments.index_bound_kernel"]
    assert after >= 2 and after >= before


def test_a_compile_is_timed_and_a_variant_loaded_from_the_cache_is_not():
    from scatterx.kernels.cpu._compile_lock import compile_seconds

    index_bound(np.array([1, 2], dtype=np.int16))  # compiled by some process of this run, or loaded
    (seconds,) = [s for name, sig, s in compile_budget.compiled() if "int16" in sig and "index_bound" in name]
    key = next((k for k in compile_seconds if k[0] == "segments.index_bound_kernel" and "int16" in k[1]), None)
    assert seconds == (compile_seconds[key] if key else 0.0)
    assert key is None or seconds > 0


def test_the_report_totals_variants_and_seconds_against_the_budget():
    rows = compile_budget.count([("a.kernel", "(x,)", 2.0), ("a.kernel", "(x,)", 1.5), ("a.kernel", "(y,)", 0.0)])
    assert rows == [("a.kernel", 2, 3.5)]  # one signature compiled by two processes: one variant, both compiles
    lines = compile_budget.report([("a.kernel", 3, 4.25), ("b.kernel", 2, 0.0)])
    assert lines[1].split() == ["a.kernel", "3", "4.2"] and lines[2].split() == ["b.kernel", "2", "0.0"]
    assert lines[-1].split()[:3] == ["total", "5", "4.2"] and f"budget {compile_budget.BUDGET}" in lines[-1]
