"""A bandwidth model of the GPU kernels: the bytes each must move, and the time a perfect kernel would take.

The scatter-reduce kernels do a few operations per byte: on a GPU they are bound by memory bandwidth, so the least
traffic a kernel can have -- every input read once, every output written once -- divided by the GPU's peak
bandwidth is the time no implementation beats. ``scatterx gpu-report`` writes this model beside the compile report;
on a GPU, ``measure`` times the same calls, so that a first real run is read against the model in one line
(``tools/gpu-check.sh``). The counts are lower bounds: gathered rows are counted once per edge (no cache reuse
assumed), an index is read once, and the sort of the unsorted routes is left out (a sort moves the index a few
times more).
"""

from __future__ import annotations

import dataclasses
import pathlib
import statistics
from typing import Callable, Dict, List, Optional

import torch

from ..kernels.gpu import _grid
from ..ops.gather_segment_reduce import gather_segment_reduce
from ..ops.index_scatter_reduce import index_scatter_reduce
from ..ops.segment_softmax import segment_softmax
from .files import write_json, write_text
from .graphs import target_index

#: peak DRAM bandwidth (bytes/s) from the vendors' data sheets: H100 SXM5 (HBM3), A100 SXM4 80GB (HBM2e), H200 SXM
GPUS = {"H100": 3.35e12, "A100": 2.039e12, "H200": 4.8e12}


@dataclasses.dataclass(frozen=True)
class Shape:
    name: str
    edges: int
    nodes: int
    features: int
    element: int = 4  # float32
    index: int = 8  # int64


#: the bench's built-in graph (``scatterx bench``) and ogbn-arxiv's aggregation (``scatterx bench-gnn``)
SHAPES = (Shape("bench", 1_000_000, 100_000, 64), Shape("arxiv", 1_166_243, 169_343, 128))


@dataclasses.dataclass(frozen=True)
class Case:
    """One call: its name, the GPU kernel it runs, and the least bytes it must move at a shape."""

    name: str
    kernel: str
    bytes: Callable[[Shape], int]
    note: str


def _rows(s: Shape, n: int) -> int:
    return n * s.features * s.element


CASES = (
    Case(
        "index_scatter_reduce sum, sorted",
        "segment_reduce_kernel",
        lambda s: _rows(s, s.edges) + s.edges * s.index + _rows(s, s.nodes),
        "src and index read once, out written once",
    ),
    Case(
        "index_scatter_reduce mean, sorted",
        "segment_reduce_kernel",
        lambda s: _rows(s, s.edges) + s.edges * s.index + _rows(s, s.nodes),
        "as sum",
    ),
    Case(
        "index_scatter_reduce sum, unsorted",
        "atomic_scatter_kernel + finish_kernel",
        lambda s: _rows(s, s.edges) + s.edges * s.index + 2 * _rows(s, s.nodes),
        "out zeroed and written (the atomics stay in L2 when out fits)",
    ),
    Case(
        "index_scatter_reduce amax, unsorted",
        "segment_reduce_kernel (gather)",
        lambda s: _rows(s, s.edges) + 2 * s.edges * s.index + _rows(s, s.nodes),
        "plus the permutation; the sort is not counted",
    ),
    Case(
        "gather_segment_reduce sum",
        "segment_reduce_kernel (gather)",
        lambda s: _rows(s, s.edges) + s.edges * s.index + (s.nodes + 1) * 8 + _rows(s, s.nodes),
        "a gathered row per edge, no cache reuse counted",
    ),
    Case(
        "segment_softmax",
        "segment_softmax_kernel",
        lambda s: 2 * _rows(s, s.edges) + s.edges * s.index,
        "src read once, out written once (the kernel reads src twice)",
    ),
)


def model(shapes=SHAPES, gpus=GPUS) -> List[dict]:
    """One row per (case, shape): bytes, and the perfect kernel's time on each GPU in microseconds."""
    rows = []
    for shape in shapes:
        for case in CASES:
            moved = case.bytes(shape)
            rows.append(
                dict(
                    case=case.name,
                    kernel=case.kernel,
                    shape=shape.name,
                    edges=shape.edges,
                    nodes=shape.nodes,
                    features=shape.features,
                    megabytes=round(moved / 1e6, 1),
                    **{f"{gpu}_us": round(moved / bandwidth * 1e6, 1) for gpu, bandwidth in gpus.items()},
                    note=case.note,
                )
            )
    return rows


def markdown(rows: List[dict], measured: Optional[Dict[tuple, float]] = None, device: str = "") -> str:
    gpus = list(GPUS)
    head = "| case | shape | MB moved | " + " | ".join(f"{g} µs" for g in gpus)
    rule = "|---|---|---:|" + "---:|" * len(gpus)
    if measured is not None:
        head += f" | measured µs ({device}) | of peak"
        rule += "---:|---:|"
    lines = [
        "# Bandwidth model: the time a perfect kernel takes",
        "",
        "Bytes a kernel must move (inputs read once, outputs written once; float32 rows, int64 index), over "
        "each GPU's peak DRAM bandwidth ("
        + ", ".join(f"{g} {b / 1e12:.2f} TB/s" for g, b in GPUS.items())
        + "). Produced by `scatterx gpu-report` (`scatterx/bench/gpu_model.py`).",
        "",
        "Shapes: "
        + "; ".join(f"{s.name}: {s.edges:,} edges x {s.features} features -> {s.nodes:,} nodes" for s in SHAPES)
        + ".",
        "",
        head + " |",
        rule,
    ]
    for r in rows:
        line = f"| {r['case']} | {r['shape']} | {r['megabytes']} | " + " | ".join(str(r[f"{g}_us"]) for g in gpus)
        if measured is not None:
            took = measured.get((r["case"], r["shape"]))
            peak = next((GPUS[g] for g in GPUS if g in device), None)
            share = f"{r['megabytes'] * 1e6 / (took * 1e-6) / peak:.0%}" if took and peak else "-"
            line += f" | {took if took is not None else '-'} | {share}"
        lines.append(line + " |")
    return "\n".join(lines) + "\n"


