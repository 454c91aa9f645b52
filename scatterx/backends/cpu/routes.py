"""Which kernel runs ``index_scatter_reduce`` on the CPU: the routes, the thresholds that choose among them, and the
ways to force one.

A route depends on the call's shape only, never on index values (except ``sorted=None``, whose caller probes the
index head first and falls back to an unsorted route if the sorted one rejects it):

==============  =======================================================================================
``SERIAL``      one thread, no offsets (``index_scatter_reduce_owner``): small calls and narrow rows, into a
                new tensor, a new one from ``base``, or ``out=`` (a new one from it, copied in)
``RUNS``        sorted index into a new tensor, one pass, no offsets (``index_scatter_reduce_runs``)
``SEGMENTS``    sorted index: CSR offsets, then the segment kernel (``segment_reduce``)
``GATHER``      any index: a counting sort, then the segment kernel reading rows through the permutation
``SLICES``      any index: each work item owns whole outer slices, groups of them for rows of one element
                (``index_scatter_reduce_owner``)
==============  =======================================================================================

Every route gives the same bits (each target's rows combined in position order, from the table's identity), so
the choice is about speed only; ``tests/backends/test_cpu_routes.py`` checks ``choose_route`` on a table of
shapes, and the kernel tests check the bits.

Tests and users force a route with ``force(Route.GATHER)`` and change a threshold with ``tuned(...)``; both are
context managers (per thread, per asyncio task), and nothing here is a module global to overwrite.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import pathlib
from dataclasses import dataclass
from typing import Iterator, List, NamedTuple, Optional

from ...kernels.cpu import openmp
from ...kernels.cpu.index_scatter_reduce_owner import LANES, MARKS_EMPTY
from .._common import forced_route, tuned_block


def l2_cache_bytes(cpus: pathlib.Path = pathlib.Path("/sys/devices/system/cpu")) -> Optional[int]:
    """The size of CPU 0's level-2 cache, as Linux's sysfs gives it (``index*/size``, e.g. ``2048K``); None where
    it does not (another OS, a container that hides it)."""
    try:
        for entry in sorted((cpus / "cpu0" / "cache").glob("index*")):
            kind = (entry / "type").read_text().strip()
            if (entry / "level").read_text().strip() == "2" and kind in ("Unified", "Data"):
                size = (entry / "size").read_text().strip().upper()
                scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(size[-1:], 1)
                return int(size.rstrip("KMG")) * scale
    except (OSError, ValueError):
        return None
    return None


#: Where the lanes kernel's accumulators stop paying: half this CPU's L2, or 256 KB (half the L2 of the Zen 3 it was
#: first measured on) where the L2 is not known (element-scatter.md, "When lanes pay").
_L2 = l2_cache_bytes()
LANES_MAX_ACC_BYTES = _L2 // 2 if _L2 else 256 << 10


class Route(str, enum.Enum):
    SERIAL = "serial"
    RUNS = "runs"
    SEGMENTS = "segments"
    GATHER = "gather"
    SLICES = "slices"


@dataclass(frozen=True)
class Tuning:
    """Every threshold of the CPU backend, with the reason for its value; the measurements behind them are in
    ``docs/decisions/`` (file named after each field's topic)."""

    #: Below this many elements of work a kernel runs on the calling thread alone: waking a worker costs more than
    #: the work (see docs/decisions/cpu-parallelism.md).
    parallel_min_elements: int = 1 << 15
    #: ... and this many for the reductions of ``index_scatter_reduce`` and ``segment_reduce`` over rows wider than
    #: one element (a few operations an element, bound by memory; one-element rows cost more per element) where the
    #: kernels launch on the pool of Python threads: below it one thread beat two on the 2-vCPU VM measured, as a
    #: pool launch (waking a worker, handing it the GIL, waking the caller at the end) is dear. A launch on torch's
    #: OpenMP team costs microseconds, and there ``parallel_min_elements`` holds for them too
    #: (docs/decisions/cpu-parallelism.md).
    reduce_parallel_min_elements: int = 1 << 20
    #: A call into a new tensor whose ``src`` and output hold at most this many elements takes the serial route:
    #: the other routes' fixed costs (offsets, chunks, waking threads) dominate below it (small-calls.md).
    small_call_elements: int = 81_920
    #: ... and this many times as many, divided by the thread count, with rows of at least ``small_wide_row``
    #: elements, whose inner loop vectorises (small-calls.md).
    small_wide_factor: int = 8
    small_wide_row: int = 16
    #: An unsorted index into a new tensor with one outer slice takes the serial route at any size while ``inner x
    #: threads`` is at most this: sorting positions and gathering rows costs more than one thread's direct scatter
    #: there (narrow-rows.md).
    serial_unsorted_max_work: int = 8
    #: ... and also with wider rows while its accumulators (the whole output) take at most this many bytes and
    #: ``src`` times the thread count at most ``serial_unsorted_max_thread_elements``: the output then stays in L2,
    #: and the sort's passes and launches on two threads cost more than one thread's direct scatter (measured on
    #: two threads, 2M elements; with more threads the parallel route pays sooner: unsorted-routes.md).
    serial_unsorted_max_acc_bytes: int = 768 << 10
    serial_unsorted_max_thread_elements: int = 1 << 22
    #: The slices route: rows of at most this many bytes along the reduced dim, an accumulator per outer slice of
    #: at most ``slices_max_buffer_bytes``, and at least as many outer slices as threads (unsorted-routes.md).
    slices_max_row_bytes: int = 32
    slices_max_buffer_bytes: int = 8 << 20
    #: Rows of one element of several outer slices (either route): a work item reduces ``LANES`` slices together
    #: (the lanes kernel: one index read for the group) while the group's accumulators, ``LANES`` per target, take
    #: at most this many bytes -- half of this CPU's L2 -- and every thread has a whole group; otherwise a slice at a
    #: time -- past it the group's rows leave L2 (3x slower at 2 MB on a 512 KB L2), and with fewer groups than
    #: threads, threads idle (element-scatter.md, "When lanes pay").
    lanes_max_acc_bytes: int = LANES_MAX_ACC_BYTES
    #: The counting sort of an unsorted index places positions (``stable_positions``) on one thread while the
    #: permutation it writes, 8 bytes a position, fits in this CPU's L2 (512 KB where not known): on more threads
    #: their writes share the cache lines at every target's chunk boundary, and two threads took 1.5-2x one's time
    #: below that size (index-to-segments.md, "Placing positions on one thread").
    positions_serial_max_bytes: int = _L2 or 512 << 10
    #: Chunks of segments (work items) per thread, claimed one by one: a thread that drew a hub takes fewer, and a
    #: worker that woke late leaves at most a small chunk to wait for at the end (cpu-parallelism.md).
    chunks_per_thread: int = 16
    #: The gather route prefetches rows about this many bytes ahead (unsorted-routes.md).
    prefetch_bytes: int = 8192
    #: A caller that does not know whether its index is sorted looks at this many entries first.
    sorted_probe: int = 1024
    #: Outputs of at least this many bytes, with rows of whole 64-byte blocks up to ``stream_max_row_bytes``, are
    #: written by non-temporal stores on the routes that read ``src`` in order (streaming-stores.md).
    stream_min_bytes: int = 4 << 20
    stream_max_row_bytes: int = 512
    #: Element plans along a dim: a work item owns blocks of this many columns of a wider row, so that no cache
    #: line of the output is written by two threads; a gather makes this many items per thread.
    lane_block: int = 16
    gather_items_per_thread: int = 4


TUNING = Tuning()

_TUNING: contextvars.ContextVar[Tuning] = contextvars.ContextVar("scatterx_cpu_tuning", default=TUNING)
_FORCED: contextvars.ContextVar[Optional[Route]] = contextvars.ContextVar("scatterx_cpu_route", default=None)
_LOG: contextvars.ContextVar[Optional[list]] = contextvars.ContextVar("scatterx_cpu_log", default=None)


def tuning() -> Tuning:
    """The thresholds in effect (``tuned`` changes them)."""
    return _TUNING.get()


@contextlib.contextmanager
def tuned(**changes) -> Iterator[Tuning]:
    """Within the block, the CPU backend uses these thresholds (fields of ``Tuning``)."""
    with tuned_block(_TUNING, _TUNING.get(), changes, "CPU threshold(s)") as t:
        yield t


@contextlib.contextmanager
def force(route: Route) -> Iterator[Route]:
    """Within the block, ``index_scatter_reduce`` on the CPU takes ``route``; a call it cannot serve raises
    ``ValueError`` naming the route and why (``refusal``)."""
    with forced_route(_FORCED, Route, route, "CPU") as route:
        yield route


def forced() -> Optional[Route]:
    return _FORCED.get()


class Launch(NamedTuple):
    """One kernel launch as ``recording`` sees it: the route (or the op, off ``index_scatter_reduce``) and whether
    the output was written by non-temporal stores."""

    route: str
    stream: bool = False


@contextlib.contextmanager
def recording() -> Iterator[List[Launch]]:
    """Within the block, every launch of the CPU backend's reductions is appended to the list yielded (what tests
    check the route choice and the stores with)."""
    log: List[Launch] = []
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def record(route: str, stream: bool = False) -> None:
    log = _LOG.get()
    if log is not None:
        log.append(Launch(str(route.value if isinstance(route, Route) else route), bool(stream)))


def reduce_minimum(t: Tuning) -> Optional[int]:
    """The ``minimum`` of ``threads_for`` for the reductions over rows wider than one element: the pool's own
    threshold where kernels launch on the pool, the general one (None) where they launch on torch's OpenMP team."""
    return None if openmp.runtime() is not None else t.reduce_parallel_min_elements


def threads_for(work: int, threads: int, t: Tuning, minimum: Optional[int] = None) -> int:
    """Threads for a kernel over ``work`` elements: ``threads`` (torch's), or 1 below ``minimum`` elements
    (default ``t.parallel_min_elements``)."""
    return 1 if work < (t.parallel_min_elements if minimum is None else minimum) else max(1, threads)


# ----------------------------------------------------------------------------------------------- the choice
def choose_route(
    *,
    sorted: bool,
    into_new: bool,
    outer: int,
    n: int,
    inner: int,
    m: int,
    segments: int,
    itemsize: int,
    threads: int,
    t: Tuning = TUNING,
    from_base: bool = False,
) -> Route:
    """The route for a call of ``index_scatter_reduce``: ``src`` seen as ``(outer, n, inner)`` of ``itemsize``-byte
    elements, ``m`` index entries, ``segments`` output slices along the dim, ``threads`` torch threads;
    ``sorted``: promised (or probed) non-decreasing; ``into_new``: no ``out``/``base`` (a new tensor, empty
    targets 0); ``from_base``: a new tensor computed from ``base`` -- or from ``out``, then copied into it -- which
    the serial route serves as it serves new tensors (the planner's scatters into data: ONNX ScatterND, TensorFlow's
    ``*_nd``; torch_scatter's ``out=``)."""
    if (into_new or from_base) and small(outer=outer, n=n, inner=inner, segments=segments, threads=threads, t=t):
        return Route.SERIAL
    if sorted:
        if into_new and runs_pay(inner=inner, m=m, segments=segments):
            return Route.RUNS
        # from a base, one-element rows (the runs route writes new tensors only): one thread's pass beat building
        # offsets for the segment kernel (small-calls.md, "Into out=")
        if from_base and inner == 1 and narrow_unsorted(outer=outer, inner=inner, threads=threads, t=t):
            return Route.SERIAL
        return Route.SEGMENTS
    if (into_new or from_base) and narrow_unsorted(outer=outer, inner=inner, threads=threads, t=t):
        return Route.SERIAL
    # (from a base, wider rows pay the copies of the base in and of the result out: 10,000 x 64 into 1,000 took
    # 182 us serial, 156 us on the gather route)
    if (
        into_new
        and outer == 1
        and inner > 0
        and segments * inner * _acc_bytes(itemsize) <= t.serial_unsorted_max_acc_bytes
        and m * inner * threads <= t.serial_unsorted_max_thread_elements
    ):
        return Route.SERIAL
    if slices_pay(outer=outer, inner=inner, segments=segments, itemsize=itemsize, threads=threads, t=t):
        return Route.SLICES
    return Route.GATHER


def small(*, outer: int, n: int, inner: int, segments: int, threads: int, t: Tuning = TUNING) -> bool:
    """Whether ``src`` and the output together are small enough for the serial route (written for per-call cost:
    it is asked on every small call)."""
    row = outer * inner
    limit = t.small_call_elements
    if inner >= t.small_wide_row:
        limit = max(limit, limit * t.small_wide_factor // max(threads, 1))
    return row * (n + segments) <= limit


def small_path(
    *, sorted: bool, from_base: bool, outer: int, n: int, inner: int, segments: int, threads: int, t: Tuning = TUNING
) -> bool:
    """Whether a call into a new tensor takes the serial route with the small path's few checks (the backend's
    ``small_index_scatter_reduce``): a small call, or a narrow unsorted one of any length that the general path
    would send to the serial route too, after ~15 us of bookkeeping, into an output no larger than a small call's
    (larger ones keep the general path's memory check; narrow-rows.md, "The check in the loop")."""
    return small(outer=outer, n=n, inner=inner, segments=segments, threads=threads, t=t) or (
        not sorted
        and not from_base
        and narrow_unsorted(outer=outer, inner=inner, threads=threads, t=t)
        and segments * inner <= t.small_call_elements
    )


def narrow_unsorted(*, outer: int, inner: int, threads: int, t: Tuning = TUNING) -> bool:
    """Whether an unsorted index into a new tensor takes the serial route at any size: one outer slice of rows so
    narrow that one thread's direct scatter beats sorting positions on every thread (narrow-rows.md)."""
    return outer == 1 and inner > 0 and inner * threads <= t.serial_unsorted_max_work


def runs_pay(*, inner: int, m: int, segments: int) -> bool:
    """The runs route where it was measured faster than offsets + the segment kernel (narrow-rows.md): rows of one
    element, and any row with at least one position per target (its chunks own the empty targets between their
    runs, so an index much shorter than the output would leave the zero-filling to few threads)."""
    if m == 0 or segments == 0:
        return False
    return inner == 1 or m >= segments


def slices_pay(*, outer: int, inner: int, segments: int, itemsize: int, threads: int, t: Tuning = TUNING) -> bool:
    """The slices route instead of sort + gather: rows along the dim so small that a gather would fetch a cache
    line for a few bytes, enough outer slices to keep every thread busy, and an accumulator that stays in cache."""
    return (
        inner * itemsize <= t.slices_max_row_bytes
        and outer >= threads
        and segments * inner * _acc_bytes(itemsize) <= t.slices_max_buffer_bytes
    )


def lanes_pay(*, outer: int, inner: int, segments: int, itemsize: int, threads: int, t: Tuning = TUNING) -> bool:
    """Whether rows of one element are reduced ``LANES`` outer slices at a time (the lanes kernel) rather than a
    slice at a time (the owner kernel), on ``threads`` threads: a whole group per thread, and the group's
    accumulators in cache."""
    return (
        inner == 1
        and outer >= LANES * max(threads, 1)
        and segments * LANES * _acc_bytes(itemsize) <= t.lanes_max_acc_bytes
    )


def marks_pay(reduce: str, *, inner: int, into_new: bool) -> bool:
    """Whether the owner kernel tells empty targets by their bits (``marks``) instead of counting each target's
    entries first: rows of one element into a new result, for the reductions of ``MARKS_EMPTY`` (for wider rows the
    pass that looks for identity bits costs more than the counting pass it saves: narrow-rows.md)."""
    return into_new and inner == 1 and reduce in MARKS_EMPTY


def _acc_bytes(itemsize: int) -> int:
    """Bytes of one accumulator for elements of ``itemsize`` bytes (half types accumulate in float32)."""
    return 8 if itemsize == 8 else 4


def refusal(route: Route, *, sorted: Optional[bool], into_new: bool, from_base: bool = False) -> Optional[str]:
    """Why ``route`` cannot serve a call (None: it can)."""
    if route is Route.RUNS and not into_new:
        return "the runs route writes a new tensor only, and this call has out= (or a base)"
    if route in (Route.RUNS, Route.SEGMENTS) and sorted is False:
        return f"the {route.value} route needs a sorted index, and this call has sorted=False"
    return None
