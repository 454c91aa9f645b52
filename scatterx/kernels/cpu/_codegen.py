"""Compile-time building blocks that turn a row of the reduction table into Numba code, and the ``Kernel`` that
compiles and calls each kernel.

The kernels call a few generic steps -- ``load``, ``combine``, ``finalize``, ``store`` and their helpers -- and
pass the reduction and the storage format as *literal* integers. Each step is an ``overload`` that looks the
literal up in the table and returns the matching implementation, so every (reduction, storage, dtype) gets its own
straight-line kernel with no branch on the reduction in the inner loop, and -- unlike closures made in a factory --
the result is cached on disk by Numba (``cache=True``), keyed by the literals.

The steps are ordinary Numba functions, not inlined into their callers' Numba IR (``inline="always"``): LLVM
inlines them when it optimises the kernel (``STEP_OPTIONS``: forced), so the inner loops hold no call and vectorise
as before, while Numba types each step once per signature instead of again at every call site -- a third of each
variant's compile (docs/decisions/compile-budget.md, "The table's steps as ordinary functions";
``tests/kernels/test_cpu_codegen.py`` checks, on small loops that call every step, that none is left a call).
``write_row``, a loop over a row, is still inlined by Numba.

Only the reduction and the storage format are literals: they decide what the inner loop computes, and a branch
on them there would cost vectorisation. Every other choice of a kernel (gather or not, include_self, streamed
stores, ...) is a run-time argument -- a branch outside the inner loop, or one that is always predicted the same
way -- since each literal value multiplies the variants compiled (each a compile on first use; see
docs/decisions/compile-budget.md).

Every kernel is ``@njit(cache=True, nogil=True, error_model="numpy")``: with Numba's default error model each
division tests its divisor to raise ``ZeroDivisionError``, and that branch keeps the loop from vectorising (see
docs/decisions/compile-budget.md).

Storage formats: ``NATIVE`` arrays hold the values themselves (float32/64, int32/64). ``F16`` and ``BF16`` arrays
are int16 *views* of half-precision tensors (Numba has no half type on the CPU); ``load`` widens the bits to float32
in registers and ``store`` rounds back to nearest-even, so no float32 copy of ``src`` is ever made.

A kernel's accumulators are either the output's own rows (native types: nothing to copy out) or a scratch row of
the accumulator type (half types, and rows written by non-temporal stores); ``accumulator``, ``in_place`` and
``write_row`` let one loop serve both.

Why this module is long: it is, with ``_memory.py``, everything the kernels are generated from -- the steps, the
half-precision conversions, the work-item counter and the ``Kernel`` that compiles them -- and the test cache is
keyed on exactly these files (``tests/conftest.py``); split further, each new file would join that key.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable, ClassVar, List

import numpy as np
import torch
from llvmlite import ir
from llvmlite.ir.instructions import Instruction
from numba import njit, typeof, types
from numba.core.errors import NumbaIRAssumptionWarning
from numba.extending import intrinsic, overload

from ..._reductions import BY_CODE
from ._compile_lock import kernel_name, load_or_compile
from ._memory import stream_row

NATIVE, F16, BF16 = 0, 1, 2

#: How every step is compiled: ``forceinline`` asks LLVM to inline it into its callers whatever its cost model says
#: (or the optimisation level: with ``NUMBA_OPT=0`` too); the error model and fastmath are fixed here, not inherited
#: from whichever kernel happened to compile a step first (a step is compiled once per signature and process, and
#: cached on disk, for every kernel that calls it). (Typed Any: Numba's stubs type each option of njit and overload.)
STEP_OPTIONS: Any = {"forceinline": True, "error_model": "numpy", "fastmath": False}


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


@intrinsic
def _freeze(typingctx, value):
    """``value`` itself, through LLVM's ``freeze``: an identity the optimiser does not look through (it costs no
    instruction). See ``_ov_combine``."""

    def codegen(context, builder, signature, args):
        frozen = Instruction(builder.block, args[0].type, "freeze", [args[0]])
        builder._insert(frozen)
        return frozen

    return value(value), codegen


@njit(cache=True, **STEP_OPTIONS)
def choose(take, x, current):
    """``x if take else current``, for a value stored back where ``current`` was loaded from: ``current`` goes
    through ``_freeze``, so the store stays unconditional (see ``_ov_combine``)."""
    return x if take else _freeze(current)  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx


@njit(cache=True, **STEP_OPTIONS)
def _bf16_bits_to_f32(bits):
    return _u32_as_f32(np.uint32(np.uint16(bits)) << np.uint32(16))  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx


@njit(cache=True, **STEP_OPTIONS)
def _f32_to_bf16_bits(value):
    u: np.uint32 = _f32_as_u32(value)  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
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


def rows_buffer(storage, like, rows, inner):
    """A scratch array of ``(rows, inner)`` accumulators for elements stored like the array ``like``."""


def accumulator_for(storage, rows):
    """Accumulators for the C-contiguous ``rows`` (flat): ``rows`` itself for native types, a float32 buffer
    for half types."""


def identity(reduce, acc):
    """The reduction's neutral element, typed like the elements of the accumulator array ``acc``."""


