"""kernels/gpu/_codegen.py: the Triton restatement of the reduction table, checked against the table itself --
its codes, ``combine`` and ``reduce_rows`` on special values (bit for bit against the table's Python
``combine``), and ``finalize``'s integer mean (floor, as torch's). Runs on CUDA, else in Triton's interpreter."""

import math

import numpy as np
import pytest
import torch

from scatterx._reductions import REDUCTIONS
from scatterx.kernels.gpu import available

pytestmark = pytest.mark.skipif(not available(), reason="triton is not installed")

if available():
    import triton
    import triton.language as tl

    from scatterx.kernels.gpu import _codegen

    @triton.jit
    def _combine_kernel(a_ptr, x_ptr, out_ptr, rows_ptr, n, REDUCE: tl.constexpr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        mask = i < n
        a = tl.load(a_ptr + i, mask=mask)
        x = tl.load(x_ptr + i, mask=mask)
        tl.store(out_ptr + i, _codegen.combine(a, x, REDUCE), mask=mask)
        pair = tl.join(a, x).trans(1, 0)  # a [2, BLOCK] tile: row 0 = a, row 1 = x
        tl.store(rows_ptr + i, _codegen.reduce_rows(pair, REDUCE), mask=mask)

    @triton.jit
    def _mean_kernel(acc_ptr, count_ptr, out_ptr, n, IS_INT: tl.constexpr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        mask = i < n
        acc = tl.load(acc_ptr + i, mask=mask)
        count = tl.load(count_ptr + i, mask=mask, other=1)
        tl.store(out_ptr + i, _codegen.finalize(acc, count, True, IS_INT), mask=mask)


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def test_codes_are_the_table_s():
    for red in REDUCTIONS:
        assert getattr(_codegen, red.name.upper()).value == red.code


def _special(dtype):
    if dtype.is_floating_point:
        return torch.tensor([math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.0, 1e-40, 7.0], dtype=dtype)
    info = torch.iinfo(dtype)
    return torch.tensor([info.min, info.max, -1, 0, 1, 3, -7], dtype=dtype)


def _bits(t):
    return t.view(torch.int64 if t.element_size() == 8 else torch.int32)


def _same_bits(got, want) -> bool:
    """Bit for bit -- the sign of a zero included -- except a NaN's payload: which NaN an invalid operation makes
    is the hardware's (NVIDIA GPUs make 0x7fffffff, x86 and NumPy 0x7fc00000), and torch leaves it unspecified."""
    same = _bits(got) == _bits(want)
    if got.dtype.is_floating_point:
        same |= got.isnan() & want.isnan()
    return bool(same.all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64], ids=str)
@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.name)
def test_combine_and_reduce_rows_are_the_table_s_combine(red, dtype):
    values = _special(dtype)
    acc, x = (t.flatten() for t in torch.meshgrid(values, values, indexing="ij"))
    n = acc.numel()
    out, rows = torch.empty_like(acc), torch.empty_like(acc)
    args = [t.to(DEVICE) for t in (acc, x, out, rows)]
    _combine_kernel[(1,)](*args, n, REDUCE=red.code, BLOCK=triton.next_power_of_2(n))
    with np.errstate(all="ignore"):
        want = torch.from_numpy(
            np.array([red.combine(a, b) for a, b in zip(acc.numpy(), x.numpy())], dtype=acc.numpy().dtype)
        )
    assert _same_bits(args[2].cpu(), want), red.name
    # a two-row tile reduced over its rows: the same as one combine (up to NaN payloads and the sign of
    # a sum of zeros, which a tree reduction may order either way)
    got_rows = args[3].cpu()
    same = (got_rows == want) | (got_rows.isnan() & want.isnan()) if dtype.is_floating_point else got_rows == want
    assert bool(same.all()), red.name


def test_integer_mean_rounds_down_like_torch():
    acc = torch.tensor([-3, 3, -4, 7, 0, -1], dtype=torch.int64)
    count = torch.tensor([2, 2, 2, 2, 3, 3], dtype=torch.int32)
    out = torch.empty_like(acc)
    args = [t.to(DEVICE) for t in (acc, count, out)]
    _mean_kernel[(1,)](*args, 6, IS_INT=True, BLOCK=8)
    assert args[2].cpu().tolist() == torch.div(acc, count, rounding_mode="floor").tolist()


if available():

    @triton.jit
    def _prefers_kernel(x_ptr, best_ptr, out_ptr, n, REDUCE: tl.constexpr, BLOCK: tl.constexpr):
        i = tl.arange(0, BLOCK)
        mask = i < n
        x = tl.load(x_ptr + i, mask=mask)
        best = tl.load(best_ptr + i, mask=mask)
        tl.store(out_ptr + i, _codegen.prefers(x, best, REDUCE).to(tl.int8), mask=mask)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64], ids=str)
@pytest.mark.parametrize("red", [r for r in REDUCTIONS if r.prefers is not None], ids=lambda r: r.name)
def test_prefers_is_the_table_s(red, dtype):
    values = _special(dtype)
    x, best = (t.flatten() for t in torch.meshgrid(values, values, indexing="ij"))
    out = torch.empty(x.numel(), dtype=torch.int8)
    args = [t.to(DEVICE) for t in (x, best, out)]
    _prefers_kernel[(1,)](*args, x.numel(), REDUCE=red.code, BLOCK=triton.next_power_of_2(x.numel()))
    want = [int(bool(red.prefers(a, b))) for a, b in zip(x.tolist(), best.tolist())]
    assert args[2].cpu().tolist() == want, red.name
