"""``scatterx bench --grid``: ``scatterx.index_scatter_reduce`` against the fastest torch path on a
grid of shapes, then the element plans against torch's functions and onnxruntime (``grid_elements.py``).

Axes: edges E, features F, mean in-degree (power-law degrees from ``graphs.make_graph``, N = E // degree nodes),
index order, reduction, dtype, and the reduced dim: 0 of an ``(E, F)`` src or the last of an ``(F, E)`` one.
Every cell runs forward; sum and mean also forward+backward. ``GridSpec(full=True)`` (``--grid full``) takes every
combination of the axes (4,320 cells; hours on 2 cores). The default (510 cells, ~15 minutes on 2 busy cores) is
a star around one plane: the E x F plane at the base values (the first listed degree, dtype and dim:
10, float32, 0) up to ``MAX_ELEMENTS`` = E x F, and cells that change one of degree, dtype or dim at the E x F
points of ``SIDE_EDGES`` x ``SIDE_FEATURES`` up to ``SIDE_MAX_ELEMENTS``; forward+backward on the base plane up
to ``SIDE_MAX_ELEMENTS``. (Measured: the cells above those sizes took 20 of the 35 minutes of the whole star.)

The fastest torch path of a cell: the minimum over ``torch.zeros(...).scatter_reduce_`` with the index expanded
(a stride-0 view, as PyG does), ``index_add_`` (sum) and ``index_reduce_`` (mean, amax: it wins for amax on some
shapes, and is up to 10x slower for mean: a peer whose warm call is over ``PRUNE`` times the fastest one's is not
timed further). scatterx's result is checked against torch's before anything is timed (half types: against torch
on the float32 values). Times are medians of calls made in blocks of back-to-back calls, the implementations' blocks
taking turns (``ROUNDS`` each), so that slow drifts of the machine's load fall on all of them; until each has run
``seconds`` and ``min_calls`` calls (3 for calls over 50 ms): thousands of calls for a microsecond cell, 3 for a
second-long one. Why blocks, not single calls in turn: on a busy machine torch's OpenMP worker falls asleep
between two calls that are apart, and waking it can cost tens of milliseconds (measured: 15 µs calls back to
back, 60 ms with another op between them); back-to-back calls are also what a training loop makes. A cell whose
tensors would take over ``memory_fraction`` of the memory available when the grid starts is skipped, and says so.

Why this module is long: it is the grid's spec, its cells and their torch peers, the timing loop and the run;
the element rows (``grid_elements.py``) and the outputs (``grid_report.py``) are already apart, and what remains
shares the cell type and the timing loop.
"""

from __future__ import annotations

import gc
import itertools
import statistics
import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import torch

import scatterx
from scatterx.ops._checks import _free_bytes, _human

from . import grid_elements
from .goals import evaluate
from .graphs import Graph, make_graph
from .harness import ORDERS, OtherLoad, check, environment

EDGES = (100, 1_000, 10_000, 100_000, 1_000_000, 4_000_000)
FEATURES = (1, 4, 16, 64, 256, 1433)
DEGREES = (10, 2, 50)  # the first of each of degrees, dtypes and dims is the base of the default (star) grid
DTYPES = ("float32", "bfloat16")
DIMS = (0, -1)
REDUCTIONS = ("sum", "mean", "amax")
BACKWARD_REDUCTIONS = ("sum", "mean")
SIDE_EDGES = (1_000, 100_000, 1_000_000)
SIDE_FEATURES = (1, 16, 256)
MAX_ELEMENTS = 1 << 28  # default grid: forward cells of the base plane up to this E x F (1 GiB of float32)
SIDE_MAX_ELEMENTS = 1 << 26  # default grid: side cells and forward+backward cells up to this E x F
PRUNE = 3.0  # a torch peer this many times slower than the fastest one (warm call) is not timed further
MAX_CALLS = 20_000
ROUNDS = 5  # blocks per implementation and cell
WAKE = 0.02  # calls shorter than this start each block with an untimed call


@dataclass
class GridSpec:
    edges: tuple = EDGES
    features: tuple = FEATURES
    degrees: tuple = DEGREES
    orders: tuple = ORDERS
    reductions: tuple = REDUCTIONS
    dtypes: tuple = DTYPES
    dims: tuple = DIMS
    full: bool = False  # every combination, instead of the star around the base plane
    backward: bool = True  # forward+backward cells for sum and mean
    elements: tuple = grid_elements.SIZES  # element-plan rows at these sizes ("small", "large")
    threads: int = 2
    seconds: float = 0.2  # timing budget per implementation and cell
    min_calls: int = 5
    memory_fraction: float = 0.5  # of the memory available when the grid starts
    seed: int = 0


