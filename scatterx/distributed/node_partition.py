"""``NodePartition``: which rank owns which nodes -- contiguous ranges of node ids, one per rank."""

from __future__ import annotations

import operator
from typing import Sequence, Tuple, Union, overload

import torch


def _int(value, name=None) -> int:
    """``value`` as an int: an int, or an integer scalar (NumPy, a 0-d tensor), not a bool, float or string."""
    if isinstance(value, bool):
        raise TypeError(f"{name or 'a bound'} must be an int, got a bool")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name or 'a bound'} must be an int, got {type(value).__name__}") from None


class NodePartition:
    """Which rank owns which nodes: nodes ``0..num_nodes`` split into ``world_size`` contiguous ranges of ids.

    Rank ``r`` owns the nodes ``bounds[r]:bounds[r + 1]`` (a range may be empty). Every rank builds the same
    partition; :meth:`even` makes ranges of equal sizes, ``NodePartition(bounds)`` any others (e.g. to balance the
    edges). Partitions with the same bounds are equal.

    Args:
        bounds: ``world_size + 1`` non-decreasing ints, from 0 to the number of nodes (a sequence, or a 1-D
            integer tensor).

    Raises:
        TypeError: ``bounds`` is not a sequence of ints or a 1-D integer tensor.
        ValueError: ``bounds`` has fewer than 2 entries, does not start at 0, or decreases.

    Example:
        >>> part = NodePartition.even(10, 3)
        >>> part
        NodePartition([0, 4, 7, 10])
        >>> part.world_size, part.num_nodes, part.range(1), part.size(2)
        (3, 10, (4, 7), 3)
        >>> part.owner(torch.tensor([0, 4, 9]))
        tensor([0, 1, 2])
        >>> NodePartition([0, 0, 6]).range(0)  # rank 0 owns no node
        (0, 0)
    """

    def __init__(self, bounds: Union[Sequence[int], torch.Tensor]):
        if isinstance(bounds, torch.Tensor):
            if bounds.dim() != 1 or bounds.dtype.is_floating_point or bounds.dtype == torch.bool:
                raise TypeError(f"bounds must be a 1-D integer tensor or a sequence of ints, got {bounds!r}")
            bounds = bounds.tolist()
        try:
            values = tuple(_int(b) for b in bounds)
        except TypeError:
            raise TypeError(f"bounds must be a sequence of ints, got {bounds!r}") from None
        if len(values) < 2:
            raise ValueError(f"bounds needs world_size + 1 >= 2 entries, got {list(values)}")
        if values[0] != 0:
            raise ValueError(f"bounds must start at 0 (every node owned), got {list(values)}")
        if any(b > c for b, c in zip(values, values[1:])):
            raise ValueError(f"bounds must be non-decreasing, got {list(values)}")
        self.bounds: Tuple[int, ...] = values
        self._bounds_tensor = torch.tensor(values, dtype=torch.int64)

    @classmethod
    def even(cls, num_nodes: int, world_size: int) -> NodePartition:
        """Ranges whose sizes differ by at most one, the larger ones first.

        Args:
            num_nodes: the number of nodes (``>= 0``).
            world_size: the number of ranks (``>= 1``); ranks beyond ``num_nodes`` own no node.

        Returns:
            A new ``NodePartition``.

        Raises:
            TypeError: ``num_nodes`` or ``world_size`` is not an int.
            ValueError: ``num_nodes`` is negative or ``world_size`` is below 1.

        Example:
            >>> NodePartition.even(10, 4)
            NodePartition([0, 3, 6, 8, 10])
            >>> NodePartition.even(2, 3)
            NodePartition([0, 1, 2, 2])
        """
        num_nodes, world_size = _int(num_nodes, "num_nodes"), _int(world_size, "world_size")
        if num_nodes < 0:
            raise ValueError(f"num_nodes must be >= 0, got {num_nodes}")
        if world_size < 1:
            raise ValueError(f"world_size must be >= 1, got {world_size}")
        base, extra = divmod(num_nodes, world_size)
        bounds = [0]
        for r in range(world_size):
            bounds.append(bounds[-1] + base + (1 if r < extra else 0))
        return cls(bounds)

    @property
    def world_size(self) -> int:
        """The number of ranks."""
        return len(self.bounds) - 1

    @property
    def num_nodes(self) -> int:
        """The number of nodes, over all ranks."""
        return self.bounds[-1]

    def range(self, rank: int) -> Tuple[int, int]:
        """``(start, stop)``: the node ids ``rank`` owns are ``start <= id < stop``; IndexError for a rank out of
        range."""
        if not 0 <= rank < self.world_size:
            raise IndexError(f"rank {rank} is out of range for a partition of {self.world_size} ranks")
        return self.bounds[rank], self.bounds[rank + 1]

    def size(self, rank: int) -> int:
        """How many nodes ``rank`` owns (the rows of its ``x_local``); IndexError for a rank out of range."""
        start, stop = self.range(rank)
        return stop - start

    @overload
    def owner(self, node_ids: int) -> int: ...

    @overload
    def owner(self, node_ids: Union[torch.Tensor, Sequence[int]]) -> torch.Tensor: ...

    def owner(self, node_ids: Union[int, torch.Tensor, Sequence[int]]) -> Union[int, torch.Tensor]:
        """The rank owning each node id: an int for an int, an int64 tensor for a tensor (or a list) of ids.

        Ids must be in ``[0, num_nodes)``: IndexError otherwise; TypeError for ids that are not integers."""
        if isinstance(node_ids, int) and not isinstance(node_ids, bool):
            if not 0 <= node_ids < self.num_nodes:
                raise IndexError(f"node id {node_ids} is out of range for {self.num_nodes} nodes")
            return int(torch.searchsorted(self._bounds_tensor, torch.tensor(node_ids), right=True)) - 1
        ids = torch.as_tensor(node_ids)
        if ids.dtype.is_floating_point or ids.dtype == torch.bool:
            raise TypeError(f"node ids must be integers, got {ids.dtype}")
        if ids.numel():
            low, high = int(ids.min()), int(ids.max())
            if low < 0 or high >= self.num_nodes:
                bad = low if low < 0 else high
                raise IndexError(f"node id {bad} is out of range for {self.num_nodes} nodes")
        return self.owner_unchecked(ids)

    def owner_unchecked(self, ids: torch.Tensor) -> torch.Tensor:
        """:meth:`owner` of an integer tensor of ids already known to be in range, with no check (and so no read
        back to the host from a GPU)."""
        bounds = self._bounds_tensor.to(ids.device)
        return torch.searchsorted(bounds, ids.to(torch.int64), right=True) - 1

    def __eq__(self, other) -> bool:
        return isinstance(other, NodePartition) and other.bounds == self.bounds

    def __hash__(self) -> int:
        return hash(self.bounds)

    def __repr__(self) -> str:
        return f"NodePartition({list(self.bounds)})"
