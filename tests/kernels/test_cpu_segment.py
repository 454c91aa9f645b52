"""The segment kernel (``kernels/cpu/segment.py``) called directly: its streamed writes (``stream=True``: a scratch
row written once by non-temporal stores) give the bits of its plain writes for every reduction x native dtype x
gathered or not x ``include_self`` x empty segments filled or kept, and write nothing outside the output.
``stream_row`` itself is checked against a plain copy."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from scatterx._reductions import BY_NAME
from scatterx.kernels.cpu import numpy_view, storage_code
from scatterx.kernels.cpu._memory import STREAM_ALIGN, store_fence, stream_row
from scatterx.kernels.cpu.segment import segment_reduce
from strategies import REDUCES, random_values

NATIVE_DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64]
SENTINEL = 7


def bits(t: torch.Tensor) -> torch.Tensor:
    if t.dtype.is_floating_point:
        return t.view({4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def aligned_with_guards(numel: int, dtype: torch.dtype, fill):
    """``(buffer, view)``: ``view`` holds ``numel`` elements starting at a multiple of ``STREAM_ALIGN`` bytes,
    with at least ``STREAM_ALIGN`` bytes of ``buffer`` on each side of it (the guards)."""
    per_block = STREAM_ALIGN // torch.empty((), dtype=dtype).element_size()
    buffer = torch.full((numel + 4 * per_block,), fill, dtype=dtype)
    skip = next(k for k in range(per_block, 2 * per_block)
                if (buffer.data_ptr() + k * buffer.element_size()) % STREAM_ALIGN == 0)
    return buffer, buffer[skip:skip + numel]


def guards_untouched(buffer: torch.Tensor, view: torch.Tensor) -> bool:
    start = (view.data_ptr() - buffer.data_ptr()) // buffer.element_size()
    outside = torch.cat([buffer[:start], buffer[start + view.numel():]])
    return bool((outside == SENTINEL).all())


def run_kernel(src, ptr, perm, base, reduce, include_self, fill_empty, stream, in_place):
    """The kernel into an aligned, guarded output: ``(result, guards untouched)``. ``in_place``: ``base`` is the
    output itself (``out=`` with its values taking part)."""
    outer, n, inner = src.shape
    num_segments = ptr.numel() - 1
    buffer, out = aligned_with_guards(outer * num_segments * inner, src.dtype, SENTINEL)
    out = out.view(outer, num_segments, inner)
    if in_place:
        out.copy_(base)
    initial = out if in_place else base
    bounds = np.array([0, num_segments // 2, num_segments], dtype=np.int64)
    segment_reduce(
        numpy_view(src), np.empty(0, np.int32) if perm is None else perm.numpy(), ptr.numpy(), bounds,
        numpy_view(initial), numpy_view(out), BY_NAME[reduce].code, storage_code(src.dtype), perm is not None,
        include_self, fill_empty, 8, stream,
    )
    return out.clone(), guards_untouched(buffer, out)


@settings(max_examples=60, deadline=None)
@given(
    reduce=st.sampled_from(REDUCES), dtype=st.sampled_from(NATIVE_DTYPES), outer=st.integers(1, 3),
    n=st.integers(0, 40), num_segments=st.integers(1, 9), blocks=st.integers(1, 3), gather=st.booleans(),
    mode=st.sampled_from(["fill", "base", "base_self", "in_place_self"]), seed=st.integers(0, 2**31 - 1),
)
def test_streamed_writes_give_the_plain_writes_bits(reduce, dtype, outer, n, num_segments, blocks, gather, mode,
                                                    seed):
    g = torch.Generator().manual_seed(seed)
    inner = blocks * STREAM_ALIGN // torch.empty((), dtype=dtype).element_size()  # rows of whole 64-byte blocks
    src = random_values((outer, n, inner), dtype, g, reduce)
    if dtype.is_floating_point:
        src[torch.rand(src.shape, generator=g) < 0.1] = -0.0
        src[torch.rand(src.shape, generator=g) < 0.02] = float("nan")
    rows = torch.randint(0, num_segments, (n,), generator=g)
    ptr = torch.zeros(num_segments + 1, dtype=torch.int64)
    ptr[1:] = torch.bincount(rows, minlength=num_segments).cumsum(0)
    perm = torch.randperm(n, generator=g).to(torch.int32) if gather else None
    base = random_values((outer, num_segments, inner), dtype, g, reduce)
    include_self = mode in ("base_self", "in_place_self")
    fill_empty = mode == "fill"
    args = (src, ptr, perm, base, reduce, include_self, fill_empty)
    plain, plain_guards = run_kernel(*args, stream=False, in_place=mode == "in_place_self")
    streamed, streamed_guards = run_kernel(*args, stream=True, in_place=mode == "in_place_self")
    assert plain_guards and streamed_guards
    assert torch.equal(bits(streamed), bits(plain))


@pytest.mark.parametrize("dtype", NATIVE_DTYPES)
def test_stream_row_copies_a_row_into_place(dtype):
    per_block = STREAM_ALIGN // torch.empty((), dtype=dtype).element_size()
    outer, rows, inner = 2, 3, 3 * per_block
    buffer, out = aligned_with_guards(outer * rows * inner, dtype, SENTINEL)
    out = out.view(outer, rows, inner)
    row = torch.arange(inner).to(dtype)

    from numba import njit

    @njit
    def write(out, row):
        stream_row(out, 1, 2, row)
        store_fence()

    write(numpy_view(out), numpy_view(row))
    want = torch.full((outer, rows, inner), SENTINEL, dtype=dtype)
    want[1, 2] = row
    assert torch.equal(out, want)
    assert guards_untouched(buffer, out)
