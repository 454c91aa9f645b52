"""The README's set-up commands are the ones CI runs, and its examples run (the docstrings' and the docs
site's examples: ``test_docs.py``)."""

import doctest
import pathlib
import re

import scatterx

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


def _command(label):
    match = re.search(rf"<!-- {label} -->\s*```(?:bash|sh)?\n(.+?)\n```", README, re.S)
    assert match, f"README has no {label} command block"
    return match.group(1).strip()


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert _command("test-command") in ci


def test_readme_main_command_runs_the_benchmark():
    assert _command("main-command").endswith("scatterx bench")


def test_readme_python_examples_run():
    parser = doctest.DocTestParser()
    test = parser.get_doctest(README, {"scatterx": scatterx}, "README", "README.md", 0)
    assert test.examples, "README has no >>> examples"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    assert runner.failures == 0


def test_readme_states_the_versions_of_pyproject():
    """The supported versions are stated once, in pyproject.toml; the README says the same lower bounds."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    shown = {"torch": "torch", "numba": "Numba", "torch_geometric": "PyG", "triton": "Triton"}
    for package, name in shown.items():
        bounds = set(re.findall(rf'"{package}>=([0-9.]+)"', pyproject))
        assert len(bounds) == 1, f"pyproject.toml states {package}'s lower bound {len(bounds)} times: {bounds}"
        assert f"{name} ≥ {bounds.pop()}" in README, f"the README does not say {name}'s lower bound"
    stated = re.findall(r"(torch|Numba|PyG|Triton) ≥ ([0-9.]+)", README)
    for name, version in stated:
        package = next(p for p, n in shown.items() if n == name)
        assert f'"{package}>={version}"' in pyproject, f"the README says {name} ≥ {version}; pyproject.toml does not"
