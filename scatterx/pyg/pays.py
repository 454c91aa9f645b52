"""Where the switch pays: per call, from the shapes alone, whether PyG's work runs on scatterx or on PyG's own code.

scatterx's kernels win on large calls, but every call through them has a fixed cost (checks, a custom op and its
autograd node, a CSR adjacency built for a new ``edge_index``) that PyG's default path, a torch op or two, does not
pay. On small graphs that cost decides: measured on the project's 2-vCPU VM (torch 2.13, 2 threads; forward and
backward), a ``GCNConv`` layer on 1,000 edges of 8 features ran at 0.43x PyG's path with the switch on, and
``torch_geometric.utils.scatter`` with a gradient at 300 x 16 at 0.47x. So on the CPU, below the thresholds of
``SwitchTuning``, the switch hands the call to PyG's own function, and a model is never slower for it where
measured (docs/decisions/pyg-switch-rule.md: the tables and the thresholds' reasons). On CUDA every call the switch
takes runs on scatterx (not measured there: no rule).

A rule reads shapes only (never values): the same graph takes the same path every call, and a call's path is the
same on every rank of a distributed run with the same shapes. ``tuned(...)`` changes the thresholds within a block
(a context manager, per thread and task, as the CPU routes' ``tuned``); ``ALWAYS`` takes scatterx for every call
(what the tests of the fused layers and PyG's own test suite run under).

Under ``torch.compile`` the rule is read when dynamo traces the call, from the traced shapes: a symbolic size
(``dynamic=True``, or a size that varied between calls) is compared through a guard, so a graph is traced again
only when a size crosses a threshold. A size known only at run time (an unbacked size, such as the edges left by a
mask under ``capture_dynamic_output_shape_ops``) cannot be guarded on: a routed reduction of such a size runs
PyG's code, and a fused layer takes its source rows as a stand-in for its edges (at least as many, for the layers
that add self-loops); under ``torch.export``, so does a size the export leaves dynamic. The thresholds a graph was
traced with are guarded on too: a ``tuned`` block entered or left later traces the graph again (dynamo cannot read
a ``ContextVar``: traced code reads a copy that ``tuned`` keeps in step, shared by the threads;
docs/decisions/pyg-switch-rule.md).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Iterator, Optional, Union

import torch

from ..backends._common import tuned_block

try:
    from torch.fx.experimental.symbolic_shapes import guard_or_false, guard_or_true, statically_known_true
except ImportError:  # torch < 2.7: traced sizes there are backed (a guard) or plain ints
    from torch.fx.experimental.symbolic_shapes import statically_known_true

    def guard_or_false(a: Union[bool, torch.SymBool]) -> bool:
        return bool(a)

    def guard_or_true(a: Union[bool, torch.SymBool]) -> bool:
        return bool(a)


@dataclass(frozen=True)
class SwitchTuning:
    """The CPU thresholds of the switch, each with its reason (docs/decisions/pyg-switch-rule.md)."""

    #: A fused layer call (``propagate`` on a CSR adjacency) takes scatterx from this many edges -- at any width:
    #: 30k edges of 8 features ran at 1.3-1.6x for GCN, GAT and SAGE ...
    fused_min_edges: int = 24_576
    #: ... or from this many ``edges x width`` elements (width: the features a message carries, heads included):
    #: 3k x 128 ran at 0.93-1.24x, 10k x 128 at 1.07-1.79x.
    fused_min_elements: int = 1 << 19
    #: A routed scatter or segment reduction whose result needs a gradient takes scatterx from this many elements
    #: of ``src`` (its autograd node costs ~100-200 us a call more than torch's): sum and max at 3k x 64 and 10k x
    #: 16 ran at 1.1-2x, at 1k x 64 at 0.78-1.09x ...
    routed_min_elements_grad: int = 1 << 17
    #: ... a mean from this many (PyG's mean is a sum and a count, whose backward is torch's own and cheap): 10k x 32
    #: ran at 0.67x, 30k x 32 at 1.03x.
    routed_mean_min_elements_grad: int = 1 << 20
    #: ... without a gradient, from this many elements (a forward alone gains less: 100k x 16 ran at 1.6x, 30k x 64
    #: at 0.84-0.98x) ...
    routed_min_elements: int = 1 << 21
    #: ... or, for max and min (torch's ``scatter_reduce`` amax/amin is slow on narrow rows), from this many rows of
    #: at most ``routed_select_max_width`` elements: 30k x 1 ran at 2.1x, 30k x 16 at 1.2x.
    routed_select_min_rows: int = 1 << 14
    routed_select_max_width: int = 16
    #: A routed softmax takes scatterx from this many elements, over rows of at least ``softmax_min_width``
    #: (forward and backward: 10k x 4 ran at 1.15x, 1k x 4 at 0.61x; rows of one element never paid, 0.55-0.96x
    #: from 30k to 1M rows -- the second layer of a one-head GAT).
    softmax_min_elements: int = 1 << 15
    softmax_min_width: int = 2


TUNING = SwitchTuning()
#: every call the switch can take runs on scatterx, whatever its size
ALWAYS = SwitchTuning(
    fused_min_edges=0,
    fused_min_elements=0,
    routed_min_elements_grad=0,
    routed_mean_min_elements_grad=0,
    routed_min_elements=0,
    softmax_min_elements=0,
    softmax_min_width=0,
)

_TUNING: contextvars.ContextVar[SwitchTuning] = contextvars.ContextVar("scatterx_pyg_tuning", default=TUNING)


class _Traced:
    """What code traced by dynamo reads instead of ``_TUNING`` (which dynamo cannot read): the thresholds of the
    innermost ``tuned`` block entered, in any thread; dynamo guards on the fields a graph read."""

    tuning = TUNING


def tuning() -> SwitchTuning:
    """The thresholds in effect."""
    if torch.compiler.is_compiling():
        return _Traced.tuning
    return _TUNING.get()


@contextlib.contextmanager
def tuned(tuning: SwitchTuning = TUNING, **changes) -> Iterator[SwitchTuning]:
    """Within the block, the switch decides by ``tuning`` (default: the shipped one) with these fields changed
    (``tuned(ALWAYS)``: scatterx for every call)."""
    with tuned_block(_TUNING, tuning, changes, "switch threshold(s)") as t:
        outer, _Traced.tuning = _Traced.tuning, t
        try:
            yield t
        finally:
            _Traced.tuning = outer


def _at_least(size, threshold: int) -> Optional[bool]:
    """``size >= threshold`` for an int or a traced size (through a guard), or None for a traced size known only at
    run time (unbacked: no guard can decide it) -- or, under ``torch.export``, for any size the export leaves
    dynamic (an exported program keeps no guard: a ``Dim`` must hold over its whole range)."""
    if _exporting():
        if statically_known_true(size >= threshold):
            return True
        return False if statically_known_true(size < threshold) else None
    if guard_or_false(size >= threshold):
        return True
    if not guard_or_true(size >= threshold):
        return False
    return None


def _exporting() -> bool:
    is_exporting = getattr(torch.compiler, "is_exporting", None)  # (torch >= 2.5)
    return bool(is_exporting is not None and is_exporting())


def _either(a: Optional[bool], b: Optional[bool]) -> Optional[bool]:
    """``a or b`` where None is "not known": True if either is, False if both are False, else None."""
    if a or b:
        return True
    return None if a is None or b is None else False


def fused_pays(edges: int, width: int, device_type: str, rows: Optional[int] = None) -> bool:
    """Whether a fused layer call over ``edges`` edges of messages ``width`` elements wide runs on scatterx.
    ``rows``: the call's source rows, which stand in for a traced ``edges`` known only at run time."""
    if device_type != "cpu":
        return True
    t = tuning()
    pays = _either(_at_least(edges, t.fused_min_edges), _at_least(edges * width, t.fused_min_elements))
    if pays is None and rows is not None:
        return fused_pays(rows, width, device_type)
    return bool(pays)


def routed_pays(rows: int, width: int, reduce: str, grad: bool, device_type: str) -> bool:
    """Whether a routed reduction of ``rows`` slices of ``width`` elements runs on scatterx. ``reduce``: the
    reduction's name in scatterx (``"sum"``, ``"mean"``, ``"prod"``, ``"amax"``, ``"amin"``) or ``"softmax"``;
    ``grad``: its result needs a gradient. A traced size known only at run time: PyG's code (False)."""
    if device_type != "cpu":
        return True
    t = tuning()
    elements = rows * width
    if reduce == "softmax":
        return width >= t.softmax_min_width and bool(_at_least(elements, t.softmax_min_elements))
    if grad:
        return bool(
            _at_least(elements, t.routed_mean_min_elements_grad if reduce == "mean" else t.routed_min_elements_grad)
        )
    if reduce in ("amax", "amin") and width <= t.routed_select_max_width and _at_least(rows, t.routed_select_min_rows):
        return True
    return bool(_at_least(elements, t.routed_min_elements))
