"""The runs of a sorted index (``kernels/cpu/_runs.py``), called directly: ``run_start`` finds the start of a
position's run, and ``reduce_runs`` writes exactly a chunk's targets -- each run's value, 0 in the gaps -- with the
bits of a plain loop that combines each run in position order (integer sums wrapping at each step, as torch's)."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernel_calls import SENTINEL
from numba import njit

from scatterx._reductions import BY_NAME
from scatterx.kernels.cpu import NATIVE
from scatterx.kernels.cpu._runs import reduce_runs, run_start


def _reducer(name):
    code = BY_NAME[name].code

    @njit
    def reduce(src, index, out, lo, hi, first, last):
        reduce_runs(src, index, out, lo, hi, first, last, code, NATIVE)

    return reduce


REDUCERS = {name: _reducer(name) for name in ("sum", "mean", "amax")}


def _plain(src, index, lo, hi, first, last, name, dtype):
    """The chunk's targets ``[first, last)`` as a plain loop computes them (torch ops, element by element)."""
    want = {}
    for i in range(lo, hi):
        want.setdefault(int(index[i]), []).append(src[i])
    out = torch.zeros(last - first, dtype=dtype)
    for t, values in want.items():
        acc = values[0].clone()
        for v in values[1:]:
            acc = acc + v if name in ("sum", "mean") else torch.maximum(acc, v)
        if name == "mean":
            acc = acc // len(values) if not dtype.is_floating_point else acc / len(values)
        out[t - first] = acc.to(dtype)
    return out


@given(
    counts=st.lists(st.integers(0, 5), min_size=1, max_size=30),
    cut=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    name=st.sampled_from(sorted(REDUCERS)),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.int32]),
)
def test_reduce_runs_writes_its_targets_with_the_plain_loop_s_bits(counts, cut, name, dtype):
    index = torch.repeat_interleave(torch.arange(len(counts)), torch.tensor(counts))
    m = index.numel()
    # chunks are cut at run starts (as the runs kernel cuts them)
    lo, hi = (int(torch.searchsorted(index, index[p])) if p < m else m for p in sorted(int(c * m) for c in cut))
    first = int(index[lo]) if 0 < lo < m else 0
    last = int(index[hi]) if hi < m else len(counts)
    g = torch.Generator().manual_seed(m)
    src = (torch.randn(m, generator=g) * 4).to(dtype)
    if dtype == torch.int32 and m:
        src[0] = 2**31 - 1  # a sum past 2**31 wraps at each step, as torch's
    out = torch.full((len(counts) + 2,), SENTINEL, dtype=dtype)
    REDUCERS[name](src.numpy(), index.numpy(), out.numpy()[1:-1], lo, hi, first, last)
    want = torch.full_like(out, SENTINEL)
    want[1 + first : 1 + last] = _plain(src, index, lo, hi, first, last, name, dtype)
    assert torch.equal(out.view(-1).to(torch.float64).isnan(), want.to(torch.float64).isnan())
    assert torch.equal(out, want), (index[lo:hi], src[lo:hi])


@pytest.mark.parametrize("low", [0, 2])
def test_run_start_finds_the_first_position_of_a_run(low):
    index = np.array([0, 0, 1, 1, 1, 3, 4, 4], np.int64)
    for p in range(low, len(index)):
        want = max(low, int(np.searchsorted(index, index[p])))
        assert run_start(index, low, p) == want
