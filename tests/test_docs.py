"""The API reference is complete and its examples run.

Every public name (``__all__`` of ``scatterx`` and of its public modules) has a reference entry in ``docs/api/``;
every public function and class documents its arguments, what it returns, what it raises and shows an example, in
the Google style that Sphinx's napoleon renders; every ``>>>`` example in those docstrings and in the docs' pages
runs and prints what it says. The HTML build itself (warnings as errors) is ``test_docs_build.py``.
"""

import doctest
import importlib
import inspect
import pathlib
import re
import types

import pytest
import torch

import scatterx

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# one reference page per module: docs/api/<module>.rst
PUBLIC_MODULES = [
    "scatterx",
    "scatterx.pytorch",
    "scatterx.onnx",
    "scatterx.tf",
    "scatterx.paddle",
    "scatterx.planner",
    "scatterx.torch_scatter",
    "scatterx.pyg",
    "scatterx.pyg_lib",
    "scatterx.pyg_lib.sampler",
    "scatterx.pyg_lib.ops",
    "scatterx.pyg_lib.partition",
    "scatterx.export",
    "scatterx.distributed",
]

SECTION = re.compile(r"^\s*(Args|Returns|Yields|Raises|Examples?):\s*$", re.M)
OPTIONFLAGS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS


def public(module_name):
    """(name, object) for each public name of a module: its ``__all__``, less the submodules it lists."""
    module = importlib.import_module(module_name)
    assert hasattr(module, "__all__"), f"{module_name} has no __all__"
    return [
        (name, getattr(module, name))
        for name in module.__all__
        if not isinstance(getattr(module, name), types.ModuleType)
    ]


def sections(doc):
    return set(SECTION.findall(doc or ""))


def takes_arguments(obj):
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return True
    return any(name not in ("self", "cls") for name in params)


def missing_sections(obj):
    """The Google-style sections a public function or class lacks."""
    doc = inspect.getdoc(obj) or ""
    found = sections(doc)
    missing = []
    if not doc.strip():
        return ["docstring"]
    if takes_arguments(obj) and "Args" not in found:
        missing.append("Args")
    if not inspect.isclass(obj) and not ({"Returns", "Yields"} & found):
        missing.append("Returns")
    if "Raises" not in found:
        missing.append("Raises")
    example = re.search(r"^\s*Examples?:\s*$(.*)", doc, re.M | re.S)
    if example is None or ">>>" not in example.group(1):
        missing.append("Example (with >>>)")
    return missing


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_public_functions_document_args_returns_raises_and_an_example(module_name):
    gaps = {}
    for name, obj in public(module_name):
        if callable(obj):
            missing = missing_sections(obj)
            if missing:
                gaps[name] = missing
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    func = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
                    if isinstance(func, property):
                        func = func.fget
                    if inspect.isfunction(func) and not (inspect.getdoc(func) or "").strip():
                        gaps[f"{name}.{attr}"] = ["docstring"]
    assert not gaps, f"{module_name}: public names with undocumented sections: {gaps}"


def reference_entries():
    """The names documented by ``auto*`` directives in docs/api/*.rst, fully qualified."""
    entries = set()
    for page in (DOCS / "api").glob("*.rst"):
        current = None
        for line in page.read_text().splitlines():
            module = re.match(r"\.\.\s+(?:currentmodule|automodule|module)::\s+(\S+)", line)
            if module:
                current = module.group(1)
                continue
            auto = re.match(r"\.\.\s+auto(?:function|class|data|attribute|decorator)::\s+(\S+)", line)
            if auto:
                name = auto.group(1).split("(")[0]
                entries.add(name if name.startswith("scatterx") else f"{current}.{name}")
    return entries


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_name_has_a_reference_entry(module_name):
    entries = reference_entries()
    missing = [name for name, _ in public(module_name) if f"{module_name}.{name}" not in entries]
    assert not missing, f"no entry in docs/api/ for {module_name}: {missing}"


def _run_examples(test):
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    # the examples' globals are cleared before they are dropped: torch.compile's guards on them are reset first,
    # or dynamo's clean-up raises (ignored, but printed) at interpreter exit
    runner.run(test, clear_globs=False)
    torch._dynamo.reset()
    test.globs.clear()
    return runner.failures


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_docstring_examples_run(module_name):
    module = importlib.import_module(module_name)
    globs = {"torch": torch, "scatterx": scatterx, **vars(module)}
    finder = doctest.DocTestFinder(recurse=True, exclude_empty=True)
    failed, tried = [], 0
    for name, obj in public(module_name):
        if not callable(obj):
            continue
        for test in finder.find(obj, f"{module_name}.{name}", globs=dict(globs)):
            tried += len(test.examples)
            if _run_examples(test):
                failed.append(test.name)
    assert tried, f"{module_name}: no examples found"
    assert not failed, f"{module_name}: examples that failed (the doctest output above says how): {failed}"


def doc_pages():
    return sorted(p.relative_to(ROOT).as_posix() for p in DOCS.rglob("*.md") if "_build" not in p.parts)


@pytest.mark.parametrize("page", doc_pages())
def test_docs_page_examples_run(page):
    # a Markdown fence closes an example's expected output, like a blank line
    text = re.sub(r"^\s*(```|:::).*$", "", (ROOT / page).read_text(), flags=re.M)
    test = doctest.DocTestParser().get_doctest(text, {"torch": torch, "scatterx": scatterx}, page, page, 0)
    assert not _run_examples(test), f"{page}: an example failed (the doctest output above says how)"
