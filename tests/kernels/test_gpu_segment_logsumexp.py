"""The GPU log-sum-exp kernel (``kernels/gpu/segment_logsumexp.py``), on CUDA or through Triton's interpreter,
through the backend against the reference, with -inf, +inf and NaN: both flavours, gathered rows, every float
dtype."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_gpu_backend
from strategies import segment_problems

from scatterx import reference
from scatterx.kernels.cpu.segment_logsumexp import LOG_SOFTMAX, LOGSUMEXP
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the interpreter warns on inf - inf
@settings(max_examples=15)
@given(
    segment_problems(dtypes=FLOATS, max_outer=2, max_segments=5, max_size=5),
    st.sampled_from(["logsumexp", "log_softmax"]),
    st.floats(0, 1),
    st.integers(0, 2**31 - 1),
)
def test_matches_the_reference(problem, flavour, specials, seed):
    src, ptr, perm = problem
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(src.shape, generator=g)
    src = src.clone()
    src[u < specials * 0.2] = -float("inf")
    src[(u > 0.99) & (u < 0.995)] = float("inf")
    src[u >= 0.995] = float("nan")
    code = LOGSUMEXP if flavour == "logsumexp" else LOG_SOFTMAX
    with on_gpu_backend() as (gpu, device):
        got = gpu.segment_logsumexp(
            src.to(device), ptr.to(device), None if perm is None else perm.to(device), 1, code, 1e-12
        )
    assert_matches(got, reference.segment_logsumexp(src, ptr, 1, perm, 1e-12, flavour), "sum")
