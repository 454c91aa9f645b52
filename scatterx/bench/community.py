"""A built-in graph with community structure: a degree-corrected stochastic block model.

The other built-in graphs draw each edge's endpoints independently, so they have no locality: no partition can cut
them well, and a partitioner measured on them says nothing about real graphs (citation, co-purchase and social
graphs are mostly communities). Here every node belongs to one of ``communities`` blocks, its expected degree is
power-law (Zipf ranks, as the other graphs), and an edge from a node stays in its block with probability
``1 - mixing``; otherwise its target is any node. Node ids are in random order, so contiguous ranges of ids (the
even partition) still have no locality, and a locality partition (METIS) has something to find. Features carry a
per-block signal, labels depend on a node's features and its in-neighbours' (so message passing helps).
"""

from __future__ import annotations

import torch


def make_community_graph(
    nodes: int,
    edges: int,
    features: int,
    classes: int,
    communities: int,
    mixing: float,
    zipf_exponent: float,
    seed: int,
):
    """``(x, edge_index, y, train_mask)`` of a degree-corrected SBM: ``edge_index`` sorted by source, then target
    (repeated pairs kept, as the other built-in graphs keep them), about ``mixing`` of the edges between blocks."""
    g = torch.Generator().manual_seed(seed)
    n, e = nodes, edges
    block = torch.randint(0, communities, (n,), generator=g)
    weights = (torch.arange(1, n + 1, dtype=torch.float64) ** -zipf_exponent)[torch.randperm(n, generator=g)]
    source = torch.multinomial(weights, e, replacement=True, generator=g)
    target = torch.multinomial(weights, e, replacement=True, generator=g)  # the edges that leave their block
    stay = torch.rand(e, generator=g) >= mixing
    source_block = block[source]
    for b in range(communities):
        members = (block == b).nonzero().squeeze(1)
        picks = (stay & (source_block == b)).nonzero().squeeze(1)
        if members.numel() and picks.numel():
            target[picks] = members[torch.multinomial(weights[members], picks.numel(), replacement=True, generator=g)]
    order = torch.argsort(source * n + target)
    edge_index = torch.stack([source[order], target[order]])
    centroids = torch.randn(communities, features, generator=g)
    x = torch.randn(n, features, generator=g) + 0.5 * centroids[block]
    neighbours = torch.zeros_like(x).index_add_(0, edge_index[1], x[edge_index[0]])
    neighbours /= torch.bincount(edge_index[1], minlength=n).clamp(min=1).unsqueeze(1)
    y = ((x + neighbours) @ torch.randn(features, classes, generator=g)).argmax(1)
    train_mask = torch.rand(n, generator=g) < 0.54
    return x, edge_index, y, train_mask
