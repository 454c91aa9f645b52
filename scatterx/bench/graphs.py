"""The benches' built-in graphs, built in code from a seed:

- ``make_graph``: the embedded graph of ``scatterx bench`` and its grid, edge messages ``src`` and their target nodes
  ``index``, power-law (or uniform) in-degrees with no locality;
- ``make_community_graph``: a graph with community structure, for the GNN benches and the partitioners (below).

(The mini-batch bench's ogbn-products and ogbn-mag shapes are its own: ``gnn/minibatch_graphs.py``.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

# Zipf exponent of the power-law in-degrees: node of rank k receives edges with probability ~ k**-ZIPF_EXPONENT.
# 0.8 gives a degree distribution P(d) ~ d**-2.25 (within the 2..3 seen in real graphs); at the default shape the
# largest node receives ~2% of all edges, the median a handful.
ZIPF_EXPONENT = 0.8


@dataclass
class Graph:
    num_nodes: int
    index: torch.Tensor  # target node of each edge, sorted (non-decreasing)
    src: torch.Tensor  # one message row per edge, in the order of ``index``
    ptr: torch.Tensor  # CSR offsets of ``index`` (num_nodes + 1)
    shuffled_index: torch.Tensor  # the same edges in a random order
    shuffled_src: torch.Tensor
    # an upstream gradient for the output (forward + backward rows); None where the dtype is not floating point
    grad_out: Optional[torch.Tensor]

    def to(self, device) -> Graph:
        """The same graph with every tensor on ``device``."""
        return Graph(
            self.num_nodes,
            self.index.to(device),
            self.src.to(device),
            self.ptr.to(device),
            self.shuffled_index.to(device),
            self.shuffled_src.to(device),
            None if self.grad_out is None else self.grad_out.to(device),
        )

    @property
    def num_edges(self) -> int:
        return self.index.numel()

    def describe(self) -> str:
        degrees = self.ptr[1:] - self.ptr[:-1]
        return (
            f"{self.num_edges:,} edges -> {self.num_nodes:,} nodes, {self.src.size(1)} features, {self.src.dtype}; "
            f"in-degree max {int(degrees.max()):,}, mean {self.num_edges / max(self.num_nodes, 1):.1f}, "
            f"empty nodes {int((degrees == 0).sum()):,}"
        )


def make_graph(
    num_edges: int = 1_000_000,
    num_nodes: int = 100_000,
    num_features: int = 64,
    dtype: torch.dtype = torch.float32,
    degrees: str = "powerlaw",
    seed: int = 0,
) -> Graph:
    """A random graph with ``degrees`` ``"powerlaw"`` (Zipf, hubs at random node ids) or ``"uniform"``."""
    g = torch.Generator().manual_seed(seed)
    index = target_index(num_edges, num_nodes, degrees, g)
    src = _values((num_edges, num_features), dtype, g)
    counts = torch.bincount(index, minlength=num_nodes)
    ptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    order = torch.randperm(num_edges, generator=g)
    grad_out = _values((num_nodes, num_features), dtype, g) if dtype.is_floating_point else None
    return Graph(num_nodes, index, src, ptr, index[order], src[order], grad_out)


def target_index(num_edges: int, num_nodes: int, degrees: str, g: torch.Generator) -> torch.Tensor:
    """The sorted target node of each edge of ``make_graph``'s graph (drawn from ``g``)."""
    if degrees == "powerlaw":
        weights = torch.arange(1, num_nodes + 1, dtype=torch.float64) ** -ZIPF_EXPONENT
        rank_to_node = torch.randperm(num_nodes, generator=g)
        index = rank_to_node[torch.multinomial(weights, num_edges, replacement=True, generator=g)]
    elif degrees == "uniform":
        index = torch.randint(0, num_nodes, (num_edges,), generator=g)
    else:
        raise ValueError(f"degrees must be 'powerlaw' or 'uniform', got {degrees!r}")
    return index.sort().values


def _values(shape, dtype, g):
    if dtype.is_floating_point:
        # around 1 in magnitude, so that long products neither overflow nor sink into denormals
        sign = torch.randint(0, 2, shape, generator=g, dtype=torch.float32) * 2 - 1
        return (sign * torch.empty(shape).uniform_(0.9, 1.1, generator=g)).to(dtype)
    return torch.randint(-100, 101, shape, generator=g).to(dtype)


# ---------------------------------------------------------------------------- a graph with communities
# A built-in graph with community structure: a degree-corrected stochastic block model.
#
# The other built-in graphs draw each edge's endpoints independently, so they have no locality: no partition can cut
# them well, and a partitioner measured on them says nothing about real graphs (citation, co-purchase and social
# graphs are mostly communities). Here every node belongs to one of ``communities`` blocks, its expected degree is
# power-law (Zipf ranks, as the other graphs), and an edge from a node stays in its block with probability
# ``1 - mixing``; otherwise its target is any node. Node ids are in random order, so contiguous ranges of ids (the
# even partition) still have no locality, and a locality partition (METIS) has something to find. Features carry a
# per-block signal, labels depend on a node's features and its in-neighbours' (so message passing helps).
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
