"""The balanced GPU segment kernels (``kernels/gpu/segment_reduce.py``), on CUDA or through Triton's interpreter,
launched as the backend launches them but with tiles as small as 1 x 1 (``BLOCK_E`` rows x ``BLOCK_F`` features)
and the events cut into 1 to 7 shares, so that every tile loop, carried segment, head, tail and feature block runs
on small problems: against the reference for every reduction x dtype, gathered rows, ``base`` with and without
include_self, empty segments; and the index check, which flags a bad index without a write outside the output."""

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


def _launch(src, ptr, index, perm, reduce, base, include_self, programs, blocks, device, out=None):
    """Both kernels over ``programs`` shares: ``(out, flag)``."""
    from scatterx.backends.gpu._launch import TL_DTYPE
    from scatterx.kernels.gpu._codegen import kernel_code
    from scatterx.kernels.gpu.segment_reduce import segment_fixup_kernel, segment_reduce_kernel

    outer, n, inner = src.shape
    segments = ptr.numel() - 1
    red = BY_NAME[reduce]
    acc = accumulator_dtype(src.dtype)
    src, ptr, index = src.to(device), ptr.to(device), index.to(device)
    perm = None if perm is None else perm.to(device)
    base = None if base is None else base.to(device)
    if out is None:
        out = torch.empty(outer, segments, inner, dtype=src.dtype, device=device)
    partials = torch.empty(2, outer, programs, inner, dtype=acc, device=device)
    meta = torch.full((1 + 3 * programs,), -7, dtype=torch.int64, device=device)
    share = max(1, -(-(index.numel() + segments) // programs))
    grid = (programs * -(-inner // blocks[1]) * outer,)
    flags = (base is not None, include_self and base is not None, red.divide_by_count)
    constexprs = dict(
        REDUCE=kernel_code(red),
        IDENTITY=red.identity(acc),
        ACC=TL_DTYPE[acc],
        IS_INT=not src.dtype.is_floating_point,
        BLOCK_E=blocks[0],
        BLOCK_F=blocks[1],
    )
    if out.numel():
        target = out if base is None else base
        segment_reduce_kernel[grid](
            src,
            index if perm is None else perm,
            src,  # (no weights)
            index,
            ptr,
            target,
            out,
            partials,
            meta,
            n,
            index.numel(),
            segments,
            inner,
            inner,  # (one head of every feature)
            share,
            programs,
            perm is not None,
            False,
            *flags,
            **constexprs,
        )
        segment_fixup_kernel[grid](ptr, target, out, partials, meta, segments, inner, programs, *flags, **constexprs)
        if red.divide_by_count and not src.dtype.is_floating_point:  # as the backend does after the kernels
            counts = (ptr.diff() + int(flags[1])).view(1, segments, 1)
            out.copy_(torch.where(counts > 0, torch.div(out, counts.clamp(min=1), rounding_mode="floor"), out))
    return out, meta[0]


@settings(max_examples=30)
@given(
    st.sampled_from(REDUCES),
    st.data(),
    st.sampled_from(["new", "base", "base_self"]),
    st.sampled_from([(1, 1), (2, 4), (4, 2)]),
    st.integers(1, 7),
)
def test_matches_the_reference(reduce, data, mode, blocks, programs):
    src, ptr, perm = data.draw(
        segment_problems(dtypes=scatterx.SUPPORTED_DTYPES, reduce=reduce, max_outer=2, max_segments=5, max_size=5)
    )
    outer, n, inner = src.shape
    segments = ptr.numel() - 1
    base = random_values((outer, segments, inner), src.dtype, torch.Generator().manual_seed(n), reduce)
    rows = torch.repeat_interleave(torch.arange(segments), ptr.diff())
    with on_gpu_backend() as (_, device):
        out, flag = _launch(
            src, ptr, rows, perm, reduce, None if mode == "new" else base, mode == "base_self", programs, blocks, device
        )
        assert rows.numel() + segments == 0 or int(flag) == 1
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


@pytest.mark.parametrize(
    "sizes",
    [
        [40],  # one segment over every share: every share a tail, the last one's head finishes it
        [0, 0, 0, 31, 0, 0, 0],  # a hub among empty segments
        [0] * 20,  # nothing but empty segments
        [1] * 30,  # a segment per row
        [3, 17, 0, 2, 9],
    ],
    ids=["one-segment", "hub", "empty", "singletons", "mixed"],
)
@pytest.mark.parametrize("programs", [1, 3, 8, 64])
def test_hand_written_layouts(sizes, programs):
    """Sums of the row numbers per segment: each row's value is its number, each segment's sum is known."""
    ptr = torch.tensor([0] + sizes).cumsum(0)
    rows = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    src = torch.arange(rows.numel(), dtype=torch.float64).view(1, -1, 1).expand(1, -1, 3).contiguous()
    want = torch.tensor([sum(range(a, b)) for a, b in zip(ptr[:-1].tolist(), ptr[1:].tolist())], dtype=torch.float64)
    with on_gpu_backend() as (_, device):
        out, flag = _launch(src, ptr, rows, None, "sum", None, False, programs, (4, 4), device)
        assert int(flag) == 1
    assert torch.equal(out.cpu()[0], want.view(-1, 1).expand(-1, 3))


@pytest.mark.parametrize(
    "index, why",
    [([0, 1, 3, 2, 3], "decreases"), ([0, 1, 4, 4, 4], "past the end"), ([-1, 0, 1, 2, 3], "negative")],
    ids=lambda x: x if isinstance(x, str) else None,
)
def test_a_bad_index_is_flagged_and_nothing_is_written_outside_the_output(index, why):
    """The kernel reads the index it is given, checks every entry and clears the flag; masked addresses keep its
    writes inside the output whatever the index holds (a guard band around the output stays as it was)."""
    index = torch.tensor(index)
    segments = 4
    src = torch.ones(1, index.numel(), 2)
    ptr = torch.searchsorted(index, torch.arange(segments + 1))  # what the backend computes, bad index or not
    with on_gpu_backend() as (_, device):
        guarded = torch.full((1, segments + 4, 2), 99.0, device=device)
        out = guarded[:, 2:-2]
        _, flag = _launch(src, ptr, index, None, "sum", None, False, 2, (2, 2), device, out=out)
        assert int(flag) == 0, why
        assert bool((guarded[:, :2] == 99).all()) and bool((guarded[:, -2:] == 99).all())


@settings(max_examples=15)
@given(
    st.sampled_from(REDUCES),
    st.sampled_from(scatterx.SUPPORTED_DTYPES),
    st.integers(1, 5),
    st.integers(1, 3),
    st.integers(1, 4),
    st.lists(st.integers(0, 4), max_size=5),
    st.integers(0, 2**31 - 1),
    st.integers(1, 5),
)
def test_weighted_gathered_rows_match_the_reference(reduce, dtype, rows, heads, channels, sizes, seed, programs):
    """The weighted form (``gather_segment_reduce`` with ``weight=``): each gathered member scaled by its per-head
    weight, heads of several channels, rows read more than once, empty segments, 1 to 5 shares."""
    from scatterx.backends.gpu import routes

    g = torch.Generator().manual_seed(seed)
    src = random_values((rows, heads, channels), dtype, g, reduce)
    ptr = torch.tensor([0] + sizes).cumsum(0)
    index = torch.randint(0, rows, (int(ptr[-1]),), generator=g)
    weight = random_values((index.numel(), heads), dtype, g, "prod")
    # (one multiprocessor of one program each, and no least share: `programs` shares whatever the size)
    with on_gpu_backend() as (gpu, device), routes.tuned(sms_without_gpu=1, programs_per_sm=programs, min_events=1):
        got = gpu.weighted_gather_segment_reduce(
            src.to(device), ptr.to(device), index.to(device), weight.to(device), BY_NAME[reduce]
        )
    want = reference.gather_segment_reduce(src, ptr, index, reduce, 0, weight)
    assert_matches(got, want, "sum" if reduce in ("amax", "amin") else reduce)  # (a product rounds first)
