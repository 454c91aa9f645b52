"""METIS, in one place: the ``pymetis`` import (an optional dependency) and what its absence says, the graph made
METIS's, and the call, across pymetis versions. ``scatterx.distributed.partition_graph(method="metis")`` and the
pyg-lib drop-in's ``partition.metis`` (PyG's ``ClusterData``) both partition through here; each checks its own
arguments first, in its own words.

METIS wants an undirected graph stored both ways, without self-loops or repeated edges; the callers' graphs are
directed edge lists or CSR with self-loops and repeats, so :func:`undirected` makes them METIS's (for a graph
that already is, METIS receives exactly the given arrays).
"""

from __future__ import annotations

import types
from typing import Any, Dict, Optional, Tuple

import torch
from torch import Tensor


def pymetis(caller: str) -> types.ModuleType:
    """The ``pymetis`` module, or ImportError saying that ``caller`` (the function or option the user called)
    needs it and how to install it."""
    try:
        import pymetis
    except ImportError as e:
        raise ImportError(
            f"{caller} needs the pymetis package: pip install pymetis (or the metis extra: pip install "
            "'scatterx[metis]')"
        ) from e
    return pymetis


def undirected(
    row: Tensor, col: Tensor, num_nodes: int, edge_weight: Optional[Tensor] = None
) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
    """METIS's form of the directed edges ``row[k] -> col[k]`` (int64, ids in ``[0, num_nodes)``): ``(rowptr,
    col, weight)``, the CSR of the graph without self-loops, each edge both ways, each pair once, columns sorted
    within a row; a pair given several times (either way) weighs the largest of its ``edge_weight``s (int64;
    ``weight`` is None without them)."""
    n = num_nodes
    keep = row != col
    row, col = row[keep], col[keep]
    key = torch.cat([row * n + col, col * n + row])
    key, inverse = torch.unique(key, sorted=True, return_inverse=True)
    weight = None
    if edge_weight is not None:
        w = edge_weight[keep]
        weight = torch.zeros(key.numel(), dtype=torch.int64).scatter_reduce_(
            0, inverse, torch.cat([w, w]), "amax", include_self=False
        )
    rowptr = torch.zeros(n + 1, dtype=torch.int64)
    torch.cumsum(torch.bincount(key // n, minlength=n), 0, out=rowptr[1:])
    return rowptr, key % n, weight


def part_graph(
    rowptr: Tensor,
    col: Tensor,
    parts: int,
    caller: str,
    node_weight: Optional[Tensor] = None,
    edge_weight: Optional[Tensor] = None,
    recursive: Optional[bool] = None,
    seed: Optional[int] = None,
) -> Tensor:
    """METIS's partition of the graph ``(rowptr, col)`` (METIS's form: :func:`undirected`; int64 CPU tensors)
    into ``parts`` parts: each node's part, an int64 CPU tensor. ``node_weight`` / ``edge_weight``: int64 weights
    of the nodes (the balance) and of the entries of ``col`` (the cut); ``recursive``: multilevel recursive
    bisection (True) or k-way (False) -- None leaves the choice to pymetis (recursive up to 8 parts); ``seed``:
    METIS's random seed (None: its default options). ``caller`` names the user's call in the ImportError without
    pymetis."""
    metis = pymetis(caller)
    xadj, adjncy = rowptr.numpy(), col.numpy()
    kwargs: Dict[str, Any] = dict(
        vweights=None if node_weight is None else node_weight.numpy(),
        eweights=None if edge_weight is None else edge_weight.numpy(),
        recursive=recursive,
    )
    if seed is not None:
        kwargs["options"] = metis.Options(seed=seed)
    if hasattr(metis, "CSRAdjacency"):
        _, membership = metis.part_graph(parts, adjacency=metis.CSRAdjacency(xadj, adjncy), **kwargs)
    else:  # pymetis before 2025
        _, membership = metis.part_graph(parts, xadj=xadj, adjncy=adjncy, **kwargs)
    return torch.as_tensor(membership, dtype=torch.int64)
