"""The speed goals of the benchmarks, read from ``goals.json`` (what each goal measures, its comparison, its
limit, the section of a benchmark it belongs to), each checked against the value a run measured. How a value is
computed from a run is in ``measures.py``, one function per ``measure`` key of the file.

A goal whose ``args`` hold a list covers each item of it: ``{"reduce": ["sum", "mean"]}`` is two goal lines,
the item filled into the ``{reduce}`` of the name. A section's code passes each of its subjects to
``evaluate`` (the bench: its report; the grid: each cell; bench-gnn: each model; bench-dist: each run on
several processes); a measure that does not concern a subject returns ``SKIP`` and gives no line."""

from __future__ import annotations

import functools
import itertools
import json
import pathlib
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from .measures import MEASURES, SKIP

GOALS_FILE = pathlib.Path(__file__).with_name("goals.json")
OPS = {"<=": lambda v, limit: v <= limit, ">=": lambda v, limit: v >= limit, ">": lambda v, limit: v > limit}


@dataclass(frozen=True)
class Goal:
    section: str
    name: str
    measure: str
    op: str
    limit: float
    args: tuple = ()  # (key, value) pairs, in the file's order; a list value is each of its items

    def cases(self) -> List[Dict[str, Any]]:
        """The goal's args, one dict per case (the product of the list-valued ones)."""
        keys = [k for k, _ in self.args]
        values = [v if isinstance(v, list) else [v] for _, v in self.args]
        return [dict(zip(keys, combo)) for combo in itertools.product(*values)]

    def passes(self, value: float) -> bool:
        return OPS[self.op](value, self.limit)


@dataclass(frozen=True)
class Result:
    """One goal line: the goal, its name with the case filled in, the case's args and the value measured (None
    where this run did not measure it)."""

    goal: Goal
    name: str
    args: Dict[str, Any]
    value: Optional[float]

    @property
    def op(self) -> str:
        return self.goal.op

    @property
    def limit(self) -> float:
        return self.goal.limit

    @property
    def ok(self) -> Optional[bool]:
        return None if self.value is None else self.goal.passes(self.value)


@functools.cache
def _file() -> dict:
    return json.loads(GOALS_FILE.read_text())


def sections() -> Dict[str, dict]:
    """The sections of the benchmarks, by key: title, command, device and what the goals are stated for."""
    return _file()["sections"]


@functools.cache
def all_goals() -> tuple:
    return tuple(
        Goal(g["section"], g["name"], g["measure"], g["op"], float(g["limit"]), tuple(g.get("args", {}).items()))
        for g in _file()["goals"]
    )


def section(name: str) -> List[Goal]:
    if name not in sections():
        raise KeyError(f"no goal section {name!r}; the sections are {', '.join(sections())}")
    return [g for g in all_goals() if g.section == name]


def limit(section_name: str, measure: str) -> float:
    """The limit of the one goal of a section taken with ``measure``."""
    (goal,) = [g for g in section(section_name) if g.measure == measure]
    return goal.limit


def evaluate(section_name: str, subject, **fields) -> List[Result]:
    """Every goal of the section that concerns ``subject``, with the value measured; ``fields`` fill the names'
    ``{...}`` beside each case's args."""
    out = []
    for goal in section(section_name):
        for case in goal.cases():
            value = MEASURES[goal.measure](subject, **case)
            if value is not SKIP:
                out.append(
                    Result(goal, goal.name.format(**{**fields, **case}), case, None if value is None else float(value))
                )
    return out


def goals(report) -> list:
    """The goals of a ``scatterx bench`` report (CPU, or CUDA where it ran there) as ``(name, op, limit, value,
    ok)``; value and ok are None where this run did not measure it."""
    name = "bench-cuda" if report.config.device == "cuda" else "bench"
    return [(r.name, r.op, r.limit, r.value, r.ok) for r in evaluate(name, report)]


def _cell(value) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


class _Open(dict):
    """Fills a name's ``{field}``: a single arg's value, else the field in italics (and notes it as open)."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.open: List[str] = []

    def __missing__(self, key):
        self.open.append(key)
        return f"*{key}*"


def markdown_table() -> str:
    """Every goal as Markdown: one table per section (the docs page shows it; a test keeps the two equal)."""
    out = []
    for key, info in sections().items():
        out += [
            f"**{info['title']}** (`{info['command']}`, {info['device']}; stated for {info['stated_for']})",
            "",
            "| goal | for | limit |",
            "|---|---|---|",
        ]
        for g in section(key):
            fields = _Open({k: v for k, v in g.args if not isinstance(v, list)})
            name = g.name.format_map(fields)
            each = [f"{k}: {_cell(v)}" for k, v in g.args if isinstance(v, list)]
            each += [f"each {k} run" for k in fields.open if k not in dict(g.args)]
            out.append(f"| {name} | {'; '.join(each) or '-'} | {g.op} {g.limit:g} |")
        out.append("")
    return "\n".join(out)
