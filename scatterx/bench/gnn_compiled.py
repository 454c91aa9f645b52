"""``scatterx bench-gnn --compile``: each model under ``torch.compile``, PyG's default path against the switch on.

Two copies of a model (same seed), each wrapped by ``torch.compile``, trained epoch by epoch in turn as the eager
rows are. Under ``torch.compile`` the switch hands every call to PyG's own code (inductor fuses PyG's torch ops;
a custom op would stand between them: docs/decisions/pyg-switch-rule.md), so the two should run the same graphs:
the row shows that a user who compiles a model loses nothing by leaving the switch on, and the eager row beside it
what the switch gains without compiling. The first epoch of each (the compile) is reported apart.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Callable, Dict, List

import torch


@dataclass
class CompiledRow:
    model: str
    pyg_ms: float  # median epoch of the compiled model, PyG's default path
    scatterx_ms: float  # ... with the switch on
    pyg_first_s: float  # the first epoch (dynamo and inductor compile)
    scatterx_first_s: float
    max_loss_rel_diff: float

    @property
    def speedup(self) -> float:
        return self.pyg_ms / self.scatterx_ms


def compiled_epochs(
    name: str, data, config, build_model: Callable, step: Callable, log: Callable = print, backend: str = "inductor"
) -> CompiledRow:
    """``name`` trained for ``config.epochs`` epochs under ``torch.compile(backend=backend)``, both paths;
    ``build_model(name, config)`` and ``step(model, optimizer, data) -> loss`` are bench-gnn's own."""
    import scatterx.pyg as sxpyg

    torch._dynamo.reset()
    models, optimizers = {}, {}
    for path in ("pyg", "scatterx"):
        torch.manual_seed(config.seed)
        model = build_model(name, config)
        optimizers[path] = torch.optim.Adam(model.parameters(), lr=0.01)
        models[path] = torch.compile(model, backend=backend)
    times: Dict[str, List[float]] = {"pyg": [], "scatterx": []}
    losses: Dict[str, List[float]] = {"pyg": [], "scatterx": []}
    try:
        for epoch in range(config.epochs):
            for path in ("pyg", "scatterx") if epoch % 2 == 0 else ("scatterx", "pyg"):
                if path == "scatterx":
                    sxpyg.enable()
                try:
                    start = time.perf_counter()
                    losses[path].append(step(models[path], optimizers[path], data))
                    times[path].append(time.perf_counter() - start)
                finally:
                    sxpyg.disable()
            log(
                f"{name} compiled, epoch {epoch}: pyg {times['pyg'][-1] * 1e3:.0f} ms, "
                f"scatterx {times['scatterx'][-1] * 1e3:.0f} ms"
            )
    finally:
        torch._dynamo.reset()

    def median_ms(path: str) -> float:
        return statistics.median(times[path][1:] or times[path]) * 1e3

    diff = max(abs(a - b) / max(abs(a), 1e-12) for a, b in zip(losses["pyg"], losses["scatterx"]))
    return CompiledRow(name, median_ms("pyg"), median_ms("scatterx"), times["pyg"][0], times["scatterx"][0], diff)


def table(rows: List[CompiledRow]) -> List[str]:
    """The compiled rows, under the eager table."""
    lines = [
        "torch.compile(model): PyG's default path against the switch on, both compiled (epoch ms; the first epoch, "
        "the compile, apart)",
        f"{'model':9} {'PyG compiled ms':>16} {'switch compiled ms':>19} {'speedup':>8} {'1st epoch PyG/sx s':>19} "
        f"{'max rel diff':>13}",
    ]
    for r in rows:
        first = f"{r.pyg_first_s:.1f}/{r.scatterx_first_s:.1f}"
        lines.append(
            f"{r.model:9} {r.pyg_ms:16.1f} {r.scatterx_ms:19.1f} {r.speedup:7.2f}x {first:>19} "
            f"{r.max_loss_rel_diff:13.1e}"
        )
    return lines


def as_dicts(rows: List[CompiledRow]) -> List[Dict]:
    return [dict(asdict(r), speedup=r.speedup) for r in rows]
