"""``ShardedGraph``: one rank's share of a graph -- the edges into the nodes it owns, renumbered locally, and the
plan that fetches the rows of the remote sources those edges name (the *halo*).

**Why the edges into the owned nodes** (and not out of them). By bytes the two choices tie: holding the edges
into its nodes, a rank fetches one row per distinct remote source (``halo_gather``) and pushes their gradients
back; holding the edges out of its nodes, it pushes one pre-reduced row per distinct remote target and pulls the
gradients -- on an undirected graph the same counts. What decides is what the layers need. With every edge into
a node on its owner, the whole reduction of a target runs on one rank: the local fused kernels (no
``edges x features`` tensor), GCN's in-degree normalisation and GAT's softmax over a target's edges are local,
and the sums run in the single-process order (the same bits). Held by source, every attention layer would need
three more exchanges (the softmax's max, its sum, and the weighted rows).

**The local numbering.** Owned node ``partition.range(rank)[0] + i`` is ``i``; halo node ``halo[k]`` (global ids,
sorted) is ``num_owned + k``. ``edge_index[0]`` (sources) is in ``[0, num_owned + num_halo)``, ``edge_index[1]``
(targets) in ``[0, num_owned)``, in the order the edges were given (so a target's edges keep their order).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Hashable, Optional, TypeVar

import torch

from .halo_gather import _HaloGather, halo_gather
from .node_partition import NodePartition
from .plan import ExchangePlan, agree, rank_and_world

_T = TypeVar("_T")

#: what a ShardedGraph says when code other than the sharded layers touches it (completed by scatterx.pyg)
UNSUPPORTED = (
    "a scatterx.distributed.ShardedGraph is not a tensor: pass it as the edge_index of the layers that "
    "run sharded with scatterx.pyg's switch on"
)


class ShardedGraph:
    """This rank's share of a graph: the edges into the nodes it owns, in local numbers, and the plan of its halo.

    Pass it in place of ``edge_index`` to the PyG layers that run sharded (``scatterx.pyg.SHARDED_CONVS``, with
    ``scatterx.pyg``'s switch on), together with the rows of the nodes this rank owns: each layer fetches the
    rows of the remote sources it needs (one exchange), runs the local fused kernels, and returns the rows of the
    owned nodes. Gradients flow back through the exchange.

    Building one is a collective (the halo plan): every rank of ``group`` builds its graph together, and bad input
    on any rank raises the same exception on every rank.

    Attributes: ``edge_index`` the local ``[2, E]`` edge list (see the module's numbering); ``halo`` the global
    ids of the remote sources, sorted; ``num_owned``, ``num_halo``; ``start`` the global id of owned node 0;
    ``plan`` the :class:`ExchangePlan` of ``halo``; ``partition``, ``group``, ``rank``, ``world``.

    Args:
        edge_index: int32 or int64 ``[2, E]``, global node ids: the edges into the nodes this rank owns (every
            target in ``partition.range(rank)``), in any order; the local edge list keeps that order.
        partition: the :class:`NodePartition` of the nodes over the ranks of ``group`` (the same on every rank).
        group: the ``torch.distributed`` process group; default the whole world.

    Raises:
        TypeError: ``partition`` is not a :class:`NodePartition`, ``edge_index`` is not an integer tensor.
        ValueError: ``edge_index`` is not ``[2, E]``, the partition's world size is not the group's, or the ranks'
            partitions differ.
        IndexError: a source id is out of range, or a target is not a node this rank owns.

    Example:
        >>> part = NodePartition.even(3, 1)  # one process owns all three nodes
        >>> graph = ShardedGraph(torch.tensor([[0, 1, 2], [1, 2, 0]]), part)
        >>> graph
        ShardedGraph(rank 0 of 1: 3 owned nodes, 3 edges, 0 halo nodes)
    """

    def __init__(
        self, edge_index: torch.Tensor, partition: NodePartition, group: Optional[torch.distributed.ProcessGroup] = None
    ):
        rank, world = rank_and_world(group)
        problem = _check_edges(edge_index, partition, rank, world)
        agree(problem, ("sharded graph", getattr(partition, "bounds", None)), group)
        self.partition, self.group, self.rank, self.world = partition, group, rank, world
        self.start, stop = partition.range(rank)
        self.num_owned = stop - self.start
        source, target = edge_index[0].to(torch.int64), edge_index[1].to(torch.int64)
        remote = (source < self.start) | (source >= stop)
        self.halo = torch.unique(source[remote], sorted=True)
        self.num_halo = self.halo.numel()
        local_source = source - self.start
        # a remote source's local number: num_owned + its position among the sorted halo ids
        local_source[remote] = self.num_owned + torch.searchsorted(self.halo, source[remote])
        self.edge_index = torch.stack([local_source, target - self.start])
        self.plan = ExchangePlan(self.halo, partition, group)
        self._cache: Dict[Hashable, Any] = {}  # cached(): values derived from this graph, by key

    @property
    def num_edges(self) -> int:
        """The number of edges this rank holds (into the nodes it owns)."""
        return self.edge_index.size(1)

    def with_halo(self, rows: torch.Tensor, checked: bool = False) -> torch.Tensor:
        """``rows`` (one per owned node, dim 0) followed by the rows of the halo nodes fetched from their owners: the
        source rows of the local edge list.

        A collective (every rank calls it together, for the same layer); differentiable. In one process there is
        no halo and ``rows`` is returned as is. ``checked=True`` skips the agreement on ``rows``' dtype and feature
        shape (one small message) for callers whose ranks agreed on them already: the sharded layers agree once
        per call on their input, from which every fetched tensor is computed."""
        if self.world == 1:
            return rows
        if not checked:
            return torch.cat([rows, halo_gather(rows, self.plan, partition=self.partition, group=self.group)])
        if rows.dim() == 0 or rows.size(0) != self.num_owned:
            raise ValueError(
                f"rows has {rows.size(0) if rows.dim() else 0} rows but rank {self.rank} owns {self.num_owned} nodes"
            )
        return torch.cat([rows, _HaloGather.apply(rows, self.plan)])

    def lower_bound_bytes(self, row_bytes: int) -> int:
        """The fewest bytes this rank receives to fetch one row of ``row_bytes`` bytes for every source it names:
        one row per halo node."""
        return self.num_halo * row_bytes

    def cached(self, key: Hashable, make: Callable[[], _T]) -> _T:
        """A value derived from this graph alone (e.g. its nodes' degrees), made once by ``make()``."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    # a ShardedGraph reaching code that treats it as a tensor: a clear error instead of a wrong result
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        raise TypeError(f"{UNSUPPORTED} (got {getattr(func, '__name__', func)}(...))")

    def __getattr__(self, name):
        if name.startswith("__") or name == "_cache":
            raise AttributeError(name)
        raise TypeError(f"{UNSUPPORTED} (asked for .{name})")

    def __getitem__(self, item):
        raise TypeError(f"{UNSUPPORTED} (indexed)")

    def __len__(self):
        raise TypeError(f"{UNSUPPORTED} (asked for its len())")

    def __repr__(self) -> str:
        return (
            f"ShardedGraph(rank {self.rank} of {self.world}: {self.num_owned} owned nodes, {self.num_edges} "
            f"edges, {self.num_halo} halo nodes)"
        )


def _check_edges(edge_index, partition, rank: int, world: int) -> Optional[Exception]:
    if not isinstance(partition, NodePartition):
        return TypeError(f"partition must be a scatterx.distributed.NodePartition, got {type(partition).__name__}")
    if partition.world_size != world:
        return ValueError(f"the partition has {partition.world_size} ranks but the process group has {world}")
    if not isinstance(edge_index, torch.Tensor) or edge_index.dtype not in (torch.int32, torch.int64):
        found = getattr(edge_index, "dtype", edge_index)
        return TypeError(f"edge_index must be an int32 or int64 tensor, got {found!r}")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        return ValueError(f"edge_index must be [2, E], got shape {tuple(edge_index.shape)}")
    if edge_index.size(1):
        start, stop = partition.range(rank)
        low, high = (int(v) for v in torch.aminmax(edge_index[0]))
        if low < 0 or high >= partition.num_nodes:
            bad = low if low < 0 else high
            return IndexError(
                f"edge_index[0] holds {bad}, out of range for the partition's {partition.num_nodes} nodes"
            )
        low, high = (int(v) for v in torch.aminmax(edge_index[1]))
        if low < start or high >= stop:
            bad = low if low < start else high
            return IndexError(
                f"edge_index[1] holds {bad}, a node rank {rank} does not own (it owns {start}..{stop - 1}"
                "): a rank holds the edges into its own nodes"
            )
    return None