def write(out_dir: str, rows: Optional[List[dict]] = None) -> List[pathlib.Path]:
    rows = rows if rows is not None else model()
    return [
        write_text(out_dir, "bandwidth-model.md", markdown(rows)),
        write_json(out_dir, "bandwidth-model.json", rows),
    ]


# ------------------------------------------------------------------------------------------ the balance of work
#: multiprocessors of the GPU the balance is shown for (an H100 SXM or H200: 132)
BALANCE_SMS = 132


def balance(shape: Shape, sms: int = BALANCE_SMS, degrees: str = "powerlaw") -> dict:
    """How the rows of the sorted reductions at ``shape`` (the bench's power-law degrees) spread over programs:
    one program per segment (the layout before the balanced kernels) against the balanced kernels' grid on
    ``sms`` multiprocessors (``kernels/gpu/_grid.py``, as the backend launches them). Max and mean rows per
    program; the goal is max <= 4x mean."""
    index = target_index(shape.edges, shape.nodes, degrees, torch.Generator().manual_seed(0))
    ptr = torch.zeros(shape.nodes + 1, dtype=torch.int64)
    ptr[1:] = torch.bincount(index, minlength=shape.nodes).cumsum(0)
    block_e, block_f = _grid.tile(shape.features)
    fblocks = -(-shape.features // block_f)
    programs, share = _grid.balanced_grid(
        shape.edges + shape.nodes, fblocks, sms, _grid.PROGRAMS_PER_SM, _grid.MIN_EVENTS
    )
    shares = _grid.shares(ptr, programs, share)
    rows = (shares[:, 3] - shares[:, 2]).to(torch.float64)
    per_segment = ptr.diff().to(torch.float64)
    return dict(
        shape=shape.name,
        degrees=degrees,
        sms=sms,
        per_segment=dict(
            programs=shape.nodes * fblocks, max_rows=int(per_segment.max()), mean_rows=float(per_segment.mean())
        ),
        balanced=dict(
            programs=programs * fblocks,
            events_per_program=share,
            max_rows=int(rows.max()),
            mean_rows=float(rows.mean()),
            tile=f"{block_e}x{block_f}",
        ),
    )


def write_balance(out_dir: str, rows: List[dict]) -> List[pathlib.Path]:
    return [write_text(out_dir, "balance.md", balance_markdown(rows)), write_json(out_dir, "balance.json", rows)]


def balance_markdown(rows: List[dict]) -> str:
    lines = [
        "# The balance of the sorted reductions' work",
        "",
        f"Rows per program of the segment launches on a GPU of {rows[0]['sms']} multiprocessors, at the bench's "
        "power-law graphs (`scatterx/bench/gpu_model.py`, `balance`): one program per segment (the layout before "
        "the balanced kernels) against the balanced grid (`scatterx/kernels/gpu/_grid.py`). Goal: max <= 4x mean.",
        "",
        "| shape | layout | programs | max rows | mean rows | max / mean | goal |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        for name, layout in (("one per segment", r["per_segment"]), ("balanced", r["balanced"])):
            ratio = layout["max_rows"] / max(layout["mean_rows"], 1e-9)
            lines.append(
                f"| {r['shape']} | {name} | {layout['programs']:,} | {layout['max_rows']:,} | "
                f"{layout['mean_rows']:.1f} | {ratio:.1f} | {'ok' if ratio <= 4 else 'MISSED'} |"
            )
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------- measured, where a GPU is lent
def _call(case: Case, shape: Shape, device):
    """A function running ``case`` at ``shape`` on ``device`` (inputs built once, outside the timing)."""
    g = torch.Generator().manual_seed(0)
    index = torch.randint(0, shape.nodes, (shape.edges,), generator=g).sort().values.to(device)
    src = torch.randn(shape.edges, shape.features, generator=g).to(device)
    shuffled = index[torch.randperm(shape.edges, generator=g).to(device)]
    ptr = torch.searchsorted(index, torch.arange(shape.nodes + 1, device=device))
    gather = torch.randint(0, shape.edges, (shape.edges,), generator=g).to(device)
    n = shape.nodes
    calls = {
        "index_scatter_reduce sum, sorted": lambda: index_scatter_reduce(0, index, src, "sum", dim_size=n),
        "index_scatter_reduce mean, sorted": lambda: index_scatter_reduce(0, index, src, "mean", dim_size=n),
        "index_scatter_reduce sum, unsorted": lambda: index_scatter_reduce(
            0, shuffled, src, "sum", sorted=False, dim_size=n
        ),
        "index_scatter_reduce amax, unsorted": lambda: index_scatter_reduce(
            0, shuffled, src, "amax", sorted=False, dim_size=n
        ),
        "gather_segment_reduce sum": lambda: gather_segment_reduce(src, ptr, gather, "sum"),
        "segment_softmax": lambda: segment_softmax(src, index, num_segments=n, sorted=True),
    }
    return calls[case.name]


def measure(device: str = "cuda", repeat: int = 20) -> Dict[tuple, float]:
    """The median time in microseconds of each case at each shape on ``device`` (CUDA events)."""
    times = {}
    for shape in SHAPES:
        for case in CASES:
            fn = _call(case, shape, device)
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            samples = []
            for _ in range(repeat):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                torch.cuda.synchronize()
                samples.append(start.elapsed_time(end) * 1e3)
            times[(case.name, shape.name)] = round(statistics.median(samples), 1)
    return times
