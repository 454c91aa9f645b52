"""kernels/cpu/_codegen.py: the steps every Numba kernel is generated from, checked directly against the table and
against torch -- ``combine`` against the table's Python ``combine`` on special values, ``identity`` against the
table's, and the half-precision ``load``/``store`` bit for bit against torch's conversions (every float16 and
bfloat16 bit pattern, and float32 values around every rounding boundary that matters)."""

import math
import re

import numpy as np
import pytest
import torch
from numba import literally, njit

from scatterx._reductions import REDUCTIONS
from scatterx.kernels.cpu import _codegen
from scatterx.kernels.cpu import segments as segment_kernels
from scatterx.kernels.cpu._codegen import choose, combine, finalize, identity, load, prefers, store


@njit
def _combine_all(code, acc, x, out):
    literally(code)
    for i in range(acc.shape[0]):
        out[i] = combine(code, acc[i], x[i])


@njit(error_model="numpy")
def _combine_in_place(code, acc, x):
    literally(code)
    for i in range(x.shape[0]):
        for j in range(acc.shape[0]):
            acc[j] = combine(code, acc[j], x[i, j])


@njit
def _identity_of(code, like):
    literally(code)
    return identity(code, like)


@njit
def _load_all(storage, bits, out):
    literally(storage)
    for i in range(bits.shape[0]):
        out[i] = load(storage, bits[i])


@njit
def _store_all(storage, values, out):
    literally(storage)
    for i in range(values.shape[0]):
        out[i] = store(storage, values[i])


FLOATS = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1.5, -2.0, 1e-40, -3.4e38, 7.0]


def _special(dtype):
    if np.issubdtype(dtype, np.floating):
        return np.array(FLOATS, dtype=dtype)
    info = np.iinfo(dtype)
    return np.array([info.min, info.max, -1, 0, 1, 3, -7], dtype=dtype)


def _bits(a):
    return a.view(np.int64 if a.itemsize == 8 else np.int32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=str)
@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.name)
def test_combine_is_the_table_s_combine_on_special_values(red, dtype):
    values = _special(dtype)
    acc, x = (a.ravel() for a in np.meshgrid(values, values, indexing="ij"))
    got = np.empty_like(acc)
    with np.errstate(all="ignore"):
        _combine_all(red.code, acc, x, got)
        want = np.array([red.combine(a, b) for a, b in zip(acc, x)], dtype=dtype)
    np.testing.assert_array_equal(_bits(got), _bits(want))  # bit for bit: NaN, -0.0 and wrap-around included


@pytest.mark.parametrize("dtype", [np.float32, np.int64], ids=str)
@pytest.mark.parametrize("red", [r for r in REDUCTIONS if r.selects], ids=lambda r: r.name)
def test_a_selecting_combine_in_place_stores_unconditionally(red, dtype):
    # ``a[j] = combine(a[j], x)`` is every kernel's accumulation; when ``combine`` may return ``a[j]`` itself, LLVM
    # would store only when ``x`` wins -- a masked store once vectorised, microcoded on AVX2 (twice sum's time).
    # float32: the NaN-propagating select; int64: a select with no AVX2 max instruction. (The check reads the
    # machine code for AVX/AVX2's ``vmaskmov``/``vpmaskmov``; on a CPU without AVX it passes either way, and
    # AVX-512's masked ``vmovups {k}`` is left alone: it runs at full speed.)
    values = _special(dtype)
    x = np.stack([values, values[::-1]] * 8)
    acc = x[0].copy()
    _combine_in_place(red.code, acc, x[1:])
    want = x[0].copy()
    with np.errstate(all="ignore"):
        for row in x[1:]:
            want = np.array([red.combine(a, b) for a, b in zip(want, row)], dtype=dtype)
    np.testing.assert_array_equal(_bits(acc), _bits(want))
    signature = next(
        s
        for s in _combine_in_place.overloads
        if s[0].literal_value == red.code and str(s[1].dtype) == np.dtype(dtype).name
    )
    assert "maskmov" not in _combine_in_place.inspect_asm(signature)


@njit(error_model="numpy")
def _reduce_rows_of(code, storage, x, out):
    """A kernel's loop in small: every step (``identity``, ``load``, ``combine``, ``finalize``, ``store``) once."""
    literally(code)
    literally(storage)
    acc = np.empty(x.shape[1], np.float32)
    for j in range(x.shape[1]):
        acc[j] = identity(code, acc)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            acc[j] = combine(code, acc[j], load(storage, x[i, j]))
    for j in range(x.shape[1]):
        out[j] = store(storage, finalize(code, acc[j], x.shape[0]))


