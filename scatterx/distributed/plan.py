"""The exchange pattern of a sharded scatter or gather, and the collectives that move rows along it.

A rank holds edges whose endpoint ids are global. ``ExchangePlan(index, partition)`` reduces the ids to the distinct
ones (``unique``, sorted, so they come grouped by owner), and tells every owner which of its nodes each rank names
(one ``all_to_all_single`` of counts, one of ids). Rows then move two ways along the plan:

- ``push``: one row per distinct id, from the rank that names it to its owner (a sharded scatter's partial
  aggregates; the gradient of a halo gather);
- ``pull``: the reverse, the owner's row for each id back to every rank that names it (a halo gather; the
  gradient of a sharded scatter).

Both are one ``all_to_all_single`` with variable splits, the rows sent as bytes (any dtype, gloo and NCCL alike).
A plan depends only on the ids and the partition: build it once for a static graph (``scatterx.distributed.plan``)
and reuse it every epoch.

**Errors agree.** A collective that one rank skips hangs the others. Every check that could fail on one rank only
(an id out of range, a row count that does not match the partition, a dtype or feature shape that differs between
ranks, a partition of the wrong world size) is gathered from all ranks first (``agree``), and every rank raises
the same exception, naming the rank that found it.
"""

from __future__ import annotations

import math
import pickle
from dataclasses import dataclass
from typing import List, Optional, Tuple

import torch
import torch.distributed as dist

from .node_partition import NodePartition

_ERRORS = {
    "IndexError": IndexError,
    "ValueError": ValueError,
    "TypeError": TypeError,
    "FileNotFoundError": FileNotFoundError,
}


def rank_and_world(group: Optional[torch.distributed.ProcessGroup] = None) -> Tuple[int, int]:
    """This process's rank and the number of ranks in ``group``, or ``(0, 1)`` in a single process.

    What the ops of this module use to decide which nodes this process owns: without an initialised
    ``torch.distributed`` process group, the process is rank 0 of 1 (it owns every node of a one-rank partition).

    Args:
        group: a ``torch.distributed`` process group; default (None) the whole world. Ignored when
            ``torch.distributed`` is not initialised.

    Returns:
        ``(rank, world_size)``, two ints.

    Raises:
        ValueError: ``torch.distributed`` is initialised and ``group`` is not a process group of it (torch's
            error).

    Example:
        >>> rank_and_world()  # torch.distributed not initialised: one process
        (0, 1)
    """
    if not (dist.is_available() and dist.is_initialized()):
        return 0, 1
    return dist.get_rank(group), dist.get_world_size(group)


def agree(
    problem: Optional[Exception], signature: object, group: Optional[torch.distributed.ProcessGroup] = None
) -> None:
    """Raise on every rank if any rank found a ``problem``, or if the ranks' ``signature``s (what must match
    across ranks: dtypes, feature shapes, the partition) differ. Costs one small ``all_gather_object``."""
    rank, world = rank_and_world(group)
    if world == 1:
        if problem is not None:
            raise type(problem)(f"rank {rank}: {problem}")
        return
    mine = (None if problem is None else (type(problem).__name__, str(problem)), signature)
    STATS.control_bytes += len(pickle.dumps(mine)) * (world - 1)
    everyone: List = [None] * world
    dist.all_gather_object(everyone, mine, group=group)
    for r, (found, _) in enumerate(everyone):
        if found is not None:
            kind, message = found
            raise _ERRORS.get(kind, RuntimeError)(f"rank {r}: {message}")
    first = everyone[0][1]
    for r, (_, theirs) in enumerate(everyone):
        if theirs != first:
            raise ValueError(f"the ranks disagree: rank 0 has {first}, rank {r} has {theirs}")


def exchange(
    rows: torch.Tensor,
    send_counts: List[int],
    recv_counts: List[int],
    group: Optional[torch.distributed.ProcessGroup] = None,
) -> torch.Tensor:
    """``all_to_all_single`` of ``rows`` (dim 0 split by ``send_counts``, in rank order): the rows every rank sent
    this one, in rank order. Moved as bytes, so every dtype travels on every backend."""
    _, world = rank_and_world(group)
    rows = rows.contiguous()
    inner = rows.shape[1:]
    received = rows.new_empty((sum(recv_counts), *inner))
    if world == 1:
        return received.copy_(rows)
    width = math.prod(inner)
    if width == 0:
        return received  # rows of no bytes: every rank has the same feature shape (agreed), so all skip
    send = rows.reshape(rows.size(0), width).view(torch.uint8)
    recv = received.reshape(received.size(0), width).view(torch.uint8)
    dist.all_to_all_single(recv, send, recv_counts, send_counts, group=group)
    return received