def in_place(storage, stream):
    """Whether a kernel accumulates in the output's rows themselves: native types not written by ``stream_row``
    (the elements are then the accumulators)."""


def accumulator(storage, rows, scratch, use_rows):
    """The 2-D accumulator array of a work item: ``rows`` (the output's rows, native types, ``use_rows``) or
    ``scratch`` (a ``rows_buffer``)."""


def write_row(storage, out, o, t, acc, a, stream):
    """``out[o, t, :] = store(acc[a, :])``; for native types with ``stream`` true, by ``stream_row`` (whose
    conditions the caller has checked; ``acc`` is then a C-contiguous scratch and ``a`` is 0)."""


@overload(load, jit_options=STEP_OPTIONS)
def _ov_load(storage, x):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, x: x
    if kind == F16:
        return lambda storage, x: _f16_bits_to_f32(x)  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
    if kind == BF16:
        return lambda storage, x: _bf16_bits_to_f32(x)
    return None


@overload(store, jit_options=STEP_OPTIONS)
def _ov_store(storage, value):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, value: value
    if kind == F16:
        return lambda storage, value: _f32_to_f16_bits(np.float32(value))  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
    if kind == BF16:
        return lambda storage, value: _f32_to_bf16_bits(np.float32(value))
    return None


@overload(combine, jit_options=STEP_OPTIONS)
def _ov_combine(reduce, acc, x):
    code = _literal(reduce)
    if code is None:
        return None
    row = BY_CODE[code]
    step = njit(row.combine, **STEP_OPTIONS)
    if row.selects:
        # A selecting combine may return ``acc`` itself, so ``a[j] = combine(a[j], x)`` stores back the value it
        # loaded when ``acc`` wins, and LLVM turns that into a store made only when ``x`` wins: a masked store
        # once vectorised. AVX-512 runs masked stores at full speed; AVX2's ``vmaskmovps`` is microcoded (the
        # kernel ran at twice sum's time on Zen 3). ``freeze`` hides that the value was loaded from where it is
        # stored, so the store stays unconditional (docs/decisions/selecting-combine.md).
        return lambda reduce, acc, x: step(_freeze(acc), x)  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
    if isinstance(acc, types.Integer):
        # in the accumulator's own type: Numba widens int32 + int32 to int64, so an accumulator kept in a register
        # (not stored into an int32 array at each step) did not wrap, and a mean divided the unwrapped sum
        to_acc_type = np.dtype(str(acc)).type
        return lambda reduce, acc, x: to_acc_type(step(acc, x))
    return lambda reduce, acc, x: step(acc, x)


@overload(prefers, jit_options=STEP_OPTIONS)
def _ov_prefers(reduce, x, best):
    code = _literal(reduce)
    rule = None if code is None else BY_CODE[code].prefers
    if rule is None:
        return None
    step = njit(rule, **STEP_OPTIONS)
    return lambda reduce, x, best: step(x, best)


@overload(finalize, jit_options=STEP_OPTIONS)
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


@overload(identity, jit_options=STEP_OPTIONS)
def _ov_identity(reduce, acc):
    code = _literal(reduce)
    if code is None:
        return None
    dtype = np.dtype(str(acc.dtype))
    scalar = dtype.type(BY_CODE[code].identity(torch.from_numpy(np.empty(0, dtype)).dtype))  # the table's value
    return lambda reduce, acc: scalar


@overload(acc_buffer, jit_options=STEP_OPTIONS)
def _ov_acc_buffer(storage, like, n):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, like, n: np.empty(n, like.dtype)
    if kind in (F16, BF16):
        return lambda storage, like, n: np.empty(n, np.float32)
    return None


@overload(rows_buffer, jit_options=STEP_OPTIONS)
def _ov_rows_buffer(storage, like, rows, inner):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, like, rows, inner: np.empty((rows, inner), like.dtype)
    if kind in (F16, BF16):
        return lambda storage, like, rows, inner: np.empty((rows, inner), np.float32)
    return None


@overload(in_place, jit_options=STEP_OPTIONS)
def _ov_in_place(storage, stream):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, stream: not stream
    if kind in (F16, BF16):
        return lambda storage, stream: False
    return None


