"""The compile budget of the CPU kernels: what a cold test run (and a user's first calls) pays for.

Every compiled variant of a Numba kernel -- each literal value, dtype and array layout it is called with -- costs
one to seven seconds of JIT on a first call (the large kernels most), and a test run that reaches every route
compiles them all: a third of a fresh clone's test time (docs/decisions/compile-budget.md). So the variants are
counted: at the end of a run, ``conftest.py`` prints how many each kernel holds and the seconds this run spent
compiling them, and fails the run above ``BUDGET`` variants. A kernel change that multiplies variants (a new
literal argument, one more index dtype) or makes each dearer then shows at once, with the kernel named, instead of
as a slower CI weeks later. Raising the budget is a decision to record in ``docs/decisions/compile-budget.md``,
with what the new variants buy.
"""

import collections
from typing import Iterable, List, Tuple

#: compiled variants of all CPU kernels together, over the whole test suite
BUDGET = 330

#: ``(kernel, variants, seconds)``: a kernel's variants, and the seconds this run spent compiling them (0 for
#: variants every process loaded from the disk cache)
Row = Tuple[str, int, float]


def compiled() -> List[Tuple[str, str, float]]:
    """``(kernel, signature, seconds)`` of every variant this process compiled or loaded from the disk cache, with
    the seconds its compile took here (0 when loaded)."""
    from scatterx.kernels.cpu._codegen import Kernel
    from scatterx.kernels.cpu._compile_lock import compile_seconds

    return [
        (kernel.name, str(sig), compile_seconds.get((kernel.name, str(sig)), 0.0))
        for kernel in Kernel.all
        for sig in kernel.dispatcher.overloads
    ]


def count(variants: Iterable[Tuple[str, str, float]]) -> List[Row]:
    """``(kernel, variants, seconds)`` from ``(kernel, signature, seconds)`` triples (several processes' together):
    each distinct signature counted once, the seconds of every compile summed (two processes that compiled the
    same variant both paid for it); most variants first."""
    signatures = collections.defaultdict(set)
    seconds: collections.Counter = collections.Counter()
    for name, sig, took in variants:
        signatures[name].add(sig)
        seconds[name] += took
    rows = [(name, len(sigs), seconds[name]) for name, sigs in signatures.items()]
    return sorted(rows, key=lambda row: (-row[1], row[0]))


def variants() -> List[Row]:
    """``count`` of every kernel this process compiled or loaded from the disk cache."""
    return count(compiled())


def report(rows: List[Row]) -> List[str]:
    """The table the test run prints."""
    total = sum(n for _, n, _ in rows)
    width = max([len(name) for name, _, _ in rows] + [6])
    lines = [f"{'kernel':<{width}}  variants  compile s"]
    lines += [f"{name:<{width}}  {n:>8}  {s:>9.1f}" for name, n, s in rows]
    seconds = sum(s for _, _, s in rows)
    budget = f"(budget {BUDGET} variants: tests/compile_budget.py)"
    lines.append(f"{'total':<{width}}  {total:>8}  {seconds:>9.1f}   {budget}")
    return lines
