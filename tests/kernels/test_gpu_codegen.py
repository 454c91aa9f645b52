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


def _not_specialised(kernel):
    """The names in a kernel's ``do_not_specialize`` (a compiled kernel keeps them itself, an interpreted one in
    the arguments it was made with); None where this Triton's interpreter does not keep them (3.0)."""
    if hasattr(kernel, "do_not_specialize"):
        return set(kernel.do_not_specialize)
    if hasattr(kernel, "kwargs"):
        return set(kernel.kwargs.get("do_not_specialize") or ())
    return None


def test_every_flag_is_an_unspecialised_int32():
    """A run-time flag reaches every kernel as an int32 that Triton does not specialise: not a bool (an ``i1``
    argument, which Inductor before torch 2.13 marked "divisible by 16", and Triton 3.6's compile of that failed),
    and not one variant per value (Triton would make a constant of 1)."""
    import importlib

    from scatterx.backends.gpu._launch import FLAG, type_of
    from scatterx.backends.gpu.variants import all_variants

    assert FLAG == "i32" and type_of(True) == FLAG
    flags = 0
    for variant in all_variants():
        module, name = variant.kernel.rsplit(".", 1)
        kernel = getattr(importlib.import_module(module), name)
        for param, kind in variant.params:
            assert kind != "i1", (variant.name, param)
        listed = _not_specialised(kernel)
        for param in ("gather", "weighted", "has_base", "include_self", "divide", "mul", "want_att", "log_softmax"):
            if param in dict(variant.params):
                flags += 1
                assert dict(variant.params)[param] == FLAG, (variant.name, param)
                assert listed is None or param in listed, (variant.name, param)
    assert flags > 0


def test_a_flag_reads_as_a_boolean_from_an_int_or_a_constant():
    @triton.jit
    def _flags_kernel(out_ptr, value):
        i = tl.arange(0, 2)
        read = tl.where(i == 0, _codegen.flag(value), _codegen.flag(1))  # 1: the constant a compiler may make
        tl.store(out_ptr + i, read.to(tl.int32))
        tl.store(out_ptr + 2 + i, i + 1, mask=(i < 2) & _codegen.flag(value))  # as a mask

    device = "cuda" if torch.cuda.is_available() else "cpu"
    for value in (0, 1):
        out = torch.full((4,), -1, dtype=torch.int32, device=device)
        _flags_kernel[(1,)](out, value)
        assert out.tolist() == ([0, 1, -1, -1] if value == 0 else [1, 1, 1, 2])
