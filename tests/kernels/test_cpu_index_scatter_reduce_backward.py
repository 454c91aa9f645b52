"""The amax/amin backward kernel (``kernels/cpu/index_scatter_reduce_backward.py``) through the backend's launch, on
one and several threads with segments split into small chunks, against a loop: the gradient split evenly among the
members equal to the result (ties planted), ``base``'s value counted when asked, gathered rows, every dtype."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_threads, ties_by_definition
from strategies import random_values

import scatterx
from scatterx import reference
from scatterx.backends import cpu


@settings(max_examples=50)
@given(
    st.sampled_from(["amax", "amin"]),
    st.sampled_from(scatterx.SUPPORTED_DTYPES),
    st.integers(1, 2),
    st.integers(0, 10),
    st.integers(1, 3),
    st.integers(1, 5),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.sampled_from([1, 2]),
    st.integers(0, 2**31 - 1),
)
def test_ties_split_the_gradient_evenly(
    reduce, dtype, outer, n, inner, segments, sorted, with_base, count_base, threads, seed
):
    g = torch.Generator().manual_seed(seed)
    src = random_values((outer, n, inner), dtype, g, reduce).clamp(-2, 2).round()  # few values: ties
    index = torch.randint(0, segments, (n,), generator=g)
    if sorted:
        index = index.sort().values
    base = random_values((outer, segments, inner), dtype, g, reduce).clamp(-2, 2).round() if with_base else None
    result = reference.index_scatter_reduce(
        1, index, src, reduce, dim_size=segments, out=None if base is None else base.clone()
    )
    grad = random_values(result.shape, dtype, g, "sum")
    with on_threads(threads):
        grad_src, ties = cpu.tie_backward(grad, src, index, result, base, 1, sorted, count_base)
    want_grad, want_ties = ties_by_definition(grad, src, index, result, base, count_base)
    assert torch.equal(ties.double(), want_ties)
    tol = 0 if not dtype.is_floating_point else (1e-2 if dtype.itemsize == 2 else 1e-6)
    torch.testing.assert_close(grad_src.double(), want_grad.to(dtype).double(), atol=tol, rtol=tol)
