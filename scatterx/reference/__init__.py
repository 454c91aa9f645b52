"""Plain, obviously-correct implementations: the oracle for tests and the benchmark. Never imported by the ops.

One module per op, named after it (``reference/segment_reduce.py`` is the oracle of ``scatterx.segment_reduce``;
``element_scatter.py`` of the planner's element plans, ``torch_scatter.py`` of the drop-in). Each reduces one
output row at a time with torch's own reductions in float64 (int64 for integers), then casts to the dtype. Slow on
purpose: nothing clever to get wrong.

Deliberately independent of the reduction table (``scatterx/_reductions.py``) and of every other module of the
package but ``scatterx/_modules.py`` (which finds these modules and holds no semantics): the kernels are generated
from the table, so an oracle that read it would share its mistakes. The names
and aliases are restated by hand (``_rows.py``). ``tests/test_layering.py`` holds both rules.

``from scatterx import reference; reference.segment_reduce(...)``: every function a module here declares in its
``__all__`` is bound in this package when it is imported -- a new op's oracle is a new module, and no list here.
"""

from __future__ import annotations

from .._modules import bind_declared

# bound here, over the submodules of the same names that importing them bound (``reference.segment_reduce`` is the
# function; its module is ``scatterx.reference.segment_reduce`` in ``sys.modules``)
bind_declared(globals())
