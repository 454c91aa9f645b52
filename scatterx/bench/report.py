"""Turn a bench ``Report`` into a text table, CSV, JSON and the figures (``figures.py``)."""

from __future__ import annotations

from typing import List

from .dropin import DROP_IN
from .figures import bench_figures
from .files import write_csv, write_json
from .goals import evaluate
from .harness import DROP_IN_MODE, SCATTERX, Report, best
from .launch import table as launch_table
from .text import Column, Columns, environment_line, goal_lines


def table(report: Report) -> str:
    lines: List[str] = []
    c = report.config
    where = f"{c.threads} thread(s)" if c.device == "cpu" else f"{c.device} ({report.environment.get('gpu', '?')})"
    lines.append(f"scatterx bench: {report.graph}; {where}")
    lines.append(
        f"bandwidth probe (torch.sum(src), reads src once): {report.probe_ms:.2f} ms, {report.probe_gbps:.1f} GB/s"
    )
    lines.append(
        "GB/s = bytes of src / time.  x probe = time / probe time.  peer rows: how many times scatterx is faster."
    )
    lines += _ROWS.head()
    previous = None
    for row in report.rows:
        if row.mode == DROP_IN_MODE:
            continue
        case = (row.reduce, row.order, row.mode)
        if previous is not None and case != previous:
            lines.append("")
        previous = case
        speed = "" if row.scatterx_speedup is None else f"{row.scatterx_speedup:.2f}x"
        passes = "fwd" if row.mode == "forward" else "fwd+bwd"
        cells = (f"{row.ms:.2f}", f"{row.gbps:.1f}", f"{row.probe_ratio:.2f}x", speed)
        lines.append(_ROWS.row(row.reduce, row.order, passes, row.implementation, *cells))
    lines.append("")
    lines.append("summary: scatterx.index_scatter_reduce against the fastest other implementation")
    for reduce in c.reductions:
        for order in c.orders:
            ours = next(
                (
                    r
                    for r in report.rows
                    if (r.reduce, r.order, r.implementation, r.mode) == (reduce, order, SCATTERX.name, "forward")
                ),
                None,
            )
            if ours is None:
                continue
            parts = []
            for label, native in (("torch", True), ("any peer", False)):
                b = best(report.rows, reduce, order, torch_native_only=native)
                if b is not None:
                    parts.append(f"{b.ms / ours.ms:.2f}x faster than best {label} ({b.implementation}, {b.ms:.2f} ms)")
            lines.append(
                f"  {reduce:<5} {order:<8} {ours.ms:7.2f} ms = {ours.probe_ratio:.2f}x probe; " + "; ".join(parts)
            )
    lines += _dropin_table(report)
    if report.latency:
        lines.append("")
        lines += _latency_table(report)
    if report.launch:
        lines.append("")
        lines += launch_table(report.launch)
    if report.gpu_host:
        lines.append("")
        lines.append(
            "GPU backend, Python per call from the public function to its kernels (launches stubbed, CPU tensors; "
            f"sorted sum, 2,000 x 16 -> 500): {report.gpu_host['us']:.1f} us, "
            f"{report.gpu_host['launches']:.0f} launches (goal <= 25 us)"
        )
    lines.append("")
    if c.device == "cuda":
        lines.append("GPU goals (stated for an H100)")
    else:
        note = (
            ""
            if c.is_default_shape()
            else "  (the goals are stated for the default shape and 2 threads; this run differs)"
        )
        lines.append("CPU goals" + note)
    lines += goal_lines(evaluate(_section(report), report))
    lines.append("")
    lines.append(environment_line(report.environment))
    return "\n".join(lines)


_ROWS = Columns(
    Column("reduce", 7, left=True),
    Column("index", 8, left=True),
    Column("pass", 8, left=True),
    Column("implementation", 41, left=True),
    Column("ms", 8),
    Column("GB/s", 6),
    Column("x probe", 8),
    Column("scatterx faster", 16),
)
_DROP_IN = Columns(
    Column("function", 22, left=True),
    Column("index", 9, left=True),
    Column(DROP_IN + " ms", 25),
    Column("peer ms", 10),
    Column("speedup", 8),
    Column("goal", 6),
)


