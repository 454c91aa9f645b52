"""The graphs of ``scatterx bench-gnn --mini-batch``, built in code: an ogbn-products-shaped graph (2,449,029 nodes,
61,859,140 directed edges, 100 features, 47 classes, 8% of the nodes for training) at full size or any other, and
a heterogeneous graph shaped like a slice of ogbn-mag (papers, authors, institutions) scaled to it.

Built in a few seconds and a few GB at full size: no Python loop over nodes or edges and no sort of the edges.
Each edge type is drawn in CSC order (grouped by target): the targets are an exact power-law degree sequence
(Zipf ranks at random node ids, ``repeat_interleave``), and each edge's source is drawn from a power law of the
same exponent by inverting its distribution function, rank to node id by a multiplicative hash (a bijection, so
the hubs land at scattered ids without a gather through a permutation table). The labels depend on a node's
features and on the mean of its in-neighbours' (a low-rank projection of them, reduced by scatterx's
``gather_segment_reduce`` over the CSC), so that message passing helps. Seeded: the same config gives the same
graph.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Tuple

import torch
from torch import Tensor

from ...ops import gather_segment_reduce

#: ogbn-products' shape; the fraction of its nodes in the training split (196,615)
PRODUCTS = dict(nodes=2_449_029, edges=61_859_140, features=100, classes=47)
PRODUCTS_TRAIN = 196_615 / 2_449_029
#: degrees ~ rank**-EXPONENT: at the products shape, in-degrees from 13 to ~20k (ogbn-products' largest: 17,481)
EXPONENT = 0.5
#: ogbn-mag's papers, authors and institutions and its writes / cites / affiliated_with edges, at the products
#: graph's node count; a smaller homogeneous graph scales it down
MAG = dict(paper=736_389, author=1_134_649, institution=8_740)
MAG_EDGES = {
    ("author", "writes", "paper"): 7_145_660,
    ("paper", "cites", "paper"): 5_416_271,
    ("author", "affiliated_with", "institution"): 1_043_998,
    ("institution", "employs", "author"): 1_043_998,  # affiliated_with reversed: the authors' messages
}
#: the low-rank neighbour signal in the labels: this many directions of the features
SIGNAL_RANK = 4


def degree_sequence(num_nodes: int, num_edges: int, g: torch.Generator) -> Tensor:
    """Degrees summing to ``num_edges``, ``~ rank**-EXPONENT``, ranks at random node ids."""
    weights = torch.arange(1, num_nodes + 1, dtype=torch.float64).pow_(-EXPONENT)
    weights *= num_edges / float(weights.sum())
    degrees = weights.floor_().to(torch.int64)
    degrees[: num_edges - int(degrees.sum())] += 1  # the rounding's remainder, to the largest
    return degrees[torch.randperm(num_nodes, generator=g)]


def power_law_sources(num_nodes: int, num_edges: int, g: torch.Generator) -> Tensor:
    """``num_edges`` node ids drawn with probability ``~ rank**-EXPONENT``: the inverse of a continuous power law's
    distribution function, then rank -> node by ``(rank * a + b) % num_nodes`` (``a`` coprime to it)."""
    b = 1.0 - EXPONENT
    u = torch.rand(num_edges, generator=g)
    ranks = u.mul_((num_nodes + 1) ** b - 1).add_(1).pow_(1 / b).sub_(1).to(torch.int64).clamp_(0, num_nodes - 1)
    del u
    a = int(torch.randint(max(1, num_nodes // 3), max(2, num_nodes), (1,), generator=g))
    while math.gcd(a, num_nodes) != 1:
        a += 1
    shift = int(torch.randint(0, max(1, num_nodes), (1,), generator=g))
    return ranks.mul_(a).add_(shift).remainder_(max(1, num_nodes))


def csc_edges(num_sources: int, num_targets: int, num_edges: int, g: torch.Generator) -> Tuple[Tensor, Tensor]:
    """``(edge_index, ptr)``: power-law edges grouped by target (``edge_index[1]`` non-decreasing) and the CSR
    offsets of the targets."""
    degrees = degree_sequence(num_targets, num_edges, g)
    edge_index = torch.empty(2, num_edges, dtype=torch.int64)
    edge_index[1] = torch.repeat_interleave(torch.arange(num_targets), degrees)
    edge_index[0] = power_law_sources(num_sources, num_edges, g)
    ptr = torch.zeros(num_targets + 1, dtype=torch.int64)
    torch.cumsum(degrees, 0, out=ptr[1:])
    return edge_index, ptr


def labels(x: Tensor, neighbours: Tensor, classes: int, g: torch.Generator) -> Tensor:
    """A class per node from its features and its in-neighbours' mean signal (``neighbours``)."""
    own = torch.randn(x.size(1), classes, generator=g)
    theirs = torch.randn(neighbours.size(1), classes, generator=g) * 3
    return torch.addmm(neighbours @ theirs, x, own).argmax(1)


