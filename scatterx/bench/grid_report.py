"""``scatterx bench --grid``'s outputs: the table (every cell, the element plans, the worst cells and the goals
missed), ``grid.csv``, ``grid.json`` and the figures (``figures.py``: grid-sizes.png, grid-elements.png)."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import List, Optional

from .figures import grid_figures, read_grid_csv
from .files import write_csv, write_json
from .grid import GridReport, GridRow, missed
from .text import Column, Columns, environment_line

WORST = 15
_DEFAULT = (
    "default: the base plane (first degree, dtype, dim) up to E x F = 2^28, one of degree/dtype/dim changed "
    "at E x F = 1k,100k,1M x 1,16,256 up to 2^26, fwd+bwd up to 2^26; --grid full runs every combination"
)
# a cell's line: what it runs (the case), then what it measured (the result) and its verdict
_CASE = Columns(
    Column("shape", 20, left=True),
    Column("deg", 3),
    Column("order", 8, left=True),
    Column("reduce", 6, left=True),
    Column("dtype", 8, left=True),
    Column("dim", 3),
    Column("pass", 7, left=True),
)
_RESULT = Columns(
    Column("scatterx", 10),
    Column("fastest torch", 16, left=True),
    Column("torch", 10),
    Column("speedup", 8),
    Column("goal", 6),
)
_CELLS = Columns(*_CASE.columns, *_RESULT.columns)
_HEADER = _CELLS.header()
_ELEMENTS = Columns(
    Column("op", 26, left=True),
    Column("size", 28, left=True),
    Column("scatterx", 10),
    Column("peer", 22, left=True),
    Column("peer time", 10),
    Column("speedup", 8),
    Column("goal", 6),
)


def fmt_time(seconds: Optional[float]) -> str:
    if seconds is None or math.isnan(seconds):
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    return f"{seconds * 1e3:.2f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _verdict(ok: Optional[bool]) -> str:
    return "-" if ok is None else ("ok" if ok else "MISSED")


def cell_line(row: GridRow) -> str:
    c = row.cell
    shape = "(" + ", ".join(f"{s:,}" for s in c.shape) + ")"
    case = _CASE.row(shape, c.degree, c.order, c.reduce, c.dtype, c.dim, c.mode)
    if row.skipped:
        return f"{case} {row.skipped}"
    result = _RESULT.row(
        fmt_time(row.scatterx_s), row.torch_peer, fmt_time(row.torch_s), f"{row.speedup:.2f}x", f">={row.goal:.1f}"
    )
    return f"{case} {result} {_verdict(row.ok)}"


def _margin(row) -> float:
    return row.speedup / row.goal


def table(report: GridReport) -> str:
    s = report.spec
    lines = [
        f"scatterx bench --grid ({'full' if s.full else _DEFAULT}): {len(report.rows)} cells, {s.threads} "
        f"thread(s), {report.wall_s:.0f} s",
        "speedup = fastest torch path / scatterx (medians of back-to-back calls in blocks taking turns, one run); "
        "goal "
        "(>= 2.0x from 100k edges, >= 1.0x from 1k, >= 0.8x below)",
        *_CELLS.head(),
    ]
    lines += [cell_line(r) for r in report.rows]
    if report.elements:
        lines += [
            "",
            "element plans (an index that differs per feature):",
            _ELEMENTS.header(),
        ]
        for r in report.elements:
            goal = "-" if r.goal is None else f">={r.goal:.1f}"
            cells = (r.op, r.size, fmt_time(r.scatterx_s), r.peer, fmt_time(r.peer_s), f"{r.speedup:.2f}x", goal)
            lines.append(f"{_ELEMENTS.row(*cells)} {_verdict(r.ok)}")
    lines += [""] + [f"note: {n}" for n in report.notes]
    lines.append(environment_line(report.environment))
    lines += worst(report)
    return "\n".join(lines)


def worst(report: GridReport) -> List[str]:
    """The worst cells by speedup / goal, the cells skipped, and every goal missed."""
    timed = sorted((r for r in report.rows if r.speedup is not None), key=_margin)
    lines = [f"worst {min(WORST, len(timed))} cells (by speedup / goal):", _HEADER]
    lines += [cell_line(r) for r in timed[:WORST]]
    skipped = [r for r in report.rows if r.skipped]
    if skipped:
        limit = "not recorded" if report.limit_bytes is None else f"{report.limit_bytes / 2**30:.1f} GiB"
        lines.append(f"{len(skipped)} cell(s) skipped for memory (limit {limit})")
    misses = missed(report)
    cells_missed = [r for r in misses if isinstance(r, GridRow)]
    below_1x = sum(r.speedup is not None and r.speedup < 1.0 for r in timed)
    lines.append(
        f"cells below 1.0x the fastest torch path: {below_1x} of {len(timed)} "
        f"(CPU target {report.environment.get('numba_cpu_target', '?')})"
    )
    lines.append(
        f"goals missed: {len(misses)} of {len(timed) + sum(r.goal is not None for r in report.elements)} "
        f"({len(cells_missed)} cells, {len(misses) - len(cells_missed)} element rows)"
    )
    for r in misses:
        lines.append(
            "  MISSED "
            + (
                cell_line(r)
                if isinstance(r, GridRow)
                else f"{r.op} {r.size} vs {r.peer}: {r.speedup:.2f}x (goal >= {r.goal:.1f})"
            )
        )
    return lines


_FIELDS = [
    "section",
    "edges",
    "features",
    "nodes",
    "degree",
    "dtype",
    "dim",
    "order",
    "reduce",
    "pass",
    "op",
    "size",
    "scatterx_us",
    "peer",
    "peer_us",
    "speedup",
    "goal",
    "ok",
    "calls",
    "skipped",
]


def _csv_rows(report: GridReport):
    def us(t):
        return "" if t is None else f"{t * 1e6:.3f}"

    for r in report.rows:
        c = r.cell
        yield [
            "cell",
            c.edges,
            c.features,
            c.nodes,
            c.degree,
            c.dtype,
            c.dim,
            c.order,
            c.reduce,
            c.mode,
            "index_scatter_reduce",
            "",
            us(r.scatterx_s),
            r.torch_peer,
            us(r.torch_s),
            "" if r.speedup is None else f"{r.speedup:.4f}",
            r.goal,
            "" if r.ok is None else r.ok,
            r.calls,
            r.skipped,
        ]
    for r in report.elements:
        yield [
            "element",
            "",
            "",
            "",
            "",
            "float32",
            0,
            "",
            "",
            "fwd",
            r.op,
            r.size,
            us(r.scatterx_s),
            r.peer,
            us(r.peer_s),
            f"{r.speedup:.4f}",
            "" if r.goal is None else r.goal,
            "" if r.ok is None else r.ok,
            r.calls,
            "",
        ]


def write_files(report: GridReport, out_dir: str) -> List[str]:
    csv_path = write_csv(out_dir, "grid.csv", _FIELDS, _csv_rows(report))
    data = dict(
        spec=asdict(report.spec),
        wall_s=report.wall_s,
        limit_bytes=report.limit_bytes,
        environment=report.environment,
        notes=report.notes,
        cells=[r.to_dict() for r in report.rows],
        elements=[r.to_dict() for r in report.elements],
        missed=len(missed(report)),
    )
    json_path = write_json(out_dir, "grid.json", data)
    return [str(csv_path), str(json_path)] + grid_figures(read_grid_csv(str(csv_path)), report.environment, out_dir)
