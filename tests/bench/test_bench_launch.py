"""The launch table of ``scatterx bench`` (``bench/launch.py``): a row per launcher, thread count and size, each a
positive time."""

from scatterx.bench import launch as launch_bench
from scatterx.kernels.cpu import openmp


def test_every_launcher_thread_count_and_size_gets_a_row():
    rows = launch_bench.measure(threads=(1, 2), sizes=(0, 1000), repeat=5)
    expected = {("serial", 1)} | {(name, 2) for name in launch_bench.launchers()}
    assert {(r["launcher"], r["threads"]) for r in rows} == expected
    assert all(r["us"] > 0 for r in rows) and {r["elements"] for r in rows} == {0, 1000}
    assert ("openmp" in launch_bench.launchers()) == (openmp.runtime() is not None)
    lines = launch_bench.table(rows)
    assert len(lines) == 3 + len(expected) and "empty" in lines[1]
