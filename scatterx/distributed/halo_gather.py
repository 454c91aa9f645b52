"""``halo_gather``: the rows of the nodes this rank's edges name, wherever they live.

Along the plan (``plan.py``): each distinct id is requested once from its owner, the owner sends its row once per
requesting rank (``pull``), and the rows are spread over the entries (``x[index]``). The gradient is the reverse:
the entries' gradients summed per distinct id here, pushed to the owners, and summed there (sorted segment sums,
deterministic for a fixed partition and world size).
"""

from __future__ import annotations

from typing import Optional, Union

import torch

from ..ops import index_scatter_reduce as core
from .partition import NodePartition
from .plan import Plan, agree, rank_and_world


def halo_gather(
    x_local: torch.Tensor, index: Union[torch.Tensor, Plan], *, partition: NodePartition, group=None
) -> torch.Tensor:
    """``x[index]`` for the global node features ``x`` of which this rank holds its own rows.

    Args:
        x_local: (partition.size(rank), *F), the rows of the nodes this rank owns, of one dtype and feature shape
            on every rank.
        index: int32/int64 (M,), global node ids this rank needs; or a ``plan(index, partition)``.
        partition: the ``NodePartition`` of the nodes over the ranks of ``group``.
        group: the torch.distributed process group (default: the world; one process when not initialised).

    Returns (M, *F). A collective; bad input on any rank raises the same exception on every rank. Differentiable
    w.r.t. ``x_local`` (floating dtypes).
    """
    rank, world = rank_and_world(group)
    problem = _check(x_local, index, partition, rank, world)
    signature = ("halo_gather", str(getattr(x_local, "dtype", None)), tuple(getattr(x_local, "shape", (None,))[1:]),
                 getattr(partition, "bounds", None))
    agree(problem, signature, group)
    the_plan = index if isinstance(index, Plan) else Plan(index, partition, group)
    return _HaloGather.apply(x_local, the_plan)


def _check(x_local, index, partition, rank, world) -> Optional[Exception]:
    if not isinstance(partition, NodePartition):
        return TypeError(f"partition must be a scatterx.distributed.NodePartition, got {type(partition).__name__}")
    if not isinstance(x_local, torch.Tensor):
        return TypeError(f"x_local must be a torch.Tensor, got {type(x_local).__name__}")
    if x_local.dim() == 0:
        return ValueError("x_local must have a row dim (dim 0), got a 0-d tensor")
    if partition.world_size != world:
        return ValueError(f"the partition has {partition.world_size} ranks but the process group has {world}")
    owned = partition.size(rank)
    if x_local.size(0) != owned:
        return ValueError(f"x_local has {x_local.size(0)} rows but rank {rank} owns {owned} nodes under {partition}")
    if isinstance(index, Plan):
        if index.partition != partition:
            return ValueError(f"the plan was built for {index.partition}, not {partition}")
    elif not isinstance(index, torch.Tensor):
        return TypeError(f"index must be a torch.Tensor or a scatterx.distributed plan, got {type(index).__name__}")
    return None


class _HaloGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x_local, plan):
        ctx.plan = plan
        return plan.pull(x_local.index_select(0, plan.local)).index_select(0, plan.inverse)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        plan = ctx.plan
        per_id = core(0, plan.inverse, grad.contiguous(), "sum", plan.index_sorted, dim_size=plan.ids.numel())
        arrived = plan.push(per_id)
        grad_x = core(0, plan.local_sorted, arrived.index_select(0, plan.order), "sum", True, dim_size=plan.num_owned)
        return grad_x, None
