"""pyg-lib's samplers (``pyg_lib.sampler``): neighbour sampling of homogeneous and heterogeneous graphs, and
random walks.

:func:`neighbor_sample` and :func:`hetero_neighbor_sample` follow pyg-lib's signatures and outputs: the seeds
first, then each hop's new nodes in the order they are first drawn; each edge as (local source, local target) with
its position in the given CSR/CSC arrays; the nodes and edges sampled per hop. Without replacement a node gets
exactly ``min(degree, fan-out)`` distinct neighbours; choice is uniform, or proportional to ``edge_weight``.
Random numbers come from torch's default generator (one draw per call): ``torch.manual_seed`` makes a batch
reproducible, and a batch is the same on any number of threads. Sampling runs in parallel over the frontier's
nodes (``torch.get_num_threads()`` threads).

Where this departs from pyg-lib: ``directed=False`` (every edge between the sampled nodes) is supported for
non-disjoint sampling, where pyg-lib raises; bad input raises ``ValueError``/``IndexError``/``TypeError`` naming
the argument, before anything is sampled, where pyg-lib may read out of bounds. The graph's arrays are checked
once per tensor (see ``_graph.py``).

Why this module is long: it is pyg-lib's two sampler signatures -- their documentation, and the checks of every
argument and of every node and edge type -- in one place; the sampling itself is in ``_engine.py``.
"""

from __future__ import annotations

import threading
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
from torch import Tensor

from . import _engine
from ._engine import KEY_BITS, EdgeType, GraphChanged
from ._graph import as_numpy, check_array, check_ptr, check_range, clear, once
from ._walk import random_walk

NodeType = str
EdgeTypeKey = Tuple[str, str, str]

_STRATEGIES = ("uniform", "last")


def _fan_outs(values, name: str) -> List[int]:
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"'{name}' must hold integers, got {v!r}")
        if v < -1:
            raise ValueError(f"'{name}' must hold fan-outs >= 0, or -1 for every neighbour; got {int(v)}")
        out.append(int(v))
    return out


def _times(t: Optional[Tensor], length: Optional[int], name: str, what: str) -> Optional[np.ndarray]:
    """Times as int64 (pyg-lib's time type), of ``length`` entries when known."""
    if t is None:
        return None
    check_array(t, name, dtypes=None)
    if t.dtype.is_floating_point or t.dtype.is_complex or t.dtype == torch.bool:
        raise TypeError(f"'{name}' must hold integer times (pyg-lib samples by int64 times), got {t.dtype}")
    if length is not None and t.numel() != length:
        raise ValueError(f"'{name}' must hold one time per {what} ({length}), got {t.numel()}")
    return as_numpy(t, torch.int64)


def _weights(t: Optional[Tensor], edges: int, name: str) -> Optional[np.ndarray]:
    if t is None:
        return None
    check_array(t, name, dtypes=None)
    if not t.dtype.is_floating_point:
        raise TypeError(f"'{name}' must be a floating-point tensor, got {t.dtype}")
    if t.numel() != edges:
        raise ValueError(f"'{name}' must hold one weight per edge ({edges}), got {t.numel()}")
    w = as_numpy(t, torch.float64)
    if not once(t, "weights", lambda _: bool(np.isfinite(w).all()) and not bool((w < 0).any())):
        raise ValueError(f"'{name}' must hold finite weights >= 0")
    return w


_RECHECKING = threading.local()


def _rechecked(sampler, locals_of_call):
    """A kernel found the graph's arrays out of range although they passed their checks: they were changed
    since, by a write torch's version counter does not see. Forget every kept check and sample again (the checks
    then raise, naming the argument); a second such failure raises."""
    if getattr(_RECHECKING, "active", False):
        raise ValueError(
            "the graph's tensors changed while being sampled (an offset or a neighbour is out of range): "
            "do not write into them while a sampler reads them"
        )
    clear()
    _RECHECKING.active = True
    try:
        return sampler(**locals_of_call)
    finally:
        _RECHECKING.active = False


def _disjoint_bounds(num_nodes: Optional[int], seeds: int) -> None:
    """Disjoint trees key a node by ``batch << 32 | node``: node ids below 2^32, fewer than 2^31 seeds."""
    if num_nodes is not None and num_nodes > 1 << KEY_BITS:
        raise ValueError(f"disjoint sampling takes graphs of at most 2^32 nodes, got {num_nodes}")
    if seeds >= 1 << 31:
        raise ValueError(f"disjoint sampling takes fewer than 2^31 seeds, got {seeds}")


