"""How every bench prints its report, so that a reader who knows one table knows them all -- and so that
``figures.py``, which reads a saved run's output back, reads what the benches wrote.

A report is its title lines, its tables, then its goals and, last, the line of the machine it ran on::

    cols = Columns(Column("model", 9, left=True), Column("ms", 8), Column("speedup", 8))
    lines = ["scatterx bench-...: what was run", *cols.head()]
    lines += [cols.row(r.model, f"{r.ms:.1f}", f"{r.speedup:.2f}x") for r in rows]
    lines += tail(goal_results, environment)

A table's cells are strings the caller formats (each number to the digits it deserves); a ``Column`` pads its
cell to its width, to the right unless ``left``; a cell wider than its column is kept whole, never cut.
Files (CSV, JSON, Markdown) are written through ``files.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence

ENVIRONMENT = "environment: "


@dataclass(frozen=True)
class Column:
    title: str
    width: int
    left: bool = False

    def pad(self, cell: object) -> str:
        return f"{cell!s:<{self.width}}" if self.left else f"{cell!s:>{self.width}}"


class Columns:
    """A fixed-width table: its header line and rule (``head``), and a line per row (``row``)."""

    def __init__(self, *columns: Column, sep: str = " "):
        self.columns = columns
        self.sep = sep

    def row(self, *cells: object) -> str:
        if len(cells) != len(self.columns):
            raise ValueError(f"a row of {len(self.columns)} columns got {len(cells)} cells")
        return self.sep.join(c.pad(cell) for c, cell in zip(self.columns, cells))

    def header(self) -> str:
        return self.row(*(c.title for c in self.columns))

    def head(self, rule: bool = True) -> List[str]:
        """The header line, then a rule of its length (``rule=False``: the header alone)."""
        header = self.header()
        return [header, "-" * len(header)] if rule else [header]


def environment_line(environment: Mapping[str, object]) -> str:
    """``environment: key value, key value, ...``: the machine and versions a run measured, its last line."""
    return ENVIRONMENT + ", ".join(f"{k} {v}" for k, v in environment.items())


def read_environment_line(line: str) -> Dict[str, str]:
    """``environment_line``'s text back as a dict (a value may hold commas inside parentheses)."""
    items, depth, item = [], 0, ""
    for ch in line.split(ENVIRONMENT, 1)[-1].strip():
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(item.strip())
            item = ""
        else:
            item += ch
    items.append(item.strip())
    return {key: value for key, space, value in (i.partition(" ") for i in items) if space}


def shown(value: Optional[float]) -> str:
    """A measured value as the goal lines print it."""
    if value is None:
        return "-"
    if math.isnan(value) or value == 0:
        return f"{value:g}"
    return f"{value:.2e}" if abs(value) < 0.01 else f"{value:.2f}"


def goal_line(result, width: int = 0) -> str:
    """``  name  value (goal op limit)  ok / MISSED / not measured`` of a ``goals.Result``."""
    verdict = "not measured" if result.ok is None else ("ok" if result.ok else "MISSED")
    return f"  {result.name:<{width}} {shown(result.value):>8} (goal {result.op} {result.limit})  {verdict}"


def goal_lines(results: Sequence) -> List[str]:
    """``goal_line`` of each of ``results`` (``goals.evaluate``'s), their names in one column."""
    width = max((len(r.name) for r in results), default=0)
    return [goal_line(r, width) for r in results]


def tail(results: Sequence, environment: Mapping[str, object]) -> List[str]:
    """A report's last lines: its goals (``goals.evaluate``'s results), each met or missed, then its environment."""
    return ["goals:", *goal_lines(results), environment_line(environment)]
