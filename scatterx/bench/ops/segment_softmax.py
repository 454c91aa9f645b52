"""``segment_softmax``'s rows: the softmax of each edge's features among the edges of its target node (attention
weights), by scatterx and by PyG's formula on torch's ops."""

from __future__ import annotations

import torch

import scatterx

from . import Peer, Section
from . import inputs as _inputs


# ----------------------------------------------------------------------------------------------- segment softmax
# Softmax of each edge's features among the edges of its target node (attention weights). Builders take
# (graph, sorted) and return a callable giving the ``edges x features`` result, or None.
def _scatterx_softmax(graph, sorted):
    index, src = _inputs(graph, sorted)
    n = graph.num_nodes
    return lambda: scatterx.segment_softmax(src, index, num_segments=n, sorted=sorted)


def _scatterx_softmax_ptr(graph, sorted):
    if not sorted:
        return None
    return lambda: scatterx.segment_softmax(graph.src, ptr=graph.ptr)


def _torch_softmax(graph, sorted):
    """PyG's formula on torch's ops (what ``torch_geometric.utils.softmax`` runs without torch_scatter): the
    group max by scatter_reduce, exp, the group sum by scatter_add, both gathered back."""
    index, src = _inputs(graph, sorted)
    expanded = index.view(-1, 1).expand_as(src)
    shape = (graph.num_nodes, src.size(1))

    def run():
        zeros = torch.zeros(shape, dtype=src.dtype, device=src.device)
        group_max = zeros.scatter_reduce(0, expanded, src, "amax", include_self=False)
        out = (src - group_max.index_select(0, index)).exp()
        group_sum = torch.zeros(shape, dtype=src.dtype, device=src.device).scatter_add_(0, expanded, out) + 1e-16
        return out / group_sum.index_select(0, index)

    return run


SCATTERX_SOFTMAX = Peer("scatterx.segment_softmax", False, _scatterx_softmax)
SOFTMAX_IMPLEMENTATIONS = (
    SCATTERX_SOFTMAX,
    Peer("scatterx.segment_softmax (ptr)", False, _scatterx_softmax_ptr),
    Peer("PyG's softmax formula (torch ops)", True, _torch_softmax),
)

SECTIONS = (
    Section("softmax", SOFTMAX_IMPLEMENTATIONS, per_order=True, flag="softmax", what="the segment softmax rows"),
)
