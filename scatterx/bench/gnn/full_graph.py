"""``scatterx bench-gnn``: full-batch GNN training epochs with PyG's default path and with ``scatterx.pyg``.

The graph is built in code in one of the built-in shapes (``GRAPHS``: Cora, PubMed, ogbn-arxiv -- the default --
and a 250k-node slice shaped like ogbn-products), with power-law in- and out-degrees; its edges are coalesced
(sorted by source, then target), the order PyG's datasets and ``Data.coalesce()`` give, and a plain
``edge_index`` tensor is what the layers see.

Each model is built twice from one seed (same weights), and the two copies train side by side: one epoch of
PyG's default path and one with ``scatterx.pyg`` switched on, in turn (which goes first alternates), so that both
see the same machine noise. The epoch time is the median after the first epoch; the first (JIT compilation, scatterx's
CSR build) is reported apart. The losses of the two runs must agree at every epoch (``LOSS_RTOL``): the same
training, only summed in another order.

Peak memory (``peak_step_bytes``): after the timed epochs of every model, one more training step per path with
the resident set sampled every ~0.5 ms from ``/proc/self/statm``; the peak over the step minus the resident set
before it. glibc is first told (``mallopt``) to serve every allocation of 64 KiB or more by ``mmap``, so that a
freed tensor leaves the resident set at once instead of staying in the heap for the next one. Where that cannot
be arranged (not Linux/glibc), the column says n/a.

Why this module is long: it is the whole of ``bench-gnn`` -- the graph, the models, the side-by-side training, the
memory probe, the goals and the report -- each part small and used only here.
"""

from __future__ import annotations

import json
import pathlib
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, TypedDict

import torch
import torch.nn.functional as F

from ..figures import gnn_figure
from ..files import write_csv, write_json
from ..goals import evaluate, limit
from ..graphs import make_community_graph
from ..harness import environment
from ..measures import GnnCase
from ..text import Column, Columns, tail
from . import cold as gnn_cold
from . import compiled as gnn_compiled
from .onnx_inference import onnx_inference

#: ogbn-arxiv's shape
ARXIV = dict(nodes=169_343, edges=1_166_243, features=128, classes=40)
#: the built-in graph shapes (synthetic, built in code): Planetoid's Cora and PubMed, ogbn-arxiv, and a slice of
#: ogbn-products (its 100 features, 47 classes and ~25 edges a node on 250k of its 2.4M nodes); the same slice
#: with community structure (``graphs.make_community_graph``: 100 blocks, a fifth of the edges between them), where a
#: locality partition has something to find. Two more shapes where a switch could slow a model: CiteSeer's (few
#: edges, very wide features: the layers' linear maps dominate) and a narrow one (10 output channels: little
#: reduction work a layer call)
GRAPHS = {
    "cora": dict(nodes=2_708, edges=10_556, features=1_433, classes=7),
    "citeseer": dict(nodes=3_327, edges=9_104, features=3_703, classes=6),
    "narrow": dict(nodes=20_000, edges=200_000, features=64, classes=10),
    "pubmed": dict(nodes=19_717, edges=88_648, features=500, classes=3),
    "arxiv": ARXIV,
    "products-small": dict(nodes=250_000, edges=6_250_000, features=100, classes=47),
    "products-sbm": dict(nodes=250_000, edges=6_250_000, features=100, classes=47),
}


class Communities(TypedDict):
    communities: int  # blocks
    mixing: float  # the fraction of edges between blocks


#: the graphs built as a stochastic block model: blocks and the fraction of edges between blocks
COMMUNITIES = {"products-sbm": Communities(communities=100, mixing=0.2)}
MODELS = ("gcn", "sage", "gin", "gat", "gatv2", "graphconv")
#: losses of the two paths agree to this relative tolerance at every epoch (a goal of ``goals.json``; the
#: others: epoch speedups per graph and model, GAT's peak step memory on arxiv)
LOSS_RTOL = limit("bench-gnn", "loss_difference_from_pyg")
ZIPF_EXPONENT = 0.8


