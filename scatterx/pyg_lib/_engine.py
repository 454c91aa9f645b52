"""The sampling engine behind ``neighbor_sample`` and ``hetero_neighbor_sample``: hops over node and edge types.

A homogeneous graph is one node type and one edge type. For each hop, each edge type samples from the nodes of
its frontier type that the previous hop reached (the seeds in the first hop) -- all edge types of a hop from the
same frontier, taken at the hop's start -- and the neighbours found join their own type's nodes, in the order they
are first drawn. That is pyg-lib's order: the seeds first, then each hop's new nodes, edge type by edge type,
frontier node by frontier node; and each edge type's edges grouped by frontier node, hop after hop. The kernels
(``kernels/cpu/neighbor_sample.py``) draw in parallel and relabel in order.

Nodes are kept as int64 *keys*: the node itself, or ``batch << 32 | node`` when each seed grows its own
(disjoint) tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

from ..kernels.cpu import launch
from ..kernels.cpu import neighbor_sample as kernels

KEY_BITS = 32
#: frontier nodes per work item of the parallel kernels
STEP = 64
#: below these sizes a hop's step runs on one thread: a fork-join of the OpenMP team costs more than it saves
#: there, and much more when another process holds a core (docs/decisions/neighbor-sampling.md)
PARALLEL_MIN_NODES = 1 << 16
PARALLEL_MIN_DRAWS = 1 << 15
_NONE_I = np.empty(0, np.int64)
_NONE_F = np.empty(0, np.float64)


class GraphChanged(Exception):
    """A kernel met an offset or a neighbour out of range: the graph's arrays were changed after they were checked
    (by a write torch's version counter does not see); the caller checks them again."""


class Nodes:
    """The sampled nodes of one type: their keys in local order, and a hash table from key to local index."""

    def __init__(self) -> None:
        self.keys = np.empty(16, np.int64)
        self.count = 0
        self.table = np.full(32, -1, np.int64)  # 16 (key, value) slots
        self.shift = 64 - 4

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more nodes, the table at most half full."""
        need = self.count + extra
        if need > self.keys.shape[0]:
            grown = np.empty(max(need, 2 * self.keys.shape[0]), np.int64)
            grown[: self.count] = self.keys[: self.count]
            self.keys = grown
        if 2 * need > self.table.shape[0] // 2:
            bits = max(10, int(4 * need - 1).bit_length())
            self.table = np.full(2 << bits, -1, np.int64)
            self.shift = 64 - bits
            kernels.insert(self.keys[: self.count], self.table, self.shift)

    def add_seeds(self, keys: np.ndarray) -> None:
        """The seeds, first (a seed given twice maps to its last place)."""
        assert self.count == 0
        self.reserve(keys.shape[0])
        self.keys[: keys.shape[0]] = keys
        self.count = keys.shape[0]
        kernels.insert(self.keys[: self.count], self.table, self.shift)


@dataclass
class EdgeType:
    """One edge type's graph, as the kernels read it: ``ptr`` over the frontier type, ``nbr`` the neighbour of
    each edge; times and weights as given (or None)."""

    ptr: np.ndarray
    nbr: np.ndarray
    frontier: str
    neighbor: str
    counts: List[int]
    #: neighbour ids are below it (the neighbour type's size where known; 2^32 in disjoint mode, keys' limit)
    limit: int = 1 << 62
    node_time: Optional[np.ndarray] = None  # the neighbour type's node times
    edge_time: Optional[np.ndarray] = None
    weight: Optional[np.ndarray] = None


@dataclass
class Sampled:
    """What a run produced per edge type: per hop (neighbour local, frontier local, edge position)."""

    nodes: Dict[str, Nodes]
    hops: Dict[str, List[Tuple[np.ndarray, np.ndarray, np.ndarray]]]
    nodes_per_hop: Dict[str, List[int]]


def sample(
    edge_types: Dict[str, EdgeType],
    node_types: List[str],
    seeds: Dict[str, np.ndarray],
    seed_time: Optional[np.ndarray],
    replace: bool,
    disjoint: bool,
    last: bool,
) -> Sampled:
    """Runs every hop; ``seeds`` in order (the batch index of a disjoint tree counts across types in this
    order); ``seed_time`` per batch index (temporal sampling, which is disjoint)."""
    nodes = {t: Nodes() for t in node_types}
    per_hop: Dict[str, List[int]] = {t: [0] for t in node_types}
    batch = 0
    for t, s in seeds.items():
        keys = s
        if disjoint:
            keys = (np.arange(batch, batch + s.shape[0], dtype=np.int64) << KEY_BITS) | s
            batch += s.shape[0]
        nodes[t].add_seeds(keys)
        per_hop[t][0] = nodes[t].count
    hops: Dict[str, List[Tuple[np.ndarray, np.ndarray, np.ndarray]]] = {k: [] for k in edge_types}
    base = int(torch.randint(0, 1 << 62, (1,)).item())
    threads = torch.get_num_threads()
    num_hops = max((len(e.counts) for e in edge_types.values()), default=0)
    for hop in range(num_hops):
        slices = {t: (nodes[t].count - per_hop[t][-1], nodes[t].count) for t in node_types}
        for number, (name, e) in enumerate(edge_types.items()):
            begin, end = slices[e.frontier]
            count = e.counts[hop] if hop < len(e.counts) else 0
            sequence = hop * len(edge_types) + number  # its draws' own random sequence (kernels/cpu/_random.py)
            hops[name].append(
                _hop(
                    e,
                    nodes[e.frontier],
                    begin,
                    end,
                    nodes[e.neighbor],
                    count,
                    replace,
                    disjoint,
                    seed_time,
                    last,
                    (base, sequence),
                    threads,
                )
            )
        for t in node_types:
            per_hop[t].append(nodes[t].count - sum(per_hop[t]))
    return Sampled(nodes, hops, per_hop)


def _hop(
    e: EdgeType,
    frontier: Nodes,
    begin: int,
    end: int,
    neighbors: Nodes,
    count: int,
    replace: bool,
    disjoint: bool,
    seed_time: Optional[np.ndarray],
    last: bool,
    randomness: Tuple[int, int],
    threads: int,
):
    m = end - begin
    if m == 0 or count == 0:
        return _NONE_I, _NONE_I, _NONE_I
    keys = frontier.keys[begin:end]
    front = keys & ((1 << KEY_BITS) - 1) if disjoint else keys
    batch = keys >> KEY_BITS if disjoint else _NONE_I
    temporal = kernels.NO_TIME
    if e.edge_time is not None:
        temporal = kernels.EDGE_TIME
    elif e.node_time is not None:
        temporal = kernels.NODE_TIME
    lo = np.empty(2 * m, np.int64)
    n = np.empty(m, np.int64)
    items = -(-m // STEP)
    bad = launch(
        kernels.ranges,
        None,
        items,
        threads if m >= PARALLEL_MIN_NODES else 1,
        e.ptr,
        e.nbr,
        front,
        batch,
        count=count,
        replace=int(replace),
        temporal=temporal,
        node_time=_or(e.node_time),
        edge_time=_or(e.edge_time),
        seed_time=_or(seed_time),
        last=int(last),
        lo=lo,
        n=n,
        step=STEP,
    )
    if bad >= kernels.BROKEN:
        raise GraphChanged
    if bad:
        which = "edge_time" if temporal == kernels.EDGE_TIME else "node_time"
        raise ValueError(
            f"temporal sampling needs each node's neighbours sorted by time ('{which}'), but {bad} "
            f"neighbourhood(s) are not: sort the edges of each node by time (PyG's samplers do so)"
        )
    offsets = np.zeros(m + 1, np.int64)
    np.cumsum(n, out=offsets[1:])
    total = int(offsets[-1])
    drawn = np.empty(total, np.int64)
    nbr = np.empty(total, np.int64)
    weight = e.weight if e.weight is not None else _NONE_F
    base, sequence = randomness
    zero = launch(
        kernels.draw,
        None,
        items,
        threads if total >= PARALLEL_MIN_DRAWS else 1,
        lo,
        offsets,
        replace=int(replace),
        every=int(count < 0),
        weight=weight,
        weighted=int(e.weight is not None),
        base=base,
        sequence=sequence,
        row=e.nbr,
        out=drawn,
        nbr=nbr,
        step=STEP,
    )
    if zero:
        raise ValueError(
            f"{zero} node(s) were to draw neighbours with replacement by edge weights that are all 0: there is "
            f"nothing to draw from (give them a positive weight, or sample without replacement)"
        )
    neighbors.reserve(total)
    local = np.empty(total, np.int64)
    status = np.zeros(1, np.int64)
    key_base = (1 << KEY_BITS) if disjoint else 0
    neighbors.count = kernels.relabel(
        nbr,
        offsets,
        batch,
        num_nodes=key_base,
        limit=e.limit,
        table=neighbors.table,
        shift=neighbors.shift,
        nodes=neighbors.keys,
        count=neighbors.count,
        col=local,
        status=status,
    )
    if status[0]:
        raise GraphChanged
    return local, np.repeat(np.arange(begin, end, dtype=np.int64), n), drawn


def _or(a: Optional[np.ndarray]) -> np.ndarray:
    return _NONE_I if a is None else a


def induced(e: EdgeType, targets: Nodes, sources: Nodes) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every edge of ``e`` between sampled nodes: (source local, target local, edge position), by target."""
    graph = dict(count=targets.count, table=sources.table, shift=sources.shift)
    status = np.zeros(1, np.int64)
    # once to count the edges, once to fill them in
    total = kernels.induced(
        e.ptr, e.nbr, targets.keys, **graph, fill=0, out_row=_NONE_I, out_col=_NONE_I, out_edge=_NONE_I, status=status
    )
    if status[0]:
        raise GraphChanged
    rows, cols, edges = (np.empty(total, np.int64) for _ in range(3))
    kernels.induced(
        e.ptr, e.nbr, targets.keys, **graph, fill=1, out_row=rows, out_col=cols, out_edge=edges, status=status
    )
    return rows, cols, edges


def node_ids(nodes: Nodes, disjoint: bool, dtype: torch.dtype) -> torch.Tensor:
    """The sampled nodes' ids (``[N]``), or ``[N, 2]`` (batch, node) pairs when disjoint."""
    keys = torch.from_numpy(nodes.keys[: nodes.count].copy())
    if not disjoint:
        return keys.to(dtype)
    return torch.stack([keys >> KEY_BITS, keys & ((1 << KEY_BITS) - 1)], dim=1).to(dtype)
