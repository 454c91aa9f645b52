"""The public API is fully typed.

Every function in the ``__all__`` of ``scatterx`` and of its public modules (the ones ``docs/api/`` documents), and
every public method (``__init__`` included) of every class there, annotates each of its parameters (``self`` and
``cls`` aside) and what it returns (``__init__`` aside); a property annotates what its getter returns. The package
ships ``py.typed``: what its users' type checkers see of it is these annotations, and an unannotated parameter is an
``Any`` to them.
"""

import importlib
import inspect
import pathlib
import re
import types

import pytest
from test_docs import PUBLIC_MODULES  # the modules docs/api/ documents, one page each: the public API

ROOT = pathlib.Path(__file__).resolve().parent.parent

# a public module that cannot be imported without an optional dependency: that dependency
OPTIONAL = {"scatterx.pyg": "torch_geometric"}

EMPTY = inspect.Parameter.empty


def test_public_modules_are_the_documented_ones():
    documented = set()
    for page in (ROOT / "docs" / "api").glob("*.rst"):
        documented.update(re.findall(r"^\.\. automodule:: (\S+)", page.read_text(), re.M))
    assert documented == set(PUBLIC_MODULES)


def _unannotated(function, *, returns=True):
    """What of ``function``'s signature lacks an annotation: its parameter names, ``return`` last."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: nothing of ours to check
        return []
    missing = [
        name
        for index, (name, parameter) in enumerate(signature.parameters.items())
        if parameter.annotation is EMPTY and not (index == 0 and name in ("self", "cls"))
    ]
    if returns and signature.return_annotation is EMPTY:
        missing.append("return")
    return missing


def _methods(cls):
    """(name, function, returns) for each public method, ``__init__`` and property of ``cls`` that scatterx defines
    (in ``cls`` or a base class of scatterx's own)."""
    seen = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("scatterx"):
            continue
        for name, member in vars(klass).items():
            if name in seen or (name.startswith("_") and name != "__init__"):
                continue
            seen.add(name)
            if isinstance(member, (staticmethod, classmethod)):
                yield name, member.__func__, True
            elif isinstance(member, property):
                if member.fget is not None:
                    yield name, member.fget, True
            elif inspect.isfunction(member):
                yield name, member, name != "__init__"


def _offenders(module_name):
    module = importlib.import_module(module_name)
    offenders = []
    for name in module.__all__:
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType):
            continue
        if inspect.isclass(obj):
            for method_name, function, returns in _methods(obj):
                missing = _unannotated(function, returns=returns)
                if missing:
                    offenders.append(f"{module_name}.{name}.{method_name}: {', '.join(missing)}")
        elif callable(obj):
            missing = _unannotated(obj)
            if missing:
                offenders.append(f"{module_name}.{name}: {', '.join(missing)}")
    return offenders


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_public_api_is_annotated(module_name):
    if module_name in OPTIONAL:
        pytest.importorskip(OPTIONAL[module_name], reason=f"{module_name} needs {OPTIONAL[module_name]}")
    offenders = _offenders(module_name)
    assert not offenders, f"{len(offenders)} unannotated in the public API:\n" + "\n".join(offenders)
