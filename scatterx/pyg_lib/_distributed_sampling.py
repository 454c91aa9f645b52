"""pyg-lib's helpers of PyG's distributed neighbour sampler (``torch_geometric.distributed``), in plain torch:
``relabel_neighborhood`` and ``hetero_relabel_neighborhood`` (global node ids -> the batch's local ids, as the
one-machine samplers number them), and ``merge_sampler_outputs`` (one hop's outputs of several partitions, back in
the order of the seeds). They run once per sampled hop, on the hop's nodes; the work is a few vectorised passes.

**Local ids.** pyg-lib numbers nodes in the order it first meets them: the seeds first, then the sampled nodes as
they are consumed. The consumption order of one node type is simply its ``sampled_nodes_with_duplicates`` read from
the start (each edge type, layer by layer, takes the next ``sum(counts)`` entries of its destination type), so a
node's local id is the rank of its first occurrence in ``seeds + consumed nodes`` (``_first_seen``); in disjoint
mode the node is the pair ``(batch, node)``, a seed's batch being its position among all seeds.

Departures from pyg-lib, all on inputs where pyg-lib reads out of bounds or returns garbage: every input is checked
(counts against the nodes given, partitions and orders against the lists), ``num_nodes`` is only checked (pyg-lib
sizes a lookup table with it; here any node id works), and ``merge_sampler_outputs`` keeps an entry equal to -1
(pyg-lib drops every -1, its padding) and raises when a seed's slice is longer than ``num_neighbors`` (pyg-lib
would overwrite the next seed's).

Why this module is long: three public functions with pyg-lib's full signatures, each documented argument by
argument and checking every input (pyg-lib checks next to none: its callers' mistakes became reads out of bounds);
the computation itself is about a third of it.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

import torch

from ..ops._checks import check_tensor

_INTEGRAL = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)

EdgeType = Tuple[str, str, str]


# --------------------------------------------------------------------------------------------------- relabel
def relabel_neighborhood(
    seed: torch.Tensor,
    sampled_nodes_with_duplicates: torch.Tensor,
    num_sampled_neighbors_per_node: Sequence[int],
    num_nodes: int,
    batch: Optional[torch.Tensor] = None,
    csc: bool = False,
    disjoint: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The sampled edges of one batch in local ids, from the global ids a distributed sampler gathered.

    Seed ``i`` sampled the next ``num_sampled_neighbors_per_node[i]`` entries of ``sampled_nodes_with_duplicates``
    (seeds of later hops are the nodes sampled before them, numbered after the first hop's seeds); each gives an
    edge from local node ``i`` to the sampled node's local id: nodes are numbered in the order they are first met,
    seeds first (in disjoint mode a node is the pair ``(batch, node)``; seed ``i``'s batch is ``i``).

    Args:
        seed: the batch's seed nodes (global ids), 1-D, integral.
        sampled_nodes_with_duplicates: the sampled nodes (global ids), 1-D, ``seed``'s dtype; entries after the
            last counted one are ignored.
        num_sampled_neighbors_per_node: how many entries each source node sampled, in order; each ``>= 0``.
        num_nodes: the nodes of the graph (``>= 0``; only checked).
        batch: in disjoint mode, the batch (subgraph) of each sampled node, ``seed``'s dtype and numel of
            ``sampled_nodes_with_duplicates``.
        csc: the graph was sampled in CSC form: the result is ``(col, row)`` instead.
        disjoint: one subgraph per seed.

    Returns:
        ``(row, col)``: int tensors of ``seed``'s dtype, the source and destination local ids of each sampled edge
        (swapped with ``csc``).

    Raises:
        TypeError: when a tensor argument is not a tensor, or the dtypes are not integral or differ.
        ValueError: when a tensor is not 1-D, a count or ``num_nodes`` is negative, or ``batch`` is missing or
            of the wrong size in disjoint mode.
        IndexError: when the counts add up to more than the sampled nodes given.

    Example:
        >>> seed = torch.tensor([2, 3])
        >>> row, col = relabel_neighborhood(seed, torch.tensor([1, 3, 2, 4]), [2, 2], num_nodes=6)
        >>> row, col
        (tensor([0, 0, 1, 1]), tensor([2, 1, 0, 3]))
    """
    name = "relabel_neighborhood"
    _tensor(name, "seed", seed)
    _tensor(name, "sampled_nodes_with_duplicates", sampled_nodes_with_duplicates)
    _same_dtype(name, {"seed": seed, "sampled_nodes_with_duplicates": sampled_nodes_with_duplicates})
    _nonnegative_int(name, "num_nodes", num_nodes)
    counts = _counts(name, "num_sampled_neighbors_per_node", num_sampled_neighbors_per_node)
    total = sum(counts)
    _enough(name, "sampled_nodes_with_duplicates", sampled_nodes_with_duplicates, total)
    nodes = sampled_nodes_with_duplicates[:total]
    if disjoint:
        batch = _batch(name, "batch", batch, seed, sampled_nodes_with_duplicates)
        local = _first_seen(
            torch.cat([seed, nodes]),
            torch.cat([torch.arange(seed.numel(), device=seed.device, dtype=batch.dtype), batch[:total]]),
        )
    else:
        local = _first_seen(torch.cat([seed, nodes]))
    row = _sources(0, counts, seed.dtype, seed.device)
    col = local[seed.numel() :].to(seed.dtype)
    return (col, row) if csc else (row, col)


