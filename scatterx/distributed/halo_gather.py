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
from .node_partition import NodePartition
from .plan import ExchangePlan, agree, rank_and_world


def halo_gather(
    x_local: torch.Tensor,
    index: Union[torch.Tensor, ExchangePlan],
    *,
    partition: NodePartition,
    group: Optional[torch.distributed.ProcessGroup] = None,
) -> torch.Tensor:
    """``x[index]`` for the global node features ``x`` of which this rank holds only its own nodes' rows.

    Each rank holds the rows of the nodes it owns (``x_local``, ``partition.range(rank)``) and names any global
    node ids (``index``, e.g. the sources of its edges). Each distinct id is requested once from its owner, which
    sends its row once per requesting rank, in one ``all_to_all_single``. A collective: every rank of ``group``
    calls it together, and bad input on any rank raises the same exception on every rank, naming the rank that
    found it. Differentiable with respect to ``x_local`` (floating dtypes): the gradients of the entries are summed
    per id, sent back to the owners and summed there, deterministically for a fixed partition and world size.

    Args:
        x_local: ``(partition.size(rank), *F)``, the rows of the nodes this rank owns, of one dtype and feature
            shape on every rank.
        index: int32 or int64 ``(M,)``, the global node ids this rank needs; or a :func:`plan` of them built before
            (reused for a static graph).
        partition: the :class:`NodePartition` of the nodes over the ranks of ``group`` (the same on every rank).
        group: the ``torch.distributed`` process group; default the whole world (one process when
            ``torch.distributed`` is not initialised).

    Returns:
        A new tensor ``(M, *F)`` of ``x_local``'s dtype and device: the row of each id in ``index``.

    Raises:
        TypeError: ``partition`` is not a :class:`NodePartition`; ``x_local`` is not a tensor; ``index`` is neither
            a tensor nor a :class:`ExchangePlan`, or not int32/int64.
        ValueError: ``x_local`` is 0-d or its rows are not the number of nodes this rank owns; ``index`` is not
            1-D; ``partition.world_size`` is not the group's size; a plan was built for another partition; or the
            ranks' dtypes, feature shapes or partitions differ.
        IndexError: an id in ``index`` is negative or not below ``partition.num_nodes``.

    Example:
        >>> part = NodePartition.even(4, 1)  # one process: rank 0 owns nodes 0..3
        >>> x_local = torch.tensor([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
        >>> halo_gather(x_local, torch.tensor([3, 3, 1]), partition=part)
        tensor([[6., 7.],
                [6., 7.],
                [2., 3.]])
    """
    rank, world = rank_and_world(group)
    problem = _check(x_local, index, partition, rank, world)
    signature = (
        "halo_gather",
        str(getattr(x_local, "dtype", None)),
        tuple(getattr(x_local, "shape", (None,))[1:]),
        getattr(partition, "bounds", None),
    )
    agree(problem, signature, group)
    the_plan = index if isinstance(index, ExchangePlan) else ExchangePlan(index, partition, group)
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
    if isinstance(index, ExchangePlan):
        if index.partition != partition:
            return ValueError(f"the plan was built for {index.partition}, not {partition}")
    elif not isinstance(index, torch.Tensor):
        return TypeError(f"index must be a torch.Tensor or a scatterx.distributed plan, got {type(index).__name__}")
    return None


class _HaloGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x_local, plan):
        ctx.plan = plan
        rows = plan.pull(x_local.index_select(0, plan.local))
        return rows if plan.distinct else rows.index_select(0, plan.inverse)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        plan = ctx.plan
        if plan.distinct:
            per_id = grad.contiguous()
        else:
            per_id = core(0, plan.inverse, grad.contiguous(), "sum", plan.index_sorted, dim_size=plan.ids.numel())
        arrived = plan.push(per_id)
        grad_x = core(0, plan.local_sorted, arrived.index_select(0, plan.order), "sum", True, dim_size=plan.num_owned)
        return grad_x, None
