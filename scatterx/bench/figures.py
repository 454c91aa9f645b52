"""The benchmarks' figures, drawn from their saved results (``bench.json``, ``grid.csv``, ``bench-gnn.json``): for
each section, scatterx's speedup over the fastest peer per case, as horizontal bars from 1x on a log axis
(right: scatterx faster, left: slower), the value at each bar's end, the machine in the title. Sized for a docs
page: 950 px wide at 100 dpi, the height following the number of cases.

``scatterx plot DIR`` redraws the figures of a results directory; ``scatterx bench``, ``--grid`` and
``bench-gnn`` draw theirs at the end of a run.

Why this module is long: one drawing routine per results format (the bench's sections, the grid's sizes and element
plans, bench-gnn's graphs) sharing one bar layout; split apart they would repeat the layout."""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from .text import ENVIRONMENT, read_environment_line

WIDTH_IN = 9.5
DPI = 100
FASTER, SLOWER = (0.16, 0.62, 0.56), (0.91, 0.44, 0.32)  # teal, coral
#: the bench's own implementations that the figures set against the peers (the rest of scatterx's rows are
#: alternatives of them, not peers)
OURS = {
    "forward": "scatterx.index_scatter_reduce",
    "forward+backward": "scatterx.index_scatter_reduce",
    "softmax": "scatterx.segment_softmax",
    "weighted sum": "scatterx.gather_segment_reduce (weight)",
    "gatv2 logits": "scatterx.gatv2_logits",
    "drop-in": "scatterx.torch_scatter",
}
TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 1.5, 2, 3, 5, 10, 20, 50, 100, 200)
_VECTOR = ("avx512f", "avx2", "avx", "sse4.2", "neon", "sve")


@dataclass
class Case:
    label: str
    speedup: Optional[float]  # None: not measured
    detail: str = ""  # beside the value, in grey: the peer, the times
    group: str = ""  # a gap between groups


def machine(env: Dict[str, str]) -> str:
    """The machine a result was measured on, from its environment record: the GPU, or the CPU with the vector
    extension Numba compiled for, and the threads."""
    if env.get("gpu"):
        return f"{env['gpu']} (Triton {env.get('triton', '?')})"
    cpu = env.get("cpu", "CPU not recorded")
    if cpu in ("x86_64", "aarch64", "arm64", "AMD64", ""):
        cpu = f"{cpu or 'a'} CPU (model not recorded)"
    target = env.get("numba_cpu_target", "")
    if target:
        name, _, rest = target.partition(" (")
        widest = next((v for v in _VECTOR if v in rest.rstrip(")").split(", ")), None)
        cpu += f", {name}" + (f" ({widest.upper()})" if widest else "")
    threads = env.get("torch_threads")
    return cpu + (f", {threads} thread{'s' if threads != '1' else ''}" if threads else "")


def _footer(env: Dict[str, str]) -> str:
    parts = [
        f"scatterx {env['scatterx']}" if "scatterx" in env else "",
        f"commit {env['commit']}" if env.get("commit") else "",
        f"torch {env['torch']}" if "torch" in env else "",
        f"torch_scatter {env['torch_scatter']}" if env.get("torch_scatter", "not installed") != "not installed" else "",
        f"PyG {env['torch_geometric']}" if "torch_geometric" in env else "",
    ]
    return " · ".join(p for p in parts if p)


def _x(value: float) -> str:
    return f"{value:.2f}x" if value < 10 else f"{value:.1f}x"


