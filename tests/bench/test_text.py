"""The bench's report scaffold: fixed-width tables, the goal lines and the environment line every bench prints."""

import pytest

from scatterx.bench import text
from scatterx.bench.goals import Goal, Result


def test_a_table_pads_each_cell_to_its_column_and_keeps_a_wider_cell_whole():
    cols = text.Columns(text.Column("name", 6, left=True), text.Column("ms", 5))
    assert cols.head() == ["name      ms", "-" * 12]
    assert cols.head(rule=False) == ["name      ms"]
    assert cols.row("gcn", "1.5") == "gcn      1.5"
    assert cols.row("graphsage", 12) == "graphsage    12"
    assert text.Columns(text.Column("a", 1), text.Column("b", 1), sep=" | ").row(1, 2) == "1 | 2"
    with pytest.raises(ValueError, match="2 columns got 3 cells"):
        cols.row("gcn", "1.5", "extra")


def test_the_environment_line_reads_back_with_commas_inside_parentheses():
    env = {"cpu": "AMD EPYC", "numba_cpu_target": "znver3 (avx2, avx, sse4.2)", "torch_threads": 2}
    line = text.environment_line(env)
    assert line == "environment: cpu AMD EPYC, numba_cpu_target znver3 (avx2, avx, sse4.2), torch_threads 2"
    assert text.read_environment_line(line) == {k: str(v) for k, v in env.items()}


def test_a_report_ends_with_its_goals_then_its_environment():
    goal = Goal(section="bench", name="{reduce} speedup", measure="m", op=">=", limit=2.0)
    results = [
        Result(goal, "sum speedup", {}, 2.5),
        Result(goal, "amax speedup", {}, 1.5),
        Result(goal, "mean speedup", {}, None),
    ]
    lines = text.tail(results, {"torch": "2.13"})
    assert lines[0] == "goals:" and lines[-1] == "environment: torch 2.13"
    assert lines[1:4] == [
        "  sum speedup      2.50 (goal >= 2.0)  ok",
        "  amax speedup     1.50 (goal >= 2.0)  MISSED",
        "  mean speedup        - (goal >= 2.0)  not measured",
    ]
    assert text.shown(0.001) == "1.00e-03" and text.shown(float("nan")) == "nan"
