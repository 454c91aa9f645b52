"""The atomic kernels of the GPU's unsorted sum and mean (``kernels/gpu/index_scatter_reduce_atomic.py``), on CUDA
or through Triton's interpreter: through the backend against the reference (every atomic reduction, ``base`` with
and without include_self, half types accumulating in float32), and called directly: targets out of range are
skipped (the device-side checks run separately), so the kernel stays inside its buffers whatever the index holds."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_gpu_backend
from strategies import random_values

import scatterx
from scatterx import reference
from scatterx._reductions import REDUCTIONS
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")
ATOMIC = [r for r in REDUCTIONS if r.atomic]


@settings(max_examples=12)
@given(
    st.sampled_from(ATOMIC),
    st.sampled_from(scatterx.SUPPORTED_DTYPES),
    st.integers(0, 9),
    st.integers(1, 4),
    st.integers(1, 5),
    st.sampled_from(["new", "base", "base_self"]),
    st.integers(0, 2**31 - 1),
)
def test_matches_the_reference(red, dtype, n, inner, segments, mode, seed):
    g = torch.Generator().manual_seed(seed)
    src = random_values((n, inner), dtype, g, red.name)
    index = torch.randint(0, segments, (n,), generator=g)
    base = None if mode == "new" else random_values((segments, inner), dtype, g, red.name)
    with on_gpu_backend() as (gpu, device), gpu.routes.force(gpu.routes.Route.ATOMIC):
        got = gpu.index_scatter_reduce(
            src.to(device),
            index.to(device),
            0,
            red,
            False,
            segments,
            base=None if base is None else base.to(device),
            include_self=mode == "base_self",
        )
    want = reference.index_scatter_reduce(
        0,
        index,
        src,
        red.name,
        dim_size=segments,
        out=None if base is None else base.clone(),
        include_self=mode == "base_self",
    )
    assert_matches(got, want, red.name)


def test_targets_out_of_range_are_skipped_and_counted():
    """Entries outside ``[0, S)`` add nothing anywhere (rows 3 to 5 of ``acc`` lie past the 3 targets: a guard
    band), and their count lands in counts[S]; the finish kernel turns it into the flag counts[S + 1]."""
    from scatterx.kernels.gpu import index_scatter_reduce_atomic as kernels

    with on_gpu_backend() as (_, device):
        acc = torch.zeros(6, 2, device=device)
        counts = torch.zeros(7, dtype=torch.int32, device=device)
        src = torch.ones(4, 2, device=device)
        index = torch.tensor([0, 3, -1, 1], device=device)  # 3 is out of range for the first 3 rows of acc
        kernels.atomic_scatter_kernel[(1,)](src, index, acc, counts, 4, 4, 3, 2, BLOCK_E=4, BLOCK_F=2)
        out = torch.empty(3, 2, device=device)
        kernels.finish_kernel[(1,)](
            acc, counts, out, out, 3, 2, 6, False, False, False, REDUCE=0, IS_INT=False, BLOCK=8
        )
    assert acc.cpu().tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    assert counts.cpu().tolist() == [1, 1, 0, 2, 0, 0, 0]  # two out of range; the flag: not good
    assert out.cpu().tolist() == [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