def _booleans(**flags) -> None:
    """The switches are bools (a string such as ``"no"`` would otherwise read as true)."""
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"'{name}' must be a bool, got {type(value).__name__}")


def _flags(temporal_strategy: str, disjoint: bool, timed: bool, weighted: bool, directed: bool) -> None:
    if temporal_strategy not in _STRATEGIES:
        raise ValueError(f"'temporal_strategy' must be 'uniform' or 'last', got {temporal_strategy!r}")
    if timed and not disjoint:
        raise ValueError("temporal sampling (node or edge times) needs disjoint=True: each seed its own subgraph")
    if timed and weighted:
        raise ValueError("temporal sampling with edge weights is not supported (nor by pyg-lib)")
    if not directed and disjoint:
        raise ValueError("directed=False with disjoint=True is not supported (nor by pyg-lib)")


def _induced_per_hop(targets: np.ndarray, nodes_per_hop: List[int]) -> List[int]:
    """The edges of an induced subgraph per hop: those into the nodes the previous hop reached (the seeds for the
    first), the edges into the last hop's nodes counted with the last hop."""
    bounds = np.cumsum([0, *nodes_per_hop])
    groups = np.diff(np.searchsorted(targets, bounds, side="left")).tolist()
    groups[-1] += targets.shape[0] - int(sum(groups))
    if len(groups) < 2:
        return []
    return groups[:-2] + [groups[-2] + groups[-1]]