@overload(accumulator, jit_options=STEP_OPTIONS)
def _ov_accumulator(storage, rows, scratch, use_rows):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, rows, scratch, use_rows: rows if use_rows else scratch
    if kind in (F16, BF16):
        return lambda storage, rows, scratch, use_rows: scratch
    return None


@overload(write_row, inline="always")  # (a loop over the row: LLVM would leave it a call per row)
def _ov_write_row(storage, out, o, t, acc, a, stream):
    kind = _literal(storage)
    if kind == NATIVE:

        def native(storage, out, o, t, acc, a, stream):
            if stream:
                stream_row(out, o, t, acc)  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
            else:
                for j in range(out.shape[2]):
                    out[o, t, j] = acc[a, j]

        return native
    if kind in (F16, BF16):

        def half(storage, out, o, t, acc, a, stream):  # (never streamed)
            for j in range(out.shape[2]):
                out[o, t, j] = store(storage, acc[a, j])

        return half
    return None


@overload(accumulator_for, jit_options=STEP_OPTIONS)
def _ov_accumulator_for(storage, rows):
    kind = _literal(storage)
    if kind == NATIVE:
        return lambda storage, rows: rows.reshape(rows.size)
    if kind in (F16, BF16):
        return lambda storage, rows: np.empty(rows.size, np.float32)
    return None


# ---------------------------------------------------------------------------------------------- work items
@intrinsic
def _fetch_add(typingctx, counter, value):
    """Atomically ``old = counter[0]; counter[0] += value``; returns ``old`` (``counter``: int64, C-contiguous)."""

    def codegen(context, builder, signature, args):
        array = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.atomic_rmw("add", array.data, args[1], "monotonic")

    return types.int64(counter, types.int64), codegen


@njit(cache=True, **STEP_OPTIONS)
def claim(counter):
    """The next work item of a launch, or -1 when every item is taken. ``counter``: ``[next, items]`` (int64),
    shared by the threads of the launch (``kernels.cpu.launch``)."""
    item: np.int64 = _fetch_add(counter, np.int64(1))  # type: ignore[call-arg]  # @intrinsic: Numba passes typingctx
    return item if item < counter[1] else np.int64(-1)


# ------------------------------------------------------------------------------------------------------ launching
def _binder(name: str, parameters) -> Callable:
    """``def name(p1, p2, ...): return (p1, p2, ...)`` for these parameter names (identifiers of a kernel's code)."""
    listed = ", ".join(parameters)
    namespace: dict = {}
    exec(f"def {name}({listed}):\n    return ({listed}{',' if len(parameters) == 1 else ''})\n", namespace)
    return namespace[name]