def speedup_chart(
    cases: Sequence[Case],
    title: str,
    subtitle: str,
    path: str,
    footer: str = "",
    xlabel: str = "speedup of scatterx (peer time / scatterx time; log scale)",
) -> Optional[str]:
    """Horizontal bars from 1x to each case's speedup; ``subtitle`` may hold several lines. None where matplotlib
    is missing or nothing was measured."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.ticker import FixedLocator, NullLocator
    except ImportError:
        return None
    measured = [c.speedup for c in cases if c.speedup]
    if not measured:
        return None
    ys, y, previous = [], 0.0, None
    for c in cases:  # top to bottom, a half-row gap between groups
        if previous is not None and c.group != previous:
            y += 0.5
        ys.append(y)
        y += 1.0
        previous = c.group
    sub_lines = subtitle.count("\n") + 1
    top_in = 0.42 + 0.19 * sub_lines
    bottom_in = 0.55 + (0.18 if footer else 0.0)
    height = top_in + bottom_in + 0.3 * y + 0.1
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height), dpi=DPI)
    fig.text(0.1 / WIDTH_IN, 1 - 0.12 / height, title, fontsize=11, fontweight="bold", ha="left", va="top")
    fig.text(
        0.1 / WIDTH_IN, 1 - 0.4 / height, subtitle, fontsize=8.5, color="0.2", ha="left", va="top", linespacing=1.4
    )
    if footer:
        fig.text(1 - 0.1 / WIDTH_IN, 0.06 / height, footer, fontsize=7, color="grey", ha="right", va="bottom")
    texts = []
    for c, yy in zip(cases, ys):
        if not c.speedup:
            ax.text(1.0, yy, "  not measured", va="center", fontsize=8, color="grey")
            continue
        right = c.speedup >= 1
        ax.barh(yy, c.speedup - 1.0, left=1.0, height=0.7, color=FASTER if right else SLOWER)
        words = [_x(c.speedup)] + ([c.detail] if c.detail else [])
        text = "  ".join(words) if right else "  ".join(reversed(words))
        texts.append(ax.text(c.speedup, yy, f" {text} ", va="center", ha="left" if right else "right", fontsize=8.5))
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlim(min(min(measured) / 1.15, 0.9), max(max(measured) * 1.15, 2.2))
    ax.set_yticks(ys, [c.label for c in cases], fontsize=9)
    ax.set_ylim(y - 0.4, -0.6)
    ax.grid(axis="x", color="0.87", linewidth=0.6)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel(xlabel, fontsize=8.5)
    ax.xaxis.set_minor_locator(NullLocator())
    # the left margin takes the longest case label
    fig.canvas.draw()
    label_px = max(t.get_window_extent().width for t in ax.get_yticklabels())
    left_in = label_px / DPI + 0.2
    fig.subplots_adjust(
        left=left_in / WIDTH_IN, right=1 - 0.15 / WIDTH_IN, top=1 - top_in / height, bottom=bottom_in / height
    )
    _fit_texts(fig, ax, texts)
    low, high = ax.get_xlim()
    ticks = [t for t in TICKS if low <= t <= high]
    if len(ticks) > 9:
        ticks = [t for t in ticks if t not in (0.2, 1.5, 3, 20, 200)]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.set_xticklabels([f"{t:g}x" for t in ticks], fontsize=8)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _fit_texts(fig, ax, texts, rounds: int = 8) -> None:
    """Widen the log x range until every value text lies inside the axes."""
    for _ in range(rounds):
        fig.canvas.draw()
        box = ax.get_window_extent()
        right = max((t.get_window_extent().x1 for t in texts), default=box.x1)
        left = min((t.get_window_extent().x0 for t in texts), default=box.x0)
        if right <= box.x1 + 0.5 and left >= box.x0 - 0.5:
            return
        low, high = (math.log(v) for v in ax.get_xlim())
        per_px = (high - low) / box.width
        if right > box.x1:
            high += (right - box.x1 + 4) * per_px * 1.2
        if left < box.x0:
            low -= (box.x0 - left + 4) * per_px * 1.2
        ax.set_xlim(math.exp(low), math.exp(high))


def _short(name: str) -> str:
    return name.replace(" (expanded index)", "").replace("PyG's softmax formula (torch ops)", "PyG's softmax")


# ------------------------------------------------------------------------------------------ scatterx bench
def _fastest_peer(rows: List[dict], reduce: str, order: str, mode: str) -> Optional[dict]:
    peers = [
        r
        for r in rows
        if (r["reduce"], r["order"], r["mode"]) == (reduce, order, mode)
        and not r["implementation"].startswith("scatterx")
    ]
    return min(peers, key=lambda r: r["ms"], default=None)


def _case(rows, reduce, order, mode, ours_name, label, group, detail=True) -> Optional[Case]:
    ours = next(
        (
            r
            for r in rows
            if (r["reduce"], r["order"], r["mode"], r["implementation"]) == (reduce, order, mode, ours_name)
        ),
        None,
    )
    if ours is None:
        return None
    peer = _fastest_peer(rows, reduce, order, mode)
    speedup = None if peer is None else peer["ms"] / ours["ms"]
    text = "" if peer is None or not detail else f"vs {_short(peer['implementation'])}"
    return Case(label, speedup, text, group)


def bench_figures(data: dict, out_dir: str) -> List[str]:
    """The figures of a ``scatterx bench`` run (the content of its bench.json): forward, forward+backward,
    message passing, the drop-in; the paths written."""
    rows, env = data["rows"], data.get("environment", {})
    c = data["config"]
    device = c.get("device", "cpu")
    degrees = {"powerlaw": "power-law"}.get(c.get("degrees", "powerlaw"), c.get("degrees"))
    shape = (
        f"{c['edges']:,} edges x {c['features']} features -> {c['nodes']:,} nodes, {c['dtype']}, {degrees} in-degrees"
    )
    subtitle = f"{machine(env)}\n{shape}; bars right of 1x: scatterx faster"
    footer = _footer(env)
    keys = []
    for r in rows:
        if (r["reduce"], r["order"], r["mode"]) not in keys:
            keys.append((r["reduce"], r["order"], r["mode"]))
    figures: List[Tuple[List[Optional[Case]], str, str]] = []

    forward = [
        _case(rows, red, o, m, OURS["forward"], f"{red}, {o} index", red)
        for red, o, m in keys
        if m == "forward" and red in ("sum", "mean", "prod", "amax", "amin")
    ]
    figures.append((forward, "index_scatter_reduce, forward: scatterx's speedup over the fastest peer", "forward.png"))
    backward = [
        _case(rows, red, o, m, OURS["forward+backward"], f"{red}, {o} index", red)
        for red, o, m in keys
        if m == "forward+backward" and red in ("sum", "mean", "prod", "amax", "amin")
    ]
    figures.append(
        (
            backward,
            "index_scatter_reduce, forward+backward: scatterx's speedup over the fastest peer",
            "forward-backward.png",
        )
    )
    labels = {
        "softmax": "segment softmax (forward)",
        "weighted sum": "weighted gather-segment sum (fwd+bwd)",
        "gatv2 logits": "GATv2 attention logits (fwd+bwd)",
    }
    passing = [_case(rows, red, o, m, OURS[red], f"{labels[red]}, {o}", red) for red, o, m in keys if red in labels]
    figures.append(
        (passing, "Message passing: scatterx's fused ops against PyG's path on torch ops", "message-passing.png")
    )
    dropin_peer = next(
        (r["implementation"] for r in rows if r["mode"] == "drop-in" and r["implementation"] != OURS["drop-in"]), ""
    )
    native = not dropin_peer.startswith("torch_scatter")
    against = "torch-native equivalents" if native else "torch_scatter"
    dropin = [
        _case(rows, f, o, m, OURS["drop-in"], f"{f}, {o}", f.split("_")[0], detail=False)
        for f, o, m in keys
        if m == "drop-in"
    ]
    figures.append((dropin, f"scatterx.torch_scatter, the drop-in: speedup over {against}", "drop-in.png"))

    written = []
    where = "GPU" if device == "cuda" else "CPU"
    for maybe_cases, title, name in figures:
        cases = [x for x in maybe_cases if x is not None]
        sub = subtitle
        if name == "drop-in.png" and native:
            sub += "\ntorch_scatter was not installed: each function against what it takes in torch's own ops"
        if cases:
            path = speedup_chart(cases, f"{title} ({where})", sub, os.path.join(out_dir, name), footer)
            if path:
                written.append(path)
    return written


# ------------------------------------------------------------------------------------------ scatterx bench --grid
def read_grid_csv(path: str) -> List[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def environment_line(path: str) -> Dict[str, str]:
    """The environment a run printed (its saved output at ``path``), where the run kept no JSON."""
    if not os.path.exists(path):
        return {}
    with open(path, errors="replace") as f:
        lines = [line for line in f if line.startswith(ENVIRONMENT)]
    return read_environment_line(lines[-1]) if lines else {}


def grid_figures(rows: List[dict], env: Dict[str, str], out_dir: str) -> List[str]:
    """The grid's figures from its CSV rows: the speedup by size (E x F, the base plane, forward: the median
    over reductions and index orders, their range beside it), and the element plans."""
    cells = [r for r in rows if r["section"] == "cell" and r["speedup"] and r["pass"] == "fwd"]
    written = []
    footer = _footer(env)
    if cells:
        planes: Dict[tuple, int] = {}
        for r in cells:
            key = (r["degree"], r["dtype"], r["dim"])
            planes[key] = planes.get(key, 0) + 1
        degree, dtype, dim = max(planes, key=lambda plane: planes[plane])
        base = [r for r in cells if (r["degree"], r["dtype"], r["dim"]) == (degree, dtype, dim)]
        sizes = sorted({(int(r["edges"]), int(r["features"])) for r in base})
        cases = []
        for e, f in sizes:
            values = [float(r["speedup"]) for r in base if (int(r["edges"]), int(r["features"])) == (e, f)]
            mid = statistics.median(values)
            cases.append(
                Case(
                    f"{e:,} edges x {f:,} feature{'s' if f != 1 else ''}",
                    mid,
                    f"({min(values):.2f}x to {max(values):.2f}x)",
                    str(e),
                )
            )
        reductions = sorted({r["reduce"] for r in base})
        orders = sorted({r["order"] for r in base}, reverse=True)
        subtitle = (
            f"{machine(env)}\nforward, mean in-degree {degree}, {dtype}, dim {dim}: each bar the median of "
            f"the cells {', '.join(reductions)} x {' and '.join(orders)} index, their range beside it"
        )
        path = speedup_chart(
            cases,
            "index_scatter_reduce by size: speedup over the fastest torch path (CPU)",
            subtitle,
            os.path.join(out_dir, "grid-sizes.png"),
            footer,
        )
        if path:
            written.append(path)
    elements = [r for r in rows if r["section"] == "element"]
    if elements:
        cases = []
        keys = []
        for r in elements:
            if (r["op"], r["size"]) not in keys:
                keys.append((r["op"], r["size"]))
        for op, size in keys:
            here = [r for r in elements if (r["op"], r["size"]) == (op, size)]
            peer = min(here, key=lambda r: float(r["peer_us"]))
            speedup = float(peer["peer_us"]) / float(peer["scatterx_us"])
            cases.append(Case(f"{op}, {size.split(' ')[0]}", speedup, f"vs {peer['peer']}", size))
        subtitle = (
            f"{machine(env)}\nan index that differs per feature; small: 2,000 x 16 -> 500 rows, "
            f"large: 200,000 x 64 -> 50,000 rows"
        )
        path = speedup_chart(
            cases,
            "Element plans: speedup over the fastest of torch and onnxruntime (CPU)",
            subtitle,
            os.path.join(out_dir, "grid-elements.png"),
            footer,
        )
        if path:
            written.append(path)
    return written


# ------------------------------------------------------------------------------------------------- bench-gnn
def gnn_figure(runs: List[dict], path: str) -> Optional[str]:
    """Epoch speedups of scatterx.pyg over PyG's default path, per graph and model, from bench-gnn.json files."""
    cases = []
    for run in runs:
        graph = run.get("graph_shape", "graph")
        for r in run["results"]:
            pyg, ours = r["median_epoch_s"]["pyg"], r["median_epoch_s"]["scatterx"]
            cases.append(Case(f"{graph}: {r['model']}", pyg / ours, f"{pyg * 1e3:,.0f} -> {ours * 1e3:,.0f} ms", graph))
    env = runs[0].get("environment", {}) if runs else {}
    subtitle = (
        f"{machine(env)}\nfull-batch training of two-layer models; the median epoch after the first, "
        f"PyG's -> scatterx's beside each bar"
    )
    return speedup_chart(
        cases,
        "bench-gnn: epoch speedup of scatterx.pyg over PyG's default path (CPU)",
        subtitle,
        path,
        _footer(env),
        xlabel="speedup (PyG epoch / scatterx epoch; log scale)",
    )


