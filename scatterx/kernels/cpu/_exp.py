"""``exp`` for the CPU kernels, in operations a loop vectorises: Numba's ``math.exp`` is a call into libm per element
(no SVML with pip's llvmlite), 2 ns an element against torch's 0.5, and it was most of a softmax's time. A building
block, not a kernel: compiled into the kernels that call it, so it is one of the files the test suite's Numba cache
is keyed on (``tests/conftest.py``).

The method is the textbook one. ``x = k ln2 + r`` with ``k`` the nearest integer to ``x / ln2`` and ``|r| <= ln2 / 2``
(``ln2`` split in a high part with few bits, so that ``k * high`` is exact, and the rest), ``exp(r)`` by its Taylor
series to the degree where the next term is below a twentieth of an ulp (7 for float32, 13 for float64), and ``2^k``
made from its bits, in two factors so that results that underflow to subnormals or overflow to infinity round
once. NaN stays NaN, ``-inf`` gives 0, ``+inf`` gives ``inf``. Within 1 ulp of libm's correctly rounded-or-nearly
results (``tests/kernels/test_cpu_exp.py``); the same bits in the vectorised body and the scalar remainder (no
contraction into fused multiply-adds: ``fastmath`` is off), so results do not depend on threads or alignment.
Measured: docs/decisions/segment-softmax.md, "A vectorised exp".
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
from llvmlite import ir
from numba import literal_unroll, types
from numba.extending import intrinsic, overload

from ._codegen import STEP_OPTIONS, _u32_as_f32

#: A kernel takes this ``exp`` in loops over at least this many features of a row (the loop that vectorises), and
#: libm's ``math.exp`` in narrower ones, where a scalar call is the faster: softmax over 100,000 rows of 1, 2, 4
#: features took 0.59, 0.82, 1.30 ms with libm's and 0.91, 1.35, 1.98 ms with this one; of 8 and 16, 1.95 and 3.14
#: ms against 1.12 and 1.60 (docs/decisions/segment-softmax.md, "A vectorised exp").
VECTOR_EXP_MIN_INNER = 8


def _ln2_split(bits: int):
    """``(high, low)``: ln 2 rounded to ``bits`` fraction bits, and the rest (from 40 digits of ln 2)."""
    with localcontext() as context:
        context.prec = 40
        ln2 = Decimal(2).ln()
        high = Decimal(round(ln2 * (1 << bits))) / (1 << bits)
        return float(high), float(ln2 - high)


def _taylor(degree: int):
    """The Taylor coefficients of ``exp`` from ``1/2!`` to ``1/degree!``, highest first (for Horner's scheme)."""
    return [1.0 / math.factorial(n) for n in range(degree, 1, -1)]


def _constants(dtype, bits: int, degree: int, low: float, high: float):
    t = np.dtype(dtype).type
    ln2_high, ln2_low = _ln2_split(bits)
    return dict(
        low=t(low),  # below: 0 (after rounding); above: inf
        high=t(high),
        log2e=t(1.0 / math.log(2.0)),
        half=t(0.5),
        one=t(1.0),
        ln2_high=t(ln2_high),
        ln2_low=t(ln2_low),
        taylor=tuple(t(c) for c in _taylor(degree)),
    )


# float32: ln2's high part has 9 significant bits, so k * high is exact for |k| < 2^15; exp(-104) rounds to 0,
# exp(89) is inf. float64: 32 bits, exact for |k| < 2^21; exp(-746) is 0, exp(710) inf.
_F32 = _constants(np.float32, 10, 7, -104.0, 89.0)
_F64 = _constants(np.float64, 32, 13, -746.0, 710.0)


@intrinsic
def _f64_from_bits(typingctx, bits):
    """The float64 whose bits are the int64 ``bits`` (float32's: ``_codegen._u32_as_f32``)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


def exp(x):
    """``e ** x`` for a float32 or float64 ``x``, in its own type (see the module's docstring)."""


def _impl(c, to_int, to_bits, bias: int, shift: int, from_bits):
    """The implementation of ``exp`` for one type's constants ``c`` (its ``2^k`` from ``bias`` and ``shift``, the
    exponent's bias and position in the type's bits; ``k`` a signed ``to_int``, its bits ``to_bits``)."""
    low, high, log2e, half, one, ln2_high, ln2_low = (
        c[n] for n in ("low", "high", "log2e", "half", "one", "ln2_high", "ln2_low")
    )
    taylor = c["taylor"]

    def impl(x):
        y = min(max(x, low), high)  # (a NaN passes through, and is returned as it is at the end)
        kf = np.floor(y * log2e + half)
        r = (y - kf * ln2_high) - kf * ln2_low
        q = taylor[0]
        for coefficient in literal_unroll(taylor[1:]):
            q = q * r + coefficient
        p = one + (r + (r * r) * q)
        k = to_int(kf)
        k1 = k >> to_int(1)
        k2 = k - k1
        scaled = (p * from_bits(to_bits((k1 + to_int(bias)) << to_int(shift)))) * from_bits(
            to_bits((k2 + to_int(bias)) << to_int(shift))
        )
        return x if x != x else scaled

    return impl


_IMPL32 = _impl(_F32, np.int32, np.uint32, 127, 23, _u32_as_f32)
_IMPL64 = _impl(_F64, np.int64, np.int64, 1023, 52, _f64_from_bits)


@overload(exp, jit_options=STEP_OPTIONS)
def _ov_exp(x):
    if x == types.float32:
        return _IMPL32
    if x == types.float64:
        return _IMPL64
    return None
