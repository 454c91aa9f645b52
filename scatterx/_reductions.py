"""The one reduction table.

Every backend (the Numba CPU kernels today, the reference, later the Triton kernels) reads the reductions from
here: their canonical name, the aliases users may pass, the identity per dtype, the pairwise ``combine`` step and
whether the result is divided by the count. A kernel is *generated* from a row of this table (see
``scatterx/kernels/cpu/_codegen.py``), never written once per reduction.

``combine(acc, x)`` is written in plain Python so that Numba can compile it and a reader can check it at a glance.
It is only ever called with scalars of one type (the accumulator type, see ``accumulator_dtype``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Tuple

import torch


def _add(acc, x):
    return acc + x


def _mul(acc, x):
    return acc * x


def _max(acc, x):
    # NaN propagates as in torch.amax: once acc is NaN it stays NaN; a NaN x replaces acc
    # (``acc >= nan`` is False).  For integers ``acc != acc`` is always False.
    return acc if (acc != acc or acc >= x) else x


def _min(acc, x):
    return acc if (acc != acc or acc <= x) else x


@dataclass(frozen=True)
class Reduction:
    name: str  # canonical name, as torch.scatter_reduce spells it
    code: int  # small integer the kernels are specialised on (a compile-time literal)
    aliases: Tuple[str, ...]
    combine: Callable  # acc, x -> acc
    divide_by_count: bool  # mean: sum, then divide by the number of reduced values
    identity_float: float  # neutral element for floating dtypes: combine(identity, x) == x bit for bit
    identity_int: str  # "zero", "one", "min" or "max" of the integer dtype

    def identity(self, dtype: torch.dtype):
        """The neutral element for ``dtype`` (what an empty group reduces to before the empty-fill)."""
        if dtype.is_floating_point:
            return self.identity_float
        info = torch.iinfo(dtype)
        return {"zero": 0, "one": 1, "min": info.min, "max": info.max}[self.identity_int]


REDUCTIONS: Tuple[Reduction, ...] = (
    # -0.0, not 0.0: (-0.0) + x == x for every x, -0.0 included, while 0.0 + (-0.0) == +0.0
    Reduction("sum", 0, ("sum", "add"), _add, False, -0.0, "zero"),
    Reduction("mean", 1, ("mean",), _add, True, -0.0, "zero"),
    Reduction("prod", 2, ("prod", "mul"), _mul, False, 1.0, "one"),
    Reduction("amax", 3, ("amax", "max"), _max, False, -math.inf, "min"),
    Reduction("amin", 4, ("amin", "min"), _min, False, math.inf, "max"),
)

BY_CODE: Dict[int, Reduction] = {r.code: r for r in REDUCTIONS}
_BY_ALIAS: Dict[str, Reduction] = {a: r for r in REDUCTIONS for a in r.aliases}

# Value written to an output row that receives nothing when there is no ``out`` to keep (torch fills 0 too).
EMPTY_FILL = 0


def resolve(reduce) -> Reduction:
    """Map a user's ``reduce`` argument (name or alias) to its table row; ValueError for anything else."""
    if isinstance(reduce, Reduction):
        return reduce
    if not isinstance(reduce, str) or reduce not in _BY_ALIAS:
        raise ValueError(
            f"reduce must be one of {sorted(_BY_ALIAS)}, got {reduce!r}"
        )
    return _BY_ALIAS[reduce]


#: dtypes the kernels accept for ``src`` / ``out``.
SUPPORTED_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64)


def accumulator_dtype(dtype: torch.dtype) -> torch.dtype:
    """Type the kernels accumulate in: half types in float32, everything else in itself (so integer sums wrap
    exactly as torch's do)."""
    return torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
