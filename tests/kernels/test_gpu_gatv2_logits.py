"""The GPU GATv2 kernels (``kernels/gpu/gatv2_logits.py``), on CUDA or through Triton's interpreter, through the
backend: the logits against the reference, their gradients for one end's rows and for ``att`` against autograd
through the reference."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_gpu_backend

from scatterx import reference
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@settings(max_examples=10)
@given(
    st.sampled_from([torch.float32, torch.float64]),
    st.integers(1, 4),
    st.integers(1, 2),
    st.integers(1, 4),
    st.lists(st.integers(0, 4), min_size=1, max_size=4),
    st.integers(0, 2**31 - 1),
)
def test_logits_and_gradients_match_the_reference(dtype, rows, heads, channels, sizes, seed):
    g = torch.Generator().manual_seed(seed)
    ptr = torch.tensor([0] + sizes).cumsum(0)
    a = torch.randn(rows, heads, channels, generator=g, dtype=torch.float64).to(dtype)
    b = torch.randn(len(sizes), heads, channels, generator=g, dtype=torch.float64).to(dtype)
    att = torch.randn(heads, channels, generator=g, dtype=torch.float64).to(dtype)
    index = torch.randint(0, rows, (int(ptr[-1]),), generator=g)
    grad = torch.randn(index.numel(), heads, generator=g, dtype=torch.float64).to(dtype)
    tol = dict(atol=1e-5, rtol=1e-4) if dtype == torch.float32 else dict(atol=1e-10, rtol=1e-10)
    with on_gpu_backend() as (gpu, device):

        def put(t):
            return t.to(device)

        logits = gpu.gatv2_logits(put(ptr), put(index), put(a), put(b), put(att), 0.2)
        grad_b, grad_att = gpu.gatv2_grad(put(b), put(a), put(att), put(ptr), put(index), put(grad), 0.2, True)
    torch.testing.assert_close(logits.cpu(), reference.gatv2_logits(ptr, index, a, b, att, 0.2), **tol)
    b_ = b.detach().double().requires_grad_()
    att_ = att.detach().double().requires_grad_()
    (reference.gatv2_logits(ptr, index, a.double(), b_, att_, 0.2) * grad.double()).sum().backward()
    torch.testing.assert_close(grad_b.cpu(), b_.grad.to(dtype), **tol)
    torch.testing.assert_close(grad_att.cpu(), att_.grad.to(dtype), **tol)
