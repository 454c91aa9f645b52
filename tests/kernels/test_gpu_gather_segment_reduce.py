"""The GPU weighted gather-segment kernel (``kernels/gpu/gather_segment_reduce.py``), on CUDA or through Triton's
interpreter, through the backend against the reference: every reduction x dtype, heads of several channels,
per-head weights, empty segments, rows read more than once."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_gpu_backend
from strategies import REDUCES, random_values

import scatterx
from scatterx import reference
from scatterx._reductions import BY_NAME
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@settings(max_examples=15)
@given(
    st.sampled_from(REDUCES),
    st.sampled_from(scatterx.SUPPORTED_DTYPES),
    st.integers(1, 5),
    st.integers(1, 3),
    st.integers(1, 4),
    st.lists(st.integers(0, 4), max_size=5),
    st.integers(0, 2**31 - 1),
)
def test_matches_the_reference(reduce, dtype, rows, heads, channels, sizes, seed):
    g = torch.Generator().manual_seed(seed)
    src = random_values((rows, heads, channels), dtype, g, reduce)
    ptr = torch.tensor([0] + sizes).cumsum(0)
    index = torch.randint(0, rows, (int(ptr[-1]),), generator=g)
    weight = random_values((index.numel(), heads), dtype, g, "prod")
    with on_gpu_backend() as (gpu, device):
        got = gpu.weighted_gather_segment_reduce(
            src.to(device), ptr.to(device), index.to(device), weight.to(device), BY_NAME[reduce]
        )
    want = reference.gather_segment_reduce(src, ptr, index, reduce, 0, weight)
    assert_matches(got, want, "sum" if reduce in ("amax", "amin") else reduce)  # (a product rounds first)
