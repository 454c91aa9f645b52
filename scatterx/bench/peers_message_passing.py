"""The message-passing ops' peers (``peers.py`` has the scatter/segment ones): what PyG computes without scatterx's
fused kernels, each as ``(graph) -> zero-argument callable`` running forward and backward and returning the
gradients, flattened -- checked against each other, then timed, by ``harness``.
"""

from __future__ import annotations

import torch

import scatterx

from .peers import Peer

# ------------------------------------------------------------------------------------- weighted message passing
# GCN-style aggregation: each node sums its in-edges' source rows times the edge's weight. The node features are
# the graph's first ``num_nodes`` message rows, an edge's source a fixed random node. Builders take the graph and
# return a callable running forward and backward (upstream ``graph.grad_out``) and returning the gradients
# (node features, weights), or None.
WEIGHTED = "weighted sum"


def _weighted_inputs(graph):
    g = torch.Generator().manual_seed(1)
    n, e = graph.num_nodes, graph.num_edges
    sources = torch.randint(0, n, (e,), generator=g).to(graph.src.device)
    weight = torch.rand(e, generator=g, dtype=graph.src.dtype).to(graph.src.device)
    x = graph.src[:n].detach().clone()
    if x.size(0) < n:  # fewer edges than nodes: pad with zero rows
        x = torch.cat([x, x.new_zeros(n - x.size(0), x.size(1))])
    return x.requires_grad_(), sources, weight.requires_grad_()


def _weighted_call(x, weight, forward, grad_out):
    def run():
        x.grad = weight.grad = None
        forward().backward(grad_out)
        return torch.cat([x.grad.flatten(), weight.grad])

    return run


def _scatterx_weighted(graph):
    x, sources, weight = _weighted_inputs(graph)
    return _weighted_call(
        x, weight, lambda: scatterx.gather_segment_reduce(x, graph.ptr, sources, "sum", weight=weight), graph.grad_out
    )


def _pyg_weighted(graph):
    """PyG's GCNConv message passing without a fused kernel: gather the source rows, scale them, scatter-add."""
    x, sources, weight = _weighted_inputs(graph)
    targets = graph.index

    def forward():
        messages = x.index_select(0, sources) * weight.view(-1, 1)
        out = torch.zeros((graph.num_nodes, x.size(1)), dtype=x.dtype, device=x.device)
        return out.index_add_(0, targets, messages)

    return _weighted_call(x, weight, forward, graph.grad_out)


SCATTERX_WEIGHTED = Peer("scatterx.gather_segment_reduce (weight)", False, _scatterx_weighted)
PYG_WEIGHTED = Peer("PyG: index_select * weight, index_add_", True, _pyg_weighted)
WEIGHTED_IMPLEMENTATIONS = (SCATTERX_WEIGHTED, PYG_WEIGHTED)


# -------------------------------------------------------------------------------------------- GATv2 attention
# GATv2's logits per edge, ``att . leaky_relu(x_l[source] + x_r[target])`` per head, forward and backward
# (gradients of both ends' rows and of ``att``). The rows are the graph's first ``num_nodes`` message rows split
# into 4 heads (1 when the features do not divide), the sources as in the weighted rows. Builders take the graph
# and return a callable giving the three gradients, flattened, or None.
GATV2 = "gatv2 logits"


def _gatv2_inputs(graph):
    x, sources, _ = _weighted_inputs(graph)
    heads = 4 if x.size(1) % 4 == 0 else 1
    x_l = x.detach().view(x.size(0), heads, -1)
    x_r = (x_l * 0.5).flip(0).contiguous()
    att = torch.rand(x_l.shape[1:], generator=torch.Generator().manual_seed(2), dtype=x.dtype).to(x.device)
    grad_out = torch.ones((sources.numel(), heads), dtype=x.dtype, device=x.device)
    return [t.requires_grad_() for t in (x_l, x_r, att)], sources, grad_out


def _gatv2_call(leaves, forward, grad_out):
    def run():
        for t in leaves:
            t.grad = None
        forward().backward(grad_out)
        return torch.cat([t.grad.flatten() for t in leaves])

    return run


def _scatterx_gatv2(graph):
    (x_l, x_r, att), sources, grad_out = _gatv2_inputs(graph)
    return _gatv2_call((x_l, x_r, att), lambda: scatterx.gatv2_logits(graph.ptr, sources, x_l, x_r, att), grad_out)


def _pyg_gatv2(graph):
    """PyG's ``GATv2Conv.edge_update``: both ends gathered per edge, summed, activated, dotted with att."""
    (x_l, x_r, att), sources, grad_out = _gatv2_inputs(graph)
    targets = graph.index

    def forward():
        z = x_l.index_select(0, sources) + x_r.index_select(0, targets)
        return (torch.nn.functional.leaky_relu(z, 0.2) * att).sum(-1)

    return _gatv2_call((x_l, x_r, att), forward, grad_out)


SCATTERX_GATV2 = Peer("scatterx.gatv2_logits", False, _scatterx_gatv2)
PYG_GATV2 = Peer("PyG: index_select both ends, leaky_relu, att", True, _pyg_gatv2)
GATV2_IMPLEMENTATIONS = (SCATTERX_GATV2, PYG_GATV2)