@dataclass(frozen=True)
class Cell:
    edges: int
    features: int
    degree: int
    dtype: str
    dim: int
    order: str
    reduce: str
    mode: str  # "fwd" or "fwd+bwd"

    @property
    def nodes(self) -> int:
        return max(1, self.edges // self.degree)

    @property
    def shape(self) -> tuple:
        return (self.edges, self.features) if self.dim == 0 else (self.features, self.edges)

    @property
    def out_shape(self) -> tuple:
        return (self.nodes, self.features) if self.dim == 0 else (self.features, self.nodes)


@dataclass
class GridRow:
    cell: Cell
    goal: float
    scatterx_s: Optional[float] = None
    torch_s: Optional[float] = None  # the fastest torch path
    torch_peer: str = ""
    peers: Dict[str, float] = field(default_factory=dict)  # every torch peer timed
    calls: int = 0  # timed calls of scatterx
    skipped: str = ""  # why the cell was not run
    wall_s: float = 0.0  # the cell's time in the grid: making its tensors, checking, timing

    @property
    def speedup(self) -> Optional[float]:
        return None if self.scatterx_s is None or self.torch_s is None else self.torch_s / self.scatterx_s

    @property
    def ok(self) -> Optional[bool]:
        return None if self.speedup is None else self.speedup >= self.goal

    def to_dict(self) -> dict:
        return dict(asdict(self), speedup=self.speedup, ok=self.ok)


@dataclass
class GridReport:
    spec: GridSpec
    rows: List[GridRow]
    elements: list  # grid_elements.ElementRow
    wall_s: float
    limit_bytes: Optional[int]
    environment: Dict[str, str]
    notes: List[str] = field(default_factory=list)


def goal(edges: int) -> float:
    """The least speedup over the fastest torch path a cell of ``edges`` edges must reach (``goals.json``,
    section grid: it rises with the edges)."""
    probe = GridRow(Cell(edges, 1, 1, "float32", 0, "sorted", "sum", "fwd"), 0.0)
    (result,) = evaluate("grid", probe)
    return result.limit


def cells(spec: GridSpec) -> List[Cell]:
    """The grid's cells, in the order they run (cells sharing an index, then a src, are adjacent)."""
    base = (spec.degrees[0], spec.dtypes[0], spec.dims[0])
    side_e = [e for e in spec.edges if e in SIDE_EDGES] or list(spec.edges)
    side_f = [f for f in spec.features if f in SIDE_FEATURES] or list(spec.features)
    out = []
    for e, deg in itertools.product(spec.edges, spec.degrees):
        for f, dtype, dim in itertools.product(spec.features, spec.dtypes, spec.dims):
            off_base = sum(a != b for a, b in zip((deg, dtype, dim), base))
            side = off_base == 1 and e in side_e and f in side_f and e * f <= SIDE_MAX_ELEMENTS
            if not spec.full and not (side or (not off_base and e * f <= MAX_ELEMENTS)):
                continue
            for order, reduce in itertools.product(spec.orders, spec.reductions):
                out.append(Cell(e, f, deg, dtype, dim, order, reduce, "fwd"))
            if spec.backward and (spec.full or (not off_base and e * f <= SIDE_MAX_ELEMENTS)):
                for order, reduce in itertools.product(spec.orders, spec.reductions):
                    if reduce in BACKWARD_REDUCTIONS:
                        out.append(Cell(e, f, deg, dtype, dim, order, reduce, "fwd+bwd"))
    return out


def cell_bytes(cell: Cell) -> int:
    """A generous estimate of the memory a cell holds at its peak: src, two outputs per implementation (one
    kept, one being made), the float32 reference, the index and its sort; forward+backward adds the leaf copy of
    src, its gradient, torch's gathered gradient and counts, and the upstream gradient."""
    size = torch.empty(0, dtype=getattr(torch, cell.dtype)).element_size()
    src, out = cell.edges * cell.features * size, cell.nodes * cell.features * max(size, 4)
    total = src + 4 * out + 4 * cell.edges * 8
    if cell.dtype != "float32":
        total += min(src * 2, 1 << 27)  # a chunk of src in float32, for the reference
    if cell.mode == "fwd+bwd":
        total += 3 * src + 3 * out
    return total


def measure(fns: Dict[str, Callable], seconds: float, min_calls: int, prune: Optional[Callable] = None):
    """``(median seconds per call, calls, names dropped)`` of warm callables, called in blocks of back-to-back
    calls (about ``seconds / ROUNDS`` each, after an untimed call when they are short), the blocks round-robin,
    until each has taken ``seconds`` and made ``min_calls`` calls (3 for calls over 50 ms; at most ``MAX_CALLS``).
    ``prune({name: estimate})`` may name callables not to time beyond the first estimate (those dropped)."""
    samples: Dict[str, List[float]] = {}
    for name, fn in fns.items():  # a first estimate: the fastest of 2 or 3 calls (one may be a stall)
        samples[name] = []
        while len(samples[name]) < 3 and (
            sum(samples[name]) < 0.02 or (len(samples[name]) < 2 and sum(samples[name]) < 0.2)
        ):
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
    first = {name: min(s) for name, s in samples.items()}
    dropped = set(prune(first)) if prune else set()
    least = {name: min_calls if t < 0.05 else min(min_calls, 3) for name, t in first.items()}
    spent = {name: sum(s) for name, s in samples.items()}

    def wanted(name):
        n = len(samples[name])
        return name not in dropped and n < MAX_CALLS and (n < least[name] or spent[name] < seconds)

    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        while any(wanted(name) for name in fns):
            for name, fn in fns.items():
                block_end = spent[name] + seconds / ROUNDS
                if wanted(name) and first[name] < WAKE:
                    fn()  # untimed: wakes the thread pools after the other implementations' block
                while wanted(name) and spent[name] < block_end:
                    start = time.perf_counter()
                    fn()
                    samples[name].append(time.perf_counter() - start)
                    spent[name] += samples[name][-1]
    finally:
        if gc_was_enabled:
            gc.enable()
    medians = {name: statistics.median(s) for name, s in samples.items()}
    return medians, {name: len(s) for name, s in samples.items()}, dropped


def run(spec: GridSpec, progress: Callable = lambda it, **kw: it, log: Callable = print) -> GridReport:
    """Run the grid on ``spec.threads`` threads (the caller's torch thread count is restored after)."""
    before = torch.get_num_threads()
    torch.set_num_threads(spec.threads)
    start = time.perf_counter()
    others = OtherLoad()
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="index_reduce\\(\\) is in beta")
            free = _free_bytes(torch.device("cpu"))
            limit: Optional[int] = None
            if free is not None:
                limit = int(free * spec.memory_fraction)
                log(
                    f"grid: cells needing over {_human(limit)} ({spec.memory_fraction:.0%} of {_human(free)} "
                    f"available) are skipped"
                )
            notes: List[str] = []  # the element plans first: a minute, and an abort there costs little
            elements = grid_elements.rows(spec, measure, progress, notes.append) if spec.elements else []
            rows = _run_cells(spec, cells(spec), limit, progress)
        env = {**environment("cpu"), "other processes": others.describe()}
        return GridReport(spec, rows, elements, time.perf_counter() - start, limit, env, notes)
    finally:
        torch.set_num_threads(before)


