"""The backend interface, found from the op modules instead of kept in lists.

``backends/cpu`` and ``backends/gpu`` are one module per op family, named after the op as in ``ops/`` and
``kernels/``, beside their helpers: the underscore modules, ``routes`` (the route choice and every threshold) and,
on the GPU side, ``variants`` (every kernel variant a launch can ask for). An op module names in ``__all__`` the
functions the op layer calls; each backend package exports exactly those, so a new op's functions are reached as
``backend_for(src).<function>`` once its two modules exist, and ``tests/backends/test_backends.py`` holds both sides
to the same names and signatures.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List

from .._modules import bind_declared, public_modules

#: modules of a backend package that are neither helpers (underscore) nor op modules
HELPERS = ("routes", "variants")


def op_modules(package_path: Iterable[str]) -> List[str]:
    """The op modules of the backend package at ``package_path`` (its ``__path__``), by name, sorted."""
    return public_modules(package_path, skip=HELPERS)


def export_op_functions(namespace: Dict[str, Any]) -> List[str]:
    """Bind into ``namespace`` (a backend package's globals) the functions its op modules name in ``__all__``;
    return their names, sorted. A name offered by two modules is an error: the op layer would get one of them."""
    return bind_declared(namespace, skip=HELPERS)
