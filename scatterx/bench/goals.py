"""The speed goals of the issues, each with the value a ``scatterx bench`` run measured: CPU or
GPU. Ratios taken within one run, never bare times."""

from __future__ import annotations

from .harness import BACKWARD_REDUCTIONS, ORDERS, PYG_BACKWARD, REDUCTIONS, SCATTERX, SCATTERX_SCATTER_REDUCE
from .harness import GATV2, GATV2_IMPLEMENTATIONS, WEIGHTED, WEIGHTED_IMPLEMENTATIONS
from .harness import Report, best, find


# (what, limit, measured(report) -> value or None, passes(value, limit))
def goals(report: Report):
    """The speed goals on the CPU or on CUDA, each with the value this run measured (None
    where not measured)."""
    rows = report.rows
    if report.config.device == "cuda":
        return _checked(_gpu_goals(report))
    out = []

    def ratio(reduce, order):
        r = find(rows, reduce, order, SCATTERX.name)
        return None if r is None else r.probe_ratio

    def speedup(reduce, order):
        ours, theirs = find(rows, reduce, order, SCATTERX.name), best(rows, reduce, order, torch_native_only=True)
        return None if ours is None or theirs is None else theirs.ms / ours.ms

    for reduce, limit in (("sum", 1.3), ("mean", 1.3), ("amax", 1.5), ("amin", 1.5), ("prod", 1.5)):
        out.append((f"sorted {reduce}: time / probe", "<=", limit, ratio(reduce, "sorted")))
    for reduce in REDUCTIONS:
        out.append((f"shuffled {reduce}: time / probe", "<=", 2.5, ratio(reduce, "shuffled")))
    for reduce in REDUCTIONS:
        out.append((f"sorted {reduce}: speedup over fastest torch path", ">=", 2.5, speedup(reduce, "sorted")))
    for reduce in REDUCTIONS:
        out.append((f"shuffled {reduce}: speedup over fastest torch path", ">=", 1.3, speedup(reduce, "shuffled")))
    for reduce in BACKWARD_REDUCTIONS:
        for order in ORDERS:
            ours = find(rows, reduce, order, SCATTERX.name, "forward+backward")
            pyg = find(rows, reduce, order, PYG_BACKWARD.name, "forward+backward")
            value = None if ours is None or pyg is None else pyg.ms / ours.ms
            out.append((f"{order} {reduce}: forward+backward speedup over PyG's path", ">=", 2.0, value))
    for reduce in REDUCTIONS:
        for order in ORDERS:
            ours = find(rows, reduce, order, SCATTERX.name)
            compat = find(rows, reduce, order, SCATTERX_SCATTER_REDUCE.name)
            value = None if ours is None or compat is None else compat.ms / ours.ms
            out.append((f"{order} {reduce}: scatterx.scatter_reduce / index_scatter_reduce", "<=", 1.2, value))
    for reduce in REDUCTIONS:
        for order in ORDERS:
            compat = find(rows, reduce, order, SCATTERX_SCATTER_REDUCE.name)
            torch_row = find(rows, reduce, order, "torch.scatter_reduce (expanded index)")
            value = None if compat is None or torch_row is None else torch_row.ms / compat.ms
            out.append((f"{order} {reduce}: scatter_reduce speedup over torch's", ">", 1.0, value))
    ours = find(rows, WEIGHTED, "sorted", WEIGHTED_IMPLEMENTATIONS[0].name, "forward+backward")
    pyg = find(rows, WEIGHTED, "sorted", WEIGHTED_IMPLEMENTATIONS[1].name, "forward+backward")
    value = None if ours is None or pyg is None else pyg.ms / ours.ms
    out.append(("weighted gather-segment sum: forward+backward speedup over PyG's path", ">=", 3.0, value))
    ours = find(rows, GATV2, "sorted", GATV2_IMPLEMENTATIONS[0].name, "forward+backward")
    pyg = find(rows, GATV2, "sorted", GATV2_IMPLEMENTATIONS[1].name, "forward+backward")
    value = None if ours is None or pyg is None else pyg.ms / ours.ms
    # no goal for the op alone: the bar of its weighted sibling, so that a slowdown shows
    out.append(("gatv2 logits: forward+backward speedup over PyG's path", ">=", 3.0, value))
    out.append(("first call, empty cache (s)", "<=", 3.0, report.latency.get("cold_s")))
    out.append(("first call, warm cache (s)", "<=", 0.3, report.latency.get("cached_s")))
    return _checked(out)


def _gpu_goals(report: Report):
    """The GPU goals, on an H100: sorted sum at >= 80% of the probe's bandwidth (F >= 32); >= 1.5x the best peer
    (torch or torch_scatter) sorted, >= 1.0x shuffled."""
    rows, out = report.rows, []
    ours = find(rows, "sum", "sorted", SCATTERX.name)
    if report.config.features >= 32:
        value = None if ours is None else 1.0 / ours.probe_ratio
        out.append(("sorted sum: bandwidth / probe bandwidth (GPU)", ">=", 0.8, value))
    for order, limit in (("sorted", 1.5), ("shuffled", 1.0)):
        for reduce in REDUCTIONS:
            mine, theirs = find(rows, reduce, order, SCATTERX.name), best(rows, reduce, order, False)
            value = None if mine is None or theirs is None else theirs.ms / mine.ms
            out.append((f"{order} {reduce}: speedup over the best peer (GPU)", ">=", limit, value))
    return out


def _checked(goals_list):
    return [
        (what, op, limit, value, None if value is None else _passes(value, op, limit))
        for what, op, limit, value in goals_list
    ]


def _passes(value: float, op: str, limit: float) -> bool:
    return {"<=": value <= limit, ">=": value >= limit, ">": value > limit}[op]
