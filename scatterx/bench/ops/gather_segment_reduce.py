"""``gather_segment_reduce``'s rows (its weighted form): what PyG computes for a GCN-style aggregation without
scatterx's fused kernel, as ``(graph) -> zero-argument callable`` running forward and backward and returning the
gradients, flattened -- checked against each other, then timed, by ``harness``."""

from __future__ import annotations

import torch

import scatterx

from . import Peer, Section, message_passing_inputs

# ------------------------------------------------------------------------------------- weighted message passing
# GCN-style aggregation: each node sums its in-edges' source rows times the edge's weight. The node features are
# the graph's first ``num_nodes`` message rows, an edge's source a fixed random node. Builders take the graph and
# return a callable running forward and backward (upstream ``graph.grad_out``) and returning the gradients
# (node features, weights), or None.
WEIGHTED = "weighted sum"


def _weighted_call(x, weight, forward, grad_out):
    def run():
        x.grad = weight.grad = None
        forward().backward(grad_out)
        return torch.cat([x.grad.flatten(), weight.grad])

    return run


def _scatterx_weighted(graph):
    x, sources, weight = message_passing_inputs(graph)
    return _weighted_call(
        x, weight, lambda: scatterx.gather_segment_reduce(x, graph.ptr, sources, "sum", weight=weight), graph.grad_out
    )


def _pyg_weighted(graph):
    """PyG's GCNConv message passing without a fused kernel: gather the source rows, scale them, scatter-add."""
    x, sources, weight = message_passing_inputs(graph)
    targets = graph.index

    def forward():
        messages = x.index_select(0, sources) * weight.view(-1, 1)
        out = torch.zeros((graph.num_nodes, x.size(1)), dtype=x.dtype, device=x.device)
        return out.index_add_(0, targets, messages)

    return _weighted_call(x, weight, forward, graph.grad_out)


SCATTERX_WEIGHTED = Peer("scatterx.gather_segment_reduce (weight)", False, _scatterx_weighted)
PYG_WEIGHTED = Peer("PyG: index_select * weight, index_add_", True, _pyg_weighted)
WEIGHTED_IMPLEMENTATIONS = (SCATTERX_WEIGHTED, PYG_WEIGHTED)

SECTIONS = (
    Section(
        WEIGHTED,
        WEIGHTED_IMPLEMENTATIONS,
        per_order=False,
        flag="weighted",
        what="the weighted gather-segment sum rows (forward+backward)",
    ),
)
