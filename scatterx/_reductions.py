"""The one reduction table: everything that differs by reduction lives in its rows.

Every layer reads the reductions from here -- the Numba kernels (``kernels/cpu/_codegen.py`` turns a row into code),
the Triton kernels (``kernels/gpu/_codegen.py`` takes each row's ``code`` as a compile-time constant), the backends
(which strategies a reduction may use) and the op layer (which backward it has, what it must save):

- ``name`` (as ``torch.scatter_reduce`` spells it) and ``aliases`` users may pass;
- ``code``: the small integer kernels are specialised on (a compile-time literal / ``tl.constexpr``);
- ``combine(acc, x)``: one step, in plain Python so that Numba compiles it and a reader checks it at a glance;
  it carries the reduction's NaN rule (amax/amin propagate NaN as ``torch.amax`` does; the arithmetic ones
  propagate it by arithmetic). The Triton kernels restate it in Triton, and a test checks each backend's combine
  against this one on special values (NaN, +-inf, -0.0, integer extremes);
- ``divide_by_count`` (mean) and ``identity(dtype)``: the neutral element, exact bit for bit
  (``combine(identity, x) == x`` for every x, -0.0 included);
- ``linear``: the result is linear in the members (sum, mean). The gradient is then the output's gradient
  gathered back (mean: divided by the count): it needs no values saved, has a transposed form, and is
  differentiated again by autograd;
- ``atomic``: a GPU may combine with hardware atomics (sum, mean: addition in any order, equal up to rounding);
- ``selects``: the result is one of the members (amax, amin): the gradient is split among the members equal to
  it (ties; the NaN members of a NaN result), and NaN must be propagated explicitly -- hardware max/min atomics do
  not;
- ``prefers(x, best)``, for the selecting rows: whether member ``x`` strictly beats ``best``. The arg-reductions
  (``ops/segment_arg_reduce.py``, torch_scatter's ``scatter_max`` and kin) select with it: the first member that
  strictly beats all before it wins a tie, and NaN never wins (every comparison with NaN is False).

Rows that receive nothing are 0 in a new result (torch's convention) and keep their value in ``out=``: that is the
same for every reduction, so it is the kernels' rule, not a column here.

``combine`` is only ever called with scalars of one type (the accumulator type, see ``accumulator_dtype``).
``scatterx/reference/`` deliberately does not read this table: it is the independent oracle the kernels are
tested against.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

import torch


def _add(acc, x):
    return acc + x


def _mul(acc, x):
    return acc * x


def _max(acc, x):
    # NaN propagates as in torch.amax: once acc is NaN it stays NaN; a NaN x replaces acc
    # (``acc >= nan`` is False).  For integers ``acc != acc`` is always False. ``|``, not ``or``: both sides are
    # computed and no branch is taken -- with ``or`` the compiled kernels branch on data, and a scatter's random
    # updates mispredict (docs/decisions/selecting-combine.md, "No branch")
    return acc if (acc != acc) | (acc >= x) else x


def _min(acc, x):
    return acc if (acc != acc) | (acc <= x) else x


def _greater(x, best):
    return x > best


def _less(x, best):
    return x < best


@dataclass(frozen=True)
class Reduction:
    name: str  # canonical name, as torch.scatter_reduce spells it
    code: int  # small integer the kernels are specialised on (a compile-time literal)
    aliases: Tuple[str, ...]
    combine: Callable  # acc, x -> acc
    divide_by_count: bool  # mean: sum, then divide by the number of reduced values
    identity_float: float  # neutral element for floating dtypes
    identity_int: str  # "zero", "one", "min" or "max" of the integer dtype
    linear: bool  # sum, mean: gradient = grad gathered back (see the module docstring)
    atomic: bool  # a GPU may use hardware atomics for it
    selects: bool  # amax, amin: the result is a member; gradient split among ties
    prefers: Optional[Callable] = None  # selecting rows: x strictly beats best (arg-reductions; NaN never wins)

    def identity(self, dtype: torch.dtype):
        """The neutral element for ``dtype``: ``combine(identity, x) == x`` bit for bit."""
        if dtype.is_floating_point:
            return self.identity_float
        info = torch.iinfo(dtype)
        return {"zero": 0, "one": 1, "min": info.min, "max": info.max}[self.identity_int]


#: The reductions every op takes, one row each, in code order: ``sum``, ``mean``, ``prod``, ``amax``, ``amin``.
#: A row's ``name`` is the reduction's name as ``torch.scatter_reduce`` spells it and ``aliases`` every string a
#: ``reduce`` argument may pass for it (``"add"``, ``"mul"``, ``"max"`` and ``"min"`` besides the names);
#: ``combine(acc, x)`` is one step of it and ``identity(dtype)`` its neutral element. Rows that receive nothing are
#: 0 in a new result and keep their value in ``out=``, whatever the reduction.
REDUCTIONS: Tuple[Reduction, ...] = (
    # -0.0, not 0.0: (-0.0) + x == x for every x, -0.0 included, while 0.0 + (-0.0) == +0.0
    Reduction("sum", 0, ("sum", "add"), _add, False, -0.0, "zero", linear=True, atomic=True, selects=False),
    Reduction("mean", 1, ("mean",), _add, True, -0.0, "zero", linear=True, atomic=True, selects=False),
    Reduction("prod", 2, ("prod", "mul"), _mul, False, 1.0, "one", linear=False, atomic=False, selects=False),
    Reduction(
        "amax",
        3,
        ("amax", "max"),
        _max,
        False,
        -math.inf,
        "min",
        linear=False,
        atomic=False,
        selects=True,
        prefers=_greater,
    ),
    Reduction(
        "amin",
        4,
        ("amin", "min"),
        _min,
        False,
        math.inf,
        "max",
        linear=False,
        atomic=False,
        selects=True,
        prefers=_less,
    ),
)

#: canonical names, in code order
NAMES: Tuple[str, ...] = tuple(r.name for r in REDUCTIONS)
BY_CODE: Dict[int, Reduction] = {r.code: r for r in REDUCTIONS}
BY_NAME: Dict[str, Reduction] = {r.name: r for r in REDUCTIONS}
#: every accepted ``reduce`` string (names and aliases) -> its row
REDUCTIONS_BY_ALIAS: Dict[str, Reduction] = {a: r for r in REDUCTIONS for a in r.aliases}
_BY_ALIAS = REDUCTIONS_BY_ALIAS


def resolve(reduce) -> Reduction:
    """Map a user's ``reduce`` argument (name or alias) to its table row; ValueError for anything else."""
    if isinstance(reduce, Reduction):
        return reduce
    if not isinstance(reduce, str) or reduce not in _BY_ALIAS:
        raise ValueError(f"reduce must be one of {sorted(_BY_ALIAS)}, got {reduce!r}")
    return _BY_ALIAS[reduce]


#: The dtypes the kernels take for the values (``src``, ``out``): float32, float64, float16, bfloat16, int32 and
#: int64. Half types are accumulated in float32; integer sums wrap as torch's do. Indices and offsets are int32 or
#: int64.
SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64)


def accumulator_dtype(dtype: torch.dtype) -> torch.dtype:
    """Type the kernels accumulate in: half types in float32, everything else in itself (so integer sums wrap
    exactly as torch's do)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
