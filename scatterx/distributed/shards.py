"""Shard files: a partitioned graph saved once, one file per rank, so that a rank loads only its own share.

``save_shards(out_dir, graph_partition, edge_index, x=..., y=..., ...)`` writes ``meta.json`` (the partition, its
cost, an id naming this partition) and ``rank-<r>-of-<N>.pt`` per rank: the rank's nodes (features, labels, masks,
their ids in the caller's numbering) and the edges into them, in the new ids. ``load_shard(out_dir)`` reads this
rank's file, checks with the other ranks that they all read shards of one partition, and builds the
``ShardedGraph`` (a collective). The memory a rank holds is its share, never the whole graph.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
from typing import Dict, Optional, Tuple, Union

import torch
import torch.distributed as dist

from .graph import ShardedGraph
from .node_partition import NodePartition
from .partition_graph import (  # noqa: F401  (partition_graph: the examples)
    GraphPartition,
    check_edge_index,
    cut_stats,
    partition_graph,
)
from .plan import agree, rank_and_world

FORMAT = 1


def shard_file(out_dir: str, rank: int, world: int) -> str:
    return os.path.join(out_dir, f"rank-{rank}-of-{world}.pt")


def save_shards(
    out_dir: str,
    graph_partition: GraphPartition,
    edge_index: torch.Tensor,
    *,
    x: torch.Tensor,
    y: Optional[torch.Tensor] = None,
    masks: Optional[Dict[str, torch.Tensor]] = None,
    edge_attrs: Optional[Dict[str, torch.Tensor]] = None,
    name: str = "graph",
) -> dict:
    """Write one shard file per rank, and ``meta.json``, into ``out_dir`` (created if missing).

    Args:
        out_dir: the directory.
        graph_partition: from :func:`partition_graph` on this graph.
        edge_index: integer ``[2, E]``, the caller's node ids.
        x: ``(num_nodes, *F)`` node features (caller's order).
        y: optional ``(num_nodes, ...)`` labels.
        masks: optional boolean ``(num_nodes,)`` tensors by name (``train_mask``, ``val_mask``, ...).
        edge_attrs: optional per-edge tensors by name (``(E, ...)``: ``edge_weight``, ``edge_attr``), saved with
            each rank's edges, in their order.
        name: the graph's name, kept in ``meta.json``.

    Returns:
        The metadata written to ``meta.json`` (a dict): ``partition_id``, ``world_size``, ``bounds``, ``method``,
        ``num_nodes``, ``num_edges``, ``edge_cut``, ``halo`` per rank, and the global count of each mask's nodes.

    Raises:
        TypeError: ``edge_index`` is not an integer tensor, or a mask not a boolean one.
        ValueError: ``edge_index`` is not ``[2, E]``; ``x``, ``y`` or a mask does not have one row per node, or a
            per-edge tensor one row per edge.
        IndexError: an id of ``edge_index`` is out of range.

    Example:
        >>> import tempfile
        >>> edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
        >>> out_dir = tempfile.mkdtemp()
        >>> meta = save_shards(out_dir, partition_graph(edge_index, 4, 2), edge_index, x=torch.zeros(4, 3))
        >>> meta["world_size"], meta["bounds"], meta["edge_cut"], meta["halo"]
        (2, [0, 2, 4], 2, [1, 1])
        >>> import os
        >>> sorted(os.listdir(out_dir))
        ['meta.json', 'rank-0-of-2.pt', 'rank-1-of-2.pt']
    """
    part, order = graph_partition.partition, graph_partition.order
    n = part.num_nodes
    masks, edge_attrs = dict(masks or {}), dict(edge_attrs or {})
    check_edge_index(edge_index, n)  # (nothing is written before these checks)
    for label, m in masks.items():
        if m.dtype != torch.bool:
            raise TypeError(f"the mask {label!r} must be a boolean tensor, got {m.dtype}")
    for label, t in [("x", x), ("y", y), *masks.items()]:
        if t is not None and (t.dim() == 0 or t.size(0) != n):
            raise ValueError(f"{label} must have one row per node ({n}), got shape {tuple(t.shape)}")
    for label, t in edge_attrs.items():
        if t.dim() == 0 or t.size(0) != edge_index.size(1):
            raise ValueError(f"{label} must have one row per edge ({edge_index.size(1)}), got shape {tuple(t.shape)}")
    new_edges = graph_partition.relabel(edge_index.to(torch.int64))
    stats = cut_stats(new_edges, part)
    digest = hashlib.sha256()
    digest.update(repr(part.bounds).encode())
    digest.update(order.to(torch.int64).numpy().tobytes())
    digest.update(new_edges.numpy().tobytes())
    partition_id = digest.hexdigest()[:16]
    meta = dict(
        format=FORMAT,
        name=name,
        partition_id=partition_id,
        world_size=part.world_size,
        bounds=list(part.bounds),
        method=graph_partition.method,
        num_nodes=n,
        num_edges=int(new_edges.size(1)),
        edge_cut=stats.edge_cut,
        halo=stats.halo,
        edges=stats.edges,
        mask_counts={k: int(m.sum()) for k, m in masks.items()},
    )
    if y is not None and y.numel() and not y.is_floating_point():
        meta["classes"] = int(y.max()) + 1
    os.makedirs(out_dir, exist_ok=True)
    # the edges grouped by their target's owner, in their given order within a rank
    owner = part.owner_unchecked(new_edges[1])
    by_owner = torch.sort(owner, stable=True).indices
    split = torch.split(by_owner, stats.edges)
    for r in range(part.world_size):
        start, stop = part.range(r)
        nodes = order[start:stop]
        shard = dict(
            format=FORMAT,
            partition_id=partition_id,
            rank=r,
            world_size=part.world_size,
            bounds=list(part.bounds),
            node_ids=nodes.clone(),
            edge_index=new_edges[:, split[r]].clone(),
            x=x[nodes].clone(),
            y=None if y is None else y[nodes].clone(),
            masks={k: m[nodes].clone() for k, m in masks.items()},
            mask_counts=meta["mask_counts"],
            edge_attrs={k: t[split[r]].clone() for k, t in edge_attrs.items()},
        )
        torch.save(shard, shard_file(out_dir, r, part.world_size))
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    return meta


class Shard:
    """This rank's share of a saved graph, as :func:`load_shard` returns it: what a PyG ``Data`` would hold, for
    this rank's nodes only.

    Attributes: ``x``, ``y`` and each saved mask (``train_mask``, ...) -- the rows of the nodes this rank owns;
    ``edge_index`` the :class:`ShardedGraph` (pass it to the layers in place of the global ``edge_index``);
    ``node_ids`` the owned nodes' ids in the numbering the shards were saved from; ``partition``; ``meta`` (the
    ``meta.json`` dict); ``train_share``: this rank's training nodes over all ranks' (the weight of its local mean
    loss in the global one, for :func:`replicate`); each saved per-edge tensor (``edge_weight``, ...), in the order
    of ``edge_index``'s edges.

    Args:
        edge_index: the rank's :class:`ShardedGraph`.
        x, y: the owned nodes' features and labels (``y`` may be None).
        masks: boolean masks of the owned nodes by name.
        node_ids: the owned nodes' ids in the saved graph's numbering.
        meta: the ``meta.json`` dict.
        mask_counts: each mask's count of nodes over all ranks.
        edge_attrs: per-edge tensors by name (``edge_weight``, ``edge_attr``), in the order of the ShardedGraph's
            edges: pass them to the layers with it.

    Raises:
        : Nothing of its own (:func:`load_shard` checks what it reads).

    Example:
        >>> import tempfile
        >>> edge_index = torch.tensor([[0, 1, 2], [1, 2, 0]])
        >>> out_dir = tempfile.mkdtemp()
        >>> _ = save_shards(out_dir, partition_graph(edge_index, 3, 1), edge_index, x=torch.ones(3, 2),
        ...                 masks={"train_mask": torch.tensor([True, False, True])})
        >>> shard = load_shard(out_dir)  # one process: rank 0 of 1
        >>> shard.num_nodes, shard.train_mask, shard.train_share
        (3, tensor([ True, False,  True]), 1.0)
    """

    def __init__(
        self,
        edge_index: ShardedGraph,
        x: torch.Tensor,
        y: Optional[torch.Tensor],
        masks: Dict[str, torch.Tensor],
        node_ids: torch.Tensor,
        meta: dict,
        mask_counts: Dict[str, int],
        edge_attrs: Optional[Dict[str, torch.Tensor]] = None,
    ):
        self.edge_index, self.x, self.y, self.node_ids, self.meta = edge_index, x, y, node_ids, meta
        self.partition = edge_index.partition
        self.masks, self.edge_attrs = masks, dict(edge_attrs or {})
        for k, m in [*masks.items(), *self.edge_attrs.items()]:
            setattr(self, k, m)
        total = mask_counts.get("train_mask")
        mine = int(masks["train_mask"].sum()) if "train_mask" in masks else None
        self.train_share = (mine / total if total else 0.0) if mine is not None else 1.0 / edge_index.world

    @property
    def num_nodes(self) -> int:
        """The number of nodes this rank owns (the rows of ``x``)."""
        return self.edge_index.num_owned

    def __repr__(self) -> str:
        return f"Shard({self.edge_index!r}, x {tuple(self.x.shape)}, masks {sorted(self.masks)})"


def init_from_environment(backend: Optional[str] = None) -> bool:
    """Initialise ``torch.distributed`` from torchrun's environment (``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``...)
    when it is set and no group exists yet: gloo, or NCCL when ``backend`` says so. Returns whether it did.

    The group it makes is destroyed at interpreter exit unless the script has done so: a gloo group left to the
    interpreter's teardown can abort the process ("terminate called without an active exception") after the
    script has finished its work."""
    if not dist.is_available() or dist.is_initialized() or "WORLD_SIZE" not in os.environ:
        return False
    dist.init_process_group(backend or "gloo")
    atexit.register(_destroy_if_alive)
    return True


def _destroy_if_alive() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def load_shard(
    out_dir: str,
    *,
    device: Optional[Union[torch.device, str, int]] = None,
    group: Optional[torch.distributed.ProcessGroup] = None,
    backend: Optional[str] = None,
) -> Shard:
    """This rank's shard of the graph saved in ``out_dir`` (by ``scatterx partition`` or :func:`save_shards`).

    A collective: every rank of ``group`` calls it together. Under ``torchrun`` without a process group yet, it
    first initialises one from the environment (``backend``: default gloo; ``"nccl"`` for GPUs). It reads only
    this rank's file, and checks that every rank found its file, made for this world size, of one partition:
    otherwise every rank raises the same exception, naming the rank that found the problem.

    Args:
        out_dir: the directory of ``meta.json`` and the shard files.
        device: where to put the shard's tensors (default: where they were saved, the CPU).
        group: the ``torch.distributed`` process group; default the whole world (one process without
            ``torch.distributed``).
        backend: the backend of the group this function initialises under torchrun.

    Returns:
        A :class:`Shard`.

    Raises:
        FileNotFoundError: ``meta.json`` or this rank's shard file is missing (on any rank).
        ValueError: the shards were made for another number of ranks, a file belongs to another partition, or the
            ranks read shards of different partitions.

    Example:
        >>> import tempfile
        >>> edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
        >>> out_dir = tempfile.mkdtemp()
        >>> _ = save_shards(out_dir, partition_graph(edge_index, 4, 1), edge_index, x=torch.arange(4.0))
        >>> shard = load_shard(out_dir)  # one process: rank 0 of 1
        >>> shard.edge_index
        ShardedGraph(rank 0 of 1: 4 owned nodes, 4 edges, 0 halo nodes)
        >>> shard.x
        tensor([0., 1., 2., 3.])
    """
    init_from_environment(backend)
    rank, world = rank_and_world(group)
    problem: Optional[Exception] = None
    loaded: Optional[_Loaded] = None
    meta: dict = {}
    try:
        loaded, meta = _read(out_dir, rank, world, device)
    except FileNotFoundError as e:
        problem = e
    except Exception as e:  # whatever it is, every rank must raise it: a rank leaving alone hangs the others
        problem = (
            e
            if isinstance(e, ValueError) and type(e) is ValueError
            else ValueError(f"cannot read the shard of rank {rank} in {out_dir}: {type(e).__name__}: {e}")
        )
    agree(problem, f"the shards of partition {meta.get('partition_id')} ({meta.get('world_size')} ranks)", group)
    assert loaded is not None  # else this rank found a problem, and agree() raised it
    part, edge_index, x, y, masks, edge_attrs, node_ids = loaded
    graph = ShardedGraph(edge_index, part, group)
    return Shard(graph, x, y, masks, node_ids, meta, meta.get("mask_counts", {}), edge_attrs)


#: a rank's shard as read: partition, edge_index, x, y, masks, per-edge tensors, node ids
_Loaded = Tuple[
    NodePartition,
    torch.Tensor,
    torch.Tensor,
    Optional[torch.Tensor],
    Dict[str, torch.Tensor],
    Dict[str, torch.Tensor],
    torch.Tensor,
]


def _read(out_dir: str, rank: int, world: int, device: Optional[Union[torch.device, str, int]]) -> Tuple[_Loaded, dict]:
    """This rank's shard file, checked against ``meta.json`` and moved to ``device``: everything that can fail on
    one rank only, before the ranks agree."""
    with open(os.path.join(out_dir, "meta.json")) as f:
        meta = json.load(f)
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ValueError(f"{out_dir}/meta.json is not a scatterx shard index of format {FORMAT}")
    if meta.get("world_size") != world:
        raise ValueError(
            f"{out_dir} holds shards for {meta.get('world_size')} ranks, but the process group has "
            f"{world}: partition again with --world {world}"
        )
    path = shard_file(out_dir, rank, world)
    if not os.path.exists(path):
        raise FileNotFoundError(f"the shard file {path} is missing")
    shard = torch.load(path, weights_only=True)
    if (
        not isinstance(shard, dict)
        or shard.get("partition_id") != meta.get("partition_id")
        or shard.get("rank") != rank
    ):
        found = (shard.get("partition_id"), shard.get("rank")) if isinstance(shard, dict) else (None, None)
        raise ValueError(
            f"{path} belongs to partition {found[0]} (rank {found[1]}), not to "
            f"{meta.get('partition_id')} of {out_dir}/meta.json"
        )
    part = NodePartition(shard["bounds"])

    def move(t: torch.Tensor) -> torch.Tensor:
        return t if device is None else t.to(device)

    y = shard["y"]
    masks = {k: move(m) for k, m in shard["masks"].items()}
    edge_attrs = {k: move(v) for k, v in shard.get("edge_attrs", {}).items()}
    loaded: _Loaded = (
        part,
        move(shard["edge_index"]),
        move(shard["x"]),
        None if y is None else move(y),
        masks,
        edge_attrs,
        move(shard["node_ids"]),
    )
    return loaded, meta
