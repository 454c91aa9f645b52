"""``scatterx bench-gnn --compile``: each model under ``torch.compile``, PyG's default path against the switch on.

Two copies of a model (same seed), each wrapped by ``torch.compile``, trained epoch by epoch in turn by the eager
rows' own loop (``gnn.train_side_by_side(..., compile_backend=...)``), with a third copy beside them, eager with the
switch on; this module makes the row and its table. Under ``torch.compile`` the switch traces its layers and
reductions as scatterx's ops where its rule says they pay (docs/decisions/pyg-switch-rule.md), so the row shows
what a user who compiles a model gains by the switch (against PyG compiled) and what compiling adds to the switch
(against the eager copy, timed in the same loop). The first epoch of each (the compile) is reported apart.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Dict, List

from ..text import Column, Columns

# the compiled switch's goal: >= 1.8x PyG compiled, and no slower than the eager switch (>= 0.95x, timing noise)
GOAL_SPEEDUP = 1.8
GOAL_VS_EAGER = 0.95


@dataclass
class CompiledRow:
    model: str
    pyg_ms: float  # median epoch of the compiled model, PyG's default path
    scatterx_ms: float  # ... with the switch on
    pyg_first_s: float  # the first epoch (dynamo and inductor compile)
    scatterx_first_s: float
    max_loss_rel_diff: float
    eager_ms: float  # median epoch of the eager model with the switch on, in the same loop

    @property
    def speedup(self) -> float:
        return self.pyg_ms / self.scatterx_ms

    @property
    def vs_eager(self) -> float:
        """The compiled switch's speed over the eager switch's (above 1: compiling gains)."""
        return self.eager_ms / self.scatterx_ms

    @property
    def meets_goal(self) -> bool:
        return self.speedup >= GOAL_SPEEDUP and self.vs_eager >= GOAL_VS_EAGER


def row(result) -> CompiledRow:
    """The compiled row of a ``gnn.ModelResult`` trained with ``train_side_by_side(..., compile_backend=...)``."""
    return CompiledRow(
        result.model,
        result.median("pyg") * 1e3,
        result.median("scatterx") * 1e3,
        result.epoch_s["pyg"][0],
        result.epoch_s["scatterx"][0],
        result.max_loss_rel_diff,
        result.median("scatterx eager") * 1e3,
    )


def table(rows: List[CompiledRow]) -> List[str]:
    """The compiled rows, under the eager table."""
    lines = [
        "torch.compile(model): PyG's default path against the switch on, both compiled, and the switch eager in the "
        "same loop (epoch ms; the first epoch, the compile, apart)",
        *_COLUMNS.head(rule=False),
    ]
    for r in rows:
        lines.append(
            _COLUMNS.row(
                r.model,
                f"{r.pyg_ms:.1f}",
                f"{r.scatterx_ms:.1f}",
                f"{r.speedup:.2f}x",
                f"{r.eager_ms:.1f}",
                f"{r.vs_eager:.2f}x",
                f"{r.pyg_first_s:.1f}/{r.scatterx_first_s:.1f}",
                f"{r.max_loss_rel_diff:.1e}",
            )
        )
    if rows:
        met = ", ".join(f"{r.model} {'met' if r.meets_goal else 'NOT met'}" for r in rows)
        lines.append(f"goal: speedup >= {GOAL_SPEEDUP:.2f}x and vs eager >= {GOAL_VS_EAGER:.2f}x: {met}")
    return lines


_COLUMNS = Columns(
    Column("model", 9, left=True),
    Column("PyG compiled ms", 16),
    Column("switch compiled ms", 19),
    Column("speedup", 8),
    Column("switch eager ms", 16),
    Column("vs eager", 9),
    Column("1st epoch PyG/sx s", 19),
    Column("max rel diff", 13),
)


def as_dicts(rows: List[CompiledRow]) -> List[Dict]:
    return [dict(asdict(r), speedup=r.speedup, vs_eager=r.vs_eager, meets_goal=r.meets_goal) for r in rows]
