"""Packages that are one module per op, found rather than listed: the modules of a package, and the functions they
declare (``__all__``) bound into it. Used by the backends (their op modules), the reference (one oracle per op)
and the ONNX translations (one module per op, each registering itself when imported). It reads no tensor and holds
no semantics, so the reference may use it and stay independent of what it checks.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Dict, Iterable, List


def public_modules(package_path: Iterable[str], skip: Iterable[str] = ()) -> List[str]:
    """The modules of the package at ``package_path`` (its ``__path__``), by name, sorted: not the underscore ones
    (helpers), not subpackages, not those named in ``skip``."""
    skipped = set(skip)
    return sorted(
        info.name
        for info in pkgutil.iter_modules(list(package_path))
        if not info.name.startswith("_") and info.name not in skipped and not info.ispkg
    )


def import_modules(namespace: Dict[str, Any], skip: Iterable[str] = ()) -> List[Any]:
    """Import every public module of the package whose globals are ``namespace``; the modules, by name."""
    return [
        importlib.import_module(f"{namespace['__name__']}.{name}")
        for name in public_modules(namespace["__path__"], skip)
    ]


def bind_declared(namespace: Dict[str, Any], skip: Iterable[str] = ()) -> List[str]:
    """Bind into ``namespace`` (a package's globals) the functions its public modules name in ``__all__``, over the
    submodules of the same names that importing them bound; return their names, sorted. A name declared by two
    modules is an error: a caller would get one of them."""
    offered: Dict[str, str] = {}
    for module in import_modules(namespace, skip):
        for function in module.__all__:
            if function in offered:
                raise ImportError(f"{function} is offered by both {offered[function]} and {module.__name__}")
            offered[function] = module.__name__
            namespace[function] = getattr(module, function)
    return sorted(offered)