class Kernel:
    """A compiled kernel's entry points, one per variant, compiled on first use (a disk-cache load after the
    first process).

    Calling a Numba dispatcher types every array per call (``numba.typeof``), and one whose function takes
    literals (``numba.literally``) costs far more: Numba first types the call with plain integers, fails, and only
    then finds the literal specialisation (both measured in docs/decisions/reduction-table.md). Here the
    signature is built directly -- literal types for the arguments named in ``literal``, layout "A" (any strides)
    for those in ``strided`` (the element kernels read the caller's tensors through their strides: one variant
    per combination of layouts would multiply them), the arrays' own types otherwise -- and the entry point is
    kept under a key of what determines it.

    Every ``Kernel`` is listed in ``Kernel.all``: the test suite counts the variants each holds
    (``tests/compile_budget.py``).
    """

    all: ClassVar[List[Kernel]] = []
    #: hold every call's arguments against the types its key's variant was compiled for (the test suite turns this
    #: on, so that every call site it reaches is checked): a caller's key that two signatures share would run a
    #: variant compiled for other types -- a wrong memory read, not an error
    check_keys: ClassVar[bool] = False
    #: at most this many of a launch's arguments are scalars passed by position (the test suite checks it with
    #: ``check_keys``): flags and codes in a row are a swapped-argument bug waiting, so they are passed by name
    POSITIONAL_SCALARS: ClassVar[int] = 2

    def __init__(self, dispatcher, literal=(), strided=()):
        self.dispatcher = dispatcher
        code = dispatcher.py_func.__code__
        names = code.co_varnames[: code.co_argcount]
        #: the parameters, in order: what named arguments are bound to (a launched kernel's first is its counter)
        self.parameters = names
        #: per number of leading parameters skipped (0, 1), a function of the rest returning them as a tuple in
        #: order: Python's own argument binding, in C (a dict of names looked up in Python cost ~1 us a call)
        self._binders = [_binder(f"{dispatcher.py_func.__name__}_args", names[skip:]) for skip in (0, 1)]
        self._literal = frozenset(names.index(a) for a in literal)
        self._strided = frozenset(names.index(a) for a in strided)
        self._entries = {}
        self._signatures = {}
        #: per key: what ``pool.launch`` needs to run the variant on an OpenMP team (``openmp.py``), or None
        self.native: dict = {}
        self.name = kernel_name(dispatcher)
        self.__doc__ = dispatcher.py_func.__doc__
        Kernel.all.append(self)

    @property
    def variants(self) -> int:
        """Variants compiled (or loaded from the disk cache) in this process."""
        return len(self.dispatcher.overloads)

    def __call__(self, *args, **named):
        """Call on the calling thread (a kernel whose work items are all claimed by this one call, or that has
        none). As ``launch``: arrays and at most ``POSITIONAL_SCALARS`` scalars by position, the rest by name."""
        return self.keyed(None, *args, **named)

    def keyed(self, key, *args, **named):
        """Call with a key made by the caller (see ``entry``)."""
        if Kernel.check_keys:
            self.check_positional(args)
        if named:
            args = self.bind(args, named)
        return self.entry(key, args)(*args)

    def entry(self, key, args):
        """The compiled entry point for ``args``. ``key``: made by the caller, it must determine the Numba type of
        every argument (e.g. the literal values and the dtypes, when every array is C-contiguous, writable and
        aligned): a small call's dispatch then costs a dict lookup instead of ``_key`` on each argument. Keep such
        keys apart from ``_key``'s tuples (start them with a string). None: computed here."""
        if key is None:
            key = self.key_of(args)
        entry = self._entries.get(key)
        if entry is not None:
            if Kernel.check_keys:
                self._check_key(key, args)
            return entry
        sig = self.signature(args)
        with warnings.catch_warnings():
            # Numba's own "pedantic internal check" on the SSA of code it inlines (``write_row``, a kernel's own
            # inline helpers) can warn on correct kernels; a user should not see it on a first call
            warnings.simplefilter("ignore", NumbaIRAssumptionWarning)
            # from the disk cache, or compiled (processes sharing the cache: one compiles, the rest load)
            load_or_compile(self.dispatcher, sig)
        entry = self._entries[key] = self.dispatcher.overloads[sig].entry_point
        self._signatures[key] = sig
        return entry

    def bind(self, args: tuple, named: dict, skip: int = 0) -> tuple:
        """``args`` by position, then ``named`` by name (every remaining parameter, no other), in the kernel's order;
        ``skip``: leading parameters not in ``args`` (a launch's counter). Python binds them (``_binders``): a name
        the kernel lacks, or a parameter left out, is its TypeError."""
        return self._binders[skip](*args, **named)

    def check_positional(self, args: tuple) -> None:
        """Raise if more than ``POSITIONAL_SCALARS`` of ``args`` (a call's positional ones) are scalars."""
        scalars = [i for i, a in enumerate(args) if not isinstance(a, np.ndarray)]
        if len(scalars) > Kernel.POSITIONAL_SCALARS:
            raise AssertionError(
                f"{self.name}: called with {len(scalars)} scalars by position (flags and codes in a row): pass "
                f"all but {Kernel.POSITIONAL_SCALARS} by name"
            )

    def signature(self, args) -> tuple:
        """The Numba types of ``args`` as this kernel compiles them (``numba.typeof``: slow, once per variant)."""
        return tuple(
            types.literal(a) if i in self._literal else typeof(a).copy(layout="A") if i in self._strided else typeof(a)
            for i, a in enumerate(args)
        )

    def _check_key(self, key, args) -> None:
        """Raise if ``args`` are not of the types the variant kept under ``key`` was compiled for."""
        sig = self.signature(args)
        if sig != self._signatures[key]:
            raise AssertionError(
                f"{self.name}: the key {key!r} was made for arguments of types {self._signatures[key]}, and is "
                f"given arguments of types {sig}: the caller's key misses what tells them apart"
            )

    def compiled(self, key, args):
        """Numba's compile result for the variant ``entry(key, args)`` calls (compiled now if need be)."""
        key = self.key_of(args) if key is None else key
        self.entry(key, args)
        return self.dispatcher.overloads[self._signatures[key]]

    def key_of(self, args) -> tuple:
        """The key ``entry`` computes when given None."""
        return tuple(self._key(i, a) for i, a in enumerate(args))

    def _key(self, position, arg):
        """What Numba's type of ``arg`` depends on, computed much faster than ``numba.typeof`` (which would
        dominate small calls; see docs/decisions/reduction-table.md)."""
        if isinstance(arg, np.ndarray):
            f = arg.flags
            layout = None if position in self._strided else (f.c_contiguous, f.f_contiguous)
            return (arg.dtype.num, arg.ndim, f.writeable, f.aligned, layout)
        if position in self._literal:
            return (type(arg), arg)
        return type(arg)
