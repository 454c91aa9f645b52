"""The GPU's amax/amin backward kernel (``kernels/gpu/index_scatter_reduce_backward.py``), on CUDA or through
Triton's interpreter, through the backend: the gradient split evenly among the members equal to the result (ties
planted), ``base``'s value counted when asked, sorted and unsorted, every dtype -- the CPU kernel's loop as oracle."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_gpu_backend, ties_by_definition
from strategies import random_values

import scatterx
from scatterx import reference
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@settings(max_examples=15)
@given(
    st.sampled_from(["amax", "amin"]),
    st.sampled_from(scatterx.SUPPORTED_DTYPES),
    st.integers(0, 8),
    st.integers(1, 3),
    st.integers(1, 4),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(0, 2**31 - 1),
)
def test_ties_split_the_gradient_evenly(reduce, dtype, n, inner, segments, sorted, with_base, count_base, seed):
    g = torch.Generator().manual_seed(seed)
    src = random_values((1, n, inner), dtype, g, reduce).clamp(-2, 2).round()  # few values: ties
    index = torch.randint(0, segments, (n,), generator=g)
    if sorted:
        index = index.sort().values
    base = random_values((1, segments, inner), dtype, g, reduce).clamp(-2, 2).round() if with_base else None
    result = reference.index_scatter_reduce(
        1, index, src, reduce, dim_size=segments, out=None if base is None else base.clone()
    )
    grad = random_values(result.shape, dtype, g, "sum")
    with on_gpu_backend() as (gpu, device):

        def put(t):
            return None if t is None else t.to(device)

        grad_src, ties = gpu.tie_backward(
            put(grad), put(src), put(index), put(result), put(base), 1, sorted, count_base
        )
    want_grad, want_ties = ties_by_definition(grad, src, index, result, base, count_base)
    assert torch.equal(ties.cpu().double(), want_ties)
    tol = 0 if not dtype.is_floating_point else (1e-2 if dtype.itemsize == 2 else 1e-6)
    torch.testing.assert_close(grad_src.cpu().double(), want_grad.to(dtype).double(), atol=tol, rtol=tol)
