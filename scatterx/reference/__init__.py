"""Plain, obviously-correct implementations: the oracle for tests and the benchmark. Never imported by the ops.

One module per op, named after it (``reference/segment_reduce.py`` is the oracle of ``scatterx.segment_reduce``;
``element_scatter.py`` of the planner's element plans, ``torch_scatter.py`` of the drop-in). Each reduces one
output row at a time with torch's own reductions in float64 (int64 for integers), then casts to the dtype. Slow on
purpose: nothing clever to get wrong.

Deliberately independent of the reduction table (``scatterx/_reductions.py``) and of every other module of the
package: the kernels are generated from the table, so an oracle that read it would share its mistakes. The names
and aliases are restated by hand (``_rows.py``). ``tests/test_layering.py`` holds both rules.

``from scatterx import reference; reference.segment_reduce(...)``: every function a module here declares in its
``__all__`` is bound in this package when it is imported -- a new op's oracle is a new module, and no list here.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any, Callable, Dict


def _every_oracle() -> Dict[str, Callable[..., Any]]:
    """name -> function, from the ``__all__`` of every public module of this package."""
    found: Dict[str, Callable[..., Any]] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f".{info.name}", __name__)
        for name in module.__all__:
            if name in found:
                raise ImportError(f"two reference modules declare {name!r}")
            found[name] = getattr(module, name)
    return found


# bound here, over the submodules of the same names that importing them bound (``reference.segment_reduce`` is the
# function; its module is ``scatterx.reference.segment_reduce`` in ``sys.modules``)
globals().update(_every_oracle())