def _section(report: Report) -> str:
    return "bench-cuda" if report.config.device == "cuda" else "bench"


def _latency_table(report: Report) -> List[str]:
    """The first calls: empty Numba cache, cached, and the call itself (what is not JIT)."""
    lat, c = report.latency, report.config
    lines = [
        f"first call of index_scatter_reduce (sum, float32), each in a fresh process (import torch + scatterx: "
        f"{lat['import_s']:.2f} s, not included):"
    ]
    shapes = {
        "small": "6 x 16 -> 4",
        "sorted": f"{c.edges:,} x {c.features} -> {c.nodes:,} sorted",
        "shuffled": f"{c.edges:,} x {c.features} -> {c.nodes:,} shuffled",
    }
    for kind, shape in shapes.items():
        if f"{kind}_cold_s" in lat:
            lines.append(
                f"  {shape:<34} {lat[f'{kind}_cold_s']:6.2f} s empty cache  {lat[f'{kind}_cached_s']:6.3f} s "
                f"cached  ({lat[f'{kind}_call_s'] * 1e3:.1f} ms the call itself)"
            )
    return lines


def _dropin_table(report: Report) -> List[str]:
    """The torch_scatter drop-in section: each function against its peer, with its goal."""
    rows = [r for r in report.rows if r.mode == DROP_IN_MODE]
    if not rows:
        return []
    goals = {(g.args["function"], g.args["order"]): g for g in evaluate("drop-in", report)}
    peer = next((r.implementation for r in rows if r.implementation != DROP_IN), None)
    against = "torch_scatter" if peer and peer.startswith("torch_scatter") else "a torch-native equivalent"
    lines = ["", f"torch_scatter drop-in: {DROP_IN}.<function> against {against} (speedup = its time / ours)"]
    lines += _DROP_IN.head()
    for ours in rows:
        if ours.implementation != DROP_IN:
            continue
        theirs = next(
            (r for r in rows if (r.reduce, r.order) == (ours.reduce, ours.order) and r.implementation != DROP_IN), None
        )
        ms = "-" if theirs is None else f"{theirs.ms:.2f}"
        speed = "-" if theirs is None else f"{theirs.ms / ours.ms:.2f}x"
        goal = goals.get((ours.reduce, ours.order))
        verdict = "" if goal is None or goal.ok is None else ("ok" if goal.ok else "MISSED")
        limit = "-" if goal is None else f"{goal.op}{goal.limit:g}x"
        lines.append(f"{_DROP_IN.row(ours.reduce, ours.order, f'{ours.ms:.2f}', ms, speed, limit)} {verdict}")
    return lines


def write_files(report: Report, out_dir: str) -> List[str]:
    header = ["reduce", "index", "pass", "implementation", "torch_native", "ms", "gbps", "probe_ratio"]
    rows = [
        [r.reduce, r.order, r.mode, r.implementation, r.torch_native, f"{r.ms:.4f}", f"{r.gbps:.3f}"]
        + [f"{r.probe_ratio:.4f}", "" if r.scatterx_speedup is None else f"{r.scatterx_speedup:.4f}"]
        for r in report.rows
    ]
    csv_path = write_csv(out_dir, "bench.csv", header + ["scatterx_speedup"], rows)
    data = report.to_dict()
    data["probe_ms"] = report.probe_ms
    data["goals"] = [
        dict(goal=r.name, section=r.goal.section, op=r.op, limit=r.limit, value=r.value, ok=r.ok)
        for r in evaluate(_section(report), report) + evaluate("drop-in", report)
    ]
    json_path = write_json(out_dir, "bench.json", data)
    return [str(csv_path), str(json_path)] + bench_figures(data, out_dir)
