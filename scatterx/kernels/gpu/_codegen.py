"""The reduction table, in Triton: the per-reduction steps every GPU kernel is generated from.

Kernels take the reduction's ``code`` from ``scatterx/_reductions.py`` as a ``tl.constexpr`` and call these
helpers; Triton compiles one variant per code, so the branches below cost nothing at run time (the CPU backend
does the same with Numba overloads, ``kernels/cpu/_codegen.py``). Triton cannot compile the table's Python
``combine``, so ``combine`` below restates it (the NaN rule of amax/amin included);
``tests/kernels/test_gpu_codegen.py`` checks it against the table's on special values, and the codes are read
from the table.
"""

import triton
import triton.language as tl

from ..._reductions import BY_NAME, REDUCTIONS

# The reductions' codes, from the table (the kernels branch on them as compile-time constants).
SUM = tl.constexpr(BY_NAME["sum"].code)
MEAN = tl.constexpr(BY_NAME["mean"].code)
PROD = tl.constexpr(BY_NAME["prod"].code)
AMAX = tl.constexpr(BY_NAME["amax"].code)
AMIN = tl.constexpr(BY_NAME["amin"].code)


@triton.jit
def flag(value):
    """A kernel's run-time flag as a boolean scalar. Flags are passed as int32 0 or 1, never as bools (``launch``
    converts them), and each kernel lists its flags in ``do_not_specialize``: a bool is an ``i1`` argument, which
    Inductor before torch 2.13 marked "divisible by 16" when False (0 is), and Triton 3.6's compile of such a kernel
    fails an assertion inside LLVM (docs/decisions/gpu-segment-kernel.md). An int32 flag may also be a compiler's
    constant 1, which the ``+`` turns into a value. (Reduced from a two-lane block rather than compared as a
    scalar: Triton's interpreter gives a scalar comparison its operands' type, int32, and a mask made with that is
    refused; a reduction's result is int1.)"""
    return tl.reduce((tl.zeros([2], tl.int32) + value) != 0, None, _either)


@triton.jit
def _either(a, b):
    return a | b


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _mul(a, b):
    return a * b


@triton.jit
def _max(a, b):
    # NaN propagates as in torch.amax (and _reductions._max): a NaN acc stays, a NaN x wins (a >= NaN is False)
    return tl.where((a != a) | (a >= b), a, b)


@triton.jit
def _min(a, b):
    return tl.where((a != a) | (a <= b), a, b)


@triton.jit
def combine(acc, x, REDUCE: tl.constexpr):
    """One step of the reduction, elementwise: ``acc (+) x``."""
    if REDUCE == PROD:
        return acc * x
    elif REDUCE == AMAX:
        return _max(acc, x)
    elif REDUCE == AMIN:
        return _min(acc, x)
    else:  # SUM, MEAN
        return acc + x


@triton.jit
def prefers(x, best, REDUCE: tl.constexpr):
    """The table's ``prefers`` (selecting rows): ``x`` strictly beats ``best``; False whenever NaN is involved."""
    if REDUCE == AMIN:
        return x < best
    else:  # AMAX
        return x > best


@triton.jit
def reduce_rows(tile, REDUCE: tl.constexpr):
    """Reduce a [rows, features] tile of partial results over its rows (axis 0)."""
    if REDUCE == PROD:
        return tl.reduce(tile, 0, _mul)
    elif REDUCE == AMAX:
        return tl.reduce(tile, 0, _max)
    elif REDUCE == AMIN:
        return tl.reduce(tile, 0, _min)
    else:
        return tl.reduce(tile, 0, _add)


@triton.jit
def finalize(acc, count, divide, IS_INT: tl.constexpr):
    """The value written after ``count`` values were combined into ``acc``: with ``divide`` (the table's
    ``divide_by_count``, mean's, a run-time flag) divided by the count, integers rounded down as torch's integer
    mean; else ``acc``. ``count`` > 0 wherever the result is used. Runs once per output element."""
    c = tl.maximum(count, 1).to(acc.dtype)
    if IS_INT:
        q = acc // c  # Triton's integer division truncates toward zero: correct it to the floor
        q = tl.where((acc % c != 0) & (acc < 0), q - 1, q)
    else:
        q = acc / c
    return tl.where(divide, q, acc)


def kernel_code(red) -> int:
    """The ``REDUCE`` constexpr a kernel is compiled with for reduction ``red``: the code of the first reduction
    of the table with the same ``combine``. Mean compiles as sum (the same combine) and passes its division as
    the run-time ``divide`` flag of ``finalize``: one variant fewer per dtype and tile."""
    return next(r.code for r in REDUCTIONS if r.combine is red.combine)