def hetero_relabel_neighborhood(
    node_types: Sequence[str],
    edge_types: Sequence[EdgeType],
    seed_dict: Dict[str, torch.Tensor],
    sampled_nodes_with_duplicates_dict: Dict[str, torch.Tensor],
    num_sampled_neighbors_per_node_dict: Dict[str, Sequence[Sequence[int]]],
    num_nodes_dict: Dict[str, int],
    batch_dict: Optional[Dict[str, torch.Tensor]] = None,
    csc: bool = False,
    disjoint: bool = False,
) -> Tuple[Dict[str, torch.Tensor], Dict[str, torch.Tensor]]:
    """``relabel_neighborhood`` for a heterogeneous graph: the sampled edges of each edge type in local ids.

    Layer by layer, each edge type (in ``edge_types``' order) takes, for each of its source nodes of the layer,
    the next counted entries of its destination type's ``sampled_nodes_with_duplicates``. The source nodes of an
    edge type in layer ``l + 1`` are numbered after the largest source range its source type had in layer ``l``
    (pyg-lib's rule). Local ids count per node type, seeds first, in the order nodes are first met; in disjoint mode
    a node is the pair ``(batch, node)``, the seeds' batches numbering all seeds in ``seed_dict``'s order.

    Args:
        node_types: every node type.
        edge_types: every edge type ``(src, rel, dst)``; with ``csc``, sampling went from ``dst`` to ``src``.
        seed_dict: the seed nodes of each node type that has any (global ids, 1-D, one integral dtype).
        sampled_nodes_with_duplicates_dict: the sampled nodes of each node type (global ids, 1-D).
        num_sampled_neighbors_per_node_dict: per edge type, keyed ``"src__rel__dst"``: a list per layer of how
            many nodes each source node sampled; every edge type has the same number of layers.
        num_nodes_dict: the nodes of each node type (only checked).
        batch_dict: in disjoint mode, the batch of each sampled node, per node type.
        csc: the graph was sampled in CSC form: rows and columns are swapped.
        disjoint: one subgraph per seed.

    Returns:
        ``(row_dict, col_dict)``: per edge type (keyed ``"src__rel__dst"``), the local source and destination ids
        of its sampled edges, of the seeds' dtype (swapped with ``csc``).

    Raises:
        TypeError: when a tensor argument is not a tensor, or the dtypes are not integral or differ.
        ValueError: when ``seed_dict`` is empty, a node type or edge type is unknown or missing, a count is
            negative, the edge types' layers differ in number or a layer's counts in length, or ``batch_dict`` is
            missing or of the wrong size in disjoint mode.
        IndexError: when the counts take more sampled nodes of a type than were given.

    Example:
        >>> rel = "paper__to__paper"
        >>> row, col = hetero_relabel_neighborhood(
        ...     ["paper"], [("paper", "to", "paper")], {"paper": torch.tensor([2, 3])},
        ...     {"paper": torch.tensor([1, 3, 2, 4])}, {rel: [[2, 2]]}, {"paper": 6})
        >>> row[rel], col[rel]
        (tensor([0, 0, 1, 1]), tensor([2, 1, 0, 3]))
    """
    name = "hetero_relabel_neighborhood"
    node_types = list(node_types)
    edge_types = [(str(k[0]), str(k[1]), str(k[2])) for k in edge_types]
    if not seed_dict:
        raise ValueError(f"{name}: seed_dict is empty")
    for key, t in seed_dict.items():
        _known(name, "seed_dict", key, node_types)
        _tensor(name, f"seed_dict[{key!r}]", t)
    for key, t in sampled_nodes_with_duplicates_dict.items():
        _tensor(name, f"sampled_nodes_with_duplicates_dict[{key!r}]", t)
    dtype = next(iter(seed_dict.values())).dtype
    _same_dtype(
        name,
        {
            **{f"seed_dict[{k!r}]": t for k, t in seed_dict.items()},
            **{f"sampled_nodes_with_duplicates_dict[{k!r}]": t for k, t in sampled_nodes_with_duplicates_dict.items()},
        },
    )
    for key in node_types:
        _nonnegative_int(name, f"num_nodes_dict[{key!r}]", num_nodes_dict.get(key, 0))
    device = next(iter(seed_dict.values())).device

    def src_of(k):
        return k[2] if csc else k[0]

    def dst_of(k):
        return k[0] if csc else k[2]

    rel = {k: "__".join(k) for k in edge_types}
    layers: Dict[EdgeType, List[List[int]]] = {}
    for k in edge_types:
        for end in (src_of(k), dst_of(k)):
            _known(name, f"edge type {k}", end, node_types)
        if rel[k] not in num_sampled_neighbors_per_node_dict:
            raise ValueError(f"{name}: num_sampled_neighbors_per_node_dict has no entry {rel[k]!r}")
        per_layer = num_sampled_neighbors_per_node_dict[rel[k]]
        layers[k] = [
            _counts(name, f"num_sampled_neighbors_per_node_dict[{rel[k]!r}][{ell}]", c)
            for ell, c in enumerate(per_layer)
        ]
    num_layers = len(layers[edge_types[0]]) if edge_types else 0
    for k in edge_types:
        if len(layers[k]) != num_layers:
            raise ValueError(
                f"{name}: num_sampled_neighbors_per_node_dict[{rel[k]!r}] has {len(layers[k])} layers, "
                f"{rel[edge_types[0]]!r} has {num_layers}"
            )

    # where each (layer, edge type) takes its nodes: its first source node, its counts, its slice of dst's nodes
    taken = dict.fromkeys(node_types, 0)
    pieces: Dict[EdgeType, List[Tuple[int, List[int], int, int]]] = {k: [] for k in edge_types}
    sources = dict.fromkeys(edge_types, 0)
    for ell in range(num_layers):
        for k in edge_types:
            counts, dst = layers[k][ell], dst_of(k)
            total = sum(counts)
            pieces[k].append((sources[k], counts, taken[dst], taken[dst] + total))
            taken[dst] += total
        if ell + 1 < num_layers:
            offset = dict.fromkeys(node_types, 0)
            for k in edge_types:  # the next layer's sources follow the widest range of this one
                offset[src_of(k)] = max(offset[src_of(k)], sources[k] + len(layers[k][ell]))
            for k in edge_types:
                sources[k] = offset[src_of(k)]

    # local ids per node type: seeds first, then the consumed nodes, by first occurrence
    local: Dict[str, torch.Tensor] = {}
    seeds_of: Dict[str, int] = {}
    first_batch = 0
    seed_batch: Dict[str, torch.Tensor] = {}
    for key, seeds in seed_dict.items():  # disjoint: every seed is its own batch, numbered across types
        seed_batch[key] = torch.arange(first_batch, first_batch + seeds.numel(), device=device)
        first_batch += seeds.numel()
    for key in node_types:
        if taken[key] == 0:
            continue
        where = f"sampled_nodes_with_duplicates_dict[{key!r}]"
        if key not in sampled_nodes_with_duplicates_dict:
            raise IndexError(f"{name}: the counts take {taken[key]} nodes of type {key!r}, but {where} is missing")
        nodes = sampled_nodes_with_duplicates_dict[key]
        _enough(name, where, nodes, taken[key])
        seeds = seed_dict.get(key, nodes[:0])
        seeds_of[key] = seeds.numel()
        keys = torch.cat([seeds, nodes[: taken[key]]])
        if disjoint:
            if batch_dict is None or key not in batch_dict:
                raise ValueError(f"{name}: disjoint sampling needs batch_dict[{key!r}]")
            batch = _batch(name, f"batch_dict[{key!r}]", batch_dict[key], seeds, nodes)
            seed_part = seed_batch.get(key, batch[:0])
            local[key] = _first_seen(keys, torch.cat([seed_part.to(batch.dtype), batch[: taken[key]]]))
        else:
            local[key] = _first_seen(keys)

    row_dict: Dict[str, torch.Tensor] = {}
    col_dict: Dict[str, torch.Tensor] = {}
    for k in edge_types:
        rows, cols = [], []
        for first, counts, begin, end in pieces[k]:
            rows.append(_sources(first, counts, dtype, device))
            if end > begin:
                skip = seeds_of[dst_of(k)]
                cols.append(local[dst_of(k)][skip + begin : skip + end].to(dtype))
        row = torch.cat(rows) if rows else torch.empty(0, dtype=dtype, device=device)
        col = torch.cat(cols) if cols else torch.empty(0, dtype=dtype, device=device)
        row_dict[rel[k]], col_dict[rel[k]] = (col, row) if csc else (row, col)
    return row_dict, col_dict


