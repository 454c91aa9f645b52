"""Compile-time building blocks that turn a row of the reduction table into Numba code.

The kernels call four generic steps -- ``load``, ``combine``, ``finalize``, ``store`` -- and pass the reduction and
the storage format as *literal* integers (``numba.literally``). Each step is an ``overload`` that looks the literal up
in the table and returns the matching implementation, so every (reduction, storage, dtype) gets its own straight-line
kernel with no branch on the reduction in the inner loop, and -- unlike closures made in a factory -- the result is
cached on disk by Numba (``cache=True``), keyed by the literals.

Storage formats: ``NATIVE`` arrays hold the values themselves (float32/64, int32/64). ``F16`` and ``BF16`` arrays
are int16 *views* of half-precision tensors (Numba has no half type on the CPU); ``load`` widens the bits to float32
in registers and ``store`` rounds back to nearest-even, so no float32 copy of ``src`` is ever made.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from llvmlite import ir
from numba import njit, typeof, types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.extending import intrinsic, overload

from ..._reductions import BY_CODE
from ._memory import stream_row

NATIVE, F16, BF16 = 0, 1, 2

# ``parallel=`` for the kernels: only ``prange`` loops run in parallel. The other parfor transformations (array
# expressions, np.full, reductions) add compile time -- a cold first call compiled in 3.7 s with them -- for loops
# that are small or that the kernels already parallelise themselves.
PRANGE_ONLY = dict(prange=True, comprehension=False, reduction=False, inplace_binop=False, setitem=False,
                   numpy=False, stencil=False, fusion=False)


# ---------------------------------------------------------------------------------------------- half precision
@intrinsic
def _f16_bits_to_f32(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.fpext(builder.bitcast(args[0], ir.HalfType()), ir.FloatType())

    return types.float32(types.int16), codegen


@intrinsic
def _f32_to_f16_bits(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(builder.fptrunc(args[0], ir.HalfType()), ir.IntType(16))

    return types.int16(types.float32), codegen


@intrinsic
def _u32_as_f32(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.uint32), codegen


@intrinsic
def _f32_as_u32(typingctx, value):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(32))

    return types.uint32(types.float32), codegen


@njit(inline="always", cache=True)
def _bf16_bits_to_f32(bits):
    return _u32_as_f32(np.uint32(np.uint16(bits)) << np.uint32(16))


@njit(inline="always", cache=True)
def _f32_to_bf16_bits(value):
    u = _f32_as_u32(value)
    if value != value:  # NaN: keep it a (quiet) NaN after truncation
        return np.int16(np.uint16((u >> np.uint32(16)) | np.uint32(0x40)))
    # round to nearest, ties to even -- what torch does
    u = u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))
    return np.int16(np.uint16(u >> np.uint32(16)))


def _literal(arg):
    return arg.literal_value if isinstance(arg, types.IntegerLiteral) else None


# ---------------------------------------------------------------------------------------------------- the steps
def load(storage, x):
    """Stored element -> accumulator value."""


def store(storage, value):
    """Accumulator value -> stored element."""


def combine(reduce, acc, x):
    """acc (+)= x for the reduction ``reduce``."""


def prefers(reduce, x, best):
    """Whether ``x`` strictly beats ``best`` for a selecting reduction (the table's ``prefers``; NaN never does)."""


def finalize(reduce, acc, count):
    """The value written out after ``count`` elements were combined into ``acc`` (mean divides)."""


def acc_buffer(storage, like, n):
    """A scratch array of ``n`` accumulators for elements stored like the array ``like``."""


def accumulator_for(storage, rows):
    """Accumulators for the C-contiguous ``rows`` (flat): ``rows`` itself for native types, a float32 buffer
    for half types."""


def identity(reduce, acc):
    """The reduction's neutral element, typed like the elements of the accumulator array ``acc``."""


def write_row(storage, out, o, t, acc, stream):
    """``out[o, t, :] = store(acc[:])``; for native types with ``stream`` true, by ``stream_row`` (whose
    conditions the caller has checked)."""


@overload(load, inline="always")
def _ov_load(storage, x):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, x: x
    if kind == F16:
        return lambda storage, x: _f16_bits_to_f32(x)
    if kind == BF16:
        return lambda storage, x: _bf16_bits_to_f32(x)
    return None


@overload(store, inline="always")
def _ov_store(storage, value):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, value: value
    if kind == F16:
        return lambda storage, value: _f32_to_f16_bits(np.float32(value))
    if kind == BF16:
        return lambda storage, value: _f32_to_bf16_bits(np.float32(value))
    return None


@overload(combine, inline="always")
def _ov_combine(reduce, acc, x):
    code = _literal(reduce)
    if code is None:
        return None
    step = njit(inline="always")(BY_CODE[code].combine)
    return lambda reduce, acc, x: step(acc, x)


@overload(prefers, inline="always")
def _ov_prefers(reduce, x, best):
    code = _literal(reduce)
    if code is None or BY_CODE[code].prefers is None:
        return None
    step = njit(inline="always")(BY_CODE[code].prefers)
    return lambda reduce, x, best: step(x, best)


@overload(finalize, inline="always")
def _ov_finalize(reduce, acc, count):
    code = _literal(reduce)
    if code is None:
        return None
    if not BY_CODE[code].divide_by_count:
        return lambda reduce, acc, count: acc
    if isinstance(acc, types.Integer):
        return lambda reduce, acc, count: acc // count  # floor, as torch's integer mean
    # divide in the accumulator's type: float32 / int64 would promote to a (slow, scalar) float64 division, and the
    # correctly rounded float32 quotient is the same number either way
    to_acc_type = np.dtype(str(acc)).type
    return lambda reduce, acc, count: acc / to_acc_type(count)


@overload(identity, inline="always")
def _ov_identity(reduce, acc):
    code = _literal(reduce)
    if code is None:
        return None
    dtype = np.dtype(str(acc.dtype))
    scalar = dtype.type(BY_CODE[code].identity(torch.from_numpy(np.empty(0, dtype)).dtype))  # the table's value
    return lambda reduce, acc: scalar


@overload(acc_buffer, inline="always")
def _ov_acc_buffer(storage, like, n):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, like, n: np.empty(n, like.dtype)
    if kind in (F16, BF16):
        return lambda storage, like, n: np.empty(n, np.float32)
    return None


@overload(write_row, inline="always")
def _ov_write_row(storage, out, o, t, acc, stream):
    kind = _literal(storage)
    if kind == NATIVE:
        def native(storage, out, o, t, acc, stream):
            if stream:
                stream_row(out, o, t, acc)
            else:
                for j in range(acc.shape[0]):
                    out[o, t, j] = acc[j]

        return native
    if kind in (F16, BF16):
        def half(storage, out, o, t, acc, stream):  # (never streamed)
            for j in range(acc.shape[0]):
                out[o, t, j] = store(storage, acc[j])

        return half
    return None


@overload(accumulator_for, inline="always")
def _ov_accumulator_for(storage, rows):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, rows: rows.reshape(rows.size)
    if kind in (F16, BF16):
        return lambda storage, rows: np.empty(rows.size, np.float32)
    return None


# ------------------------------------------------------------------------------------------------------ launching
class LiteralKernel:
    """Calls a Numba kernel specialised on some literal arguments, without Numba's literal dispatch per call.

    Calling a dispatcher whose function uses ``numba.literally`` costs ~10 ms a call: Numba first types the call
    with plain ``int64`` arguments, fails, and only then finds the literal specialisation. Here the signature
    (literal types for the positions named in ``literal_args``) is built directly and compiled once per process
    (a disk-cache load after the first process), and its entry point is kept for later calls.
    """

    def __init__(self, dispatcher, literal_args):
        self.dispatcher = dispatcher
        code = dispatcher.py_func.__code__
        names = code.co_varnames[: code.co_argcount]
        self._literal_positions = frozenset(names.index(a) for a in literal_args)
        self._entries = {}
        self.__doc__ = dispatcher.py_func.__doc__

    def __call__(self, *args):
        return self.keyed(tuple(self._key(i, a) for i, a in enumerate(args)), *args)

    def keyed(self, key, *args):
        """Call with a key made by the caller, which must determine the Numba type of every argument (e.g. the
        literal values and the dtypes, when every array is C-contiguous, writable and aligned): a small call's
        dispatch then costs a dict lookup instead of ``_key`` on each argument. Keep such keys apart from
        ``_key``'s tuples (e.g. start them with a string)."""
        entry = self._entries.get(key)
        if entry is None:
            sig = tuple(
                types.literal(a) if i in self._literal_positions else typeof(a) for i, a in enumerate(args)
            )
            with warnings.catch_warnings():
                # Numba's own "pedantic internal check" on the SSA of inlined overloads (the table's steps) warns
                # on correct kernels; a user should not see it on a first call
                warnings.simplefilter("ignore", NumbaIRAssumptionWarning)
                self.dispatcher.compile(sig)
            entry = self._entries[key] = self.dispatcher.overloads[sig].entry_point
        return entry(*args)

    def _key(self, position, arg):
        """What Numba's type of ``arg`` depends on, computed ~10x faster than ``numba.typeof`` (which costs ~10 us
        an array and would dominate small calls)."""
        if isinstance(arg, np.ndarray):
            f = arg.flags
            return (arg.dtype.num, arg.ndim, f.c_contiguous, f.f_contiguous, f.writeable, f.aligned)
        if position in self._literal_positions:
            return (type(arg), arg)
        return type(arg)