@pytest.mark.parametrize("storage", [_codegen.F16, _codegen.BF16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.name)
def test_the_steps_are_inlined_into_the_loops_that_call_them(red, storage):
    """The steps are ordinary Numba functions (typed once, not inlined into each caller's Numba IR, which cost a
    third of every variant's compile): LLVM must inline them, or every element would be a call and no loop would
    vectorise. The optimised code holds no call to a function of the package; and the loop's
    result is the steps' own (float32 accumulation, one rounding)."""
    dtype = torch.float16 if storage == _codegen.F16 else torch.bfloat16
    x = torch.linspace(-3, 5, 64 * 9).view(9, 64).to(dtype)
    out = torch.empty(64, dtype=dtype)
    _reduce_rows_of(red.code, storage, x.view(torch.int16).numpy(), out.view(torch.int16).numpy())
    widened = x.float().numpy()
    want = np.full(64, red.identity(torch.float32), np.float32)
    for row in widened:  # the table's combine, in float32, row after row
        want = np.array([red.combine(a, b) for a, b in zip(want, row)], np.float32)
    if red.divide_by_count:
        want = want / np.float32(x.shape[0])
    assert torch.equal(out.view(torch.int16), torch.from_numpy(want).to(dtype).view(torch.int16))
    signature = next(
        s for s in _reduce_rows_of.overloads if s[0].literal_value == red.code and s[1].literal_value == storage
    )
    _assert_no_step_is_called(_reduce_rows_of, signature)


def _assert_no_step_is_called(dispatcher, signature):
    # the optimised LLVM IR (the machine code calls through registers, with no names); every call to a function of
    # the package is a step left uninlined (mangled names: _ZN8scatterx...), the test's own function is not
    calls = re.findall(r" call [^@\n]*@\"?([\w.$]+)", dispatcher.inspect_llvm(signature))
    steps = [c for c in calls if c.startswith("_ZN8scatterx")]
    assert calls and not steps, f"calls left in the loop: {steps}"


@njit(error_model="numpy")
def _select_rows_of(code, x, best, arg):
    """The arg-reductions' loop in small: ``prefers`` and ``choose``."""
    literally(code)
    for i in range(x.shape[0]):
        for j in range(x.shape[1]):
            take = prefers(code, x[i, j], best[j])
            best[j] = choose(take, x[i, j], best[j])
            arg[j] = choose(take, i, arg[j])


@pytest.mark.parametrize("red", [r for r in REDUCTIONS if r.prefers is not None], ids=lambda r: r.name)
def test_the_selecting_steps_are_inlined_too(red):
    x = np.array([[1.0, np.nan, 3.0], [2.0, 0.0, 3.0], [-1.0, 5.0, 3.0]], np.float32)
    best = x[0].copy()
    arg = np.zeros(3, np.int64)
    _select_rows_of(red.code, x[1:], best, arg)
    want_best, want_arg = x[0].copy(), np.zeros(3, np.int64)
    for i, row in enumerate(x[1:]):
        for j in range(3):
            if red.prefers(row[j], want_best[j]):
                want_best[j], want_arg[j] = row[j], i
    np.testing.assert_array_equal(best, want_best)
    np.testing.assert_array_equal(arg, want_arg)
    signature = next(s for s in _select_rows_of.overloads if s[0].literal_value == red.code)
    _assert_no_step_is_called(_select_rows_of, signature)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64], ids=str)
@pytest.mark.parametrize("red", REDUCTIONS, ids=lambda r: r.name)
def test_identity_is_the_table_s_and_neutral_bit_for_bit(red, dtype):
    value = _identity_of(red.code, np.empty(1, dtype))
    torch_dtype = torch.from_numpy(np.empty(0, dtype)).dtype
    assert _bits(np.array([value], dtype))[0] == _bits(np.array([red.identity(torch_dtype)], dtype))[0]
    values = _special(dtype)
    got = np.empty_like(values)
    with np.errstate(all="ignore"):
        _combine_all(red.code, np.full_like(values, value), values, got)
    np.testing.assert_array_equal(_bits(got), _bits(values))


