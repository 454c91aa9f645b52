"""The log-sum-exp kernel (``kernels/cpu/segment_logsumexp.py``) through the backend's launch, on one and several
threads with segments split into small chunks, against the reference on random problems with -inf, +inf and NaN:
both flavours (torch_scatter's ``scatter_logsumexp`` and ``scatter_log_softmax`` normaliser), gathered rows, every
float dtype."""

import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_threads
from strategies import segment_problems

from scatterx import reference
from scatterx.backends import cpu
from scatterx.kernels.cpu.segment_logsumexp import LOG_SOFTMAX, LOGSUMEXP

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@settings(max_examples=60)
@given(
    segment_problems(dtypes=FLOATS),
    st.sampled_from(["logsumexp", "log_softmax"]),
    st.floats(0, 1),
    st.sampled_from([1, 2]),
    st.integers(0, 2**31 - 1),
)
def test_matches_the_reference(problem, flavour, specials, threads, seed):
    src, ptr, perm = problem
    g = torch.Generator().manual_seed(seed)
    u = torch.rand(src.shape, generator=g)
    src = src.clone()
    src[u < specials * 0.2] = -float("inf")
    src[(u > 0.99) & (u < 0.995)] = float("inf")
    src[u >= 0.995] = float("nan")
    code = LOGSUMEXP if flavour == "logsumexp" else LOG_SOFTMAX
    with on_threads(threads):
        got = cpu.segment_logsumexp(src, ptr, perm, 1, code, 1e-12)
    assert_matches(got, reference.segment_logsumexp(src, ptr, 1, perm, 1e-12, flavour), "sum")
