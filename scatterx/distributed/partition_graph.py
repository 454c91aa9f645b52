"""Which rank owns which node, chosen from the graph: ``even`` (contiguous ranges of the given ids) or ``metis``
(a locality partition: few edges between ranks), with the nodes renumbered so that each rank's nodes are one
contiguous range, as :class:`NodePartition` wants.

The cost a partition sets is the **halo**: the distinct remote sources of the edges into a rank's nodes, whose
rows the rank fetches at every layer (``ShardedGraph``). ``even`` on ids with no locality (a random graph, or ids
in no meaningful order) cuts about ``1 - 1/world`` of the edges, and at a few edges per node nearly every node
ends up in some rank's halo; METIS cuts the edges between communities only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

import torch

from .. import _metis
from .node_partition import NodePartition, _int

METHODS = ("even", "metis")
BALANCES = ("work", "nodes")


@dataclass
class GraphPartition:
    """A partition of a graph's nodes over ranks, in new node ids (what :func:`partition_graph` returns).

    Args:
        partition: the :class:`NodePartition` of the new ids (rank ``r`` owns ``partition.range(r)``).
        order: int64 ``(num_nodes,)``: ``order[new_id]`` is the node's id in the caller's numbering.
        method: ``"even"`` or ``"metis"``.

    Raises:
        TypeError: ``order`` is not an integer tensor.
        ValueError: ``order`` is not a permutation of ``range(partition.num_nodes)`` (a rank would own a node
            twice, another none).

    Example:
        >>> gp = GraphPartition(NodePartition([0, 1, 3]), torch.tensor([2, 0, 1]), "metis")
        >>> gp.new_ids()  # node 0 is now 1, node 1 is 2, node 2 is 0
        tensor([1, 2, 0])
        >>> gp.relabel(torch.tensor([[0, 1], [2, 2]]))
        tensor([[1, 2],
                [0, 0]])
    """

    partition: NodePartition
    order: torch.Tensor
    method: str

    def __post_init__(self) -> None:
        order, n = self.order, self.partition.num_nodes
        if not isinstance(order, torch.Tensor) or order.dtype.is_floating_point or order.dtype == torch.bool:
            raise TypeError(f"order must be an integer tensor, got {getattr(order, 'dtype', order)!r}")
        # (an id out of range lands on 0 or n: a count that is not 1 either way)
        counts = torch.bincount(order.to(torch.int64).clamp(0, n), minlength=n + 1) if order.dim() == 1 else None
        if order.shape != (n,) or counts is None or bool((counts[:n] != 1).any()):
            raise ValueError(f"order must be a permutation of range({n}) (the partition's nodes)")

    def new_ids(self) -> torch.Tensor:
        """int64 ``(num_nodes,)``: the new id of each of the caller's node ids (``order``'s inverse)."""
        inverse = torch.empty_like(self.order)
        inverse[self.order] = torch.arange(self.order.numel())
        return inverse

    def relabel(self, edge_index: torch.Tensor) -> torch.Tensor:
        """``edge_index`` (the caller's ids) in the new ids."""
        return self.new_ids()[edge_index]


def partition_graph(
    edge_index: torch.Tensor,
    num_nodes: int,
    world_size: int,
    method: str = "even",
    seed: int = 0,
    balance: str = "work",
) -> GraphPartition:
    """A partition of the nodes of a graph over ``world_size`` ranks.

    Args:
        edge_index: integer ``[2, E]``, node ids in ``[0, num_nodes)`` (directed edges; METIS sees them
            undirected, without self-loops).
        num_nodes: the number of nodes.
        world_size: the number of ranks (``>= 1``).
        method: ``"even"`` -- ranges of the given ids, sizes differing by at most one (``NodePartition.even``), the
            ids unchanged; or ``"metis"`` -- METIS's k-way partition (the ``pymetis`` package, the ``metis`` extra:
            ``pip install 'scatterx[metis]'``), its parts numbered in rank order and the nodes renumbered part by
            part (in their given order within a part).
        seed: METIS's random seed (the same seed, graph and world size give the same partition).
        balance: what METIS keeps equal across ranks: ``"work"`` (default) -- each node weighs 1 + its in-degree,
            its row and the edges into it, so the ranks' epochs take about as long; ``"nodes"`` -- node counts, which
            cuts fewer edges but, on a power-law graph, can leave one rank with several times another's edges
            (``docs/decisions/sharded-training.md``).

    Returns:
        A :class:`GraphPartition`.

    Raises:
        TypeError: ``edge_index`` is not an integer tensor; ``num_nodes`` or ``world_size`` not an int.
        ValueError: ``edge_index`` is not ``[2, E]``, ``world_size < 1``, ``num_nodes < 0``, or ``method`` or
            ``balance`` unknown.
        IndexError: an id is out of range.
        ImportError: ``method="metis"`` without ``pymetis`` installed.

    Example:
        >>> ring = torch.tensor([[0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0]])
        >>> partition_graph(ring, 6, 2).partition
        NodePartition([0, 3, 6])
    """
    num_nodes, world_size = _int(num_nodes, "num_nodes"), _int(world_size, "world_size")
    if num_nodes < 0 or world_size < 1:
        raise ValueError(f"need num_nodes >= 0 and world_size >= 1, got {num_nodes} and {world_size}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if balance not in BALANCES:
        raise ValueError(f"balance must be one of {', '.join(BALANCES)}, got {balance!r}")
    check_edge_index(edge_index, num_nodes)
    if method == "even" or world_size == 1 or num_nodes <= world_size:  # no choice for METIS to make
        return GraphPartition(
            NodePartition.even(num_nodes, world_size), torch.arange(num_nodes), method if world_size == 1 else "even"
        )
    membership = _membership(edge_index.to(torch.int64).cpu(), num_nodes, world_size, seed, balance == "work")
    order = torch.sort(membership, stable=True).indices
    counts = torch.bincount(membership, minlength=world_size).tolist()
    bounds = [0]
    for c in counts:
        bounds.append(bounds[-1] + c)
    return GraphPartition(NodePartition(bounds), order, method)


def check_edge_index(edge_index: torch.Tensor, num_nodes: int) -> None:
    """An integer ``[2, E]`` tensor of ids in ``[0, num_nodes)``: TypeError, ValueError or IndexError."""
    if not isinstance(edge_index, torch.Tensor) or edge_index.dtype.is_floating_point or edge_index.dtype == torch.bool:
        raise TypeError(f"edge_index must be an integer tensor, got {getattr(edge_index, 'dtype', edge_index)!r}")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must be [2, E], got shape {tuple(edge_index.shape)}")
    if edge_index.numel():
        low, high = (int(v) for v in torch.aminmax(edge_index))
        if low < 0 or high >= num_nodes:
            raise IndexError(f"edge_index holds {low if low < 0 else high}, out of range for {num_nodes} nodes")


def _membership(edge_index: torch.Tensor, num_nodes: int, parts: int, seed: int, by_work: bool) -> torch.Tensor:
    """Each node's rank by METIS (``scatterx/_metis.py``), on the graph made undirected."""
    source, target = edge_index
    rowptr, col, _ = _metis.undirected(source, target, num_nodes)
    # a node's work: its row, and the edges into it (a rank reduces its nodes' in-edges)
    weights = torch.bincount(target, minlength=num_nodes) + 1 if by_work else None
    return _metis.part_graph(rowptr, col, parts, "method='metis'", node_weight=weights, seed=seed)


@dataclass
class CutStats:
    """What a partition costs, as :func:`cut_stats` measures it.

    Args:
        num_edges: the graph's edges.
        edge_cut: the edges whose endpoints are on different ranks.
        halo: per rank, the distinct remote sources of the edges into its nodes (the rows it fetches per layer).
        nodes: per rank, the nodes it owns.
        edges: per rank, the edges into its nodes.

    Raises:
        : Nothing of its own (a plain record).

    Example:
        >>> s = CutStats(num_edges=4, edge_cut=1, halo=[1, 0], nodes=[2, 2], edges=[2, 2])
        >>> s.cut_fraction
        0.25
    """

    num_edges: int
    edge_cut: int
    halo: List[int]
    nodes: List[int]
    edges: List[int]

    @property
    def cut_fraction(self) -> float:
        """``edge_cut / num_edges`` (0 for a graph without edges)."""
        return self.edge_cut / self.num_edges if self.num_edges else 0.0


def cut_stats(edge_index: torch.Tensor, partition: NodePartition) -> CutStats:
    """The edge cut and halo sizes of ``partition`` for ``edge_index`` (in the partition's ids).

    Args:
        edge_index: integer ``[2, E]``, node ids in ``[0, partition.num_nodes)`` (the new ids of a
            :class:`GraphPartition`).
        partition: the :class:`NodePartition`.

    Returns:
        A :class:`CutStats`: ``edge_cut``, ``num_edges``, ``cut_fraction``, and per rank ``halo``, ``nodes``,
        ``edges``.

    Raises:
        IndexError: an id is out of range of the partition; TypeError: the ids are not integers.

    Example:
        >>> ring = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
        >>> s = cut_stats(ring, NodePartition([0, 2, 4]))
        >>> s.edge_cut, s.halo
        (2, [1, 1])
    """
    source_owner = partition.owner(edge_index[0])
    target_owner = partition.owner(edge_index[1])
    cut = source_owner != target_owner
    world = partition.world_size
    halo = []
    for r in range(world):
        into = cut & (target_owner == r)
        halo.append(int(torch.unique(edge_index[0][into]).numel()))
    edges = torch.bincount(target_owner, minlength=world).tolist()
    nodes = [partition.size(r) for r in range(world)]
    return CutStats(edge_index.size(1), int(cut.sum()), halo, nodes, edges)
