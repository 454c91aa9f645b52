"""The segment kernel (``kernels/cpu/segment_reduce.py``) called directly: against plain loops for every reduction x
dtype x gathered or not x ``include_self`` x empty segments filled or kept, on one or two threads; its streamed
writes (``stream=True``: a scratch row written once by non-temporal stores) give the bits of its plain writes and
write nothing outside the output."""

import numpy as np
import torch
from conftest import assert_matches
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import bits, guarded, ptr_of
from strategies import REDUCES, random_values

import scatterx
from scatterx import reference
from scatterx._reductions import BY_NAME
from scatterx.kernels.cpu import launch, numpy_view, storage_code
from scatterx.kernels.cpu._memory import STREAM_ALIGN
from scatterx.kernels.cpu.segment_reduce import segment_reduce

NATIVE_DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64]


def run_kernel(src, ptr, perm, base, reduce, include_self, fill_empty, stream, in_place, threads=1):
    """The kernel into an aligned, guarded output, two chunks of segments: ``(result, guards intact)``.
    ``in_place``: ``base`` is the output itself (``out=`` with its values taking part)."""
    outer, _n, inner = src.shape
    num_segments = ptr.numel() - 1
    out, intact = guarded((outer, num_segments, inner), src.dtype, align=True)
    if in_place:
        out.copy_(base)
    initial = out if in_place else base
    bounds = np.array([0, num_segments // 2, num_segments], dtype=np.int64)
    launch(
        segment_reduce,
        None,
        outer * 2,
        threads,
        numpy_view(src),
        np.empty(0, np.int64) if perm is None else perm.numpy(),
        ptr.numpy(),
        bounds,
        numpy_view(initial),
        numpy_view(out),
        reduce=BY_NAME[reduce].code,
        storage=storage_code(src.dtype),
        gather=perm is not None,
        include_self=include_self,
        fill_empty=fill_empty,
        lookahead=8,
        stream=stream,
    )
    return out.clone(), intact()


@settings(max_examples=60)
@given(
    reduce=st.sampled_from(REDUCES),
    dtype=st.sampled_from(scatterx.SUPPORTED_DTYPES),
    outer=st.integers(1, 3),
    n=st.integers(0, 30),
    num_segments=st.integers(1, 7),
    inner=st.integers(1, 3),
    gather=st.booleans(),
    mode=st.sampled_from(["fill", "base", "base_self"]),
    threads=st.sampled_from([1, 2]),
    seed=st.integers(0, 2**31 - 1),
)
def test_matches_the_reference(reduce, dtype, outer, n, num_segments, inner, gather, mode, threads, seed):
    g = torch.Generator().manual_seed(seed)
    src = random_values((outer, n, inner), dtype, g, reduce)
    rows = torch.randint(0, num_segments, (n,), generator=g).sort().values
    perm = torch.randperm(n, generator=g) if gather else None
    base = random_values((outer, num_segments, inner), dtype, g, reduce)
    include_self, fill_empty = mode == "base_self", mode == "fill"
    got, intact = run_kernel(
        src, ptr_of(rows, num_segments), perm, base, reduce, include_self, fill_empty, False, False, threads
    )
    assert intact
    gathered = src if perm is None else src[:, perm]  # segment s reduces the rows perm[ptr[s]:ptr[s+1]]
    want = reference.index_scatter_reduce(
        1,
        rows,
        gathered,
        reduce,
        dim_size=num_segments,
        out=None if fill_empty else base.clone(),
        include_self=include_self,
    )
    assert_matches(got, want, reduce)


@settings(max_examples=60)
@given(
    reduce=st.sampled_from(REDUCES),
    dtype=st.sampled_from(NATIVE_DTYPES),
    outer=st.integers(1, 3),
    n=st.integers(0, 40),
    num_segments=st.integers(1, 9),
    blocks=st.integers(1, 3),
    gather=st.booleans(),
    mode=st.sampled_from(["fill", "base", "base_self", "in_place_self"]),
    seed=st.integers(0, 2**31 - 1),
)
def test_streamed_writes_give_the_plain_writes_bits(reduce, dtype, outer, n, num_segments, blocks, gather, mode, seed):
    g = torch.Generator().manual_seed(seed)
    inner = blocks * STREAM_ALIGN // dtype.itemsize  # rows of whole 64-byte blocks
    src = random_values((outer, n, inner), dtype, g, reduce)
    if dtype.is_floating_point:
        src[torch.rand(src.shape, generator=g) < 0.1] = -0.0
        src[torch.rand(src.shape, generator=g) < 0.02] = float("nan")
    rows = torch.randint(0, num_segments, (n,), generator=g)
    perm = torch.randperm(n, generator=g) if gather else None
    base = random_values((outer, num_segments, inner), dtype, g, reduce)
    include_self = mode in ("base_self", "in_place_self")
    fill_empty = mode == "fill"
    args = (src, ptr_of(rows.sort().values, num_segments), perm, base, reduce, include_self, fill_empty)
    plain, plain_intact = run_kernel(*args, stream=False, in_place=mode == "in_place_self")
    streamed, streamed_intact = run_kernel(*args, stream=True, in_place=mode == "in_place_self")
    assert plain_intact and streamed_intact
    assert torch.equal(bits(streamed), bits(plain))
