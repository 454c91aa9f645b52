"""``scatterx bench-gnn --compile``: each model under ``torch.compile``, PyG's default path against the switch on.

Two copies of a model (same seed), each wrapped by ``torch.compile``, trained epoch by epoch in turn by the eager
rows' own loop (``gnn.train_side_by_side(..., compile_backend=...)``); this module makes the row and its table.
Under ``torch.compile`` the switch hands every call to PyG's own code (inductor fuses PyG's torch ops; a custom op
would stand between them: docs/decisions/pyg-switch-rule.md), so the two should run the same graphs: the row shows
that a user who compiles a model loses nothing by leaving the switch on, and the eager row beside it what the switch
gains without compiling. The first epoch of each (the compile) is reported apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, List


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


def row(result) -> CompiledRow:
    """The compiled row of a ``gnn.ModelResult`` trained with ``train_side_by_side(..., compile_backend=...)``."""
    return CompiledRow(
        result.model,
        result.median("pyg") * 1e3,
        result.median("scatterx") * 1e3,
        result.epoch_s["pyg"][0],
        result.epoch_s["scatterx"][0],
        result.max_loss_rel_diff,
    )


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
