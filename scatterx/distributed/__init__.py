"""Full-graph GNN training over several processes: sharded graphs a PyG model runs on, the partitioner and shard
files that make them, and the sharded scatter-reduce and halo gather underneath, over ``torch.distributed``.

A PyG training script changes in two lines (with ``scatterx.pyg``'s switch on)::

    data = sxd.load_shard("shards/")                          # this rank's shard; data.edge_index: a ShardedGraph
    sxd.replicate(model, optimizer, weight=data.train_share)  # parameters checked equal, gradients summed

:func:`partition_graph` (even ranges, or METIS) and :func:`save_shards` (or ``scatterx partition``) write one file
per rank; :func:`load_shard` reads only this rank's. A :class:`ShardedGraph` holds the edges into the rank's nodes
in local numbers and fetches the rows of the remote sources (its halo) with :func:`halo_gather` along a plan built
once.

The primitives:

When a graph's node features do not fit one process, the nodes are split over the ranks of a process group (a
:class:`NodePartition`: one contiguous range of node ids per rank): each rank holds its own nodes' rows and a share
of the edges, whose endpoint ids stay global. Message passing then takes two collectives:

- :func:`halo_gather`: the rows of the nodes a rank's edges name, wherever they live (``x[index]``);
- :func:`index_scatter_reduce`: the rows of every rank's edges reduced into their target nodes, each rank
  receiving the rows of the nodes it owns.

::

    import scatterx.distributed as sxd

    part = sxd.NodePartition.even(num_nodes, world_size)
    x_j = sxd.halo_gather(x_local, source_ids, partition=part)                   # x[source_ids]
    out = sxd.index_scatter_reduce(target_ids, messages, "sum", partition=part)  # this rank's rows
    targets = sxd.plan(target_ids, part)  # a static graph: the exchange pattern once, passed in place of the ids

Both are differentiable, deterministic for a fixed partition and world size, and run on gloo (CPU) or NCCL (GPU):
one ``all_to_all_single`` per exchange, counts first, each distinct id's row sent once per rank that names it
(:data:`STATS` counts the bytes). Every rank of the group calls them together; bad input on any rank raises the
same exception on every rank, naming the rank that found it, rather than leaving the others waiting.

Without an initialised ``torch.distributed``, the process is rank 0 of 1 (:func:`rank_and_world`) and owns every
node of a one-rank partition: the same code runs in a single process.
"""

# node_partition.py: who owns what; plan.py: the exchange pattern, the collectives and the errors that agree across
# ranks; one file per op. No transport of our own: all_to_all_single with variable splits, counts first.
# graph.py: a rank's share of a graph (ShardedGraph); partition_graph.py: even and METIS partitions, their cost;
# shards.py: shard files, saved once and loaded per rank; replicate.py: one model trained on every rank. The PyG
# layers that run on a ShardedGraph are in scatterx/pyg/sharded.py.

from .graph import ShardedGraph
from .halo_gather import halo_gather
from .index_scatter_reduce import index_scatter_reduce
from .node_partition import NodePartition
from .partition_graph import CutStats, GraphPartition, cut_stats, partition_graph
from .plan import STATS as _STATS
from .plan import ExchangePlan, plan, rank_and_world
from .replicate import replicate
from .shards import Shard, load_shard, save_shards

#: What this process has sent to other ranks since the last ``STATS.reset()``, in three counters.
#: ``STATS.bytes_sent`` is the bytes of the rows moved along plans -- by :func:`index_scatter_reduce` and
#: :func:`halo_gather`, forward and backward, and by :meth:`ExchangePlan.push` and :meth:`ExchangePlan.pull` --
#: not counting a rank's rows to itself nor the building of plans; ``STATS.exchanges`` is the number of those row
#: exchanges, and ``STATS.control_bytes`` about the size of the small agreement messages the ranks exchange to check
#: their inputs. In a single process the bytes stay 0.
STATS = _STATS

__all__ = [
    "STATS",
    "CutStats",
    "ExchangePlan",
    "GraphPartition",
    "NodePartition",
    "Shard",
    "ShardedGraph",
    "cut_stats",
    "halo_gather",
    "index_scatter_reduce",
    "load_shard",
    "partition_graph",
    "plan",
    "rank_and_world",
    "replicate",
    "save_shards",
]
