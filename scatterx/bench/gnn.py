"""``scatterx bench-gnn``: full-batch GNN training epochs with PyG's default path and with ``scatterx.pyg``.

The graph is built in code, shaped like ogbn-arxiv (169,343 nodes, 1,166,243 directed edges, 128 features, 40
classes, power-law in- and out-degrees); its edges are coalesced (sorted by source, then target), the order PyG's
datasets and ``Data.coalesce()`` give, and a plain ``edge_index`` tensor is what the layers see.

Each model is built twice from one seed (same weights), and the two copies train side by side: one epoch of
PyG's default path and one with ``scatterx.pyg`` switched on, in turn (which goes first alternates), so that both
see the same machine noise. The epoch time is the median after the first epoch; the first (JIT compilation, scatterx's CSR build) is
reported apart. The losses of the two runs must agree at every epoch (``LOSS_RTOL``): the same training, only
summed in another order.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import torch
import torch.nn.functional as F

from .harness import environment

#: ogbn-arxiv's shape
ARXIV = dict(nodes=169_343, edges=1_166_243, features=128, classes=40)
MODELS = ("gcn", "sage", "gin", "gat")
#: the #6 goal: epochs at least this much faster on CPU for these models
GOAL_SPEEDUP = 1.5
GOAL_MODELS = ("sage", "gin")
#: losses of the two paths agree to this relative tolerance at every epoch
LOSS_RTOL = 1e-3
ZIPF_EXPONENT = 0.8


@dataclass
class GnnConfig:
    nodes: int = ARXIV["nodes"]
    edges: int = ARXIV["edges"]
    features: int = ARXIV["features"]
    classes: int = ARXIV["classes"]
    hidden: int = 128
    epochs: int = 6
    models: tuple = MODELS
    threads: int = field(default_factory=torch.get_num_threads)
    seed: int = 0


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
    and its in-neighbours' (so that message passing helps), a random 54% of the nodes for training."""
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
    from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv

    f, h, c = config.features, config.hidden, config.classes

    def mlp(a, b):
        return torch.nn.Sequential(torch.nn.Linear(a, b), torch.nn.ReLU(), torch.nn.Linear(b, b))

    layers = {
        "gcn": lambda: [GCNConv(f, h), GCNConv(h, c)],
        "sage": lambda: [SAGEConv(f, h, aggr="mean"), SAGEConv(h, c, aggr="mean")],
        "gin": lambda: [GINConv(mlp(f, h)), GINConv(mlp(h, c))],
        "gat": lambda: [GATConv(f, h // 4, heads=4), GATConv(h, c, heads=1)],
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

    def median(self, path: str) -> float:
        return statistics.median(self.epoch_s[path][1:] or self.epoch_s[path])

    @property
    def speedup(self) -> float:
        return self.median("pyg") / self.median("scatterx")

    @property
    def max_loss_rel_diff(self) -> float:
        return max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(self.loss["pyg"], self.loss["scatterx"]))

    @property
    def losses_agree(self) -> bool:
        return self.max_loss_rel_diff <= LOSS_RTOL


@dataclass
class GnnReport:
    graph: str
    config: GnnConfig
    results: List[ModelResult]
    environment: Dict[str, str]


def _step(model, optimizer, data: ArxivLike) -> float:
    optimizer.zero_grad()
    out = model(data.x, data.edge_index)
    loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def train_side_by_side(name: str, data: ArxivLike, config: GnnConfig, log: Callable = print) -> ModelResult:
    """Two copies of one model (same seed), trained epoch by epoch in turn: PyG's default path and scatterx."""
    import scatterx.pyg as sxpyg

    models = {}
    for path in ("pyg", "scatterx"):
        torch.manual_seed(config.seed)
        models[path] = build_model(name, config)
    optimizers = {path: torch.optim.Adam(m.parameters(), lr=0.01) for path, m in models.items()}
    times: Dict[str, List[float]] = {"pyg": [], "scatterx": []}
    losses: Dict[str, List[float]] = {"pyg": [], "scatterx": []}
    for epoch in range(config.epochs):
        # which path goes first alternates, so that neither always finds the other's memory just freed
        for path in ("pyg", "scatterx") if epoch % 2 == 0 else ("scatterx", "pyg"):
            if path == "scatterx":
                sxpyg.enable()
            try:
                start = time.perf_counter()
                loss = _step(models[path], optimizers[path], data)
                times[path].append(time.perf_counter() - start)
            finally:
                sxpyg.disable()
            losses[path].append(loss)
        log(
            f"{name} epoch {epoch}: pyg {times['pyg'][-1] * 1e3:.0f} ms (loss {losses['pyg'][-1]:.5f}), "
            f"scatterx {times['scatterx'][-1] * 1e3:.0f} ms (loss {losses['scatterx'][-1]:.5f})"
        )
    return ModelResult(name, times, losses)


def run(config: GnnConfig, log: Callable = print) -> GnnReport:
    before = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    try:
        data = make_arxiv_like(config)
        results = [train_side_by_side(name, data, config, log) for name in config.models]
    finally:
        torch.set_num_threads(before)
    import torch_geometric

    env = {**environment(), "torch_geometric": torch_geometric.__version__, "torch_threads": str(config.threads)}
    return GnnReport(data.describe(), config, results, env)


def goals(report: GnnReport):
    """(label, value, op, limit, ok) for the #6 goals: speedup of SAGE and GIN epochs, losses equal."""
    out = []
    for r in report.results:
        if r.model in GOAL_MODELS:
            out.append((f"{r.model}: epoch speedup over PyG's default path", r.speedup, ">=", GOAL_SPEEDUP,
                        r.speedup >= GOAL_SPEEDUP))
        out.append((f"{r.model}: max relative loss difference", r.max_loss_rel_diff, "<=", LOSS_RTOL, r.losses_agree))
    return out


def table(report: GnnReport) -> str:
    lines = [
        f"scatterx bench-gnn: {report.graph}; {report.config.epochs} epochs, hidden {report.config.hidden}, "
        f"{report.config.threads} thread(s)",
        "epoch time: median of epochs 2..N; first epoch (JIT, scatterx's CSR build) apart",
        f"{'model':6} {'PyG default ms':>15} {'scatterx ms':>12} {'speedup':>8} {'1st epoch PyG/sx ms':>20} "
        f"{'final loss PyG':>15} {'final loss sx':>14} {'max rel diff':>13}",
    ]
    for r in report.results:
        first = f"{r.epoch_s['pyg'][0] * 1e3:.0f}/{r.epoch_s['scatterx'][0] * 1e3:.0f}"
        lines.append(
            f"{r.model:6} {r.median('pyg') * 1e3:15.1f} {r.median('scatterx') * 1e3:12.1f} {r.speedup:7.2f}x "
            f"{first:>20} {r.loss['pyg'][-1]:15.6f} {r.loss['scatterx'][-1]:14.6f} {r.max_loss_rel_diff:13.1e}"
        )
    lines.append("goals:")
    for label, value, op, limit, ok in goals(report):
        lines.append(f"  {label:50} {value:9.3g} (goal {op} {limit:g})  {'ok' if ok else 'MISSED'}")
    lines.append("environment: " + ", ".join(f"{k} {v}" for k, v in report.environment.items()))
    return "\n".join(lines)


def write_files(report: GnnReport, out_dir: str) -> List[str]:
    import csv
    import json
    import os

    os.makedirs(out_dir, exist_ok=True)
    paths = []
    csv_path = os.path.join(out_dir, "bench-gnn.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "path", "epoch", "seconds", "loss"])
        for r in report.results:
            for path in ("pyg", "scatterx"):
                for epoch, (s, loss) in enumerate(zip(r.epoch_s[path], r.loss[path])):
                    w.writerow([r.model, path, epoch, f"{s:.6f}", f"{loss:.8f}"])
    paths.append(csv_path)
    json_path = os.path.join(out_dir, "bench-gnn.json")
    with open(json_path, "w") as f:
        json.dump(
            {
                "graph": report.graph,
                "environment": report.environment,
                "results": [
                    {"model": r.model, "median_epoch_s": {p: r.median(p) for p in r.epoch_s}, "speedup": r.speedup,
                     "epoch_s": r.epoch_s, "loss": r.loss, "max_loss_rel_diff": r.max_loss_rel_diff}
                    for r in report.results
                ],
            },
            f,
            indent=1,
        )
    paths.append(json_path)
    png = loss_chart(report, os.path.join(out_dir, "bench-gnn.png"))
    if png:
        paths.append(png)
    return paths


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
        ax.plot(epochs, r.loss["pyg"], "o-", label=f"PyG default ({r.median('pyg') * 1e3:.0f} ms/epoch)",
                linewidth=3, alpha=0.5)
        ax.plot(epochs, r.loss["scatterx"], "x--", color="black",
                label=f"scatterx ({r.median('scatterx') * 1e3:.0f} ms/epoch)")
        ax.set_title(f"{r.model}: {r.speedup:.2f}x faster epochs")
        ax.set_xlabel("epoch")
        ax.set_ylabel("training loss")
        ax.legend(fontsize=7)
    fig.suptitle(f"scatterx bench-gnn: {report.graph}", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
