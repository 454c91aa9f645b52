"""The benches' rows per op: for each op ``scatterx bench`` times, what a user would call instead -- scatterx's own
entry points and its peers (torch's native paths, torch_scatter, PyG's formulas) -- one module per op, named after
it (``index_scatter_reduce``, ``segment_softmax``, ``gather_segment_reduce``, ``gatv2_logits``), each a tuple of
``Peer`` that ``harness`` checks against each other and then times.

Each peer gets its input in its best form, prepared outside the timed call (the CSR ``ptr`` for segment ops, the
expanded index view for ``scatter_reduce``).

An op module that names a ``SECTIONS`` tuple of :class:`Section` has its rows in ``scatterx bench`` with nothing
else to edit: :func:`sections` finds them, ``harness`` runs them, and ``scatterx bench --no-<flag>`` skips them (the
core op's rows, the first and largest table, are ``harness``'s own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Tuple

import torch

from ..._modules import import_modules
from ..graphs import Graph


@dataclass(frozen=True)
class Peer:
    name: str
    torch_native: bool  # counts toward "fastest PyTorch-native path"
    build: Callable  # (graph, reduce, sorted) -> callable, or None where the peer cannot do it


def inputs(graph: Graph, sorted: bool):
    """The graph's ``(index, src)`` in the order asked: sorted by target, or shuffled."""
    return (graph.index, graph.src) if sorted else (graph.shuffled_index, graph.shuffled_src)


def message_passing_inputs(graph: Graph):
    """The message-passing rows' inputs: node features (the graph's first ``num_nodes`` message rows, zero rows
    added when it has fewer edges than nodes) and edge weights, both requiring gradients, and each edge's source
    (a fixed random node)."""
    g = torch.Generator().manual_seed(1)
    n, e = graph.num_nodes, graph.num_edges
    sources = torch.randint(0, n, (e,), generator=g).to(graph.src.device)
    weight = torch.rand(e, generator=g, dtype=graph.src.dtype).to(graph.src.device)
    x = graph.src[:n].detach().clone()
    if x.size(0) < n:  # fewer edges than nodes: pad with zero rows
        x = torch.cat([x, x.new_zeros(n - x.size(0), x.size(1))])
    return x.requires_grad_(), sources, weight.requires_grad_()


@dataclass(frozen=True)
class Section:
    """Rows of ``scatterx bench`` for one op, declared in the op's module (``SECTIONS``).

    ``implementations``: scatterx's first, the trusted result last (every other is checked against it before it is
    timed). ``per_order``: each ``build(graph, sorted)`` gives the op's forward result, timed for each index order
    asked; otherwise ``build(graph)`` runs forward and backward and gives the gradients, flattened, timed once
    (sorted). ``flag``: ``scatterx bench --no-<flag>`` (``Config.skip``) leaves the section out, with every
    section of that flag; ``what`` says what its rows are, for that option's help."""

    label: str  # the rows' first column
    implementations: Tuple[Peer, ...]
    per_order: bool
    flag: str
    what: str


def sections() -> List[Section]:
    """Every op module's ``SECTIONS``, in the modules' name order."""
    found: List[Section] = []
    for module in import_modules(globals()):
        found += getattr(module, "SECTIONS", ())
    return found


def section_flags() -> Dict[str, str]:
    """``{flag: what its sections' rows are}``, each flag once: the ``--no-<flag>`` options of ``scatterx bench``."""
    flags: Dict[str, List[str]] = {}
    for section in sections():
        flags.setdefault(section.flag, []).append(section.what)
    return {flag: " and ".join(whats) for flag, whats in flags.items()}
