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

``Tuning`` holds the launch shape of the balanced segment kernels (``kernels/gpu/_balance.py``); ``tuned(...)``
changes it within a block, as the CPU backend's ``tuned`` does (the tests use it to cut a small call into many
shares).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import enum
import functools
from typing import Iterator, Optional

import torch

from ..._reductions import Reduction
from ...kernels.gpu._grid import MAX_ELEMENTS, MAX_FEATURES, MIN_EVENTS, PROGRAMS_PER_SM
from .._common import forced_route, tuned_block


class Route(str, enum.Enum):
    SEGMENTS = "segments"
    ATOMIC = "atomic"
    SORT = "sort"


@dataclasses.dataclass(frozen=True)
class Tuning:
    """The launch shape of the balanced segment kernels; the measurements behind the values are in
    docs/decisions/gpu-segment-kernel.md."""

    #: programs per streaming multiprocessor: several resident at once hide each other's memory latency
    programs_per_sm: int = PROGRAMS_PER_SM
    #: the least events (rows and segment ends) a program takes: its two searches are its fixed cost
    min_events: int = MIN_EVENTS
    #: elements of a tile (rows x features): the registers it takes decide how many programs an SM holds; another
    #: value than the default compiles tiles no variant list names (for a sweep on a GPU)
    max_elements: int = MAX_ELEMENTS
    #: the multiprocessors to fill where the device says none (Triton's interpreter, on CPU tensors)
    sms_without_gpu: int = 4


TUNING = Tuning()
_TUNING: contextvars.ContextVar[Tuning] = contextvars.ContextVar("scatterx_gpu_tuning", default=TUNING)


def tuning() -> Tuning:
    """The launch shape in effect (``tuned`` changes it)."""
    return _TUNING.get()


@contextlib.contextmanager
def tuned(**changes) -> Iterator[Tuning]:
    """Within the block, the GPU backend launches with these settings (fields of ``Tuning``)."""
    size = changes.get("max_elements", MAX_ELEMENTS)
    if isinstance(size, bool) or not isinstance(size, int) or size < MAX_FEATURES or size & (size - 1):
        # a tile is at least one row of the widest block of features, and Triton's blocks are powers of two
        raise ValueError(f"max_elements must be a power of two >= {MAX_FEATURES}, got {size!r}")
    with tuned_block(_TUNING, _TUNING.get(), changes, "GPU setting(s)") as t:
        yield t


def multiprocessors(device: torch.device) -> int:
    """How many streaming multiprocessors ``device`` has (``Tuning.sms_without_gpu`` for a CPU tensor)."""
    if device.type != "cuda":
        return tuning().sms_without_gpu
    return _sm_count(device.index if device.index is not None else torch.cuda.current_device())


@functools.cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


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