@dataclass
class GnnConfig:
    graph: str = "arxiv"  # a GRAPHS key; nodes/edges/features/classes are its shape unless given
    nodes: int = ARXIV["nodes"]
    edges: int = ARXIV["edges"]
    features: int = ARXIV["features"]
    classes: int = ARXIV["classes"]
    hidden: int = 128
    epochs: int = 6
    models: tuple = MODELS
    threads: int = field(default_factory=torch.get_num_threads)
    seed: int = 0
    memory: bool = True  # measure the peak step memory of each path (after the timed epochs)
    onnx: bool = False  # time onnxruntime's inference of the exported SAGE model against scatterx eager
    cold: bool = False  # also time each model's first training step in fresh processes (cold.py)
    compile: bool = False  # also train each model under torch.compile (both paths) beside the eager switch

    @classmethod
    def for_graph(cls, graph: str, **overrides) -> GnnConfig:
        """The config of a built-in graph shape, with any field overridden (None: keep the graph's)."""
        shape: Dict[str, Any] = dict(GRAPHS[graph])  # the overrides may be of any field
        shape.update({k: v for k, v in overrides.items() if v is not None})
        return cls(graph=graph, **shape)


@dataclass
class ArxivLike:
    x: torch.Tensor
    edge_index: torch.Tensor  # [2, E], coalesced: sorted by source, then target
    y: torch.Tensor
    train_mask: torch.Tensor

    def describe(self) -> str:
        n, e = self.x.size(0), self.edge_index.size(1)
        in_deg = torch.bincount(self.edge_index[1], minlength=n)
        out_deg = torch.bincount(self.edge_index[0], minlength=n)
        return (
            f"{n:,} nodes, {e:,} edges, {self.x.size(1)} features, {int(self.y.max()) + 1} classes; "
            f"in-degree max {int(in_deg.max()):,}, out-degree max {int(out_deg.max()):,}, mean {e / n:.1f}"
        )


def make_arxiv_like(config: GnnConfig) -> ArxivLike:
    """Power-law in- and out-degrees (Zipf ranks at random node ids), labels that depend on a node's features
    and its in-neighbours' (so that message passing helps), a random 54% of the nodes for training. The graphs of
    ``COMMUNITIES`` are stochastic block models (``graphs.make_community_graph``)."""
    if config.graph in COMMUNITIES:
        x, edge_index, y, train_mask = make_community_graph(
            config.nodes,
            config.edges,
            config.features,
            config.classes,
            zipf_exponent=ZIPF_EXPONENT,
            seed=config.seed,
            **COMMUNITIES[config.graph],
        )
        return ArxivLike(x, edge_index, y, train_mask)
    g = torch.Generator().manual_seed(config.seed)
    n, e = config.nodes, config.edges
    weights = torch.arange(1, n + 1, dtype=torch.float64) ** -ZIPF_EXPONENT
    source = torch.randperm(n, generator=g)[torch.multinomial(weights, e, replacement=True, generator=g)]
    target = torch.randperm(n, generator=g)[torch.multinomial(weights, e, replacement=True, generator=g)]
    order = torch.argsort(source * n + target)
    edge_index = torch.stack([source[order], target[order]])
    x = torch.randn(n, config.features, generator=g)
    neighbours = torch.zeros_like(x).index_add_(0, edge_index[1], x[edge_index[0]])
    neighbours /= torch.bincount(edge_index[1], minlength=n).clamp(min=1).unsqueeze(1)
    y = ((x + neighbours) @ torch.randn(config.features, config.classes, generator=g)).argmax(1)
    train_mask = torch.rand(n, generator=g) < 0.54
    return ArxivLike(x, edge_index, y, train_mask)


