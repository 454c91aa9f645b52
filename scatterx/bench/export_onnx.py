"""What scatterx's ONNX export costs at inference: the graphs ``scatterx.export`` writes, run in onnxruntime
(CPUExecutionProvider), against scatterx's eager forward on the same inputs, at the shape of ``scatterx bench``.

The cases: ``index_scatter_reduce`` (sum and amax, on the sorted and the shuffled index of ``graphs.make_graph``'s
power-law graph) in a one-op module, and a ``GCNConv`` layer (PyG, the ``scatterx.pyg`` switch on) on that graph's
edges. Each case is exported, then timed: the median of ``repeats`` calls after a warm-up, onnxruntime with
``intra_op_num_threads=threads``, eager under ``torch.no_grad()`` with ``torch.set_num_threads(threads)``. The
figures and what they led to: docs/decisions/export-onnx.md. Run ``python -m scatterx.bench.export_onnx``.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple

import torch

import scatterx

from .graphs import make_graph
from .harness import cpu_model
from .text import Column, Columns
from .timing import median_seconds

#: the cases, in the order of the table
CASES = ("sum-sorted", "sum-shuffled", "amax-sorted", "amax-shuffled", "gcn")


@dataclass
class ExportRow:
    case: str
    onnxruntime_ms: float
    eager_ms: float
    ratio: float  # onnxruntime / eager
    max_abs_diff: float


class _Reduce(torch.nn.Module):
    def __init__(self, reduce: str, sorted: bool, dim_size: int):
        super().__init__()
        self.reduce, self.sorted, self.dim_size = reduce, sorted, dim_size

    def forward(self, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        return scatterx.index_scatter_reduce(0, index, src, self.reduce, self.sorted, dim_size=self.dim_size)


def _case_inputs(case: str, graph, seed: int) -> Tuple[torch.nn.Module, Tuple[torch.Tensor, ...]]:
    if case == "gcn":
        from torch_geometric.nn import GCNConv

        g = torch.Generator().manual_seed(seed)
        width = graph.src.size(1)
        torch.manual_seed(seed)
        layer = GCNConv(width, width).eval()
        source = torch.randint(0, graph.num_nodes, (graph.num_edges,), generator=g)
        x = torch.randn(graph.num_nodes, width, generator=g)
        return layer, (x, torch.stack([source, graph.shuffled_index]))
    reduce, order = case.split("-")
    if order == "sorted":
        return _Reduce(reduce, True, graph.num_nodes).eval(), (graph.index, graph.src)
    return _Reduce(reduce, False, graph.num_nodes).eval(), (graph.shuffled_index, graph.shuffled_src)


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    return median_seconds(fn, 1, repeats) * 1e3


def export_onnx_rows(
    num_edges: int = 1_000_000,
    num_nodes: int = 100_000,
    num_features: int = 64,
    threads: int = 2,
    repeats: int = 5,
    cases: Optional[Sequence[str]] = None,
    seed: int = 0,
) -> List[ExportRow]:
    """One row per case of ``CASES`` (or of ``cases``): onnxruntime's and eager scatterx's median milliseconds on
    the power-law graph ``graphs.make_graph(num_edges, num_nodes, num_features)``, their ratio and the largest
    absolute difference of the outputs. Needs onnxscript and onnxruntime (and torch_geometric for ``"gcn"``)."""
    unknown = set(cases or ()) - set(CASES)
    if unknown:
        raise ValueError(f"export_onnx_rows: unknown case(s) {sorted(unknown)}; the cases are {CASES}")
    graph = make_graph(num_edges, num_nodes, num_features, seed=seed)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return [_row(case, graph, threads, repeats, seed) for case in cases or CASES]
    finally:
        torch.set_num_threads(before)


def _row(case: str, graph, threads: int, repeats: int, seed: int) -> ExportRow:
    import onnxruntime as ort

    import scatterx.pyg as sxpyg
    from scatterx.export import to_onnx

    model, inputs = _case_inputs(case, graph, seed)
    with torch.no_grad(), sxpyg.enabled():
        want = model(*inputs)
        eager_ms = _median_ms(lambda: model(*inputs), repeats)
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / f"{case}.onnx"
            to_onnx(model, inputs, path)
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), inputs)}
    (got,) = session.run(None, feeds)
    onnx_ms = _median_ms(lambda: session.run(None, feeds), repeats)
    diff = float((torch.from_numpy(got) - want).abs().max()) if want.numel() else 0.0
    return ExportRow(case, onnx_ms, eager_ms, onnx_ms / eager_ms, diff)


def format_rows(rows: Sequence[ExportRow]) -> str:
    cols = Columns(
        Column("case", 14, left=True),
        Column("onnxruntime ms", 16),
        Column("eager ms", 9),
        Column("ratio", 7),
        Column("max abs diff", 13),
    )
    lines = cols.head(rule=False)
    for r in rows:
        lines.append(
            cols.row(r.case, f"{r.onnxruntime_ms:.1f}", f"{r.eager_ms:.1f}", f"{r.ratio:.2f}", f"{r.max_abs_diff:.2e}")
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m scatterx.bench.export_onnx", description=__doc__)
    parser.add_argument("--edges", type=int, default=1_000_000)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--features", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=None)
    args = parser.parse_args(argv)
    rows = export_onnx_rows(args.edges, args.nodes, args.features, args.threads, args.repeats, args.cases)
    print(f"CPU: {cpu_model()}; {args.threads} threads (onnxruntime intra-op and torch)")
    print(f"{args.edges:,} edges x {args.features} float32 features -> {args.nodes:,} nodes, power-law in-degrees")
    print(format_rows(rows))


if __name__ == "__main__":
    main()
