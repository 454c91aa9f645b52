"""PyG integration: one switch that runs PyTorch Geometric's scatter work on scatterx.

>>> import scatterx.pyg
>>> scatterx.pyg.enable()          # or: with scatterx.pyg.enabled(): ...
>>> scatterx.pyg.disable()

What the switch routes, while it is on (``routed.py``):

- ``torch_geometric.utils.scatter`` / ``segment`` / ``softmax`` / ``spmm``: every module of ``torch_geometric`` that
  holds one of them -- the package namespaces and the modules that bound the name at import time
  (``from torch_geometric.utils import scatter``) -- gets scatterx's version. The index's order is checked per
  call (one pass), so a sorted index takes the sorted kernel; ``ptr`` takes the CSR kernel directly; the softmax
  is ``scatterx.segment_softmax``.
- ``Aggregation.reduce``, the one helper behind PyG's sum/mean/max/min/mul/softmax/power-mean/std/var
  aggregations: with ``ptr`` (a sorted ``EdgeIndex`` gives one to ``MessagePassing``) it always runs the CSR
  segment kernel (PyG only does so in deterministic mode); without, it reaches the routed ``scatter``.
- ``propagate`` of the layers whose message is the neighbour's features as they are (``fused.py``:
  ``SAGEConv``, ``GINConv``) on a plain ``edge_index`` tensor: the layer's own ``message_and_aggregate`` runs on a
  CSR adjacency (``adjacency.py``: cached per ``edge_index`` tensor; a sorted ``EdgeIndex`` lends its own CSC), so
  the messages are reduced by ``gather_segment_reduce`` without being materialized.

``switch.py`` does the patching and keeps the undo log. ``torch.jit.script`` of PyG code with the switch on
compiles PyG's own functions (TorchScript cannot compile Numba or Triton kernels); the scripted module runs PyG's
default path. ``ScatterAggregation(reduce)`` (``aggregation.py``) is the same work as an ``aggr=`` module, for
code that prefers not to patch.
"""

from . import _common  # noqa: F401  (first: it says what to install when torch_geometric is missing)
from .adjacency import clear_cache
from .aggregation import ScatterAggregation
from .fused import FUSED_CONVS
from .routed import scatter, segment, softmax, spmm
from .switch import disable, enable, enabled, is_enabled

__all__ = [
    "enable", "disable", "enabled", "is_enabled", "clear_cache", "ScatterAggregation", "FUSED_CONVS",
    "scatter", "segment", "softmax", "spmm",
]
