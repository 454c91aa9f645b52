"""The compile budget of the CPU kernels: what a cold test run (and a user's first calls) pays for.

Every compiled variant of a Numba kernel -- each literal value, dtype and array layout it is called with -- costs
about a second of JIT on a first call, and a test run that reaches every route compiles them all: that is most of
a fresh clone's test time. So the variants are counted: at the end of a run, ``conftest.py`` prints how many each
kernel holds and fails the run above ``BUDGET``. A kernel change that multiplies variants (a new literal argument,
one more index dtype) then shows at once, with the kernel named, instead of as a slower CI weeks later. Raising
the budget is a decision to record in ``docs/decisions/compile-budget.md``, with what the new variants buy.
"""

import collections
from typing import Iterable, List, Tuple

#: compiled variants of all CPU kernels together, over the whole test suite
BUDGET = 300


def compiled() -> List[Tuple[str, str]]:
    """``(kernel, signature)`` of every variant this process compiled or loaded from the disk cache."""
    from scatterx.kernels.cpu._codegen import Kernel

    return [(kernel.name, str(sig)) for kernel in Kernel.all for sig in kernel.dispatcher.overloads]


def count(signatures: Iterable[Tuple[str, str]]) -> List[Tuple[str, int]]:
    """``(kernel, variants)`` from ``(kernel, signature)`` pairs, each distinct pair once, most first."""
    counts = collections.Counter(name for name, _ in set(signatures))
    return sorted(counts.items(), key=lambda row: (-row[1], row[0]))


def variants() -> List[Tuple[str, int]]:
    """``(kernel, variants)`` for every kernel this process compiled or loaded from the disk cache, most first."""
    return count(compiled())


def report(rows: List[Tuple[str, int]]) -> List[str]:
    """The table the test run prints."""
    total = sum(n for _, n in rows)
    width = max([len(name) for name, _ in rows] + [6])
    lines = [f"{'kernel':<{width}}  variants"]
    lines += [f"{name:<{width}}  {n:>8}" for name, n in rows]
    lines.append(f"{'total':<{width}}  {total:>8}   (budget {BUDGET}: tests/compile_budget.py)")
    return lines
