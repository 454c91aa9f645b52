"""The SDDMM kernel (``kernels/cpu/sddmm.py``) through the backend's launch, on one and several threads with
segments split into small chunks, against the reference: add, mul and the dot product over channels, every dtype,
several heads, empty segments, rows read more than once."""

import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_threads
from strategies import random_values

import scatterx
from scatterx import reference
from scatterx.backends import cpu


@settings(max_examples=60)
@given(
    st.sampled_from(["add", "mul", "dot"]),
    st.sampled_from(scatterx.SUPPORTED_DTYPES),
    st.integers(1, 6),
    st.integers(1, 3),
    st.integers(1, 5),
    st.lists(st.integers(0, 5), max_size=7),
    st.sampled_from([1, 2]),
    st.integers(0, 2**31 - 1),
)
def test_matches_the_reference(op, dtype, rows, heads, channels, sizes, threads, seed):
    g = torch.Generator().manual_seed(seed)
    ptr = torch.tensor([0] + sizes).cumsum(0)
    a = random_values((rows, heads, channels), dtype, g, "prod")
    b = random_values((ptr.numel() - 1, heads, channels), dtype, g, "prod")
    index = torch.randint(0, rows, (int(ptr[-1]),), generator=g)
    with on_threads(threads):
        got = cpu.sddmm(ptr, index, a, b, op)
    want = reference.sddmm(ptr, index, a, b, op)
    assert_matches(got, want if op != "dot" else want.unsqueeze(-1), "sum")