def build_model(name: str, config: GnnConfig) -> torch.nn.Module:
    """Two message-passing layers, ReLU between them."""
    from torch_geometric.nn import GATConv, GATv2Conv, GCNConv, GINConv, GraphConv, SAGEConv

    f, h, c = config.features, config.hidden, config.classes

    def mlp(a, b):
        return torch.nn.Sequential(torch.nn.Linear(a, b), torch.nn.ReLU(), torch.nn.Linear(b, b))

    layers = {
        "gcn": lambda: [GCNConv(f, h), GCNConv(h, c)],
        "sage": lambda: [SAGEConv(f, h, aggr="mean"), SAGEConv(h, c, aggr="mean")],
        "gin": lambda: [GINConv(mlp(f, h)), GINConv(mlp(h, c))],
        "gat": lambda: [GATConv(f, h // 4, heads=4), GATConv(h, c, heads=1)],
        "gatv2": lambda: [GATv2Conv(f, h // 4, heads=4), GATv2Conv(h, c, heads=1)],
        "graphconv": lambda: [GraphConv(f, h, aggr="add"), GraphConv(h, c, aggr="add")],
    }[name]()
    return _TwoLayers(*layers)


class _TwoLayers(torch.nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.first, self.second = first, second

    def forward(self, x, edge_index):
        return self.second(F.relu(self.first(x, edge_index)), edge_index)


@dataclass
class ModelResult:
    model: str
    epoch_s: Dict[str, List[float]]  # "pyg" / "scatterx" -> seconds per epoch
    loss: Dict[str, List[float]]
    peak_bytes: Dict[str, int] = field(default_factory=dict)  # "pyg" / "scatterx" -> one step's peak

    def memory_ratio(self) -> Optional[float]:
        """scatterx's peak step memory over PyG's, or None where not measured."""
        pyg, sx = self.peak_bytes.get("pyg"), self.peak_bytes.get("scatterx")
        return sx / pyg if pyg and sx is not None else None

    def median(self, path: str) -> float:
        return statistics.median(self.epoch_s[path][1:] or self.epoch_s[path])

    @property
    def speedup(self) -> float:
        return self.median("pyg") / self.median("scatterx")

    @property
    def max_loss_rel_diff(self) -> float:
        """The largest relative difference of a loss from PyG's at the same epoch, over every other path."""
        pyg = self.loss["pyg"]
        return max(
            abs(a - b) / max(abs(a), 1e-12) for path in self.loss if path != "pyg" for a, b in zip(pyg, self.loss[path])
        )

    @property
    def losses_agree(self) -> bool:
        return self.max_loss_rel_diff <= LOSS_RTOL


@dataclass
class GnnReport:
    graph: str
    config: GnnConfig
    results: List[ModelResult]
    environment: Dict[str, str]
    csr_build_ms: Optional[float] = None
    onnx: Optional[Any] = None  # onnx_inference.OnnxRow
    cold: List[Any] = field(default_factory=list)  # cold.FirstStep per model
    compiled: List[Any] = field(default_factory=list)  # compiled.CompiledRow per model


def _step(model, optimizer, data: ArxivLike) -> float:
    optimizer.zero_grad()
    out = model(data.x, data.edge_index)
    loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def train_side_by_side(
    name: str, data: ArxivLike, config: GnnConfig, log: Callable = print, compile_backend: Optional[str] = None
) -> ModelResult:
    """Copies of one model (same seed), trained epoch by epoch in turn: PyG's default path and scatterx.
    ``compile_backend``: those two wrapped by ``torch.compile(backend=...)`` (dynamo's caches reset around), and
    a third copy trained beside them eagerly with the switch on ("scatterx eager"), so that the compiled switch is
    timed against the eager one in the same loop."""
    import scatterx.pyg as sxpyg

    paths = ("pyg", "scatterx") if compile_backend is None else ("pyg", "scatterx", "scatterx eager")
    modules = {}
    for path in paths:
        torch.manual_seed(config.seed)
        modules[path] = build_model(name, config)
    optimizers = {path: torch.optim.Adam(m.parameters(), lr=0.01) for path, m in modules.items()}
    models: Dict[str, Callable] = dict(modules)
    if compile_backend is not None:
        torch._dynamo.reset()
        models.update({path: torch.compile(modules[path], backend=compile_backend) for path in ("pyg", "scatterx")})
    label = name if compile_backend is None else f"{name} compiled"
    times: Dict[str, List[float]] = {path: [] for path in paths}
    losses: Dict[str, List[float]] = {path: [] for path in paths}
    try:
        for epoch in range(config.epochs):
            # which path goes first turns, so that none always finds another's memory just freed
            for path in paths[epoch % len(paths) :] + paths[: epoch % len(paths)]:
                if path != "pyg":
                    sxpyg.enable()
                try:
                    start = time.perf_counter()
                    loss = _step(models[path], optimizers[path], data)
                    times[path].append(time.perf_counter() - start)
                finally:
                    sxpyg.disable()
                losses[path].append(loss)
            log(
                f"{label} epoch {epoch}: "
                + ", ".join(f"{path} {times[path][-1] * 1e3:.0f} ms (loss {losses[path][-1]:.5f})" for path in paths)
            )
    finally:
        if compile_backend is not None:
            torch._dynamo.reset()
    return ModelResult(name, times, losses)


def run(config: GnnConfig, log: Callable = print) -> GnnReport:
    before = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        data = make_arxiv_like(config)
        results = [train_side_by_side(name, data, config, log) for name in config.models]
        csr_ms = csr_build_ms(data)
        log(f"CSR build for a new edge_index: {csr_ms:.1f} ms")
        if config.memory and _mmap_every_large_allocation():
            for r in results:  # after every timed epoch: the allocator setting slows allocation a little
                r.peak_bytes = {path: peak_step_bytes(r.model, path, data, config) for path in ("pyg", "scatterx")}
                sizes = ", ".join(f"{p} {b / 2**20:.0f} MiB" for p, b in r.peak_bytes.items())
                log(f"{r.model} peak step memory: {sizes}")
        compiled = (
            [
                gnn_compiled.row(train_side_by_side(name, data, config, log, compile_backend="inductor"))
                for name in config.models
            ]
            if config.compile
            else []
        )
        onnx = None
        if config.onnx:
            torch.manual_seed(config.seed)
            onnx = onnx_inference(build_model("sage", config).eval(), data.x, data.edge_index, config.threads)
            log(f"onnx: SAGE inference {onnx.onnxruntime_ms:.1f} ms in onnxruntime, {onnx.eager_ms:.1f} ms eager")
    finally:
        torch.set_num_threads(before)
    cold = gnn_cold.first_steps(config, log) if config.cold else []
    import torch_geometric

    env = {**environment(), "torch_geometric": torch_geometric.__version__, "torch_threads": str(config.threads)}
    return GnnReport(data.describe(), config, results, env, csr_ms, onnx, cold, compiled)


def csr_build_ms(data: ArxivLike, repeats: int = 5) -> float:
    """Median time the switch takes to build the CSR adjacency of an ``edge_index`` it has not seen (what a
    layer that makes a new edge list every call pays: GCNConv(cached=False) adding self-loops, mini-batches)."""
    from scatterx.pyg import adjacency

    n = data.x.size(0)
    times = []
    for _ in range(repeats):
        fresh = data.edge_index.clone()
        start = time.perf_counter()
        adjacency.adjacency(fresh, n, n, 0)
        times.append(time.perf_counter() - start)
        adjacency.clear_cache()
    return statistics.median(times) * 1e3


def _mmap_every_large_allocation() -> bool:
    """Ask glibc to serve allocations of 64 KiB or more with mmap (returned to the OS when freed), so that the
    resident set follows the live tensors; False where that is not possible."""
    import ctypes
    import ctypes.util
    import os

    if not os.path.exists("/proc/self/statm"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_mmap_threshold = -3
        return bool(libc.mallopt(m_mmap_threshold, 64 * 1024))
    except (OSError, AttributeError):
        return False


def _resident_bytes() -> int:
    import os

    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def peak_step_bytes(name: str, path: str, data: ArxivLike, config: GnnConfig) -> int:
    """The resident set's peak growth over one training step of model ``name`` on ``path`` (a fresh copy, same
    seed; one untimed step first so that nothing is first-time)."""
    import threading

    import scatterx.pyg as sxpyg

    torch.manual_seed(config.seed)
    model = build_model(name, config)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    if path == "scatterx":
        sxpyg.enable()
    try:
        _step(model, optimizer, data)
        base = _resident_bytes()
        peak = [base]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], _resident_bytes())
                time.sleep(0.0005)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            _step(model, optimizer, data)
        finally:
            done.set()
            sampler.join()
        return max(peak[0], _resident_bytes()) - base
    finally:
        sxpyg.disable()


def goal_results(report: GnnReport):
    """The goals of ``goals.json`` (section bench-gnn) for each model of the run, in the run's order."""
    return [
        g
        for r in report.results
        for g in evaluate("bench-gnn", GnnCase(report.config.graph, r), model=r.model, graph=report.config.graph)
    ]


def goals(report: GnnReport):
    """(label, value, op, limit, ok) for the GNN goals of the graph: epoch speedups, GAT's memory on arxiv, and
    losses equal to PyG's."""
    return [(g.name, g.value, g.op, g.limit, g.ok) for g in goal_results(report)]


def table(report: GnnReport) -> str:
    lines = [
        f"scatterx bench-gnn ({report.config.graph}): {report.graph}; {report.config.epochs} epochs, "
        f"hidden {report.config.hidden}, "
        f"{report.config.threads} thread(s)",
        "epoch time: median of epochs 2..N; first epoch (JIT, scatterx's CSR build) apart",
        "peak MiB: one training step's peak resident-set growth, PyG / scatterx (n/a: not measured)",
        *_COLUMNS.head(rule=False),
    ]
    for r in report.results:
        first = f"{r.epoch_s['pyg'][0] * 1e3:.0f}/{r.epoch_s['scatterx'][0] * 1e3:.0f}"
        if r.memory_ratio() is None:
            memory = "n/a"
        else:
            memory = f"{r.peak_bytes['pyg'] / 2**20:.0f}/{r.peak_bytes['scatterx'] / 2**20:.0f}"
        lines.append(
            _COLUMNS.row(
                r.model,
                f"{r.median('pyg') * 1e3:.1f}",
                f"{r.median('scatterx') * 1e3:.1f}",
                f"{r.speedup:.2f}x",
                first,
                memory,
                f"{r.loss['pyg'][-1]:.6f}",
                f"{r.loss['scatterx'][-1]:.6f}",
                f"{r.max_loss_rel_diff:.1e}",
            )
        )
    if report.csr_build_ms is not None:
        lines.append(
            f"CSR build for an edge_index not seen before (cached per tensor after that): {report.csr_build_ms:.1f} ms"
        )
    if report.onnx is not None:
        o = report.onnx
        lines.append(
            f"onnx (SAGE inference, exported with scatterx.export): onnxruntime {o.onnxruntime_ms:.1f} ms, "
            f"scatterx eager {o.eager_ms:.1f} ms ({o.onnxruntime_ms / o.eager_ms:.2f}x), "
            f"max |difference| {o.max_abs_diff:.1e}"
        )
    if report.compiled:
        lines += gnn_compiled.table(report.compiled)
    if report.cold:
        lines += gnn_cold.table(report.cold)
    lines += tail(goal_results(report), report.environment)
    return "\n".join(lines)


_COLUMNS = Columns(
    Column("model", 9, left=True),
    Column("PyG default ms", 15),
    Column("scatterx ms", 12),
    Column("speedup", 8),
    Column("1st epoch PyG/sx ms", 20),
    Column("peak MiB PyG/sx", 16),
    Column("final loss PyG", 15),
    Column("final loss sx", 14),
    Column("max rel diff", 13),
)


def write_files(report: GnnReport, out_dir: str) -> List[str]:
    rows = [
        [r.model, path, epoch, f"{s:.6f}", f"{loss:.8f}"]
        for r in report.results
        for path in ("pyg", "scatterx")
        for epoch, (s, loss) in enumerate(zip(r.epoch_s[path], r.loss[path]))
    ]
    csv_path = write_csv(out_dir, "bench-gnn.csv", ["model", "path", "epoch", "seconds", "loss"], rows)
    data = {
        "graph": report.graph,
        "environment": report.environment,
        "results": [
            {
                "model": r.model,
                "median_epoch_s": {p: r.median(p) for p in r.epoch_s},
                "speedup": r.speedup,
                "epoch_s": r.epoch_s,
                "loss": r.loss,
                "max_loss_rel_diff": r.max_loss_rel_diff,
                "peak_step_bytes": r.peak_bytes,
            }
            for r in report.results
        ],
        "graph_shape": report.config.graph,
        "csr_build_ms": report.csr_build_ms,
        "first_steps": gnn_cold.as_dicts(report.cold),
        "compiled": gnn_compiled.as_dicts(report.compiled),
        "goals": [dict(label=g[0], value=g[1], op=g[2], limit=g[3], ok=g[4]) for g in goals(report)],
    }
    json_path = write_json(out_dir, "bench-gnn.json", data)
    paths = [str(csv_path), str(json_path)]
    png = loss_chart(report, str(pathlib.Path(out_dir) / "bench-gnn.png"))
    if png:
        paths.append(png)
    # (the figure from the file as written: what ``scatterx plot`` redraws)
    png = gnn_figure([json.loads(json_path.read_text())], str(pathlib.Path(out_dir) / "epochs.png"))
    return paths + ([png] if png else [])


def loss_chart(report: GnnReport, path: str) -> Optional[str]:
    """One panel per model: the training loss of both paths per epoch (they should lie on top of each other)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    n = len(report.results)
    fig, axes = plt.subplots(1, n, figsize=(3.6 * n, 3.4), squeeze=False)
    for ax, r in zip(axes[0], report.results):
        epochs = range(1, len(r.loss["pyg"]) + 1)
        ax.plot(
            epochs,
            r.loss["pyg"],
            "o-",
            label=f"PyG default ({r.median('pyg') * 1e3:.0f} ms/epoch)",
            linewidth=3,
            alpha=0.5,
        )
        ax.plot(
            epochs,
            r.loss["scatterx"],
            "x--",
            color="black",
            label=f"scatterx ({r.median('scatterx') * 1e3:.0f} ms/epoch)",
        )
        ax.set_title(f"{r.model}: {r.speedup:.2f}x faster epochs")
        ax.set_xlabel("epoch")
        ax.set_ylabel("training loss")
        ax.legend(fontsize=7)
    fig.suptitle(f"scatterx bench-gnn: {report.graph}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
