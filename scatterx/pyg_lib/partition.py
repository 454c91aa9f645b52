"""pyg-lib's ``pyg_lib.partition``: METIS graph partitioning (PyG's ``ClusterData``, Cluster-GCN), through the
``pymetis`` package (an optional dependency: ``pip install pymetis``).

METIS wants an undirected graph stored both ways, without self-loops or repeated edges. PyG's ``ClusterData``
passes the CSR of whatever ``edge_index`` the dataset has -- directed, with self-loops, repeated edges -- so
:func:`metis` first makes it METIS's (``scatterx/_metis.py``, the package's one home of METIS): self-loops
dropped, each edge stored both ways, each pair once. For a graph that already is so (with its columns sorted within
each row, as ``ClusterData`` sorts them), METIS receives exactly the given arrays, as from pyg-lib.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor

from .. import _metis
from ..ops._checks import check_tensor
from .ops import ArgumentError, ArgumentTypeError

__all__ = ["metis"]

_INDEX_DTYPES = (torch.int32, torch.int64)


def _integer_vector(t: Any, name: str, size: Optional[int] = None, what: str = "") -> Tensor:
    check_tensor(t, name, ArgumentTypeError)
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        raise ArgumentTypeError(f"{name} must have an integer dtype (METIS takes integer weights), got {t.dtype}")
    if t.dim() != 1:
        raise ArgumentError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    if size is not None and t.numel() != size:
        raise ArgumentError(f"{name} has {t.numel()} entries but there are {size} {what}")
    return t.detach().to("cpu", torch.int64)


def metis(
    rowptr: Tensor,
    col: Tensor,
    num_partitions: int,
    node_weight: Optional[Tensor] = None,
    edge_weight: Optional[Tensor] = None,
    recursive: bool = False,
) -> Tensor:
    """Partitions a graph into ``num_partitions`` parts with METIS (few edges cut, parts of about equal weight),
    as in Cluster-GCN: PyG's ``ClusterData`` calls it.

    The graph is made METIS's first: self-loops dropped, every edge stored both ways, each pair once (a pair given
    several times weighs the largest of its weights); nodes without edges are partitioned too. METIS runs with
    its default options (its fixed default seed: the same graph gives the same partition).

    Args:
        rowptr: int64/int32 ``[N + 1]``, CSR offsets: node ``i``'s neighbours are ``col[rowptr[i]:rowptr[i+1]]``
            (``rowptr[0] == 0``, non-decreasing, ``rowptr[-1] == col.numel()``).
        col: int64/int32 ``[E]``, neighbour ids in ``[0, N)``.
        num_partitions: the number of parts (``>= 1``).
        node_weight: optional integer ``[N]``, each node's weight (non-negative) in the balance.
        edge_weight: optional integer ``[E]``, each edge's weight (non-negative) in the cut.
        recursive: METIS's multilevel recursive bisection instead of multilevel k-way partitioning.

    Returns:
        An int64 ``[N]`` tensor on ``rowptr``'s device: each node's part, in ``[0, num_partitions)``.

    Raises:
        TypeError: an argument is not a tensor or not of an integer dtype; ``num_partitions`` is not an int or
            ``recursive`` not a bool (an ``ArgumentTypeError``, also a
            ``RuntimeError``).
        ValueError: a tensor is not 1-D; ``rowptr`` is empty, does not start at 0, decreases or does not end at
            ``col.numel()``; a weight vector has the wrong length or a negative entry; ``num_partitions < 1`` (an
            ``ArgumentError``, also a ``RuntimeError``).
        IndexError: an entry of ``col`` is negative or not below ``N``.
        ImportError: ``pymetis`` is not installed.

    Example:
        >>> ring = torch.tensor([1, 5, 0, 2, 1, 3, 2, 4, 3, 5, 0, 4])  # a 6-cycle, both ways
        >>> part = metis(torch.arange(0, 13, 2), ring, 2)
        >>> sorted(part.bincount().tolist())
        [3, 3]
    """
    device = rowptr.device if isinstance(rowptr, Tensor) else None
    for t, name in ((rowptr, "rowptr"), (col, "col")):
        check_tensor(t, name, ArgumentTypeError)
        if t.dtype not in _INDEX_DTYPES:
            raise ArgumentTypeError(f"{name} must have dtype int64 or int32, got {t.dtype}")
        if t.dim() != 1:
            raise ArgumentError(f"{name} must be 1-D, got shape {tuple(t.shape)}")
    if isinstance(num_partitions, bool) or not isinstance(num_partitions, int):
        raise ArgumentTypeError(f"num_partitions must be an int, got {type(num_partitions).__name__}")
    if num_partitions < 1:
        raise ArgumentError(f"num_partitions must be >= 1, got {num_partitions}")
    if not isinstance(recursive, bool):
        raise ArgumentTypeError(f"recursive must be a bool, got {type(recursive).__name__}")
    if rowptr.numel() == 0:
        raise ArgumentError("rowptr must have at least one entry (rowptr[0] == 0)")
    n = rowptr.numel() - 1
    nodes = _integer_vector(node_weight, "node_weight", n, "nodes") if node_weight is not None else None
    edges = _integer_vector(edge_weight, "edge_weight", col.numel(), "edges (col)") if edge_weight is not None else None
    rowptr, col = rowptr.detach().to("cpu", torch.int64), col.detach().to("cpu", torch.int64)
    first, last = int(rowptr[0]), int(rowptr[-1])
    if first != 0:
        raise ArgumentError(f"rowptr must start at 0, got rowptr[0]={first}")
    step = rowptr.diff()
    if bool((step < 0).any()):
        i = int((step < 0).nonzero()[0]) + 1
        raise ArgumentError(
            f"rowptr must be non-decreasing: rowptr[{i}]={int(rowptr[i])} < rowptr[{i - 1}]={int(rowptr[i - 1])}"
        )
    if last != col.numel():
        raise ArgumentError(f"rowptr must end at col.numel()={col.numel()}, got rowptr[-1]={last}")
    if col.numel():
        low, high = (int(v) for v in torch.aminmax(col))
        if low < 0 or high >= n:
            raise IndexError(f"col holds {low if low < 0 else high}, out of range for {n} nodes")
    for w, name in ((nodes, "node_weight"), (edges, "edge_weight")):
        if w is not None and w.numel() and int(w.min()) < 0:
            raise ArgumentError(f"{name} must be non-negative, got {int(w.min())}")
    _metis.pymetis("metis")  # the ImportError without pymetis, whatever the graph
    if n == 0:
        return torch.empty(0, dtype=torch.int64, device=device)
    if num_partitions == 1:
        return torch.zeros(n, dtype=torch.int64, device=device)
    row = torch.repeat_interleave(torch.arange(n), rowptr.diff(), output_size=col.numel())
    xadj, adjncy, eweights = _metis.undirected(row, col, n, edges)
    membership = _metis.part_graph(
        xadj, adjncy, num_partitions, "metis", node_weight=nodes, edge_weight=eweights, recursive=recursive
    )
    return membership.to(device)
