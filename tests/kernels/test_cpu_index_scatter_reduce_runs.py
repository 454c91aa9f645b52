"""The runs kernel (``kernels/cpu/index_scatter_reduce_runs.py``) called directly: the segment kernel's bits for
every reduction x dtype x chunking x shape (one-element rows of one slice: the two streams; of many slices with
long runs: the lanes; wider rows, plain and streamed), and on a bad index a report with nothing written outside the
output."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import bits, guarded, segment_kernel
from strategies import REDUCES, SUPPORTED_DTYPES, random_values

from scatterx._reductions import BY_NAME
from scatterx.kernels.cpu import launch, numpy_view, storage_code
from scatterx.kernels.cpu._memory import STREAM_ALIGN
from scatterx.kernels.cpu.index_scatter_reduce_runs import index_scatter_reduce_runs


def run_runs(src3, index, num_targets, reduce, nchunks, stream=False, threads=1):
    """The kernel into a guarded output: ``(bad chunks, out, guards intact)``."""
    outer, _, inner = src3.shape
    out, intact = guarded((outer, num_targets, inner), src3.dtype, align=stream)
    m = index.numel()
    bad = launch(
        index_scatter_reduce_runs,
        None,
        nchunks,
        threads,
        numpy_view(src3.contiguous()),
        index.long().numpy(),
        numpy_view(out),
        step=-(-m // nchunks),
        reduce=BY_NAME[reduce].code,
        storage=storage_code(src3.dtype),
        stream=stream,
    )
    return bad, out, intact()


def sorted_index(g, n, num_targets, hubs):
    """A sorted index; ``hubs``: a few targets take most positions, so runs span several nominal chunks (and
    chunks are empty)."""
    high = min(num_targets, 2) if hubs else num_targets
    index = torch.randint(0, high, (n,), generator=g).sort().values
    return index * (num_targets - 1) // max(high - 1, 1) if hubs else index


@settings(max_examples=60)
@given(
    reduce=st.sampled_from(REDUCES),
    dtype=st.sampled_from(SUPPORTED_DTYPES),
    n=st.integers(1, 60),
    num_targets=st.integers(1, 12),
    shape=st.sampled_from([(1, 1), (2, 1), (9, 1), (17, 1), (2, 3), (5, 16), (1, 33)]),
    hubs=st.booleans(),
    stream=st.booleans(),
    threads=st.sampled_from([1, 2]),
    data=st.data(),
    seed=st.integers(0, 2**31 - 1),
)
def test_gives_the_segment_kernel_s_bits(reduce, dtype, n, num_targets, shape, hubs, stream, threads, data, seed):
    outer, inner = shape
    g = torch.Generator().manual_seed(seed)
    stream = stream and inner > 1 and dtype.itemsize != 2  # what the backend checks: native types, ...
    if stream:  # ... rows of whole 64-byte blocks
        inner = STREAM_ALIGN // dtype.itemsize
    src = random_values((outer, n, inner), dtype, g, reduce)
    if dtype.is_floating_point:
        src[torch.rand(src.shape, generator=g) < 0.2] = -0.0  # signed zeros: an identity of +0.0 would show
    index = sorted_index(g, n, num_targets, hubs)
    nchunks = data.draw(st.integers(1, n))
    bad, got, intact = run_runs(src, index, num_targets, reduce, nchunks, stream, threads)
    assert bad == 0 and intact
    assert torch.equal(bits(got), bits(segment_kernel(src, index, num_targets, reduce)))


def spoiled(index: torch.Tensor, where: int, value) -> torch.Tensor:
    """A sorted ``index`` with one bad entry at ``where``: ``value``, or ``"decrease"`` (below its predecessor,
    or above its successor at position 0)."""
    index = index.clone()
    if value == "decrease":
        if where == 0:
            index[0] = index[1] + 1
        else:
            index[where] = index[where - 1] - 1
    else:
        index[where] = value
    return index


@pytest.mark.parametrize("shape", [(1, 1), (3, 1), (9, 1), (2, 16)])  # 9 slices of long runs: the lanes
@pytest.mark.parametrize("where", [0, 5, 11, 19])  # first position, inside a chunk, chunk boundaries, last
@pytest.mark.parametrize("value", [-1, -(2**40), 6, 2**40, "decrease"])
def test_a_bad_entry_is_reported_and_nothing_lands_outside_the_output(shape, where, value):
    outer, inner = shape
    num_targets = 6
    index = torch.arange(20) * num_targets // 20  # sorted, ~3.3 positions a target
    if outer == 9:
        index = torch.arange(20) * 2 // 20 * 3  # 10 positions a run: the lanes
    index = spoiled(index, where, value)
    src = torch.ones(outer, 20, inner)
    for nchunks in (1, 2, 4, 7, 20):
        for stream in (False, True) if inner == 16 else (False,):
            bad, _, intact = run_runs(src, index, num_targets, "sum", nchunks, stream)
            assert bad > 0, nchunks
            assert intact, nchunks
