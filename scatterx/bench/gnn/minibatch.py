"""``scatterx bench-gnn --mini-batch``: mini-batch GNN training with PyG's ``NeighborLoader`` (on
``scatterx.pyg_lib``, the pure-Python pyg-lib), PyG's default path against ``scatterx.pyg`` switched on.

The graph is ogbn-products-shaped by default (``minibatch_graphs.py``: 2.4M nodes, 62M edges), or one of
bench-gnn's built-in shapes; ``NeighborLoader(num_neighbors=[15, 10], batch_size=1024, shuffle=True)`` draws
batches from the training nodes. Per model -- bench-gnn's two-layer GraphSAGE and GAT, and the same layers made
heterogeneous by ``to_hetero`` on a graph of papers, authors and institutions -- two copies are built from one
seed and train side by side on the *same* batches: each batch is sampled once, then trained by PyG's default path
and by the switch in turn (which goes first alternates, as in bench-gnn), so the two losses agree at every batch
(``LOSS_RTOL``: only sums in another order differ).

Timed per batch, after ``warmup`` batches: sampling, the loader's ``next()`` -- of which the sampler call (PyG's
``collate_fn``: pyg-lib's ``neighbor_sample``) and the join with the features (``filter_fn``: ``x[n_id]``, the
batch's ``edge_index``) -- and training, forward + loss + backward + optimizer step, per path. The table gives
medians: the epoch speedup is ``(sampling + train PyG) / (sampling + train scatterx)``, and sampling's share is of a
step with the switch on. The graph's generation and the loader's construction (PyG's CSC conversion of the edges,
a sort) are timed apart.

Why this module is long: it is the whole of the mini-batch bench -- the loader and its timers, the models, the
side-by-side training, the goals, the table and the files -- each part small and used only here.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import torch
import torch.nn.functional as F

from ... import pyg_lib
from ..files import write_csv, write_json
from ..goals import evaluate, limit
from ..harness import environment
from ..measures import MiniBatchCase
from ..text import Column, Columns, tail
from . import full_graph as gnn
from .minibatch_graphs import PRODUCTS, Graph, HeteroGraph, make_mag_like, make_products_like

SECTION = "bench-gnn-mini-batch"
#: the graph shapes: the products shape (this bench's own generator) and bench-gnn's built-in ones
GRAPHS = {"products": PRODUCTS, **gnn.GRAPHS}
MODELS = ("sage", "gat")
#: the models to_hetero makes heterogeneous (attention without self-loops: sources and targets differ)
HETERO_MODELS = ("sage", "gat")
PATHS = ("pyg", "scatterx")
LOSS_RTOL = limit(SECTION, "minibatch_loss_difference")


@dataclass
class MiniBatchConfig:
    graph: str = "products"  # a GRAPHS key; nodes/edges/features/classes are its shape unless given
    nodes: int = PRODUCTS["nodes"]
    edges: int = PRODUCTS["edges"]
    features: int = PRODUCTS["features"]
    classes: int = PRODUCTS["classes"]
    hidden: int = 128
    batch_size: int = 1024
    fanout: Tuple[int, ...] = (15, 10)
    batches: int = 20  # timed, per model
    warmup: int = 1  # batches trained first, not timed (JIT compilation, first allocations)
    models: Tuple[str, ...] = MODELS
    hetero: bool = True  # also the heterogeneous rows (to_hetero of the models in HETERO_MODELS)
    threads: int = field(default_factory=torch.get_num_threads)
    seed: int = 0

    @classmethod
    def for_graph(cls, graph: str, **overrides) -> MiniBatchConfig:
        """The config of a graph shape, with any field overridden (None: keep the graph's)."""
        shape: Dict[str, Any] = dict(GRAPHS[graph])
        shape.update({k: v for k, v in overrides.items() if v is not None})
        return cls(graph=graph, **shape)


def make_graph(config: MiniBatchConfig) -> Graph:
    """The products shape from this bench's generator; bench-gnn's shapes from bench-gnn's (its edges coalesced)."""
    if config.graph == "products":
        return make_products_like(config.nodes, config.edges, config.features, config.classes, config.seed)
    shape = dict(nodes=config.nodes, edges=config.edges, features=config.features, classes=config.classes)
    data = gnn.make_arxiv_like(gnn.GnnConfig.for_graph(config.graph, seed=config.seed, **shape))
    return Graph(data.x, data.edge_index, data.y, data.train_mask.nonzero().view(-1))


class TimedLoader:
    """A ``NeighborLoader`` whose two parts are timed apart (seconds, summed since the last ``take()``): the
    sampler call (``collate_fn``) and the join with the features (``filter_fn``; the loader is built with
    ``filter_per_worker=False``, so that it runs apart)."""

    def __init__(self, loader) -> None:
        self.loader = loader
        self.sampler_s = self.gather_s = 0.0
        collate, join = loader.collate_fn, loader.filter_fn

        def timed_collate(index):
            start = time.perf_counter()
            try:
                return collate(index)
            finally:
                self.sampler_s += time.perf_counter() - start

        def timed_join(out):
            start = time.perf_counter()
            try:
                return join(out)
            finally:
                self.gather_s += time.perf_counter() - start

        loader.collate_fn, loader.filter_fn = timed_collate, timed_join
        self._iterator: Optional[Iterator] = None

    def next(self):
        """The next batch (a new epoch of the loader where one ends)."""
        if self._iterator is not None:
            try:
                return next(self._iterator)
            except StopIteration:
                pass
        self._iterator = iter(self.loader)
        return next(self._iterator)

    def restart(self, seed: int) -> None:
        """Batches from the start of a new epoch, shuffled from ``seed``."""
        torch.manual_seed(seed)
        self._iterator = None

    def take(self) -> Tuple[float, float]:
        parts = (self.sampler_s, self.gather_s)
        self.sampler_s = self.gather_s = 0.0
        return parts


def make_loader(data, config: MiniBatchConfig, input_nodes) -> TimedLoader:
    from torch_geometric.loader import NeighborLoader

    return TimedLoader(
        NeighborLoader(
            data,
            num_neighbors=list(config.fanout),
            batch_size=config.batch_size,
            shuffle=True,
            input_nodes=input_nodes,
            filter_per_worker=False,
        )
    )


class _TwoLayers(torch.nn.Module):
    """Two message-passing layers, ReLU between them (what to_hetero traces)."""

    def __init__(self, first, second):
        super().__init__()
        self.first, self.second = first, second

    def forward(self, x, edge_index):
        return self.second(F.relu(self.first(x, edge_index)), edge_index)


def build_hetero_model(name: str, config: MiniBatchConfig, metadata) -> torch.nn.Module:
    """bench-gnn's layers for (source, target) pairs of node types, made heterogeneous by ``to_hetero``."""
    from torch_geometric.nn import GATConv, SAGEConv, to_hetero

    f, h, c = config.features, config.hidden, config.classes
    layers = {
        "sage": lambda: (SAGEConv((f, f), h, aggr="mean"), SAGEConv((h, h), c, aggr="mean")),
        "gat": lambda: (
            GATConv((f, f), h // 4, heads=4, add_self_loops=False),
            GATConv((h, h), c, heads=1, add_self_loops=False),
        ),
    }[name]()
    return to_hetero(_TwoLayers(*layers), metadata, aggr="sum")


def _step(model, optimizer, batch, hetero: bool) -> float:
    optimizer.zero_grad()
    if hetero:
        seeds = batch["paper"].batch_size
        out = model(batch.x_dict, batch.edge_index_dict)["paper"][:seeds]
        y = batch["paper"].y[:seeds]
    else:
        out = model(batch.x, batch.edge_index)[: batch.batch_size]
        y = batch.y[: batch.batch_size]
    loss = F.cross_entropy(out, y)
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def _ms(values: List[float]) -> float:
    """The median of ``values`` (seconds) in milliseconds."""
    return statistics.median(values) * 1e3 if values else float("nan")


def _batch_size(batch, hetero: bool) -> Tuple[int, int]:
    """(sampled nodes, sampled edges) of a batch, all types together."""
    if hetero:
        return sum(x.size(0) for x in batch.x_dict.values()), sum(e.size(1) for e in batch.edge_index_dict.values())
    return batch.num_nodes, batch.edge_index.size(1)


@dataclass
class MiniBatchRow:
    model: str  # "sage", "gat", "hetero-sage", "hetero-gat"
    sample_s: List[float] = field(default_factory=list)  # the loader's next(), per timed batch
    sampler_s: List[float] = field(default_factory=list)  # of which the sampler call
    gather_s: List[float] = field(default_factory=list)  # of which the join with the features
    train_s: Dict[str, List[float]] = field(default_factory=lambda: {p: [] for p in PATHS})
    loss: Dict[str, List[float]] = field(default_factory=lambda: {p: [] for p in PATHS})  # every batch's
    sampled: List[Tuple[int, int]] = field(default_factory=list)  # (nodes, edges) per timed batch

    @property
    def sample_ms(self) -> float:
        return _ms(self.sample_s)

    def train_ms(self, path: str) -> float:
        return _ms(self.train_s[path])

    @property
    def speedup(self) -> float:
        """A batch of PyG's default path over one with the switch on, sampling included (what an epoch takes)."""
        return (self.sample_ms + self.train_ms("pyg")) / (self.sample_ms + self.train_ms("scatterx"))

    @property
    def sample_share(self) -> float:
        """Sampling's share of a step with the switch on."""
        return self.sample_ms / (self.sample_ms + self.train_ms("scatterx"))

    @property
    def max_loss_rel_diff(self) -> float:
        pairs = zip(self.loss["pyg"], self.loss["scatterx"])
        return max((abs(a - b) / max(abs(a), 1e-12) for a, b in pairs), default=0.0)

    @property
    def losses_agree(self) -> bool:
        return self.max_loss_rel_diff <= LOSS_RTOL


def train_side_by_side(
    label: str, build: Callable[[], torch.nn.Module], loader: TimedLoader, config: MiniBatchConfig, hetero: bool, log
) -> MiniBatchRow:
    """Two copies of one model (same seed) trained on the same batches, each batch by both paths in turn."""
    import scatterx.pyg as sxpyg

    models = {}
    for path in PATHS:
        torch.manual_seed(config.seed)
        models[path] = build()
    optimizers = {path: torch.optim.Adam(m.parameters(), lr=0.01) for path, m in models.items()}
    loader.restart(config.seed)
    row = MiniBatchRow(label)
    for i in range(config.warmup + config.batches):
        loader.take()
        start = time.perf_counter()
        batch = loader.next()
        sample_s = time.perf_counter() - start
        sampler_s, gather_s = loader.take()
        train_s = {}
        for path in PATHS if i % 2 == 0 else PATHS[::-1]:
            if path == "scatterx":
                sxpyg.enable()
            try:
                start = time.perf_counter()
                loss = _step(models[path], optimizers[path], batch, hetero)
                train_s[path] = time.perf_counter() - start
            finally:
                sxpyg.disable()
            row.loss[path].append(loss)
        if i >= config.warmup:
            row.sample_s.append(sample_s)
            row.sampler_s.append(sampler_s)
            row.gather_s.append(gather_s)
            row.sampled.append(_batch_size(batch, hetero))
            for path, s in train_s.items():
                row.train_s[path].append(s)
    log(
        f"{label}: sampling {row.sample_ms:.1f} ms, train PyG {row.train_ms('pyg'):.1f} ms, "
        f"scatterx {row.train_ms('scatterx'):.1f} ms a batch; losses {row.loss['pyg'][-1]:.5f} / "
        f"{row.loss['scatterx'][-1]:.5f}"
    )
    return row


@dataclass
class MiniBatchReport:
    config: MiniBatchConfig
    graph: str  # the graph's description
    rows: List[MiniBatchRow]
    environment: Dict[str, str]
    setup_s: Dict[str, float]  # graph generation and loader construction, per graph
    hetero_graph: Optional[str] = None


def _timed(what: str, setup_s: Dict[str, float], log, fn: Callable):
    start = time.perf_counter()
    out = fn()
    setup_s[what] = time.perf_counter() - start
    log(f"{what}: {setup_s[what]:.1f} s")
    return out


def run(config: MiniBatchConfig, log: Callable = print) -> MiniBatchReport:
    """Every row, with ``scatterx.pyg_lib`` installed (before PyG is first imported, where it is not yet; it is
    left installed: PyG keeps what it found at its import)."""
    pyg_lib.install()
    before = torch.get_num_threads()
    torch.set_num_threads(config.threads)
    setup_s: Dict[str, float] = {}
    try:
        description, rows = homogeneous_rows(config, setup_s, log)
        hetero_description = None
        if config.hetero and any(m in HETERO_MODELS for m in config.models):
            hetero_description, hetero_rows = heterogeneous_rows(config, setup_s, log)
            rows += hetero_rows
    finally:
        torch.set_num_threads(before)
    import torch_geometric

    env = {**environment(), "torch_geometric": torch_geometric.__version__, "torch_threads": str(config.threads)}
    return MiniBatchReport(config, description, rows, env, setup_s, hetero_description)


def homogeneous_rows(config: MiniBatchConfig, setup_s: Dict[str, float], log) -> Tuple[str, List[MiniBatchRow]]:
    """The graph's description and a row per model (the graph is freed on return)."""
    from torch_geometric.data import Data

    graph = _timed("graph generation", setup_s, log, lambda: make_graph(config))
    data = Data(x=graph.x, edge_index=graph.edge_index, y=graph.y)
    loader = _timed("NeighborLoader construction", setup_s, log, lambda: make_loader(data, config, graph.train_nodes))
    rows = []
    for name in config.models:
        build = functools.partial(gnn.build_model, name, _as_gnn(config))
        rows.append(train_side_by_side(name, build, loader, config, False, log))
    return graph.describe(), rows


def heterogeneous_rows(config: MiniBatchConfig, setup_s: Dict[str, float], log) -> Tuple[str, List[MiniBatchRow]]:
    """The papers/authors/institutions graph's description and a row per model of ``HETERO_MODELS`` run."""
    mag: HeteroGraph = _timed(
        "hetero graph generation",
        setup_s,
        log,
        lambda: make_mag_like(config.nodes, config.features, config.classes, config.seed),
    )
    data = mag.to_pyg()
    loader = _timed(
        "hetero NeighborLoader construction",
        setup_s,
        log,
        lambda: make_loader(data, config, ("paper", mag.train_nodes)),
    )
    rows = []
    for name in (m for m in config.models if m in HETERO_MODELS):
        build = functools.partial(build_hetero_model, name, config, data.metadata())
        rows.append(train_side_by_side(f"hetero-{name}", build, loader, config, True, log))
    return mag.describe(), rows


def _as_gnn(config: MiniBatchConfig) -> gnn.GnnConfig:
    """bench-gnn's config of the same layer sizes (its ``build_model`` reads them)."""
    return gnn.GnnConfig(features=config.features, hidden=config.hidden, classes=config.classes, seed=config.seed)


def goal_results(report: MiniBatchReport):
    """The goals of ``goals.json`` (section bench-gnn-mini-batch) for each row of the run, in the run's order."""
    return [
        g
        for r in report.rows
        for g in evaluate(SECTION, MiniBatchCase(report.config, r), model=r.model, graph=report.config.graph)
    ]


def table(report: MiniBatchReport) -> str:
    c = report.config
    fanout = ", ".join(map(str, c.fanout))
    lines = [
        f"scatterx bench-gnn --mini-batch ({c.graph}): {report.graph}",
        f"NeighborLoader: batches of {c.batch_size:,} seeds, fanout [{fanout}]; {c.batches} batches per model after "
        f"{c.warmup} warm-up; hidden {c.hidden}; {c.threads} thread(s)",
    ]
    if report.hetero_graph is not None:
        lines.append(f"hetero graph: {report.hetero_graph}")
    lines += [
        "setup: " + ", ".join(f"{what} {s:.1f} s" for what, s in report.setup_s.items()),
        "per batch, median ms: sample = the loader's next() (sampler call + feature gather); train = forward + "
        "backward + optimizer step; epoch speedup = (sample + train PyG) / (sample + train sx); share = sample / "
        "(sample + train sx)",
        *_COLUMNS.head(rule=False),
    ]
    for r in report.rows:
        nodes = statistics.median(n for n, _ in r.sampled) if r.sampled else 0
        edges = statistics.median(e for _, e in r.sampled) if r.sampled else 0
        parts = f"{_ms(r.sampler_s):.1f}/{_ms(r.gather_s):.1f}"
        lines.append(
            _COLUMNS.row(
                r.model,
                f"{nodes:,.0f}/{edges:,.0f}",
                f"{r.sample_ms:.1f}",
                parts,
                f"{r.train_ms('pyg'):.1f}",
                f"{r.train_ms('scatterx'):.1f}",
                f"{r.speedup:.2f}x",
                f"{r.sample_share:.0%}",
                f"{r.max_loss_rel_diff:.1e}",
                "ok" if r.losses_agree else "DIFFER",
            )
        )
    lines += tail(goal_results(report), report.environment)
    return "\n".join(lines)


_COLUMNS = Columns(
    Column("model", 12, left=True),
    Column("nodes/edges", 15),
    Column("sample ms", 10),
    Column("sampler/gather", 15),
    Column("train PyG", 10),
    Column("train sx", 9),
    Column("epoch speedup", 14),
    Column("share", 6),
    Column("max rel loss diff", 18),
    Column("losses", 7),
)


def write_files(report: MiniBatchReport, out_dir: str) -> List[str]:
    """bench-gnn-mini-batch.csv (a line per model, path and batch) and bench-gnn-mini-batch.json."""
    import dataclasses

    rows = []
    for r in report.rows:
        for path in PATHS:
            losses = r.loss[path][len(r.loss[path]) - len(r.train_s[path]) :]  # the timed batches'
            for i, (s, t, loss) in enumerate(zip(r.sample_s, r.train_s[path], losses)):
                rows.append(
                    [r.model, path, i, f"{s:.6f}", f"{r.sampler_s[i]:.6f}", f"{r.gather_s[i]:.6f}", f"{t:.6f}"]
                    + [f"{loss:.8f}"]
                )
    header = ["model", "path", "batch", "sample_s", "sampler_s", "gather_s", "train_s", "loss"]
    csv_path = write_csv(out_dir, "bench-gnn-mini-batch.csv", header, rows)
    data = {
        "graph": report.graph,
        "hetero_graph": report.hetero_graph,
        "config": dataclasses.asdict(report.config),
        "environment": report.environment,
        "setup_s": report.setup_s,
        "rows": [
            {
                "model": r.model,
                "sample_ms": r.sample_ms,
                "train_ms": {p: r.train_ms(p) for p in PATHS},
                "epoch_speedup": r.speedup,
                "sample_share": r.sample_share,
                "max_loss_rel_diff": r.max_loss_rel_diff,
                **dataclasses.asdict(r),
            }
            for r in report.rows
        ],
        "goals": [dict(label=g.name, value=g.value, op=g.op, limit=g.limit, ok=g.ok) for g in goal_results(report)],
    }
    json_path = write_json(out_dir, "bench-gnn-mini-batch.json", data)
    return [str(csv_path), str(json_path)]
