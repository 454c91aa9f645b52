"""Fused message passing: ``propagate`` reduces the messages with ``gather_segment_reduce`` on a CSR adjacency,
without materializing them.

- The layers whose message is the neighbour's features unchanged (``SAGEConv``, ``GINConv``) run their own
  ``message_and_aggregate`` on the adjacency.
- The layers whose message is the neighbour's features times a per-edge weight (``WEIGHTED_CONVS``: ``GCNConv``
  and ``GraphConv`` with ``edge_weight``, ``GATConv`` and ``GATv2Conv`` with their attention ``alpha`` per head)
  run the weighted ``gather_segment_reduce``, the weights put in CSR order: the ``edges x features`` messages and
  their gradient are never built. Everything before ``propagate`` -- GCN's normalisation and self-loops, GAT's
  logits, softmax and attention dropout -- is the layer's own code (its softmax goes through the routed one), so
  dropout draws from the same RNG stream as PyG's.
- GATv2's ``edge_updater`` (``EDGE_UPDATE_CONVS``), whose logits ``att . leaky_relu(x_j + x_i)`` PyG computes on
  an ``edges x heads x channels`` sum, runs ``gatv2_logits`` on the same CSR adjacency and ``segment_softmax`` on
  its segments; the attention is put back in the caller's edge order before the layer's dropout, so dropout draws
  the same mask as PyG's. With ``edge_attr`` (its ``lin_edge`` term is per edge) PyG's code runs.

``FUSED_CONVS`` lists the layers whose ``propagate`` is fused.

PyG compiles a per-class ``propagate`` from a jinja template on first instantiation, unless the class's
``propagate.__module__`` already carries the template's name; the wrapper takes that name, so PyG keeps it.
Anything the fused path does not cover -- hooks, explain mode, decomposed layers, ``torch.compile``, other
flows, TorchScript -- and, on the CPU, a call too small for the fused path's fixed cost (``pays.py``) runs PyG's own
``propagate``.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric import EdgeIndex
from torch_geometric.nn import GATConv, GATv2Conv, GCNConv, GINConv, GraphConv, SAGEConv

from ..backends import backend_for
from ..ops import gatv2_logits, segment_softmax
from ..ops._checks import plain_index
from ._common import ABSENT, PATCHED, REDUCE, explained, is_enabled, message_passing, runs_here
from .adjacency import adjacency
from .pays import fused_pays
from .sharded import ORIGINAL_CHECK_INPUT, active_graph, with_halo_sources

#: Layers whose ``message(x_j)`` returns ``x_j`` and whose ``message_and_aggregate`` is ``spmm(adj_t, x[0], aggr)``:
#: their propagate may run fused. Only the exact methods of these classes qualify (a subclass that overrides
#: either runs PyG's propagate).
PLAIN_CONVS = (SAGEConv, GINConv)

#: Layers whose ``message(x_j, w)`` is ``w * x_j`` for the per-edge ``propagate`` argument named here, reduced by
#: their ``aggr``: ``(E,)`` weights scaling rows (GCN, GraphConv), ``(E, heads)`` scaling heads (GAT). Their
#: ``message``, ``aggregate`` and ``update`` must be these classes' own.
WEIGHTED_CONVS = {GCNConv: "edge_weight", GraphConv: "edge_weight", GATConv: "alpha", GATv2Conv: "alpha"}

#: The layers whose propagate runs fused (the public description is above ``scatterx.pyg.FUSED_CONVS``).
FUSED_CONVS = PLAIN_CONVS + tuple(WEIGHTED_CONVS)

#: Layers whose ``edge_updater`` runs fused (the exact ``edge_update`` of these classes only).
EDGE_UPDATE_CONVS = (GATv2Conv,)
#: Layers whose ``edge_updater`` enable() wraps: the fused ones, and GAT's (whose source logits need the halo's
#: rows on a ShardedGraph)
EDGE_UPDATERS = (GATConv,) + EDGE_UPDATE_CONVS

_HOOKS = (
    "_propagate_forward_pre_hooks",
    "_propagate_forward_hooks",
    "_message_forward_pre_hooks",
    "_message_forward_hooks",
    "_aggregate_forward_pre_hooks",
    "_aggregate_forward_hooks",
    "_message_and_aggregate_forward_pre_hooks",
    "_message_and_aggregate_forward_hooks",
)

_EDGE_HOOKS = ("_edge_update_forward_pre_hooks", "_edge_update_forward_hooks")

#: what a fused path returns for a call it takes but the rule hands back to PyG's code (``pays.py``)
HANDED_BACK: Any = object()

#: the propagate and edge_updater wrappers enable() installed, and per layer class a subclass with PyG's propagate
#: (for scripting)
WRAPPERS: set = set()
_SCRIPTABLE: Dict[type, type] = {}


def _weighted_base(cls):
    """The ``WEIGHTED_CONVS`` class whose message ``cls`` has unchanged, or None."""
    for base in WEIGHTED_CONVS:
        if (
            issubclass(cls, base)
            and cls.message is base.message
            and cls.aggregate is message_passing.MessagePassing.aggregate
            and cls.update is message_passing.MessagePassing.update
        ):
            return base
    return None


def fusable(conv) -> bool:
    cls = type(conv)
    weighted = _weighted_base(cls) is not None
    if not weighted and not any(
        cls.message is base.message and cls.message_and_aggregate is base.message_and_aggregate for base in PLAIN_CONVS
    ):
        return False
    return (conv.fuse or weighted) and _plain_call(conv, _HOOKS)  # conv.fuse: PyG's switch for its own fused path


def _plain_call(conv, hooks) -> bool:
    """No explain mode, decomposition, other flow or scripting, and none of the ``hooks`` registered. (Traced by
    ``torch.compile``, a call is plain too: its ops go into the graph, docs/decisions/pyg-integration.md.)"""
    return (
        not conv.explain
        and conv.decomposed_layers == 1
        and conv.flow == "source_to_target"
        and not torch.jit.is_scripting()
        and not any(getattr(conv, name, None) for name in hooks)
    )


def _sizes(conv, edge_index, size, x_j, x_i):
    """``(PyG's size list, sources, targets)``: PyG's own checks of ``edge_index`` and ``size``, completed from the
    node features as its propagate does."""
    mutable_size = conv._check_input(edge_index, size)
    conv._set_size(mutable_size, 0, x_j)
    if isinstance(x_i, Tensor):
        conv._set_size(mutable_size, 1, x_i)
    num_targets = mutable_size[1] if mutable_size[1] is not None else mutable_size[0]
    return mutable_size, mutable_size[0], num_targets


def _pays(conv, edge_index: Tensor, x_j: Tensor) -> bool:
    """``pays.fused_pays`` for messages from the rows of ``x_j`` along ``edge_index``; always on a ShardedGraph
    (whose halo rows the fused path reads; a rank's shapes may differ from another's)."""
    if active_graph(conv) is not None:
        return True
    width = 1
    for size in x_j.shape[1:]:  # (a product, not numel // rows: traced sizes may be symbolic)
        width = width * size
    return fused_pays(edge_index.size(-1), width, x_j.device.type, rows=x_j.size(0))


def _plain_edge_list(edge_index) -> bool:
    """A strided tensor; under ``torch.compile`` not PyG's ``EdgeIndex`` (whose cached CSC is read in eager calls
    only: traced, the layer runs PyG's own propagate on it)."""
    return (
        isinstance(edge_index, Tensor)
        and edge_index.layout == torch.strided
        and not (torch.compiler.is_compiling() and isinstance(edge_index, EdgeIndex))
    )


def fused_propagate(conv, edge_index, size, kwargs) -> Optional[Tensor]:
    """PyG's fused branch of ``propagate`` on a plain edge list, None when it does not apply, or ``HANDED_BACK``
    where only the rule declines."""
    if not (fusable(conv) and _plain_edge_list(edge_index)):
        return None
    base = _weighted_base(type(conv))
    if base is not None:
        return weighted_propagate(conv, edge_index, size, kwargs, WEIGHTED_CONVS[base])
    x = kwargs.get("x")
    if not (isinstance(x, (tuple, list)) and len(x) == 2 and isinstance(x[0], Tensor)):
        return None
    x_j, x_i = x
    if not runs_here(x_j, edge_index if edge_index.dim() == 2 else None) or x_j.dim() == 0:
        return None
    if not _pays(conv, edge_index, x_j):
        return HANDED_BACK
    mutable_size, num_sources, num_targets = _sizes(conv, edge_index, size, x_j, x_i)
    adj = adjacency(edge_index, num_sources, num_targets, conv.node_dim)
    coll = conv._collect(conv._fused_user_args, edge_index, mutable_size, kwargs)
    out = conv.message_and_aggregate(adj, **conv.inspector.collect_param_data("message_and_aggregate", coll))
    return conv.update(out, **conv.inspector.collect_param_data("update", coll))


def weighted_propagate(conv, edge_index, size, kwargs, weight_name: str) -> Optional[Tensor]:
    """``aggr`` over each target's edges of ``weight[e] * x_j[e]``: the weighted ``gather_segment_reduce`` on the
    CSR adjacency, or None when the call is not the plain case (PyG's propagate then runs, and raises its own
    errors), or ``HANDED_BACK`` where only the rule declines."""
    x = kwargs.get("x")
    if isinstance(x, Tensor):  # the message reads x_j only: PyG checks no target rows of it against ``size``
        x_j, x_i = x, None
    elif isinstance(x, (tuple, list)) and len(x) == 2 and isinstance(x[0], Tensor):
        x_j, x_i = x
    else:
        return None
    weight = kwargs.get(weight_name)
    aggr = conv.aggr
    if not (isinstance(aggr, str) and aggr in REDUCE and runs_here(x_j, edge_index if edge_index.dim() == 2 else None)):
        return None
    heads = weight_name == "alpha"
    if x_j.dim() != (3 if heads else 2):  # (PyG's broadcast of view(-1, 1) / unsqueeze(-1) is that shape's)
        return None
    if weight is not None:
        if not (
            isinstance(weight, Tensor)
            and runs_here(weight)
            and weight.dtype == x_j.dtype
            and weight.dim() == (2 if heads else 1)
            and weight.size(0) == edge_index.size(-1)
            and (not heads or weight.size(1) == x_j.size(1))
        ):
            return None
    elif heads:
        return None
    if not _pays(conv, edge_index, x_j):
        return HANDED_BACK
    _, num_sources, num_targets = _sizes(conv, edge_index, size, x_j, x_i)
    node_dim = conv.node_dim % x_j.dim()
    if node_dim != 0:
        return None
    adj = adjacency(edge_index, num_sources, num_targets, node_dim)
    return adj.matmul(x_j, aggr, weight)


def fused_edge_update(conv, edge_index, size, kwargs) -> Optional[Tensor]:
    """GATv2's ``edge_updater`` -- logits, softmax per target, attention dropout -- on the CSR adjacency, None
    when the call is not the plain case (PyG's edge_updater then runs, and raises its own errors), or
    ``HANDED_BACK`` where only the rule declines."""
    if not (
        type(conv).edge_update is GATv2Conv.edge_update
        and _plain_call(conv, _EDGE_HOOKS)
        and size is None
        and _plain_edge_list(edge_index)
        and edge_index.dim() == 2
        and kwargs.get("edge_attr") is None
    ):
        return None
    x, att = kwargs.get("x"), conv.att
    if not (isinstance(x, (tuple, list)) and len(x) == 2 and all(isinstance(t, Tensor) for t in x)):
        return None
    x_j, x_i = x
    if not (
        runs_here(x_j, edge_index)
        and x_j.is_floating_point()
        and x_j.dim() == 3
        and conv.node_dim % 3 == 0
        and x_i.dtype == x_j.dtype
        and x_i.device == x_j.device
        and x_i.shape[1:] == x_j.shape[1:]
        and isinstance(att, Tensor)
        and att.dtype == x_j.dtype
        and att.device == x_j.device
        and att.shape[-2:] == x_j.shape[1:]
    ):
        return None
    if not _pays(conv, edge_index, x_j):
        return HANDED_BACK
    _, num_sources, num_targets = _sizes(conv, edge_index, None, x_j, x_i)
    adj = adjacency(edge_index, num_sources, num_targets, 0)
    logits = gatv2_logits(adj.ptr, adj.col, x_j, x_i, att, conv.negative_slope)
    alpha = adj.in_edge_order(segment_softmax(logits, ptr=adj.ptr))
    return F.dropout(alpha, p=conv.dropout, training=conv.training)


def _check_edges(conv, edge_index: Tensor, size, kwargs) -> None:
    """The fused path's checks of a plain edge list against the numbers of source and target nodes, with PyG's
    names (``adjacency`` makes them on an edge list it has not seen)."""
    x = kwargs.get("x")
    x_j, x_i = (x, x) if isinstance(x, Tensor) else x
    _, num_sources, num_targets = _sizes(conv, edge_index, size, x_j, x_i)
    plain = plain_index(edge_index)
    backend = backend_for(plain)
    backend.check_index(plain[0], num_sources, "edge_index[0]", "the number of source nodes")
    backend.check_index(plain[1], num_targets, "edge_index[1]", "the number of target nodes")


def _routed(cls, name: str, fused, arg_names: str):
    """``(what cls had, a wrapper of its method ``name`` that tries ``fused(self, edge_index, size, kwargs)``
    first)`` for ``enable()`` to install. The wrapper is named as PyG's template-made method of the class, so that
    PyG does not compile its own over it; where the class already had one, it is PyG's fallback. In a layer running
    on a ShardedGraph, the per-source arguments (the ``*_j`` of the layer's ``arg_names`` list) get their halo rows
    first (``sharded.py``)."""
    had = cls.__dict__.get(name, ABSENT)
    pyg_method = getattr(message_passing.MessagePassing, name) if had is ABSENT else had

    def wrapper(self, edge_index, size=None, **kwargs):
        kwargs = with_halo_sources(self, arg_names, kwargs)
        out = fused(self, edge_index, size, kwargs) if is_enabled() else None
        if out is HANDED_BACK:  # the rule's: PyG's method, a failure on the edges explained as the fused path would
            return explained(
                lambda: pyg_method(self, edge_index, size=size, **kwargs),
                lambda: _check_edges(self, edge_index, size, kwargs),
            )
        if out is not None:
            return out
        return pyg_method(self, edge_index, size=size, **kwargs)

    wrapper.__name__ = name
    wrapper.__qualname__ = f"routed_{name}.<locals>.{name}"
    wrapper.__module__ = f"{cls.__module__}_{cls.__name__}_{name}" if had is ABSENT else had.__module__
    wrapper.__doc__ = pyg_method.__doc__
    return had, wrapper


def routed_propagate(cls):
    """``_routed`` for ``propagate``: the fused propagate first."""
    return _routed(cls, "propagate", fused_propagate, "_user_args")


def routed_edge_updater(cls):
    """``_routed`` for ``edge_updater``: GATv2's fused logits and softmax first."""
    return _routed(cls, "edge_updater", fused_edge_update, "_edge_user_args")


def prepare_scriptable(self):
    """``torch.jit.script(conv)`` calls this first: TorchScript cannot compile what the switch installs (the
    wrappers take ``**kwargs`` and call Numba), so it scripts a copy whose class has PyG's own methods back --
    the template-made ``propagate``, the layer's ``forward``, ``MessagePassing._check_input``; the eager layer
    stays fused."""
    cls = type(self)
    wrapped = cls.__dict__.get("propagate") in WRAPPERS or getattr(cls, "propagate", None) in WRAPPERS
    # PyG 2.6 and later make a scriptable propagate on request (_set_jittable_templates); PyG 2.5 made it when the
    # class was first built: the one the switch replaced
    on_request = hasattr(message_passing.MessagePassing, "_set_jittable_templates")
    if cls not in _SCRIPTABLE:
        generic = {"__module__": cls.__module__, "_check_input": ORIGINAL_CHECK_INPUT}
        for name in ("propagate", "edge_updater"):
            if getattr(cls, name, None) in WRAPPERS:
                generic[name] = getattr(message_passing.MessagePassing, name) if on_request else _replaced(cls, name)
        original = getattr(getattr(cls, "forward", None), "original", None)
        if original is not None:  # the sharded forward of sharded.py
            generic["forward"] = original
        _SCRIPTABLE[cls] = type(cls.__name__, (cls,), generic)
    clone = copy.copy(self)
    clone.__class__ = _SCRIPTABLE[cls]
    if wrapped:
        # an instance-level propagate (set by decomposed layers or explain mode) is not what TorchScript compiles:
        # it compiles the class's, as PyG's own scripting does
        clone.__dict__.pop("propagate", None)
        clone.__dict__.pop("edge_updater", None)
        if on_request:
            clone._set_jittable_templates(raise_on_error=True)
    return clone


def _replaced(cls, name: str):
    """The method ``name`` that enable() replaced on ``cls`` (or the base class it patched), for PyG 2.5's
    scripting; a clear error where the class was first built with the switch on (PyG then made none)."""
    for owner in cls.__mro__:
        if owner.__dict__.get(name) in WRAPPERS:
            for patched, attr, original in PATCHED:
                if patched is owner and attr == name and original is not ABSENT:
                    return original
            break
    raise RuntimeError(
        f"torch.jit.script of {cls.__name__} with scatterx.pyg's switch on needs PyG 2.6 or later, or "
        f"a {cls.__name__} built once before scatterx.pyg.enable() (PyG 2.5 compiles its scriptable "
        "propagate when a layer class is first built)"
    )
