"""The compile budget's own counting (``compile_budget.py``): it sees every kernel this process compiled, with its
variants, and its report totals them against the budget."""

import compile_budget
import numpy as np
from numba import njit

from scatterx.kernels.cpu.segments import index_bound


def test_a_new_variant_is_counted_under_its_kernel():
    before = {name: n for name, n, _ in compile_budget.variants()}.get("segments.index_bound_kernel", 0)
    index_bound(np.array([1, 2], dtype=np.int64))
    index_bound(np.array([1, 2], dtype=np.uint8))  # a dtype the backend never passes: one more variant
    after = {name: n for name, n, _ in compile_budget.variants()}["segments.index_bound_kernel"]
    assert after >= 2 and after >= before


def test_a_compile_is_timed_once_and_reported_under_its_kernel():
    """A variant compiled in this process is timed and its seconds reach the budget's rows; calling it again (or
    compiling the signature again, as a second key for it would: a kernel without a disk cache) keeps that time.
    A kernel without a disk cache, so that it compiles here on every run, warm cache or not."""
    from scatterx.kernels.cpu._codegen import Kernel
    from scatterx.kernels.cpu._compile_lock import compile_seconds, load_or_compile

    @njit(cache=False)
    def _doubled(x):
        return x * 2

    kernel = Kernel(_doubled)
    try:
        assert kernel(np.int64(21)) == 42
        ((key, seconds),) = [(k, s) for k, s in compile_seconds.items() if k[0] == "test_compile_budget._doubled"]
        assert seconds > 0
        kernel(np.int64(1))
        load_or_compile(kernel.dispatcher, next(iter(kernel.dispatcher.overloads)))  # compiled already: not timed
        assert compile_seconds[key] == seconds
        rows = {name: (n, s) for name, n, s in compile_budget.variants()}
        assert rows["test_compile_budget._doubled"] == (1, seconds)
    finally:
        Kernel.all.remove(kernel)


def test_the_report_totals_variants_and_seconds_against_the_budget():
    rows = compile_budget.count([("a.kernel", "(x,)", 2.0), ("a.kernel", "(x,)", 1.5), ("a.kernel", "(y,)", 0.0)])
    assert rows == [("a.kernel", 2, 3.5)]  # one signature compiled by two processes: one variant, both compiles
    lines = compile_budget.report([("a.kernel", 3, 4.25), ("b.kernel", 2, 0.0)])
    assert lines[1].split() == ["a.kernel", "3", "4.2"] and lines[2].split() == ["b.kernel", "2", "0.0"]
    assert lines[-1].split()[:3] == ["total", "5", "4.2"] and f"budget {compile_budget.BUDGET}" in lines[-1]
