"""The GPU arg-reduce kernel (``kernels/gpu/segment_arg_reduce.py``), on CUDA or through Triton's interpreter,
through the backend against the reference: both selecting reductions, every dtype, gathered rows, a base, the
start values and fill rules torch_scatter's functions use."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import bits, on_gpu_backend
from strategies import random_values, segment_problems

from scatterx import reference
from scatterx._reductions import BY_NAME
from scatterx.kernels.cpu.segment_arg_reduce import FILL_EMPTY, FILL_NONE, FILL_UNSELECTED
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")
FILLS = {"none": FILL_NONE, "unselected": FILL_UNSELECTED, "empty": FILL_EMPTY}


@settings(max_examples=15)
@given(
    segment_problems(reduce="amax", max_outer=2, max_segments=5, max_size=5),
    st.sampled_from(["amax", "amin"]),
    st.sampled_from(sorted(FILLS)),
    st.booleans(),
    st.booleans(),
)
def test_matches_the_reference(problem, reduce, fill, with_base, finite_start):
    src, ptr, perm = problem
    outer, n, inner = src.shape
    base = (
        random_values((outer, ptr.numel() - 1, inner), src.dtype, torch.Generator().manual_seed(n), "amax")
        if with_base
        else None
    )
    dtype = src.dtype
    if finite_start:
        info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
        start = info.max if reduce == "amin" else info.min
    else:
        start = BY_NAME[reduce].identity(torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype)
    with on_gpu_backend() as (gpu, device):

        def put(t):
            return None if t is None else t.to(device)

        values, arg = gpu.segment_arg_reduce(
            put(src), put(ptr), put(perm), 1, BY_NAME[reduce], put(base), start, FILLS[fill], n
        )
    want_values, want_arg = reference.segment_arg_reduce(src, ptr, reduce, 1, perm, base, finite_start, fill)
    assert torch.equal(bits(values.cpu()), bits(want_values))
    assert torch.equal(arg.cpu(), want_arg)