def neighbor_sample(
    rowptr: Tensor,
    col: Tensor,
    seed: Tensor,
    num_neighbors: List[int],
    node_time: Optional[Tensor] = None,
    edge_time: Optional[Tensor] = None,
    seed_time: Optional[Tensor] = None,
    edge_weight: Optional[Tensor] = None,
    csc: bool = False,
    replace: bool = False,
    directed: bool = True,
    disjoint: bool = False,
    temporal_strategy: str = "uniform",
    return_edge_id: bool = True,
) -> Tuple[Tensor, Tensor, Tensor, Optional[Tensor], List[int], List[int]]:
    """Samples ``num_neighbors[h]`` neighbours of every node reached in hop ``h``, from the ``seed`` nodes.

    Args:
        rowptr: offsets into ``col`` per node (CSR; with ``csc=True`` the CSC ``colptr`` over target nodes),
            int32 or int64, the dtype of ``col`` and ``seed``.
        col: the neighbour of each edge (with ``csc=True`` the source ``row``), in ``[0, num_nodes)``.
        seed: the nodes to start from, in ``[0, num_nodes)`` (``num_nodes = rowptr.numel() - 1``).
        num_neighbors: the fan-out of each hop; -1 takes every neighbour.
        node_time: a time per node (integers): a neighbour later than its seed's time is never drawn. Each node's
            neighbours must be sorted by time. Needs ``disjoint=True``.
        edge_time: a time per edge (integers), instead of ``node_time``; needs ``seed_time``.
        seed_time: the time of each seed (default: its ``node_time``).
        edge_weight: draw neighbours with probability proportional to these weights (float, >= 0).
        csc: the graph is given as ``(colptr, row)``: edges grouped by target, sampled towards their sources.
        replace: draw with replacement (``num_neighbors[h]`` draws, repeats possible).
        directed: ``False`` returns every edge between the sampled nodes instead of the drawn ones.
        disjoint: every seed grows its own tree (nodes are ``(batch, node)`` pairs).
        temporal_strategy: ``"uniform"`` draws among the neighbours not later than the seed, ``"last"`` takes
            the latest of them.
        return_edge_id: return the edges' positions in ``col``.

    Returns:
        ``(row, col, node, edge, num_sampled_nodes, num_sampled_edges)``: the sampled edges as local indices
        into ``node`` (with ``csc=True``, ``row`` is the neighbour, ``col`` the node it was drawn for), the
        sampled nodes' ids (``[N, 2]`` ``(batch, node)`` pairs when disjoint), the edges' positions in ``col``
        (or None), and the number of nodes and edges each hop added.

    Raises:
        TypeError: an index of another dtype than int32/int64, or of another dtype than ``rowptr``'s; float times.
        ValueError: a ``rowptr`` that does not start at 0, decreases or does not end at ``col.numel()``; a fan-out
            below -1; times or weights of the wrong length; temporal sampling without ``disjoint``.
        IndexError: an entry of ``col`` or ``seed`` out of range.

    Example:
        >>> rowptr = torch.tensor([0, 2, 3, 4])  # node 0 -> 1, 2; node 1 -> 2; node 2 -> 0
        >>> col = torch.tensor([1, 2, 2, 0])
        >>> row, col_, node, edge, nodes_per_hop, edges_per_hop = neighbor_sample(rowptr, col, torch.tensor([0]), [-1])
        >>> node, row, col_, edge
        (tensor([0, 1, 2]), tensor([0, 0]), tensor([1, 2]), tensor([0, 1]))
        >>> nodes_per_hop, edges_per_hop
        ([1, 2], [2])
    """
    rowptr = check_array(rowptr, "rowptr")
    col = check_array(col, "col")
    seed = check_array(seed, "seed")
    for name, t in (("col", col), ("seed", seed)):
        if t.dtype != rowptr.dtype:
            raise TypeError(f"'{name}' must have the dtype of 'rowptr' ({rowptr.dtype}), got {t.dtype}")
    counts = _fan_outs(num_neighbors, "num_neighbors")
    timed = node_time is not None or edge_time is not None
    _booleans(csc=csc, replace=replace, directed=directed, disjoint=disjoint, return_edge_id=return_edge_id)
    _flags(temporal_strategy, disjoint, timed, edge_weight is not None, directed)
    if node_time is not None and edge_time is not None:
        raise ValueError("give 'node_time' or 'edge_time', not both")
    if edge_time is not None and seed_time is None:
        raise ValueError("sampling by 'edge_time' needs 'seed_time'")
    num_nodes = rowptr.numel() - 1
    check_ptr(rowptr, col.numel(), "rowptr")
    check_range(col, num_nodes, "col", "nodes")
    check_range(seed, num_nodes, "seed", "nodes", keep=False)
    ntime = _times(node_time, num_nodes, "node_time", "node")
    etime = _times(edge_time, col.numel(), "edge_time", "edge")
    stime = _times(seed_time, seed.numel(), "seed_time", "seed")
    if stime is None and ntime is not None:
        stime = ntime[seed.numpy().astype(np.int64)]
    if disjoint:
        _disjoint_bounds(num_nodes, seed.numel())
    e = EdgeType(as_numpy(rowptr, torch.int64), as_numpy(col, torch.int64), "n", "n", counts, limit=num_nodes)
    e.node_time, e.edge_time = ntime, etime
    e.weight = _weights(edge_weight, col.numel(), "edge_weight")

    seeds = seed.numpy().astype(np.int64, copy=False)
    try:
        run = _engine.sample({"e": e}, ["n"], {"n": seeds}, stime, replace, disjoint, temporal_strategy == "last")
        if not directed:
            induced = _engine.induced(e, run.nodes["n"], run.nodes["n"])
    except GraphChanged:
        return _rechecked(neighbor_sample, locals_of_call=dict(
            rowptr=rowptr, col=col, seed=seed, num_neighbors=num_neighbors, node_time=node_time,
            edge_time=edge_time, seed_time=seed_time, edge_weight=edge_weight, csc=csc, replace=replace,
            directed=directed, disjoint=disjoint, temporal_strategy=temporal_strategy, return_edge_id=return_edge_id,
        ))  # fmt: skip
    nodes = run.nodes["n"]
    dtype = seed.dtype
    if directed:
        hops = run.hops["e"]
        nbr = np.concatenate([h[0] for h in hops]) if hops else np.empty(0, np.int64)
        front = np.concatenate([h[1] for h in hops]) if hops else np.empty(0, np.int64)
        edges = np.concatenate([h[2] for h in hops]) if hops else np.empty(0, np.int64)
        edges_per_hop = [int(h[0].shape[0]) for h in hops]
    else:
        nbr, front, edges = induced
        edges_per_hop = _induced_per_hop(front, run.nodes_per_hop["n"])
    out_row, out_col = (nbr, front) if csc else (front, nbr)
    return (
        torch.from_numpy(out_row).to(dtype),
        torch.from_numpy(out_col).to(dtype),
        _engine.node_ids(nodes, disjoint, dtype),
        torch.from_numpy(edges).to(dtype) if return_edge_id else None,
        run.nodes_per_hop["n"],
        edges_per_hop,
    )