def _run_cells(spec: GridSpec, todo: List[Cell], limit: Optional[int], progress: Callable) -> List[GridRow]:
    rows = []
    graph_key: Optional[Tuple[int, int]] = None
    src_key: Optional[Tuple[int, int, str, int]] = None
    graph: Optional[Graph] = None
    src: Optional[torch.Tensor] = None
    for cell in progress(todo, desc="grid", unit="cell"):
        started = time.perf_counter()
        row = GridRow(cell, goal(cell.edges))
        rows.append(row)
        need = cell_bytes(cell)
        if limit is not None and need > limit:
            row.skipped = f"skipped: needs {_human(need)}, over the limit of {_human(limit)}"
            continue
        if graph is None or graph_key != (cell.edges, cell.degree):
            graph_key, graph = (cell.edges, cell.degree), None
            graph = make_graph(cell.edges, cell.nodes, 0, torch.float32, "powerlaw", spec.seed)
        key = (cell.edges, cell.features, cell.dtype, cell.dim)
        if src is None or src_key != key:
            src_key, src = key, None  # the old src is freed before the new one is made
            gen = torch.Generator().manual_seed(spec.seed + 1)
            src = torch.empty(cell.shape, dtype=getattr(torch, cell.dtype)).uniform_(-1.0, 1.0, generator=gen)
        index = graph.index if cell.order == "sorted" else graph.shuffled_index
        _run_cell(row, spec, index, src)
        row.wall_s = time.perf_counter() - started
    return rows


