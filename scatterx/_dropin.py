"""Installing a drop-in: a scatterx package registered in ``sys.modules`` under another package's name, so that
``import <name>`` (PyG's, or the user's) gets it. ``scatterx.torch_scatter.install()`` and
``scatterx.pyg_lib.install()`` both go through one :class:`DropIn`; what each does beyond ``sys.modules`` (the
pyg-lib drop-in's operators and PyG's flags) stays with it.

One question has two answers, chosen per drop-in by ``real_wins`` (docs/decisions/shared-homes.md): what to do
where the real package is installed.

- ``real_wins=False`` (torch_scatter): the drop-in is installed anyway. It covers the whole of torch_scatter's API,
  and a user who installs it asks for it; a torch_scatter already imported is set aside and comes back with
  ``uninstall()`` (the drop-in's tests compare the two in one process).
- ``real_wins=True`` (pyg-lib): a real pyg-lib is never replaced; ``install()`` imports and returns it. The drop-in
  covers only what PyG calls, and a real pyg-lib defines its ``torch.ops.pyg`` operators when imported, which
  torch cannot take back: replacing the module would mix the real operators with the drop-in's module. A
  directory named like the package without an ``__init__`` (a namespace package, such as a ``tests/pyg_lib/`` on
  ``sys.path``) is not the real package.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Dict, List, Optional


class DropIn:
    """The drop-in package ``module`` (its ``__name__``), installed as ``name`` with ``submodules`` (``{"ops":
    module, ...}``, installed as ``name.ops``, ...); ``real_wins``: whether a real ``name`` installed keeps its
    place (see the module's docstring)."""

    def __init__(self, name: str, module: str, submodules: Dict[str, types.ModuleType], real_wins: bool):
        self.name = name
        self.module = module
        self.submodules = dict(submodules)
        self.real_wins = real_wins
        self._saved: Dict[str, Optional[types.ModuleType]] = {}

    @property
    def names(self) -> List[str]:
        """The ``sys.modules`` keys the drop-in takes: the package, then its submodules."""
        return [self.name] + [f"{self.name}.{sub}" for sub in self.submodules]

    def is_installed(self) -> bool:
        """Whether ``import <name>`` gets the drop-in."""
        return sys.modules.get(self.name) is sys.modules[self.module]

    def real_installed(self) -> bool:
        """Whether the real package is imported or importable (not the drop-in, not a namespace package)."""
        held = sys.modules.get(self.name)
        if held is not None and getattr(held, "__file__", None) is not None:
            return held is not sys.modules[self.module]
        try:
            spec = importlib.util.find_spec(self.name)
        except (ImportError, ValueError):
            return False
        return spec is not None and spec.origin not in (None, "namespace")

    def install(self) -> types.ModuleType:
        """Register the drop-in under ``name`` (what it held before is kept for :meth:`uninstall`) and return it;
        with ``real_wins``, where the real package is installed, import and return that instead, changing
        nothing. Calling it again changes nothing."""
        if self.real_wins and self.real_installed():
            return importlib.import_module(self.name)
        me = sys.modules[self.module]
        if not self.is_installed():
            for key in self.names:
                self._saved[key] = sys.modules.get(key)
        sys.modules[self.name] = me
        for sub, module in self.submodules.items():
            sys.modules[f"{self.name}.{sub}"] = module
        return me

    def uninstall(self) -> bool:
        """Put back what ``name`` and its submodules were before :meth:`install` (absent, or the real package);
        whether the drop-in was installed (else nothing changes)."""
        if not self.is_installed():
            return False
        for key in self.names:
            previous = self._saved.pop(key, None)
            if previous is None:
                sys.modules.pop(key, None)
            else:
                sys.modules[key] = previous
        return True
