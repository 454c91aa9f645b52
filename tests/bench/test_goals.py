"""The goals file (``scatterx/bench/goals.json``) and the measures (``scatterx/bench/measures.py``): every goal has
its measure and every measure a goal, each goal's args fit its measure, the names say what is measured, and the
docs page shows the same goals."""

import inspect
import json
import pathlib
import re

import pytest

from scatterx.bench.goals import GOALS_FILE, OPS, all_goals, evaluate, markdown_table, section, sections
from scatterx.bench.measures import MEASURES, SKIP

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_goal_has_a_measure_and_every_measure_a_goal():
    used = {g.measure for g in all_goals()}
    assert used - set(MEASURES) == set(), "goals without a measure function"
    assert set(MEASURES) - used == set(), "measure functions no goal uses"


def test_each_goal_fits_its_measure_and_its_section():
    for g in all_goals():
        assert g.section in sections(), g
        assert g.op in OPS, g
        parameters = inspect.signature(MEASURES[g.measure]).parameters
        for case in g.cases():
            inspect.signature(MEASURES[g.measure]).bind(None, **case)  # raises on an arg the measure lacks
        required = [p for p in list(parameters)[1:] if parameters[p].default is inspect.Parameter.empty]
        assert set(required) <= {k for k, _ in g.args}, g


def test_goal_names_are_unique_once_filled_in():
    for key in sections():
        names = []
        for g in section(key):
            fields = set(re.findall(r"{(\w+)}", g.name))
            for case in g.cases():
                names.append(g.name.format(**{**{f: f"<{f}>" for f in fields}, **case}))
        assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]


def test_the_file_is_plain_json_with_the_documented_fields():
    data = json.loads(GOALS_FILE.read_text())
    for goal in data["goals"]:
        assert set(goal) <= {"section", "name", "measure", "args", "op", "limit"}, goal
        assert {"section", "name", "measure", "op", "limit"} <= set(goal), goal
    for info in data["sections"].values():
        assert set(info) == {"title", "command", "device", "stated_for"}


def test_a_measure_that_does_not_concern_the_subject_gives_no_line():
    from scatterx.bench import grid

    row = grid.GridRow(grid.Cell(5_000, 4, 10, "float32", 0, "sorted", "sum", "fwd"), 0.0, 1.0, 1.5, "index_add_")
    (result,) = evaluate("grid", row)
    assert result.limit == 1.0 and result.value == 1.5 and result.ok
    assert MEASURES["grid_cell_speedup"](row, edges_from=100_000) is SKIP


def test_the_package_ships_the_file():
    text = (ROOT / "pyproject.toml").read_text()
    table = r'^\[tool\.setuptools\.package-data\]\n(?:"[^\n]+\n)*?"scatterx\.bench"\s*=\s*\["goals\.json"\]'
    assert re.search(table, text, re.M)


def test_the_docs_page_lists_the_goals_of_the_file():
    page = (ROOT / "docs" / "guide" / "benchmarks.md").read_text()
    begin, end = "<!-- goals: generated from scatterx/bench/goals.json -->", "<!-- end of goals -->"
    assert begin in page and end in page
    shown = page.split(begin, 1)[1].split(end, 1)[0].strip()
    assert shown == markdown_table().strip(), (
        "regenerate the table: python -c 'from scatterx.bench.goals import markdown_table; print(markdown_table())'"
    )


@pytest.mark.parametrize("folder", ["scatterx/bench", "tests/bench"])
def test_no_issue_numbers_in_the_benchmark_code(folder):
    for path in (ROOT / folder).glob("*.py"):
        assert not re.search(r"#[0-9]", path.read_text()), path