def hetero_neighbor_sample(
    rowptr_dict: Dict[EdgeTypeKey, Tensor],
    col_dict: Dict[EdgeTypeKey, Tensor],
    seed_dict: Dict[NodeType, Tensor],
    num_neighbors_dict: Dict[EdgeTypeKey, List[int]],
    node_time_dict: Optional[Dict[NodeType, Tensor]] = None,
    edge_time_dict: Optional[Dict[EdgeTypeKey, Tensor]] = None,
    seed_time_dict: Optional[Dict[NodeType, Tensor]] = None,
    edge_weight_dict: Optional[Dict[EdgeTypeKey, Tensor]] = None,
    csc: bool = False,
    replace: bool = False,
    directed: bool = True,
    disjoint: bool = False,
    temporal_strategy: str = "uniform",
    return_edge_id: bool = True,
) -> Tuple[
    Dict[EdgeTypeKey, Tensor],
    Dict[EdgeTypeKey, Tensor],
    Dict[NodeType, Tensor],
    Optional[Dict[EdgeTypeKey, Tensor]],
    Dict[NodeType, List[int]],
    Dict[EdgeTypeKey, List[int]],
]:
    """:func:`neighbor_sample` on a heterogeneous graph: one ``rowptr``/``col`` per edge type
    ``(source type, relation, target type)``, seeds and times per node type, fan-outs per edge type.

    An edge type samples from the nodes of one type (its source type; with ``csc=True`` its target type) that
    the previous hop reached, and adds neighbours of the other type. Times per node type (``node_time_dict``) or
    per edge type (``edge_time_dict``) apply to the types they are given for.

    Args:
        rowptr_dict: per edge type, the offsets (CSR by source; with ``csc=True`` CSC by target).
        col_dict: per edge type, the neighbour of each edge.
        seed_dict: per node type, the seeds.
        num_neighbors_dict: per edge type, the fan-out of each hop (-1: every neighbour).
        node_time_dict: per node type, a time per node (see :func:`neighbor_sample`).
        edge_time_dict: per edge type, a time per edge.
        seed_time_dict: per node type, a time per seed.
        edge_weight_dict: per edge type, a weight per edge.
        csc: the graphs are given by target (``colptr``, ``row``).
        replace: draw with replacement.
        directed: ``False`` returns every edge between the sampled nodes.
        disjoint: every seed grows its own tree; batch indices count across node types in ``seed_dict``'s order.
        temporal_strategy: ``"uniform"`` or ``"last"``.
        return_edge_id: return the edges' positions.

    Returns:
        ``(row_dict, col_dict, node_dict, edge_dict, num_sampled_nodes_dict, num_sampled_edges_dict)``: per edge
        type the local edges and their positions, per node type the sampled ids, per type the counts per hop.

    Raises:
        TypeError, ValueError, IndexError: as :func:`neighbor_sample`, naming the type.

    Example:
        >>> key = ("user", "buys", "item")
        >>> rowptr = {key: torch.tensor([0, 2, 3])}  # user 0 buys items 0 and 1; user 1 item 1
        >>> col = {key: torch.tensor([0, 1, 1])}
        >>> out = hetero_neighbor_sample(rowptr, col, {"user": torch.tensor([1])}, {key: [-1]})
        >>> out[2]["item"], out[0][key], out[1][key]
        (tensor([1]), tensor([0]), tensor([0]))
    """
    rel = {k: "__".join(k) for k in rowptr_dict}
    node_types = sorted({k[0] for k in rowptr_dict} | {k[-1] for k in rowptr_dict} | set(seed_dict))

    def by_rel(d):
        return None if d is None else {rel[k]: v for k, v in d.items() if k in rel}

    out = hetero_sample(
        node_types, list(rowptr_dict), by_rel(rowptr_dict), by_rel(col_dict), seed_dict, by_rel(num_neighbors_dict),
        node_time_dict, by_rel(edge_time_dict), seed_time_dict, by_rel(edge_weight_dict), csc, replace, directed,
        disjoint, temporal_strategy, return_edge_id,
    )  # fmt: skip
    back = {v: k for k, v in rel.items()}
    row, col, node, edge, nodes_per_hop, edges_per_hop = out
    row = {back[k]: v for k, v in row.items()}
    col = {back[k]: v for k, v in col.items()}
    edge = None if edge is None else {back[k]: v for k, v in edge.items()}
    return row, col, node, edge, nodes_per_hop, {back[k]: v for k, v in edges_per_hop.items()}


