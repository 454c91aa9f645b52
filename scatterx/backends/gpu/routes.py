"""Which kernels run ``index_scatter_reduce`` on the GPU, and the way to force one.

==============  =======================================================================================
``SEGMENTS``    a sorted index: CSR offsets (``searchsorted``), then the segment kernel, no atomics
``ATOMIC``      an unsorted index, reductions the table marks ``atomic`` (sum, mean): ``tl.atomic_add`` into an
                accumulator, then one elementwise pass (mean's divide, ``base``, empty targets); the order of
                the additions is the hardware's, so the last bits may differ between runs
``SORT``        an unsorted index otherwise: a stable sort, then the segment kernel reading rows through the
                permutation -- exact, NaN-propagating and deterministic, which atomic max/min are not
==============  =======================================================================================

``torch.use_deterministic_algorithms(True)`` turns ``ATOMIC`` into ``SORT``. Tests force a route with
``force(Route.SORT)`` (a context manager, per thread); a call the route cannot serve raises ``ValueError``.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
from typing import Iterator, Optional

import torch

from ..._reductions import Reduction
from .._common import forced_route


class Route(str, enum.Enum):
    SEGMENTS = "segments"
    ATOMIC = "atomic"
    SORT = "sort"


_FORCED: contextvars.ContextVar[Optional[Route]] = contextvars.ContextVar("scatterx_gpu_route", default=None)


@contextlib.contextmanager
def force(route: Route) -> Iterator[Route]:
    """Within the block, ``index_scatter_reduce`` on the GPU takes ``route``."""
    with forced_route(_FORCED, Route, route, "GPU") as route:
        yield route


def choose_route(red: Reduction, sorted: bool, deterministic: bool) -> Route:
    """The route for a call with reduction ``red`` and a (known) ``sorted`` index; ``deterministic``: torch's
    ``are_deterministic_algorithms_enabled()``."""
    if sorted:
        return Route.SEGMENTS
    if red.atomic and not deterministic:
        return Route.ATOMIC
    return Route.SORT


def route_for(red: Reduction, sorted: bool) -> Route:
    """The forced route (checked: ``ValueError`` if it cannot serve the call), else ``choose_route``'s."""
    forced = _FORCED.get()
    if forced is None:
        return choose_route(red, sorted, torch.are_deterministic_algorithms_enabled())
    if forced is Route.SEGMENTS and not sorted:
        raise ValueError("cannot force the GPU route 'segments' of index_scatter_reduce: it needs a sorted index")
    if forced is Route.ATOMIC and not red.atomic:
        raise ValueError(
            f"cannot force the GPU route 'atomic' of index_scatter_reduce: {red.name} has no atomic "
            "form (the table's atomic column)"
        )
    return forced