# ------------------------------------------------------------------------------------------------------ merge
def merge_sampler_outputs(
    node_ids: Sequence[torch.Tensor],
    edge_ids: Sequence[torch.Tensor],
    cumsum_neighbors_per_node: Sequence[Sequence[int]],
    partition_ids: Sequence[int],
    partition_orders: Sequence[int],
    num_partitions: int,
    num_neighbors: int,
    batch: Optional[torch.Tensor] = None,
    disjoint: bool = False,
) -> Tuple[torch.Tensor, torch.Tensor, Optional[torch.Tensor], List[int]]:
    """One hop's sampled nodes and edges, gathered from the partitions that sampled them, in the seeds' order.

    Seed ``j`` was sampled on partition ``partition_ids[j]`` as its ``partition_orders[j]``-th seed there; that
    partition's ``cumsum_neighbors_per_node`` (its output's first entry: how many seeds its node list starts with,
    then the cumulative count after each of its seeds) says where its nodes are in ``node_ids`` (``begin = cumsum[o]``,
    ``end = cumsum[o + 1]``) and its edges in ``edge_ids`` (the same range less ``cumsum[0]``: the edges have no
    seed entries). The outputs are those slices, seed after seed.

    Args:
        node_ids: per partition, its sampled nodes (its seeds first); one integral dtype.
        edge_ids: per partition, its sampled edges; ``node_ids``' dtype.
        cumsum_neighbors_per_node: per partition, as above (an empty list for a partition that sampled nothing).
        partition_ids: the partition of each seed.
        partition_orders: the position of each seed among its partition's seeds.
        num_partitions: the partitions (``node_ids`` has at least as many entries).
        num_neighbors: the most neighbours a seed may have sampled (each slice is checked against it), or a
            negative value for no limit.
        batch: in disjoint mode, the batch of each seed (at least ``len(partition_ids)`` entries).
        disjoint: one subgraph per seed: the batch of each sampled node is returned too.

    Returns:
        ``(nodes, edges, node_batch, counts)``: the sampled nodes and edges, seed after seed (``node_ids``'
        dtype); in disjoint mode the batch of each sampled node (``batch[j]`` repeated), else None; and how many
        nodes each seed sampled (a list of ints).

    Raises:
        TypeError: when a tensor argument is not a tensor, or the dtypes are not integral or differ.
        ValueError: when the lists' lengths do not match, ``node_ids`` has fewer than ``num_partitions``
            entries, a cumulative count decreases, a seed's slice is longer than ``num_neighbors``, or ``batch``
            is missing or too short in disjoint mode.
        IndexError: when a partition id or order is out of range, or a slice runs past the nodes or edges given.

    Example:
        >>> nodes, edges, _, counts = merge_sampler_outputs(
        ...     [torch.tensor([2, 7, 8]), torch.tensor([0, 1, 4, 5, 6]), torch.tensor([3, 9, 10])],
        ...     [torch.tensor([17, 18]), torch.tensor([14, 15, 16]), torch.tensor([19, 20])],
        ...     [[1, 3], [2, 4, 5], [1, 3]], [1, 1, 0, 2], [0, 1, 0, 0], num_partitions=3, num_neighbors=2)
        >>> nodes, edges, counts
        (tensor([ 4,  5,  6,  7,  8,  9, 10]), tensor([14, 15, 16, 17, 18, 19, 20]), [2, 1, 2, 2])
    """
    name = "merge_sampler_outputs"
    node_ids, edge_ids = list(node_ids), list(edge_ids)
    if not node_ids:
        raise ValueError(f"{name}: node_ids is empty")
    for i, t in enumerate(node_ids):
        _tensor(name, f"node_ids[{i}]", t)
    for i, t in enumerate(edge_ids):
        _tensor(name, f"edge_ids[{i}]", t)
    _same_dtype(
        name,
        {
            **{f"node_ids[{i}]": t for i, t in enumerate(node_ids)},
            **{f"edge_ids[{i}]": t for i, t in enumerate(edge_ids)},
        },
    )
    dtype, device = node_ids[0].dtype, node_ids[0].device
    _nonnegative_int(name, "num_partitions", num_partitions)
    if isinstance(num_neighbors, bool) or not isinstance(num_neighbors, int):
        raise TypeError(f"{name}: num_neighbors must be an int, got {type(num_neighbors).__name__}")
    if (
        len(node_ids) < num_partitions
        or len(edge_ids) < num_partitions
        or len(cumsum_neighbors_per_node) < num_partitions
    ):
        raise ValueError(
            f"{name}: node_ids, edge_ids and cumsum_neighbors_per_node need num_partitions = {num_partitions} entries, "
            f"got {len(node_ids)}, {len(edge_ids)} and {len(cumsum_neighbors_per_node)}"
        )
    ids, orders = [int(p) for p in partition_ids], [int(o) for o in partition_orders]
    if len(ids) != len(orders):
        raise ValueError(f"{name}: {len(ids)} partition_ids but {len(orders)} partition_orders")
    cumsums = [list(c) for c in cumsum_neighbors_per_node]

    counts, node_starts, edge_starts = [], [], []
    node_base = _bases([t.numel() for t in node_ids])
    edge_base = _bases([t.numel() for t in edge_ids])
    for j, (p, o) in enumerate(zip(ids, orders)):
        if not 0 <= p < num_partitions:
            raise IndexError(f"{name}: partition_ids[{j}] = {p} is not a partition (num_partitions = {num_partitions})")
        c = cumsums[p]
        if not 0 <= o < len(c) - 1:
            raise IndexError(
                f"{name}: partition_orders[{j}] = {o}, but partition {p} has {max(len(c) - 1, 0)} seeds "
                "in cumsum_neighbors_per_node"
            )
        begin, end = int(c[o]), int(c[o + 1])
        if end < begin:
            raise ValueError(f"{name}: cumsum_neighbors_per_node[{p}] decreases at {o + 1}")
        if 0 <= num_neighbors < end - begin:
            raise ValueError(f"{name}: seed {j} sampled {end - begin} neighbours, over num_neighbors = {num_neighbors}")
        first_edge = begin - int(c[0])
        if begin < 0 or end > node_ids[p].numel() or first_edge < 0 or end - int(c[0]) > edge_ids[p].numel():
            raise IndexError(
                f"{name}: seed {j}'s slice [{begin}, {end}) of partition {p} runs past its {node_ids[p].numel()} nodes "
                f"or {edge_ids[p].numel()} edges"
            )
        counts.append(end - begin)
        node_starts.append(node_base[p] + begin)
        edge_starts.append(edge_base[p] + first_edge)

    nodes = _gather(node_ids, node_starts, counts, dtype, device)
    edges = _gather(edge_ids, edge_starts, counts, dtype, device)
    out_batch = None
    if disjoint:
        if batch is None:
            raise ValueError(f"{name}: disjoint sampling needs batch")
        _tensor(name, "batch", batch)
        if batch.dim() != 1 or batch.numel() < len(ids):
            raise ValueError(
                f"{name}: batch must be 1-D with at least {len(ids)} entries, got shape {tuple(batch.shape)}"
            )
        repeats = torch.tensor(counts, dtype=torch.int64, device=batch.device)
        out_batch = torch.repeat_interleave(batch[: len(ids)], repeats).to(dtype)
    return nodes, edges, out_batch, counts