@dataclass
class Stats:
    """What this process has sent to other ranks: row bytes through ``push``/``pull`` (a rank's rows to itself do
    not count), the number of those exchanges, and the (pickled) agreement messages of ``agree``, about
    ``all_gather_object``'s payload. ``scatterx bench-dist`` reads and resets it."""

    bytes_sent: int = 0
    exchanges: int = 0
    control_bytes: int = 0

    def reset(self) -> None:
        self.bytes_sent = self.exchanges = self.control_bytes = 0


#: this process's traffic counters (the public description is above ``scatterx.distributed.STATS``)
STATS = Stats()


class ExchangePlan:
    """The exchange pattern of ``index`` (the global node ids this rank's edges name) under ``partition``.

    Built by :func:`plan` (the same as ``ExchangePlan(index, partition, group)``) and passed to
    :func:`index_scatter_reduce` or :func:`halo_gather` in place of ``index``: a static graph computes its exchange
    pattern once and reuses it every epoch. A plan depends only on the ids and the partition, not on the rows moved
    along it. Building one is a collective: every rank of ``group`` builds its plan together (three small
    ``all_to_all_single`` exchanges and one agreement message; none in a single process), and bad input on any rank
    raises the same exception on every rank, naming the rank that found it.

    The ids are reduced to the distinct ones, sorted (so they come grouped by owner), and every owner learns
    which of its nodes each rank names. Attributes: ``ids`` the distinct ids; ``inverse`` the position of each
    entry of ``index`` in ``ids``; ``send_counts`` how many of ``ids`` each rank owns; ``recv_counts`` how many of
    this rank's nodes each rank names; ``local`` those nodes (offsets into this rank's range), in rank order;
    ``order`` / ``local_sorted`` a stable sort of ``local`` (so that combining what arrives is a sorted,
    deterministic segment reduction); ``degree`` the number of entries of all ranks' ``index`` naming each owned
    node; ``distinct`` whether ``index`` is sorted with no repeats (``inverse`` the identity); ``partition``,
    ``group``, ``rank``, ``world``.

    Args:
        index: int32 or int64 ``(E,)``, global node ids in ``[0, partition.num_nodes)``, in any order, repeats
            allowed.
        partition: the :class:`NodePartition` of the nodes over the ranks of ``group`` (the same on every rank).
        group: the ``torch.distributed`` process group; default the whole world (one process when
            ``torch.distributed`` is not initialised).

    Raises:
        TypeError: ``partition`` is not a :class:`NodePartition`, ``index`` is not a tensor or not int32/int64.
        ValueError: ``index`` is not 1-D, ``partition.world_size`` is not the group's size, or the ranks' partitions
            differ.
        IndexError: an id is negative or not below ``partition.num_nodes``.

    Example:
        >>> part = NodePartition.even(5, 1)
        >>> p = ExchangePlan(torch.tensor([4, 0, 4]), part)
        >>> p
        ExchangePlan(rank 0 of 1: 3 entries, 2 distinct ids, send [2], receive [2])
        >>> p.ids, p.inverse, p.degree
        (tensor([0, 4]), tensor([1, 0, 1]), tensor([1, 0, 0, 0, 2]))
    """

    def __init__(
        self, index: torch.Tensor, partition: NodePartition, group: Optional[torch.distributed.ProcessGroup] = None
    ):
        rank, world = rank_and_world(group)
        problem = _check_index(index, partition, world)
        agree(problem, ("plan", getattr(partition, "bounds", None)), group)
        self.partition, self.group, self.rank, self.world = partition, group, rank, world
        self.num_entries = index.numel()
        self.index_sorted = bool(index.numel() < 2 or bool((index[1:] >= index[:-1]).all()))
        self.ids, self.inverse = torch.unique(index.to(torch.int64), sorted=True, return_inverse=True)
        # sorted distinct ids (a ShardedGraph's halo): inverse is the identity, and the ops skip it
        self.distinct = self.index_sorted and self.ids.numel() == self.num_entries
        owners = partition.owner_unchecked(self.ids)
        send = torch.bincount(owners, minlength=world).to(torch.int64)  # on index's device, as NCCL needs
        recv = torch.empty_like(send)
        if world == 1:
            recv.copy_(send)
        else:
            dist.all_to_all_single(recv, send, group=group)
        self.send_counts: List[int] = send.tolist()
        self.recv_counts: List[int] = recv.tolist()
        start, stop = partition.range(rank)
        self.num_owned = stop - start
        requested = self._move(self.ids, self.send_counts, self.recv_counts, count=False)
        self.local = requested - start
        self.local_sorted, self.order = torch.sort(self.local, stable=True)
        # entries per id here, pushed to the owners and summed: the degree of each owned node over all ranks
        per_id = torch.bincount(self.inverse, minlength=self.ids.numel()).to(torch.int64)
        arrived = self._move(per_id, self.send_counts, self.recv_counts, count=False)
        self.degree = torch.zeros(self.num_owned, dtype=torch.int64, device=index.device).index_add_(
            0, self.local, arrived
        )

    def _move(self, rows, send_counts, recv_counts, count=True):
        out = exchange(rows, send_counts, recv_counts, self.group)
        if count:
            remote = sum(c for r, c in enumerate(send_counts) if r != self.rank)
            STATS.bytes_sent += remote * math.prod(rows.shape[1:]) * rows.element_size()
            STATS.exchanges += 1
        return out

    def push(self, rows: torch.Tensor) -> torch.Tensor:
        """Send one row per id (``rows``: ``(len(ids), *F)``, in ``ids`` order) to the id's owner; a collective.

        Returns:
            The rows other ranks (and this one) sent this rank: one per entry of ``local``, in that order.
        """
        return self._move(rows, self.send_counts, self.recv_counts)

    def pull(self, owned_rows: torch.Tensor) -> torch.Tensor:
        """Send the owner's rows (``owned_rows``: one per entry of ``local``, in that order) back to the ranks
        that named them; a collective.

        Returns:
            One row per id, in ``ids`` order.
        """
        return self._move(owned_rows, self.recv_counts, self.send_counts)

    def bytes_lower_bound(self, row_bytes: int) -> int:
        """The fewest bytes this rank must send for one :meth:`push` of rows of ``row_bytes`` bytes: one row per
        distinct id owned by another rank."""
        return sum(c for r, c in enumerate(self.send_counts) if r != self.rank) * row_bytes

    def __repr__(self) -> str:
        return (
            f"ExchangePlan(rank {self.rank} of {self.world}: {self.num_entries} entries, "
            f"{self.ids.numel()} distinct ids, send {self.send_counts}, receive {self.recv_counts})"
        )