def hetero_sample(
    node_types: List[str],
    edge_types: List[EdgeTypeKey],
    rowptr_dict: Dict[str, Tensor],
    col_dict: Dict[str, Tensor],
    seed_dict: Dict[str, Tensor],
    num_neighbors_dict: Dict[str, List[int]],
    node_time_dict: Optional[Dict[str, Tensor]] = None,
    edge_time_dict: Optional[Dict[str, Tensor]] = None,
    seed_time_dict: Optional[Dict[str, Tensor]] = None,
    edge_weight_dict: Optional[Dict[str, Tensor]] = None,
    csc: bool = False,
    replace: bool = False,
    directed: bool = True,
    disjoint: bool = False,
    temporal_strategy: str = "uniform",
    return_edge_id: bool = True,
):
    """``torch.ops.pyg.hetero_neighbor_sample``: :func:`hetero_neighbor_sample` with the edge types' dicts keyed
    by ``"src__rel__dst"`` strings (as PyG's sampler calls the operator)."""
    timed = bool(node_time_dict) or bool(edge_time_dict)
    _booleans(csc=csc, replace=replace, directed=directed, disjoint=disjoint, return_edge_id=return_edge_id)
    _flags(temporal_strategy, disjoint, timed, bool(edge_weight_dict), directed)
    if node_time_dict and edge_time_dict:
        raise ValueError("give 'node_time_dict' or 'edge_time_dict', not both")
    if edge_time_dict and not seed_time_dict:
        raise ValueError("sampling by 'edge_time_dict' needs 'seed_time_dict'")
    rels = {"__".join(k): tuple(k) for k in edge_types}
    for name, d in (("rowptr_dict", rowptr_dict), ("col_dict", col_dict), ("num_neighbors_dict", num_neighbors_dict)):
        missing = [r for r in rels if r not in d]
        if missing:
            raise ValueError(f"'{name}' lacks the edge type(s) {missing}")
    types = list(dict.fromkeys(node_types))
    for k in rels.values():
        for t in (k[0], k[-1]):
            if t not in types:
                raise ValueError(f"the edge type {k} names the node type {t!r}, which is not in 'node_types'")
    for t in seed_dict:
        if t not in types:
            raise ValueError(f"'seed_dict' names the node type {t!r}, which is not in 'node_types'")

    # the number of nodes of each type, where an edge type's offsets say it (the type they run over)
    dtype: Optional[torch.dtype] = None
    sizes: Dict[str, int] = {}
    for r, k in rels.items():
        ptr = check_array(rowptr_dict[r], f"rowptr_dict[{k}]")
        nbr = check_array(col_dict[r], f"col_dict[{k}]")
        dtype = dtype or ptr.dtype
        for name, index in ((f"rowptr_dict[{k}]", ptr), (f"col_dict[{k}]", nbr)):
            if index.dtype != dtype:
                raise TypeError(f"'{name}' must have the dtype of the other indices ({dtype}), got {index.dtype}")
        over = k[-1] if csc else k[0]
        if sizes.setdefault(over, ptr.numel() - 1) != ptr.numel() - 1:
            raise ValueError(
                f"'rowptr_dict[{k}]' runs over {ptr.numel() - 1} nodes of type {over!r}, but another edge type's "
                f"offsets over {sizes[over]}: every edge type must agree on a node type's number of nodes"
            )
    seeds: Dict[str, np.ndarray] = {}
    for t, s in seed_dict.items():
        check_array(s, f"seed_dict[{t!r}]")
        dtype = dtype or s.dtype
        if s.dtype != dtype:
            raise TypeError(f"'seed_dict[{t!r}]' must have the dtype of the indices ({dtype}), got {s.dtype}")
        # a node type no offsets run over has no size to check against; disjoint trees still key its ids in 32 bits
        if t in sizes or not disjoint:
            check_range(s, sizes.get(t), f"seed_dict[{t!r}]", f"nodes of type {t!r}", keep=False)
        else:
            what = f"node ids of type {t!r} (disjoint sampling keys a node id in 32 bits)"
            check_range(s, 1 << KEY_BITS, f"seed_dict[{t!r}]", what, keep=False)
        seeds[t] = s.numpy().astype(np.int64, copy=False)
    dtype = dtype or torch.int64
    if disjoint:
        for size in sizes.values():
            _disjoint_bounds(size, 0)
        _disjoint_bounds(None, sum(s.shape[0] for s in seeds.values()))

    ntimes = {t: _times(v, sizes.get(t), f"node_time_dict[{t!r}]", "node") for t, v in (node_time_dict or {}).items()}
    seed_time: Optional[np.ndarray] = None
    if disjoint and timed:  # (timed sampling is disjoint: checked above) a time for every seed
        parts: List[np.ndarray] = []
        for t, keys in seeds.items():
            node_times = ntimes.get(t)
            if seed_time_dict is not None and t in seed_time_dict:
                st = _times(seed_time_dict[t], keys.shape[0], f"seed_time_dict[{t!r}]", "seed")
                assert st is not None
                parts.append(st)
            elif node_times is not None:
                if t not in sizes:  # no offsets give the type's size: its times' length bounds the seeds' ids
                    what = f"times of node type {t!r}"
                    check_range(seed_dict[t], node_times.shape[0], f"seed_dict[{t!r}]", what, keep=False)
                parts.append(node_times[keys])
            else:
                raise ValueError(f"temporal sampling needs a time for the seeds of type {t!r} (seed_time_dict)")
        seed_time = np.concatenate(parts) if parts else np.empty(0, np.int64)

    graphs: Dict[str, EdgeType] = {}
    for r, k in rels.items():
        ptr, nbr = rowptr_dict[r], col_dict[r]
        frontier, neighbor = (k[-1], k[0]) if csc else (k[0], k[-1])
        check_ptr(ptr, nbr.numel(), f"rowptr_dict[{k}]")
        bound = sizes.get(neighbor, (1 << KEY_BITS) if disjoint else None)
        check_range(nbr, bound, f"col_dict[{k}]", f"nodes of type {neighbor!r}")
        e = EdgeType(as_numpy(ptr, torch.int64), as_numpy(nbr, torch.int64), frontier, neighbor, [])
        e.limit = bound if bound is not None else e.limit
        e.counts = _fan_outs(num_neighbors_dict[r], f"num_neighbors_dict[{k}]")
        if neighbor in ntimes:
            e.node_time = ntimes[neighbor]
            if e.node_time is not None and sizes.get(neighbor) is None:  # its length is the bound of 'nbr'
                check_range(nbr, e.node_time.shape[0], f"col_dict[{k}]", f"times of node type {neighbor!r}")
        if edge_time_dict and r in edge_time_dict:
            e.edge_time = _times(edge_time_dict[r], nbr.numel(), f"edge_time_dict[{k}]", "edge")
        if edge_weight_dict and r in edge_weight_dict:
            e.weight = _weights(edge_weight_dict[r], nbr.numel(), f"edge_weight_dict[{k}]")
        graphs[r] = e

    try:
        run = _engine.sample(graphs, types, seeds, seed_time, replace, disjoint, temporal_strategy == "last")
        induced = {} if directed else {r: _engine.induced(e, run.nodes[e.frontier], run.nodes[e.neighbor])
                                       for r, e in graphs.items()}  # fmt: skip
    except GraphChanged:
        return _rechecked(hetero_sample, locals_of_call=dict(
            node_types=node_types, edge_types=edge_types, rowptr_dict=rowptr_dict, col_dict=col_dict,
            seed_dict=seed_dict, num_neighbors_dict=num_neighbors_dict, node_time_dict=node_time_dict,
            edge_time_dict=edge_time_dict, seed_time_dict=seed_time_dict, edge_weight_dict=edge_weight_dict,
            csc=csc, replace=replace, directed=directed, disjoint=disjoint, temporal_strategy=temporal_strategy,
            return_edge_id=return_edge_id,
        ))  # fmt: skip
    rows, cols, edges, edges_per_hop = {}, {}, {}, {}
    for r, e in graphs.items():
        if directed:
            hops = run.hops[r]
            nbr_l = np.concatenate([h[0] for h in hops]) if hops else np.empty(0, np.int64)
            front = np.concatenate([h[1] for h in hops]) if hops else np.empty(0, np.int64)
            pos = np.concatenate([h[2] for h in hops]) if hops else np.empty(0, np.int64)
            edges_per_hop[r] = [int(h[0].shape[0]) for h in hops]
        else:
            nbr_l, front, pos = induced[r]
            edges_per_hop[r] = _induced_per_hop(front, run.nodes_per_hop[e.frontier])
        out_row, out_col = (nbr_l, front) if csc else (front, nbr_l)
        rows[r] = torch.from_numpy(out_row).to(dtype)
        cols[r] = torch.from_numpy(out_col).to(dtype)
        edges[r] = torch.from_numpy(pos).to(dtype)
    nodes = {t: _engine.node_ids(run.nodes[t], disjoint, dtype) for t in types}
    return rows, cols, nodes, edges if return_edge_id else None, run.nodes_per_hop, edges_per_hop


__all__ = ["hetero_neighbor_sample", "neighbor_sample", "random_walk"]