# ---------------------------------------------------------------------------------------------------- helpers
def _first_seen(nodes: torch.Tensor, batch: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Each entry's local id: the rank, by first occurrence, of its value (of its ``(batch, node)`` pair) among
    the distinct ones (int64)."""
    n = nodes.numel()
    if n == 0:
        return torch.empty(0, dtype=torch.int64, device=nodes.device)
    if batch is None:
        _, inverse = torch.unique(nodes, return_inverse=True)
    else:
        _, inverse = torch.unique(
            torch.stack([batch.to(torch.int64), nodes.to(torch.int64)], dim=1), dim=0, return_inverse=True
        )
    distinct = int(inverse.max()) + 1
    positions = torch.arange(n, device=nodes.device)
    first = torch.full((distinct,), n, dtype=torch.int64, device=nodes.device)
    first.scatter_reduce_(0, inverse, positions, "amin")
    rank = torch.empty_like(first)
    rank[torch.argsort(first)] = torch.arange(distinct, device=nodes.device)
    return rank[inverse]


def _sources(first: int, counts: List[int], dtype: torch.dtype, device) -> torch.Tensor:
    """``first + i`` repeated ``counts[i]`` times."""
    repeats = torch.tensor(counts, dtype=torch.int64, device=device)
    return torch.repeat_interleave(torch.arange(first, first + len(counts), device=device), repeats).to(dtype)


def _gather(parts: List[torch.Tensor], starts: List[int], counts: List[int], dtype, device) -> torch.Tensor:
    """The concatenation of ``flat[starts[j] : starts[j] + counts[j]]``, ``flat`` the concatenated ``parts``."""
    total = sum(counts)
    if total == 0:
        return torch.empty(0, dtype=dtype, device=device)
    flat = torch.cat([t.reshape(-1).to(device) for t in parts])
    repeats = torch.tensor(counts, dtype=torch.int64, device=device)
    shift = torch.tensor(starts, dtype=torch.int64, device=device) - (torch.cumsum(repeats, 0) - repeats)
    return flat[torch.repeat_interleave(shift, repeats) + torch.arange(total, device=device)]


def _bases(sizes: List[int]) -> List[int]:
    out, running = [], 0
    for s in sizes:
        out.append(running)
        running += s
    return out


def _tensor(name: str, arg: str, t) -> None:
    check_tensor(t, f"{name}: {arg}", what="a tensor")
    if t.dtype not in _INTEGRAL:
        raise TypeError(f"{name}: {arg} must have an integral dtype, got {t.dtype}")
    if t.dim() != 1:
        raise ValueError(f"{name}: {arg} must be 1-D, got shape {tuple(t.shape)}")


def _same_dtype(name: str, tensors: Dict[str, torch.Tensor]) -> None:
    dtypes = {t.dtype for t in tensors.values()}
    if len(dtypes) > 1:
        listed = ", ".join(f"{arg}: {t.dtype}" for arg, t in tensors.items())
        raise TypeError(f"{name}: the node tensors must share one dtype, got {listed}")


def _nonnegative_int(name: str, arg: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}: {arg} must be an int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name}: {arg} must be >= 0, got {value}")


def _counts(name: str, arg: str, counts) -> List[int]:
    out = [int(c) for c in counts]
    if any(c < 0 for c in out):
        raise ValueError(f"{name}: {arg} holds a negative count")
    return out


def _enough(name: str, arg: str, nodes: torch.Tensor, needed: int) -> None:
    if nodes.numel() < needed:
        raise IndexError(f"{name}: the counts take {needed} entries of {arg}, which has {nodes.numel()}")


def _known(name: str, where: str, key: str, node_types: List[str]) -> None:
    if key not in node_types:
        raise ValueError(f"{name}: {where} names node type {key!r}, not in node_types {node_types}")


def _batch(name: str, arg: str, batch: Optional[torch.Tensor], seed: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
    if batch is None:
        raise ValueError(f"{name}: disjoint sampling needs {arg}")
    _tensor(name, arg, batch)
    if batch.dtype != seed.dtype:
        raise TypeError(f"{name}: {arg} must have the seeds' dtype {seed.dtype}, got {batch.dtype}")
    if batch.numel() != nodes.numel():
        raise ValueError(f"{name}: {arg} has {batch.numel()} entries, one per sampled node ({nodes.numel()}) needed")
    return batch
