"""The fused layers on a ``scatterx.distributed.ShardedGraph``: a PyG model trained over several processes, its
code unchanged but for the graph it is given.

A rank holds the rows of the nodes it owns and the edges into them (``ShardedGraph``: local numbers, owned nodes
first, then the halo of remote sources). With the switch on, a layer of :data:`SHARDED_CONVS` called with a
``ShardedGraph`` as its ``edge_index`` runs its own ``forward`` on the local edge list, and:

- every ``propagate`` and ``edge_updater`` of that call gets its per-source arguments (the ``*_j`` of
  ``message``/``edge_update``: the features, GAT's source logits) with the halo rows appended
  (``ShardedGraph.with_halo``: one exchange, differentiable), and so reduces into the owned nodes with the local
  fused kernel, or PyG's own code where the fused one declines;
- GCN's normalisation takes the halo sources' degrees from their owners (the only per-node quantity a supported
  layer computes outside ``propagate``): ``sharded_gcn_norm`` runs in place of PyG's ``gcn_norm``, whose result
  it passes to the layer's own ``forward`` with ``normalize`` off for the call (PyG's ``gcn_norm`` itself is not
  patched: TorchScript compiles it).

Every other layer given a ``ShardedGraph`` raises a ``TypeError`` naming the supported ones (the patched
``MessagePassing._check_input``, and the graph itself when treated as a tensor).
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import torch
from torch import Tensor
from torch_geometric.nn import GATConv, GATv2Conv, GCNConv, GINConv, GraphConv, SAGEConv
from torch_geometric.nn.conv import gcn_conv

from ..distributed.graph import ShardedGraph
from ..distributed.plan import agree
from ._common import message_passing

#: The layers that run on a ShardedGraph (the public description is above ``scatterx.pyg.SHARDED_CONVS``).
SHARDED_CONVS = (GCNConv, SAGEConv, GINConv, GraphConv, GATConv, GATv2Conv)
_NAMES = ", ".join(c.__name__ for c in SHARDED_CONVS[:-1]) + " and " + SHARDED_CONVS[-1].__name__

#: the (layer, graph, rows fetched so far) of the sharded forward calls in progress, innermost last; a tensor
#: two methods of one call gather by source (GATv2's ``x_l``: logits, then messages) is fetched once
_ACTIVE: List[Tuple[object, ShardedGraph, Dict[int, Tuple[Tensor, Tensor]]]] = []

ORIGINAL_CHECK_INPUT = message_passing.MessagePassing._check_input


def unsupported(layer) -> TypeError:
    return TypeError(
        f"{type(layer).__name__} does not run on a scatterx.distributed.ShardedGraph: the layers that do "
        f"are {_NAMES}, with scatterx.pyg's switch on"
    )


def active_graph(layer) -> Optional[ShardedGraph]:
    """The ShardedGraph ``layer`` is running a forward call on, or None."""
    return _ACTIVE[-1][1] if _ACTIVE and _ACTIVE[-1][0] is layer else None


def _with_halo(graph: ShardedGraph, rows: Tensor) -> Tensor:
    fetched = _ACTIVE[-1][2]
    hit = fetched.get(id(rows))
    if hit is not None and hit[0] is rows:
        return hit[1]
    # rows derived from the call's x, whose rows, dtype and feature shape the ranks agreed on: no check of their own
    extended = graph.with_halo(rows, checked=True)
    fetched[id(rows)] = (rows, extended)
    return extended


def routed_forward(cls):
    """``(what cls had, a forward that runs sharded when given a ShardedGraph, else the layer's own)``."""
    had = cls.__dict__.get("forward")
    original = cls.forward

    def forward(self, *args, **kwargs):
        graph = args[1] if len(args) > 1 else kwargs.get("edge_index")
        if not isinstance(graph, ShardedGraph):
            return original(self, *args, **kwargs)
        x = args[0] if args else kwargs.get("x")
        extra = list(args[2:]) + [v for k, v in kwargs.items() if k not in ("x", "edge_index")]
        # one agreement per call: what could differ between ranks and make one rank raise or skip an exchange
        signature = (
            "sharded layer",
            type(self).__name__,
            str(getattr(x, "dtype", None)),
            tuple(getattr(x, "shape", (None,))[1:]),
            tuple(type(v).__name__ for v in extra),
        )
        agree(_check_call(self, x, graph, args[2:], kwargs), signature, graph.group)
        if len(args) > 1:
            args = (args[0], graph.edge_index, *args[2:])
        else:
            kwargs = dict(kwargs, edge_index=graph.edge_index)
        _ACTIVE.append((self, graph, {}))
        try:
            if isinstance(self, GCNConv) and self.normalize:
                kwargs.pop("x", None)
                return _gcn_forward(self, original, x, graph, *args[2:], **kwargs)
            return original(self, *args, **kwargs)
        finally:
            _ACTIVE.pop()

    forward.__name__, forward.__qualname__ = "forward", f"{cls.__name__}.forward"
    forward.__doc__ = original.__doc__
    forward.__dict__["original"] = original  # what a scripted copy compiles (fused.prepare_scriptable)
    return had, forward


def _check_call(layer, x, graph: ShardedGraph, more_args, kwargs) -> Optional[Exception]:
    """What is wrong with a layer's call on a ShardedGraph, or None (read, not raised: every rank raises it)."""
    name = type(layer).__name__
    if not isinstance(x, Tensor):
        return TypeError(
            f"{name} on a ShardedGraph takes x as one tensor of the owned nodes' rows "
            f"(not {type(x).__name__}: bipartite inputs do not run sharded)"
        )
    if x.dim() == 0 or x.size(0) != graph.num_owned:
        return ValueError(
            f"x has {x.size(0) if x.dim() else 0} rows but rank {graph.rank} owns {graph.num_owned} "
            "nodes: pass the rows of the nodes this rank owns (the shard's x)"
        )
    if x.device != graph.edge_index.device:
        return ValueError(f"x is on {x.device} but the ShardedGraph on {graph.edge_index.device}")
    if kwargs.get("size") is not None or any(isinstance(v, (tuple, list)) for v in more_args):
        return ValueError(f"{name} on a ShardedGraph takes no size: the sizes are the graph's")
    if kwargs.get("return_attention_weights"):
        return ValueError(f"{name} on a ShardedGraph does not return attention weights")
    for key, value in [*((f"argument {i + 3}", v) for i, v in enumerate(more_args)), *kwargs.items()]:
        if (
            isinstance(value, Tensor)
            and key not in ("x", "edge_index")
            and (value.dim() == 0 or value.size(0) != graph.num_edges)
        ):
            return ValueError(
                f"{name}'s {key} has {value.size(0) if value.dim() else 0} rows but the ShardedGraph "
                f"holds {graph.num_edges} edges on rank {graph.rank}: per-edge values in the shard's "
                "edge order"
            )
    return None


def with_halo_sources(layer, names: str, kwargs: dict) -> dict:
    """``kwargs`` with each per-source argument (the ``*_j`` parameters in the layer's list ``names``, PyG's
    ``_user_args`` or ``_edge_user_args``, without the suffix) made a pair ``(owned rows + halo rows, owned
    rows)``, while ``layer`` runs on a ShardedGraph; else ``kwargs`` unchanged."""
    graph = active_graph(layer)
    if graph is None:
        return kwargs
    out = dict(kwargs)
    for name in source_names(getattr(layer, names)):
        value = out.get(name)
        if isinstance(value, Tensor):
            out[name] = (_with_halo(graph, value), value)
        elif isinstance(value, (tuple, list)) and len(value) == 2 and isinstance(value[0], Tensor):
            out[name] = (_with_halo(graph, value[0]), value[1])
    return out


def source_names(arg_names) -> List[str]:
    """The argument names PyG gathers per source: ``x`` for ``x_j``."""
    return [a[:-2] for a in arg_names if a.endswith("_j")]


def _gcn_forward(conv, original, x, graph, edge_weight=None, **kwargs):
    """GCNConv's forward on a ShardedGraph: its normalisation by ``sharded_gcn_norm`` (cached as PyG caches it),
    then the layer's own forward with ``normalize`` off."""
    edge_weight = kwargs.pop("edge_weight", edge_weight)
    kwargs.pop("edge_index", None)
    cache = conv._cached_edge_index
    if cache is not None:
        edge_index, edge_weight = cache
    elif edge_weight is None:
        # the graph's alone (no weights, no gradient): normalised once per graph, not per call -- which also keeps
        # one edge list, so the fused kernels' CSR of it is built once
        key = ("gcn_norm", conv.improved, conv.add_self_loops, conv.flow, x.dtype)
        edge_index, edge_weight = graph.cached(
            key,
            lambda: sharded_gcn_norm(
                graph,
                graph.edge_index,
                None,
                x.size(conv.node_dim),
                conv.improved,
                conv.add_self_loops,
                conv.flow,
                x.dtype,
            ),
        )
    else:
        edge_index, edge_weight = sharded_gcn_norm(
            graph,
            graph.edge_index,
            edge_weight,
            x.size(conv.node_dim),
            conv.improved,
            conv.add_self_loops,
            conv.flow,
            x.dtype,
        )
    if conv.cached and cache is None:
        conv._cached_edge_index = (edge_index, edge_weight)
    conv.normalize = False
    try:
        return original(conv, x, edge_index, edge_weight, **kwargs)
    finally:
        conv.normalize = True


def sharded_gcn_norm(
    graph: ShardedGraph,
    edge_index,
    edge_weight=None,
    num_nodes=None,
    improved=False,
    add_self_loops=True,
    flow="source_to_target",
    dtype=None,
):
    """PyG's ``gcn_norm`` of a ShardedGraph's local edge list, the halo sources' degrees fetched from their owners
    (every edge into a node is on its owner, so each owner has its nodes' whole degrees)."""
    if flow != "source_to_target":
        raise ValueError(
            "a ShardedGraph holds the edges into the owned nodes: GCNConv runs on it with flow='source_to_target' only"
        )
    fill_value = 2.0 if improved else 1.0
    if add_self_loops:
        edge_index, edge_weight = gcn_conv.add_remaining_self_loops(edge_index, edge_weight, fill_value, num_nodes)
    if edge_weight is None:
        edge_weight = torch.ones((edge_index.size(1),), dtype=dtype, device=edge_index.device)
    row, col = edge_index[0], edge_index[1]
    deg = gcn_conv.scatter(edge_weight, col, dim=0, dim_size=num_nodes, reduce="sum")
    deg_inv_sqrt = deg.pow_(-0.5)
    deg_inv_sqrt.masked_fill_(deg_inv_sqrt == float("inf"), 0)
    # the sources' factors: the owned nodes' own, then the halo's from their owners
    source_inv_sqrt = graph.with_halo(deg_inv_sqrt, checked=True)
    return edge_index, source_inv_sqrt[row] * edge_weight * deg_inv_sqrt[col]


def check_input(self, edge_index, size):
    """PyG's ``MessagePassing._check_input``; a ShardedGraph reaching it is in a layer that does not run sharded."""
    if isinstance(edge_index, ShardedGraph):
        raise unsupported(self)
    return ORIGINAL_CHECK_INPUT(self, edge_index, size)