def neighbour_signal(x: Tensor, edge_index: Tensor, ptr: Tensor, g: torch.Generator) -> Tensor:
    """The mean over each node's in-edges of a random ``SIGNAL_RANK``-dimensional projection of the sources'
    features."""
    signal = x @ torch.randn(x.size(1), SIGNAL_RANK, generator=g)
    return gather_segment_reduce(signal, ptr, edge_index[0], "mean")


@dataclass
class Graph:
    """A homogeneous graph: features, edges (``[2, E]``), labels, the training nodes."""

    x: Tensor
    edge_index: Tensor
    y: Tensor
    train_nodes: Tensor

    def describe(self) -> str:
        n, e = self.x.size(0), self.edge_index.size(1)
        in_deg = torch.bincount(self.edge_index[1], minlength=n)
        return (
            f"{n:,} nodes, {e:,} edges, {self.x.size(1)} features, {int(self.y.max()) + 1} classes, "
            f"{self.train_nodes.numel():,} training nodes; in-degree max {int(in_deg.max()):,}, mean {e / n:.1f}"
        )


def make_products_like(nodes: int, edges: int, features: int, classes: int, seed: int = 0) -> Graph:
    """The products-shaped graph at ``nodes`` x ``edges``, its edges grouped by target (CSC order)."""
    g = torch.Generator().manual_seed(seed)
    edge_index, ptr = csc_edges(nodes, nodes, edges, g)
    x = torch.randn(nodes, features, generator=g)
    y = labels(x, neighbour_signal(x, edge_index, ptr, g), classes, g)
    train = torch.randperm(nodes, generator=g)[: max(1, round(nodes * PRODUCTS_TRAIN))].sort().values
    return Graph(x, edge_index, y, train)


@dataclass
class HeteroGraph:
    """A heterogeneous graph: features per node type, edges per edge type, labels and training ids of the
    papers."""

    x: Dict[str, Tensor]
    edge_index: Dict[Tuple[str, str, str], Tensor]
    y: Tensor  # the papers'
    train_nodes: Tensor  # papers

    def describe(self) -> str:
        nodes = ", ".join(f"{x.size(0):,} {t}s" for t, x in self.x.items())
        edges = ", ".join(f"{e.size(1):,} {k[1]}" for k, e in self.edge_index.items())
        return f"{nodes}; {edges}; {self.train_nodes.numel():,} training papers"

    def to_pyg(self):
        from torch_geometric.data import HeteroData

        data = HeteroData()
        for node_type, x in self.x.items():
            data[node_type].x = x
        for edge_type, edge_index in self.edge_index.items():
            data[edge_type].edge_index = edge_index
        data["paper"].y = self.y
        return data


def make_mag_like(nodes: int, features: int, classes: int, seed: int = 0) -> HeteroGraph:
    """ogbn-mag's papers, authors and institutions and four edge types, scaled by ``nodes`` / the products
    graph's node count (at least a few nodes a type); features of every type, labels on the papers."""
    scale = nodes / PRODUCTS["nodes"]
    g = torch.Generator().manual_seed(seed + 1)
    counts = {t: max(8, round(n * scale)) for t, n in MAG.items()}
    x = {t: torch.randn(n, features, generator=g) for t, n in counts.items()}
    edge_index = {}
    ptrs = {}
    for (src, rel, dst), e in MAG_EDGES.items():
        edge_index[(src, rel, dst)], ptrs[rel] = csc_edges(counts[src], counts[dst], max(16, round(e * scale)), g)
    writes = edge_index[("author", "writes", "paper")]
    y = labels(x["paper"], neighbour_signal(x["author"], writes, ptrs["writes"], g), classes, g)
    papers = counts["paper"]
    train = torch.randperm(papers, generator=g)[: max(1, round(papers * PRODUCTS_TRAIN))].sort().values
    return HeteroGraph(x, edge_index, y, train)