@pytest.mark.parametrize(
    "storage, dtype", [(_codegen.F16, torch.float16), (_codegen.BF16, torch.bfloat16)], ids=["float16", "bfloat16"]
)
def test_load_widens_every_half_bit_pattern_as_torch_does(storage, dtype):
    bits = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16)
    got = np.empty(bits.numel(), np.float32)
    _load_all(storage, bits.numpy(), got)
    want = bits.view(dtype).float().numpy()
    np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))


@pytest.mark.parametrize(
    "storage, dtype", [(_codegen.F16, torch.float16), (_codegen.BF16, torch.bfloat16)], ids=["float16", "bfloat16"]
)
def test_store_rounds_like_torch_bit_for_bit(storage, dtype):
    """Every float32 pattern near each half value (the halfway points: ties to even), inf, NaN, overflow,
    subnormals and both zeros."""
    halves = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(dtype).float()
    finite = halves[torch.isfinite(halves)]
    around = finite.view(torch.int32).unsqueeze(1) + torch.arange(-3, 4, dtype=torch.int32)  # neighbours in bits
    step = torch.tensor([2**12 if dtype == torch.float16 else 2**15], dtype=torch.int32)  # the halfway points
    halfway = torch.cat([finite.view(torch.int32) + step, finite.view(torch.int32) - step])
    specials = torch.tensor(
        [math.inf, -math.inf, math.nan, -0.0, 0.0, 1e-45, -1e-45, 65504.0, 65520.0, 3.4e38, -3.4e38]
    )
    values = torch.cat([around.flatten().view(torch.float32), halfway.view(torch.float32), specials])
    got = np.empty(values.numel(), np.int16)
    _store_all(storage, values.numpy(), got)
    want = values.to(dtype)
    got_t = torch.from_numpy(got).view(dtype)
    nan = want.isnan()
    assert torch.equal(got_t.isnan(), nan)
    assert torch.equal(got_t[~nan].view(torch.int16), want[~nan].view(torch.int16))


def test_a_key_shared_by_two_signatures_is_caught():
    """A caller's key for ``Kernel.entry`` must determine the types of the arguments: the suite holds every call it
    makes against its variant (``Kernel.check_keys``, set in conftest), and the check catches a shared key."""
    assert _codegen.Kernel.check_keys
    kernel = segment_kernels.sorted_index_to_ptr
    index, ptr = np.array([0, 0, 1], np.int64), np.zeros(3, np.int64)
    counter = np.array([0, 1], np.int64)
    key = ("test: a key without the dtypes",)
    kernel.keyed(key, counter, index, ptr, 3)
    counter[:] = (0, 1)
    with pytest.raises(AssertionError, match="misses what tells them apart"):
        kernel.keyed(key, counter, index.astype(np.int32), ptr, 3)


def test_flags_are_passed_by_name_and_bound_in_the_kernel_s_order():
    """A launch or call passes a kernel's arrays by position and its flags and codes by name; the suite fails a call
    site that passes more than ``POSITIONAL_SCALARS`` scalars by position (checked with ``Kernel.check_keys``), and
    a name the kernel lacks or a parameter left out is a TypeError before anything runs."""
    from scatterx.kernels.cpu.launcher import launch

    kernel = segment_kernels.histograms  # (counter, index, counts, step, check_order)
    index, counts = np.array([0, 0, 2], np.int64), np.zeros((1, 3), np.int64)
    assert kernel.bind((index, counts), {"check_order": True, "step": 3}, skip=1) == (index, counts, 3, True)
    assert launch(kernel, None, 1, 1, index, counts, step=3, check_order=True) == 0
    assert counts.tolist() == [[2, 0, 1]]
    with pytest.raises(TypeError, match="unexpected keyword argument 'order'"):
        launch(kernel, None, 1, 1, index, counts, step=3, check_order=True, order=True)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'check_order'"):
        launch(kernel, None, 1, 1, index, counts, step=3)
    kernel.check_positional((index, counts, 3, True))  # two scalars by position: allowed
    with pytest.raises(AssertionError, match="3 scalars by position"):
        kernel.check_positional((index, counts, 3, True, 1))
    with pytest.raises(AssertionError, match="3 scalars by position"):
        launch(segment_kernels.sorted_index_to_ptr, None, 1, 1, index, 3, 3, 3)