# ---------------------------------------------------------------------------------------------- scatterx plot
def plot_dir(directory: str) -> List[str]:
    """Redraw the figures of a results directory from the files in it: bench.json, grid.csv (its environment
    from grid.json or the saved stdout.txt), bench-gnn.json, or subdirectories holding bench-gnn.json (one
    figure for all of them)."""
    written = []
    bench = os.path.join(directory, "bench.json")
    if os.path.exists(bench):
        with open(bench) as f:
            written += bench_figures(json.load(f), directory)
    grid_csv = os.path.join(directory, "grid.csv")
    if os.path.exists(grid_csv):
        env = {}
        if os.path.exists(os.path.join(directory, "grid.json")):
            with open(os.path.join(directory, "grid.json")) as f:
                env = json.load(f).get("environment", {})
        env = env or environment_line(os.path.join(directory, "stdout.txt"))
        written += grid_figures(read_grid_csv(grid_csv), env, directory)
    gnn_json = os.path.join(directory, "bench-gnn.json")
    runs = []
    if os.path.exists(gnn_json):
        runs = [gnn_json]
    else:
        runs = sorted(
            os.path.join(directory, d, "bench-gnn.json")
            for d in os.listdir(directory)
            if os.path.exists(os.path.join(directory, d, "bench-gnn.json"))
        )
    if runs:
        loaded = []
        for p in runs:
            with open(p) as f:
                loaded.append(json.load(f))
        order = {"cora": 0, "citeseer": 1, "narrow": 2, "pubmed": 3, "arxiv": 4, "products-small": 5}
        loaded.sort(key=lambda d: order.get(d.get("graph_shape"), math.inf))
        path = gnn_figure(loaded, os.path.join(directory, "epochs.png"))
        if path:
            written.append(path)
    return written
