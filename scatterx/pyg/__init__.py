"""PyTorch Geometric on scatterx: one switch that runs PyG's scatter work on scatterx's kernels.

:func:`enable` patches PyG in place and :func:`disable` undoes it (:func:`enabled` does both around a ``with``
block); the model's code does not change::

    import scatterx.pyg

    with scatterx.pyg.enabled():
        out = model(data.x, data.edge_index)

While the switch is on:

- ``torch_geometric.utils.scatter``, ``segment``, ``softmax`` and ``spmm`` are scatterx's :func:`scatter`,
  :func:`segment`, :func:`softmax` and :func:`spmm`, in PyG's package namespaces and in every PyG module that
  imported the name. A sorted index takes scatterx's sorted kernel, a ``ptr`` the CSR kernel.
- PyG's aggregations -- ``aggr="sum"``, ``"mean"``, ``"max"``, ``"min"``, ``"mul"`` and the softmax, power-mean,
  std and var aggregations, which reduce through the same helper -- run on scatterx. Given a ``ptr`` (a sorted
  ``EdgeIndex`` gives ``MessagePassing`` one), they always run the deterministic CSR kernel, which PyG does only
  in its deterministic mode.
- The layers of :data:`FUSED_CONVS` (``SAGEConv``, ``GINConv``, ``GCNConv``, ``GraphConv``, ``GATConv``,
  ``GATv2Conv``) on a plain ``edge_index`` tensor or a sorted ``EdgeIndex`` reduce their messages in one fused
  gather-and-reduce kernel over a CSR adjacency, without building the ``edges x features`` messages (GATv2's
  attention logits too). The adjacency is cached per ``edge_index`` tensor (:func:`clear_cache` forgets it).

- The same layers (:data:`SHARDED_CONVS`) run on a ``scatterx.distributed.ShardedGraph`` passed as
  ``edge_index``: full-graph training over several processes, each holding its own nodes' rows and the edges into
  them (``sharded.py``; the guide *Beyond one machine*).

On the CPU, a call too small for scatterx's fixed cost to pay (a layer on a few thousand edges, a scatter of a few
thousand elements) runs PyG's own code too: the rule reads the shapes only (``scatterx.pyg.pays``), so a small
graph's model is not slowed by the switch.

Whatever scatterx does not take runs PyG's own code -- a dtype or device scatterx does not support,
``reduce="any"``; for the fused layers also hooks and explain mode -- so the results are PyG's (up to the order of
floating-point sums). A call the rule hands back still gets scatterx's cheap checks of its arguments, so bad input
raises the same error on both sides of the rule. Where scatterx's results differ from PyG's, scatterx's are the
exact ones (docs/guide/gradients.md):

- max/min gradients split evenly among the members equal to the result. PyG's ``scatter`` reduces into a
  zero-filled output with ``include_self=False``, and torch's gradient then counts that fill as one more tie when
  the result is 0 (ReLU'd messages, say): its members get ``1/(k+1)`` each where scatterx gives ``1/k``;
- ``segment`` with max/min keeps a segment's real ``inf`` (PyG's maps every infinite result to 0, empty segments
  and real infinities alike; scatterx's empty segments are 0);
- an int32 index: torch 2.13's gather with an expanded int32 index, in PyG's backward, reads wrong rows; scatterx's
  gradients are those of the int64 index;
- an index entry out of range is an ``IndexError`` naming the entry (PyG raises ``ValueError`` or
  ``RuntimeError``).

Under ``torch.compile`` the rule is read from the traced shapes (a symbolic size through a guard): the fused layers
and routed reductions that pay are traced as scatterx's custom ops into the model's graph, the rest as PyG's torch
ops (docs/decisions/pyg-switch-rule.md).

``torch.jit.script`` of PyG code with the switch on compiles PyG's own functions: TorchScript cannot compile
scatterx's Numba or Triton kernels, so the scripted module runs PyG's default path while the eager one stays on
scatterx.

For code that prefers not to patch PyG, :class:`ScatterAggregation` does the same work as an ``aggr=`` module.
"""

# Where things are:
# - switch.py: enable() patches PyG and logs every change (the undo log in _common.PATCHED); disable() undoes the log
#   in reverse order.
# - routed.py: the functions enable() puts in place of PyG's scatter/segment/softmax/spmm and Aggregation.reduce.
#   The index's order is checked per call (one pass), so a sorted index takes the sorted kernel; ``ptr`` takes the
#   CSR kernel directly; the softmax is scatterx.segment_softmax. Aggregation.reduce with ``ptr`` always runs the
#   CSR segment kernel (PyG does so only in deterministic mode); without, it reaches the routed scatter.
# - fused.py: ``propagate`` of the layers whose message is the neighbour's features as they are (SAGEConv,
#   GINConv) runs the layer's own message_and_aggregate on a CSR adjacency; the weighted layers (GCNConv,
#   GraphConv, GATConv, GATv2Conv) run the weighted gather_segment_reduce; GATv2's edge_updater runs gatv2_logits.
# - adjacency.py: that CSR adjacency, cached per edge_index tensor (a sorted EdgeIndex lends its own CSC).
# - aggregation.py: ScatterAggregation, the same work as an aggr= module.
# - sharded.py: the layers' forward on a ShardedGraph (halo rows appended to what they gather per source), GCN's
#   normalisation with the halo's degrees, and the error for the layers that do not run sharded.

from . import _common  # noqa: F401  (first: it says what to install when torch_geometric is missing)
from .adjacency import clear_cache
from .aggregation import ScatterAggregation
from .fused import FUSED_CONVS as _FUSED_CONVS
from .routed import scatter, segment, softmax, spmm
from .sharded import SHARDED_CONVS as _SHARDED_CONVS
from .switch import disable, enable, enabled, is_enabled

#: The PyG layers whose message passing runs fused while the switch is on (a tuple of classes), namely
#: ``SAGEConv``, ``GINConv``, ``GCNConv``, ``GraphConv``, ``GATConv`` and ``GATv2Conv``. On a plain ``edge_index``
#: tensor or a sorted ``EdgeIndex``, their ``propagate`` reduces the messages in one gather-and-reduce kernel over
#: a CSR adjacency of the graph, without building the ``edges x features`` messages: GCN's and GraphConv's edge
#: weights and GAT's attention weigh the rows inside the kernel, and GATv2's attention logits are computed on the
#: adjacency too. A subclass that overrides the layer's ``message`` (or ``message_and_aggregate``), and a layer
#: with hooks, in explain mode or under ``torch.compile``, runs PyG's own ``propagate``.
FUSED_CONVS = _FUSED_CONVS

#: The PyG layers that run on a ``scatterx.distributed.ShardedGraph`` while the switch is on (a tuple of classes):
#: ``GCNConv``, ``SAGEConv``, ``GINConv``, ``GraphConv``, ``GATConv`` and ``GATv2Conv``. Called with the rows of
#: the nodes a rank owns and a ``ShardedGraph`` as ``edge_index``, such a layer fetches the rows of the remote
#: sources its edges name (one exchange per gathered tensor, its gradient pushed back), runs its own forward and
#: the fused kernels locally, and returns the owned nodes' rows. Other layers given a ``ShardedGraph`` raise a
#: ``TypeError`` naming these.
SHARDED_CONVS = _SHARDED_CONVS

__all__ = [
    "FUSED_CONVS",
    "SHARDED_CONVS",
    "ScatterAggregation",
    "clear_cache",
    "disable",
    "enable",
    "enabled",
    "is_enabled",
    "scatter",
    "segment",
    "softmax",
    "spmm",
]
