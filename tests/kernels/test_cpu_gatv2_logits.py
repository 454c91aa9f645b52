"""The GATv2 kernels (``kernels/cpu/gatv2_logits.py``) through the backend's launch, on one and several threads with
segments split into small chunks: the logits against the reference, their gradients for one end's rows and for
``att`` against autograd through the reference."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_threads

from scatterx import reference
from scatterx.backends import cpu

FLOATS = [torch.float32, torch.float64]


def problem(dtype, rows, segments, heads, channels, sizes, seed):
    g = torch.Generator().manual_seed(seed)
    ptr = torch.tensor([0] + sizes).cumsum(0)
    a = torch.randn(rows, heads, channels, generator=g, dtype=torch.float64).to(dtype)
    b = torch.randn(segments, heads, channels, generator=g, dtype=torch.float64).to(dtype)
    att = torch.randn(heads, channels, generator=g, dtype=torch.float64).to(dtype)
    index = torch.randint(0, rows, (int(ptr[-1]),), generator=g)
    return ptr, index, a, b, att


@settings(max_examples=40)
@given(
    st.sampled_from(FLOATS),
    st.integers(1, 5),
    st.integers(1, 3),
    st.integers(1, 4),
    st.lists(st.integers(0, 5), min_size=1, max_size=6),
    st.sampled_from([1, 2]),
    st.integers(0, 2**31 - 1),
)
def test_logits_and_gradients_match_the_reference(dtype, rows, heads, channels, sizes, threads, seed):
    ptr, index, a, b, att = problem(dtype, rows, len(sizes), heads, channels, sizes, seed)
    tol = dict(atol=1e-5, rtol=1e-4) if dtype == torch.float32 else dict(atol=1e-10, rtol=1e-10)
    with on_threads(threads):
        logits = cpu.gatv2_logits(ptr, index, a, b, att, 0.2)
        grad = torch.randn(logits.shape, generator=torch.Generator().manual_seed(seed + 1), dtype=torch.float64).to(
            dtype
        )
        grad_b, grad_att = cpu.gatv2_grad(b, a, att, ptr, index, grad, 0.2, True)
    torch.testing.assert_close(logits, reference.gatv2_logits(ptr, index, a, b, att, 0.2), **tol)
    b_ = b.detach().double().requires_grad_()
    att_ = att.detach().double().requires_grad_()
    (reference.gatv2_logits(ptr, index, a.double(), b_, att_, 0.2) * grad.double()).sum().backward()
    torch.testing.assert_close(grad_b, b_.grad.to(dtype), **tol)
    torch.testing.assert_close(grad_att, att_.grad.to(dtype), **tol)
