"""The embedded synthetic graph of ``scatterx bench``: edge messages ``src`` and their target nodes ``index``."""

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
