"""The GPU kernel-time table (``scatterx/bench/gpu_kernels.py``), run on the CPU backend at tiny shapes -- its cases
compute the same results as torch's peers, every row carries the fields ``kernels.json`` promises, the goals are
read from them -- and the host's share of a GPU call, measured with the launches stubbed."""

import json

import pytest
import torch

from scatterx.bench import gpu_kernels
from scatterx.kernels.gpu import available

TINY = (("tiny", 3_000, 300, 16, "powerlaw"), ("tiny-uniform", 3_000, 300, 16, "uniform"))


def test_each_case_computes_what_its_torch_peers_compute():
    p = gpu_kernels.problem(*TINY[0], device="cpu")
    for case, call, peers, moved in gpu_kernels.cases(p):
        ours = call()
        ours = ours[0] if isinstance(ours, tuple) else ours
        for way, fn in peers.items():
            theirs = fn()
            theirs = theirs[0] if isinstance(theirs, tuple) else theirs
            torch.testing.assert_close(ours.reshape(theirs.shape), theirs, atol=1e-4, rtol=1e-4, msg=f"{case}: {way}")
        assert moved > p.src.numel() * 4


def test_the_rows_and_the_goals(tmp_path):
    rows = gpu_kernels.run("cpu", repeat=2, shapes=TINY, log=lambda msg: None)
    fields = {"device", "case", "shape", "kernel_us", "call_us", "peak_share", "torch_kernel_us", "torch_call_us"}
    assert all(fields <= set(r) for r in rows)
    assert {r["case"] for r in rows} >= set(gpu_kernels.PEAK_GOALS)
    assert rows[-1]["case"].startswith("host") and rows[-1]["host_us"] >= 0
    goals = gpu_kernels.goals(rows)
    assert any("power-law / uniform" in what for what, *_ in goals)
    assert "goals:" in gpu_kernels.table(rows)
    path = gpu_kernels.write(rows, str(tmp_path))
    assert json.loads(path.read_text()) == rows


@pytest.mark.skipif(not available(), reason="triton is not installed")
def test_the_host_share_of_a_sorted_call_with_the_launches_stubbed():
    """Three launches a call (the offsets' search, the segment kernels); the time is printed, never asserted."""
    cost = gpu_kernels.host_cost(calls=50)
    assert cost["launches"] == 3 and cost["us"] > 0
    print(f"the GPU backend's Python per sorted-sum call, launches stubbed: {cost['us']:.1f} us")