def _cell_calls(cell: Cell, index: torch.Tensor, src: torch.Tensor):
    """(scatterx, {torch peer name: callable}, reference callable) for a cell; each returns the result (forward)
    or the gradient w.r.t. src (forward+backward)."""
    dim, n, reduce, sorted_ = cell.dim, cell.nodes, cell.reduce, cell.order == "sorted"
    out_shape = cell.out_shape
    expanded = index.view(-1, 1).expand(src.shape) if dim == 0 else index.view(1, -1).expand(src.shape)

    def scatter_reduce(s):
        return torch.zeros(out_shape, dtype=s.dtype).scatter_reduce_(dim, expanded, s, reduce, include_self=False)

    if cell.mode == "fwd":
        peers = {"scatter_reduce_": lambda: scatter_reduce(src)}
        if reduce == "sum":
            peers["index_add_"] = lambda: torch.zeros(out_shape, dtype=src.dtype).index_add_(dim, index, src)
        else:
            peers["index_reduce_"] = lambda: torch.zeros(out_shape, dtype=src.dtype).index_reduce_(
                dim, index, src, reduce, include_self=False
            )
        ours = lambda: scatterx.index_scatter_reduce(dim, index, src, reduce, sorted=sorted_, dim_size=n)  # noqa: E731
        return ours, peers, lambda: _reference(cell, index, src, peers["scatter_reduce_"])

    leaf = src.detach().clone().requires_grad_()
    grad_out = torch.empty(out_shape, dtype=src.dtype).uniform_(-1.0, 1.0, generator=torch.Generator().manual_seed(2))

    def backward(forward):
        def call():
            leaf.grad = None
            forward().backward(grad_out)
            return leaf.grad

        return call

    peers = {
        "scatter_reduce": backward(
            lambda: torch.zeros(out_shape, dtype=src.dtype).scatter_reduce(
                dim, expanded, leaf, reduce, include_self=False
            )
        )
    }
    if reduce == "sum":
        peers["index_add"] = backward(lambda: torch.zeros(out_shape, dtype=src.dtype).index_add(dim, index, leaf))
    ours = backward(lambda: scatterx.index_scatter_reduce(dim, index, leaf, reduce, sorted=sorted_, dim_size=n))
    return ours, peers, peers["scatter_reduce"]


def _reference(cell: Cell, index, src, torch_call):
    """torch's result; for half types, torch's scatter_reduce on the float32 values (in chunks of features),
    rounded once: scatterx accumulates in float32, and the check then does not depend on how torch's kernel for
    a given layout accumulates half types."""
    if src.dtype in (torch.float32, torch.float64):
        return torch_call()
    rows = src if cell.dim == 0 else src.t()  # (E, F) either way
    out = torch.empty((cell.nodes, cell.features), dtype=src.dtype)
    step = max(1, (1 << 24) // max(cell.edges, 1))
    for j in range(0, cell.features, step):
        part = rows[:, j : j + step].float()
        zeros = torch.zeros((cell.nodes, part.size(1)))
        out[:, j : j + step] = zeros.scatter_reduce_(
            0, index.view(-1, 1).expand(part.shape), part, cell.reduce, include_self=False
        )
    return out if cell.dim == 0 else out.t()


def _run_cell(row: GridRow, spec: GridSpec, index: torch.Tensor, src: torch.Tensor) -> None:
    cell = row.cell
    ours, peers, reference = _cell_calls(cell, index, src)
    what = (
        f"scatterx.index_scatter_reduce {cell.mode} ({cell.reduce}, {cell.order}, {cell.dtype}, dim "
        f"{cell.dim}, shape {cell.shape}, degree {cell.degree})"
    )
    check(what, ours().clone(), reference().clone())
    warm = list(peers)[1:] if cell.mode == "fwd+bwd" or src.dtype in (torch.float32, torch.float64) else peers
    for name in list(warm):  # warm every peer (the reference warmed the first); left out where torch cannot run
        try:
            peers[name]()
        except (RuntimeError, NotImplementedError):
            del peers[name]

    def prune(first):
        fastest = min(t for name, t in first.items() if name in peers)
        return [name for name, t in first.items() if name in peers and t > PRUNE * fastest]

    times, counts, dropped = measure({"scatterx": ours, **peers}, spec.seconds, spec.min_calls, prune)
    row.scatterx_s, row.calls = times.pop("scatterx"), counts["scatterx"]
    row.peers = times
    timed = {name: t for name, t in times.items() if name not in dropped}
    row.torch_peer, row.torch_s = min(timed.items(), key=lambda kv: kv[1])


def missed(report: GridReport) -> list:
    """Cells and element rows that miss their goal."""
    return [r for r in report.rows if r.ok is False] + [r for r in report.elements if r.ok is False]
