"""``gatv2_logits``' rows: GATv2's attention logits by scatterx's fused op and by PyG's formula on torch's ops, as
``(graph) -> zero-argument callable`` running forward and backward and returning the gradients, flattened --
checked against each other, then timed, by ``harness``."""

from __future__ import annotations

import torch

import scatterx

from . import Peer, Section, message_passing_inputs

# -------------------------------------------------------------------------------------------- GATv2 attention
# GATv2's logits per edge, ``att . leaky_relu(x_l[source] + x_r[target])`` per head, forward and backward
# (gradients of both ends' rows and of ``att``). The rows are the graph's first ``num_nodes`` message rows split
# into 4 heads (1 when the features do not divide), the sources as in the weighted rows. Builders take the graph
# and return a callable giving the three gradients, flattened, or None.
GATV2 = "gatv2 logits"


def _gatv2_inputs(graph):
    x, sources, _ = message_passing_inputs(graph)
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

SECTIONS = (
    Section(
        GATV2, GATV2_IMPLEMENTATIONS, per_order=False, flag="weighted", what="the GATv2 logits rows (forward+backward)"
    ),
)
