"""``NodePartition``: which rank owns which nodes -- contiguous ranges of node ids, one per rank."""

from __future__ import annotations

from typing import Sequence, Tuple, Union

import torch


class NodePartition:
    """Nodes ``0..num_nodes`` split into ``world_size`` contiguous ranges: rank ``r`` owns ``bounds[r]:bounds[r+1]``
    (a range may be empty).

    >>> part = NodePartition.even(10, 3)
    >>> part.bounds, part.range(1), part.owner(torch.tensor([0, 4, 9])).tolist()
    ((0, 4, 7, 10), (4, 7), [0, 1, 2])
    """

    def __init__(self, bounds: Union[Sequence[int], torch.Tensor]):
        if isinstance(bounds, torch.Tensor):
            if bounds.dim() != 1 or bounds.dtype.is_floating_point or bounds.dtype == torch.bool:
                raise TypeError(f"bounds must be a 1-D integer tensor or a sequence of ints, got {bounds!r}")
            bounds = bounds.tolist()
        try:
            values = tuple(int(b) for b in bounds)
            if any(isinstance(b, (bool, float)) for b in bounds):
                raise TypeError
        except (TypeError, ValueError):
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
    def even(cls, num_nodes: int, world_size: int) -> "NodePartition":
        """Ranges whose sizes differ by at most one, the larger ones first."""
        if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 0:
            raise ValueError(f"num_nodes must be a non-negative int, got {num_nodes!r}")
        if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
            raise ValueError(f"world_size must be a positive int, got {world_size!r}")
        base, extra = divmod(num_nodes, world_size)
        bounds = [0]
        for r in range(world_size):
            bounds.append(bounds[-1] + base + (1 if r < extra else 0))
        return cls(bounds)

    @property
    def world_size(self) -> int:
        return len(self.bounds) - 1

    @property
    def num_nodes(self) -> int:
        return self.bounds[-1]

    def range(self, rank: int) -> Tuple[int, int]:
        """``(start, stop)`` of the nodes ``rank`` owns."""
        if not 0 <= rank < self.world_size:
            raise IndexError(f"rank {rank} is out of range for a partition of {self.world_size} ranks")
        return self.bounds[rank], self.bounds[rank + 1]

    def size(self, rank: int) -> int:
        start, stop = self.range(rank)
        return stop - start

    def owner(self, node_ids):
        """The rank owning each node id (an int for an int, an int64 tensor for a tensor). Ids must be in
        ``[0, num_nodes)``: IndexError otherwise."""
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
        """``owner`` of ids already known to be in range (no host read)."""
        bounds = self._bounds_tensor.to(ids.device)
        return torch.searchsorted(bounds, ids.to(torch.int64), right=True) - 1

    def __eq__(self, other) -> bool:
        return isinstance(other, NodePartition) and other.bounds == self.bounds

    def __hash__(self) -> int:
        return hash(self.bounds)

    def __repr__(self) -> str:
        return f"NodePartition({list(self.bounds)})"
