"""``kernels/cpu/_exp.py``: the kernels' ``exp`` against a nearly correctly rounded one on random and hand-picked
values -- within one ulp, NaN and the infinities as ``math.exp`` gives them, subnormal results and overflow
included. The reference: libm's ``math.exp`` for float64, and float64's rounded to float32 for float32 (NumPy's own
float32 ``exp`` is 2 ulps off at times)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from scatterx.kernels.cpu._exp import exp


@njit(cache=True, error_model="numpy")
def _exp_all(x, y):
    for i in range(x.shape[0]):  # (a loop that vectorises: the vector body and the scalar rest both run)
        y[i] = exp(x[i])


def _ulps(got, want, dtype):
    bits = np.int32 if dtype == np.float32 else np.int64
    return np.abs(got.view(bits).astype(np.int64) - want.view(bits).astype(np.int64))


def _exp64(v: float) -> float:
    try:
        return math.exp(v)
    except OverflowError:
        return math.inf


def _reference(x):
    if x.dtype == np.float32:
        with np.errstate(over="ignore", under="ignore"):
            return np.exp(x.astype(np.float64)).astype(np.float32)
    return np.array([_exp64(v) for v in x.tolist()], dtype=np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_is_within_one_ulp_of_libm_over_the_whole_range(dtype):
    rng = np.random.default_rng(0)
    top = 89.0 if dtype == np.float32 else 710.0
    bottom = -104.0 if dtype == np.float32 else -746.0
    x = np.concatenate([rng.uniform(bottom, top, 200_001), rng.standard_normal(100_003) * 3]).astype(dtype)
    got = np.empty_like(x)
    _exp_all(x, got)
    ulps = _ulps(got, _reference(x), dtype)
    assert ulps.max() <= 1, x[ulps.argmax()]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_exp_of_special_values(dtype):
    info = np.finfo(dtype)
    x = np.array(
        [np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, info.tiny, -info.tiny, 1.0, -1.0, math.log(2.0), 1e-30, -1e-30]
        + [math.log(float(info.max)), math.log(float(info.tiny)), math.log(float(info.smallest_subnormal))]
        + [math.log(float(info.max)) + 0.01, math.log(float(info.smallest_subnormal)) - 1.0, 1e30, -1e30],
        dtype=dtype,
    )
    got = np.empty_like(x)
    _exp_all(x, got)
    want = _reference(x)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    finite = ~np.isnan(want)
    assert np.array_equal(np.isinf(got[finite]), np.isinf(want[finite]))
    assert _ulps(got[finite], want[finite], dtype).max() <= 1
    assert got[4] == 1.0 and got[5] == 1.0  # exp(+-0) is exactly 1


@settings(max_examples=300)
@given(st.floats(allow_nan=True, allow_infinity=True, width=32), st.floats(allow_nan=True, allow_infinity=True))
def test_exp_of_any_float(x32, x64):
    for value, dtype in ((x32, np.float32), (x64, np.float64)):
        x = np.full(19, value, dtype=dtype)  # (longer than a vector: the vector body and the rest)
        got = np.empty_like(x)
        _exp_all(x, got)
        want = _reference(x)
        if np.isnan(want[0]):
            assert np.isnan(got).all()
        else:
            assert _ulps(got, want, dtype).max() <= 1, (value, got[0], want[0])
