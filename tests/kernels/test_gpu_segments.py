"""The search between a sorted index and CSR offsets (``kernels/gpu/segments.py``) against ``torch.searchsorted``:
both sides, index -> ptr and ptr -> the segment of each row, with repeated values, empty segments and ranges
that start past the array's first entry."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from kernel_calls import on_gpu_backend

from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")


@given(st.lists(st.integers(0, 30), max_size=60), st.integers(0, 40), st.booleans(), st.integers(0, 2))
def test_matches_torch_searchsorted(values, queries, right, start):
    from scatterx.kernels.gpu.segments import searchsorted_kernel

    values = torch.tensor(sorted(values), dtype=torch.int64)
    start = min(start, values.numel())
    length = values.numel() - start
    want = torch.searchsorted(values[start:], torch.arange(queries), right=right)
    with on_gpu_backend() as (_, device):
        out = torch.full((queries,), -1, dtype=torch.int64, device=device)
        if queries:
            searchsorted_kernel[(-(-queries // 16),)](
                values.to(device), length, start, out, queries, max(length, 1).bit_length(), right, BLOCK=16
            )
    assert torch.equal(out.cpu(), want)


def test_the_backend_converts_both_ways():
    from scatterx.backends.gpu.segments import rows_to_segments, sorted_ptr

    index = torch.tensor([1, 1, 1, 4, 4, 6])
    with on_gpu_backend() as (_, device):
        ptr = sorted_ptr(index.to(device), 8)
        back = rows_to_segments(ptr, index.numel())
    assert ptr.tolist() == [0, 0, 3, 3, 3, 5, 5, 6, 6]
    assert back.cpu().tolist() == index.tolist()