def _check_index(index, partition: NodePartition, world: int) -> Optional[Exception]:
    """What is wrong with ``index`` and ``partition`` on this rank, or None (read, not raised: see ``agree``)."""
    if not isinstance(partition, NodePartition):
        return TypeError(f"partition must be a scatterx.distributed.NodePartition, got {type(partition).__name__}")
    if partition.world_size != world:
        return ValueError(f"the partition has {partition.world_size} ranks but the process group has {world}")
    if not isinstance(index, torch.Tensor):
        return TypeError(f"index must be a torch.Tensor, got {type(index).__name__}")
    if index.dtype not in (torch.int32, torch.int64):
        return TypeError(f"index must be int32 or int64, got {index.dtype}")
    if index.dim() != 1:
        return ValueError(f"index must be 1-D, got shape {tuple(index.shape)}")
    if index.numel():
        low, high = (int(v) for v in torch.aminmax(index))
        if low < 0 or high >= partition.num_nodes:
            bad = low if low < 0 else high
            return IndexError(f"index holds {bad}, out of range for the partition's {partition.num_nodes} nodes")
    return None


def plan(
    index: torch.Tensor, partition: NodePartition, group: Optional[torch.distributed.ProcessGroup] = None
) -> ExchangePlan:
    """The exchange pattern of ``index`` under ``partition``, for :func:`index_scatter_reduce` and
    :func:`halo_gather` to reuse.

    Pass the plan in place of ``index``: for a static graph, the exchange pattern is computed once rather than on
    every call. A collective: every rank of ``group`` calls it together, and bad input on any rank raises the same
    exception on every rank, naming the rank that found it.

    Args:
        index: int32 or int64 ``(E,)``, the global node ids this rank's edges name, in ``[0, partition.num_nodes)``.
        partition: the :class:`NodePartition` of the nodes over the ranks of ``group`` (the same on every rank).
        group: the ``torch.distributed`` process group; default the whole world (one process when
            ``torch.distributed`` is not initialised).

    Returns:
        A new :class:`ExchangePlan`.

    Raises:
        TypeError: ``partition`` is not a :class:`NodePartition`, ``index`` is not a tensor or not int32/int64.
        ValueError: ``index`` is not 1-D, ``partition.world_size`` is not the group's size, or the ranks' partitions
            differ.
        IndexError: an id is negative or not below ``partition.num_nodes``.

    Example:
        >>> part = NodePartition.even(5, 1)
        >>> index = torch.tensor([4, 0, 4])
        >>> p = plan(index, part)
        >>> src = torch.tensor([[1.0], [2.0], [3.0]])
        >>> index_scatter_reduce(p, src, "sum", partition=part)
        tensor([[2.],
                [0.],
                [0.],
                [0.],
                [4.]])
        >>> halo_gather(torch.arange(5.0), p, partition=part)  # x[index]
        tensor([4., 0., 4.])
    """
    return ExchangePlan(index, partition, group)
