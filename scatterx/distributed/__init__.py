"""Sharded scatter-reduce and halo gather over ``torch.distributed`` (gloo on CPU, NCCL on GPU).

Full-graph GNN training past one machine's memory needs two primitives: reduce partial aggregates to the rank
that owns each target node, and fetch the source-node rows an edge shard needs::

    from scatterx import distributed as sxd
    part = sxd.NodePartition.even(num_nodes, world_size)       # contiguous ranges; also NodePartition(bounds)
    out = sxd.index_scatter_reduce(index, src, "sum", partition=part)   # this rank's owned rows
    x_j = sxd.halo_gather(x_local, source_ids, partition=part)          # x[source_ids]
    p = sxd.plan(index, partition=part)   # a static graph: the exchange pattern once, passed in place of index

``partition.py`` (who owns what), ``plan.py`` (the exchange pattern, the collectives, errors that agree across
ranks), one file per op. No transport of our own: ``all_to_all_single`` with variable splits, counts first.
"""

from .halo_gather import halo_gather
from .index_scatter_reduce import index_scatter_reduce
from .partition import NodePartition
from .plan import STATS, Plan, plan, rank_and_world

__all__ = ["NodePartition", "index_scatter_reduce", "halo_gather", "plan", "Plan", "STATS", "rank_and_world"]
