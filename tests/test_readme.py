"""The README's set-up commands are the ones CI runs, and its examples run."""

import doctest
import importlib
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


def test_docstring_examples_run():
    # the op modules by name: scatterx.ops.<op> is the function the package re-exports, not the module
    names = ["index_scatter_reduce", "segment_reduce", "gather_segment_reduce", "segment_softmax"]
    modules = [importlib.import_module(f"scatterx.ops.{name}") for name in names]
    for module in (scatterx, scatterx.pytorch, *modules):
        failures, tried = doctest.testmod(module, extraglobs={"torch": __import__("torch")})
        assert failures == 0
