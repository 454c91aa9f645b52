"""The memory intrinsics of the CPU kernels (``kernels/cpu/_memory.py``): ``stream_row`` writes exactly one row
(checked against a plain copy, guard cells around), a fence after it; the prefetches change nothing."""

import numpy as np
import pytest
import torch
from kernel_calls import SENTINEL, guarded
from numba import njit

from scatterx.kernels.cpu import numpy_view
from scatterx.kernels.cpu._memory import STREAM_ALIGN, prefetch_row, prefetch_write, store_fence, stream_row

NATIVE_DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64]


@njit
def _write(out, row):
    stream_row(out, 1, 2, row)
    store_fence()


@pytest.mark.parametrize("dtype", NATIVE_DTYPES)
def test_stream_row_copies_a_row_into_place(dtype):
    per_block = STREAM_ALIGN // dtype.itemsize
    outer, rows, inner = 2, 3, 3 * per_block
    out, intact = guarded((outer, rows, inner), dtype, align=True)
    row = torch.arange(inner).to(dtype)

    _write(numpy_view(out), numpy_view(row))
    want = torch.full((outer, rows, inner), SENTINEL, dtype=dtype)
    want[1, 2] = row
    assert torch.equal(out, want)
    assert intact()


@njit
def _prefetch(a3, a1):
    for r in range(a3.shape[1]):
        prefetch_row(a3, 0, r)
    for k in range(a1.shape[0]):
        prefetch_write(a1, k)


def test_prefetches_change_nothing():
    a3 = np.arange(24.0).reshape(2, 3, 4)
    a1 = np.arange(5.0)
    _prefetch(a3, a1)
    assert (a3.reshape(-1) == np.arange(24.0)).all() and (a1 == np.arange(5.0)).all()
