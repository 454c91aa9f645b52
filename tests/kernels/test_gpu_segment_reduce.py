"""The GPU segment kernel (``kernels/gpu/segment_reduce.py``), on CUDA or through Triton's interpreter, launched as
the backend launches it but with tiles as small as 1 x 1 (``BLOCK_E`` rows x ``BLOCK_F`` features), so that every
loop over a segment's rows and every feature block runs on small problems: against the reference for every
reduction x dtype, gathered rows, ``base`` with and without include_self, empty segments."""

import pytest
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import on_gpu_backend
from strategies import REDUCES, random_values, segment_problems

import scatterx
from scatterx import reference
from scatterx._reductions import BY_NAME, accumulator_dtype
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@settings(max_examples=30)
@given(
    st.sampled_from(REDUCES),
    st.data(),
    st.sampled_from(["new", "base", "base_self"]),
    st.sampled_from([(1, 1), (2, 4), (4, 2)]),
)
def test_matches_the_reference(reduce, data, mode, blocks):
    from scatterx.backends.gpu._launch import TL_DTYPE
    from scatterx.kernels.gpu._codegen import kernel_code
    from scatterx.kernels.gpu.segment_reduce import segment_reduce_kernel

    src, ptr, perm = data.draw(
        segment_problems(dtypes=scatterx.SUPPORTED_DTYPES, reduce=reduce, max_outer=2, max_segments=5, max_size=5)
    )
    outer, n, inner = src.shape
    segments = ptr.numel() - 1
    base = random_values((outer, segments, inner), src.dtype, torch.Generator().manual_seed(n), reduce)
    red = BY_NAME[reduce]
    acc = accumulator_dtype(src.dtype)
    with on_gpu_backend() as (_, device):
        out = torch.empty(outer, segments, inner, dtype=src.dtype, device=device)
        grid = (outer * segments * -(-inner // blocks[1]),)
        if grid[0]:
            segment_reduce_kernel[grid](
                src.to(device),
                ptr.to(device) if perm is None else perm.to(device),
                ptr.to(device),
                out if mode == "new" else base.to(device),
                out,
                n,
                segments,
                inner,
                perm is not None,
                mode != "new",
                mode == "base_self",
                red.divide_by_count,
                REDUCE=kernel_code(red),
                IDENTITY=red.identity(acc),
                ACC=TL_DTYPE[acc],
                IS_INT=not src.dtype.is_floating_point,
                BLOCK_E=blocks[0],
                BLOCK_F=blocks[1],
            )
    rows = torch.repeat_interleave(torch.arange(segments), ptr.diff())
    gathered = src if perm is None else src[:, perm]
    want = reference.index_scatter_reduce(
        1,
        rows,
        gathered,
        reduce,
        dim_size=segments,
        out=None if mode == "new" else base.clone(),
        include_self=mode == "base_self",
    )
    assert_matches(out, want, reduce)
