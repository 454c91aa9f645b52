"""The GPU SDDMM kernel (``kernels/gpu/sddmm.py``), on CUDA or through Triton's interpreter, through the backend
against the reference: add, mul and the dot product over channels, every dtype, several heads, empty segments."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_gpu_backend
from strategies import random_values

import scatterx
from scatterx import reference
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@settings(max_examples=15)
@given(
    st.sampled_from(["add", "mul", "dot"]),
    st.sampled_from(scatterx.SUPPORTED_DTYPES),
    st.integers(1, 5),
    st.integers(1, 3),
    st.integers(1, 5),
    st.lists(st.integers(0, 4), max_size=5),
    st.integers(0, 2**31 - 1),
)
def test_matches_the_reference(op, dtype, rows, heads, channels, sizes, seed):
    g = torch.Generator().manual_seed(seed)
    ptr = torch.tensor([0] + sizes).cumsum(0)
    a = random_values((rows, heads, channels), dtype, g, "prod")
    b = random_values((ptr.numel() - 1, heads, channels), dtype, g, "prod")
    index = torch.randint(0, rows, (int(ptr[-1]),), generator=g)
    with on_gpu_backend() as (gpu, device):
        got = gpu.sddmm(ptr.to(device), index.to(device), a.to(device), b.to(device), op)
    want = reference.sddmm(ptr, index, a, b, op)
    assert_matches(got, want if op != "dot" else want.unsqueeze(-1), "sum")
