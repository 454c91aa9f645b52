"""``index_scatter_reduce`` over ranks: each rank holds some edges, each owner gets its nodes' reductions.

Three steps along the plan (``plan.py``):

1. **Pre-reduce here**, by destination: the rank's edges reduced into one row per distinct target id (the core
   ``index_scatter_reduce`` on the plan's ``inverse``), so only one row per (rank, distinct remote target) travels.
   mean travels as its sum; the counts are in the plan (``degree``: every rank's entries per owned node).
2. **Push** the rows to their owners (one ``all_to_all_single``).
3. **Combine on the owner** with the same reduction (sum of sums, max of maxima, product of products: each is its
   own combine in the reduction table), as a sorted segment reduction over what arrived (the plan's stable order):
   deterministic for a fixed partition and world size. mean: the sum over the total count (floor division for
   integers, as the core op); rows no rank names are 0.

Gradients run the plan backwards (``pull``: the owner's rows back to the ranks that named them): sum and mean
pull the output gradient (mean: over the count); amax/amin pull the result, count each rank's members equal to
it, push and sum those counts (ties are split evenly over all ranks' tied members, as the core op splits them),
and pull the gradient over the total; prod pushes each rank's product of non-zero members and its number of
zeros, combines them on the owner, and pulls them back with the gradient (one exchange): the exact product of
the other members, zeros included.
"""

from __future__ import annotations

from typing import Optional, Union

import torch

from .._reductions import SUPPORTED_DTYPES, accumulator_dtype, resolve
from ..backends._common import is_tie
from ..ops import index_scatter_reduce as core
from ..ops._backward import _product_of_others
from .node_partition import NodePartition
from .plan import ExchangePlan, agree, rank_and_world

_SUM = "sum"


def index_scatter_reduce(
    index: Union[torch.Tensor, ExchangePlan],
    src: torch.Tensor,
    reduce: str = "sum",
    *,
    partition: NodePartition,
    sorted: bool = False,
    group: Optional[torch.distributed.ProcessGroup] = None,
) -> torch.Tensor:
    """The rows this rank owns of the reduction of every rank's ``src`` rows into the global target ids ``index``.

    Every rank holds some edges (``index``: their targets, global node ids; ``src``: one row each); the result on
    each rank is its own nodes' rows (``partition.range(rank)``) of the single-process
    ``scatterx.index_scatter_reduce(0, all_index, all_src, reduce, dim_size=partition.num_nodes)`` over all ranks'
    edges (up to the order of a floating-point sum). Rows no edge names are 0.

    Each rank first reduces its edges into one row per distinct target, so one row per (rank, remote target) is
    sent, in one ``all_to_all_single``; the owner combines what arrives with the same reduction, in a fixed order:
    the result is deterministic for a fixed partition and world size. A collective: every rank of ``group`` calls
    it together, and bad input on any rank raises the same exception on every rank, naming the rank that found it.
    Differentiable with respect to ``src`` (floating dtypes); the backward runs the exchange in reverse.

    Args:
        index: int32 or int64 ``(E,)``, the global target node ids of this rank's edges; or a :func:`plan` of them
            built before (reused for a static graph).
        src: ``(E, *F)``, the edges' rows, of one dtype and feature shape on every rank.
        reduce: ``"sum"``, ``"mean"``, ``"prod"``, ``"amax"``, ``"amin"`` (and the aliases of
            :func:`scatterx.index_scatter_reduce`: ``"add"``, ``"mul"``, ``"max"``, ``"min"``). ``"mean"`` divides
            by the number of edges of all ranks (floor division for integers).
        partition: the :class:`NodePartition` of the nodes over the ranks of ``group`` (the same on every rank).
        sorted: a promise that ``index`` is non-decreasing (checked); the plan finds out either way.
        group: the ``torch.distributed`` process group; default the whole world (one process when
            ``torch.distributed`` is not initialised).

    Returns:
        A new tensor ``(partition.size(rank), *F)`` of ``src``'s dtype and device.

    Raises:
        TypeError: ``partition`` is not a :class:`NodePartition`; ``index`` is neither a tensor nor an
            :class:`ExchangePlan`, or not int32/int64; ``src`` is not a tensor, or of a dtype scatterx does not reduce.
        ValueError: ``reduce`` is not a known name; ``src`` is 0-d or its rows are not ``index``'s entries;
            ``index`` is not 1-D, or not sorted with ``sorted=True``; ``partition.world_size`` is not the group's
            size; a plan was built for another partition; or the ranks' dtypes, feature shapes, partitions or
            reductions differ.
        IndexError: an id in ``index`` is negative or not below ``partition.num_nodes``.

    Example:
        >>> part = NodePartition.even(4, 1)  # one process: rank 0 owns nodes 0..3
        >>> index = torch.tensor([3, 0, 3])
        >>> src = torch.tensor([[1.0], [2.0], [3.0]])
        >>> index_scatter_reduce(index, src, "sum", partition=part)
        tensor([[2.],
                [0.],
                [0.],
                [4.]])
        >>> index_scatter_reduce(index, src, "amax", partition=part)
        tensor([[2.],
                [0.],
                [0.],
                [3.]])
    """
    _rank, world = rank_and_world(group)
    problem: Optional[Exception] = None
    try:
        red = resolve(reduce)
    except ValueError as error:
        red, problem = None, error
    if problem is None:
        try:
            problem = _check(index, src, partition, sorted, world)
        except Exception as error:  # a check torch itself refuses (a meta tensor's values): agreed on, not raised here
            problem = error
    signature = (
        "index_scatter_reduce",
        red.name if red else reduce,
        str(getattr(src, "dtype", None)),
        tuple(getattr(src, "shape", (None,))[1:]),
        getattr(partition, "bounds", None),
    )
    agree(problem, signature, group)
    the_plan = index if isinstance(index, ExchangePlan) else ExchangePlan(index, partition, group)
    return _ShardedScatterReduce.apply(src, the_plan, red)


def _check(index, src, partition, sorted, world) -> Optional[Exception]:
    if not isinstance(partition, NodePartition):
        return TypeError(f"partition must be a scatterx.distributed.NodePartition, got {type(partition).__name__}")
    if not isinstance(src, torch.Tensor):
        return TypeError(f"src must be a torch.Tensor, got {type(src).__name__}")
    if src.dtype not in SUPPORTED_DTYPES:
        return TypeError(f"src has dtype {src.dtype}, which scatterx does not reduce")
    if src.dim() == 0:
        return ValueError("src must have a row dim (dim 0), got a 0-d tensor")
    if isinstance(index, ExchangePlan):
        if index.partition != partition:
            return ValueError(f"the plan was built for {index.partition}, not {partition}")
        if index.world != world:
            return ValueError(f"the plan was built for {index.world} ranks, the group has {world}")
        entries = index.num_entries
    elif isinstance(index, torch.Tensor):
        if index.dtype not in (torch.int32, torch.int64):  # (before the order check below reads it)
            return TypeError(f"index must be int32 or int64, got {index.dtype}")
        entries = index.numel()
        if sorted and index.dim() == 1 and entries > 1 and not bool((index[1:] >= index[:-1]).all()):
            return ValueError("sorted=True promises a non-decreasing index, and this one is not")
    else:
        return TypeError(f"index must be a torch.Tensor or a scatterx.distributed plan, got {type(index).__name__}")
    if src.size(0) != entries:
        return ValueError(f"src has {src.size(0)} rows but index has {entries} entries")
    return None


def _per_row(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return values.view(-1, *([1] * (like.dim() - 1)))


def _reduce_here(plan: ExchangePlan, rows: torch.Tensor, reduce: str) -> torch.Tensor:
    """Rows per entry of this rank's index, reduced to one per distinct id."""
    return core(0, plan.inverse, rows, reduce, plan.index_sorted, dim_size=plan.ids.numel())


def _combine(plan: ExchangePlan, arrived: torch.Tensor, reduce: str) -> torch.Tensor:
    """What the other ranks pushed, combined per owned node (a sorted segment reduction, in rank order)."""
    return core(0, plan.local_sorted, arrived.index_select(0, plan.order), reduce, True, dim_size=plan.num_owned)


def _reduce_to_owners(plan: ExchangePlan, rows: torch.Tensor, reduce: str) -> torch.Tensor:
    return _combine(plan, plan.push(_reduce_here(plan, rows, reduce)), reduce)


def _pull_per_entry(plan: ExchangePlan, owned: torch.Tensor) -> torch.Tensor:
    """Owned rows (num_owned, ...) back to every entry of this rank's index that names them."""
    return plan.pull(owned.index_select(0, plan.local)).index_select(0, plan.inverse)


class _ShardedScatterReduce(torch.autograd.Function):
    # Half types are reduced, sent and combined in float32 and rounded once at the end, as the core op accumulates
    # them: a rank's partial sum rounded to float16 before it travels can overflow where the whole sum does not
    # (40000 + 30000 on one rank, -60000 on another). Twice the traffic of the half type, for the same result.
    @staticmethod
    def forward(ctx, src, plan, red):
        name = _SUM if red.divide_by_count else red.name
        out = _reduce_to_owners(plan, src.to(accumulator_dtype(src.dtype)), name)
        if red.divide_by_count:
            count = _per_row(plan.degree.clamp(min=1), out)
            if out.is_floating_point():
                out = out / count.to(out.dtype)
            else:  # floor division, as the core op; in src's integer type (int64 counts would promote it)
                out = torch.div(out, count, rounding_mode="floor").to(out.dtype)
        out = out.to(src.dtype)
        ctx.plan, ctx.red = plan, red
        if not red.linear:
            ctx.save_for_backward(src, out)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad):
        plan, red = ctx.plan, ctx.red
        grad_dtype = grad.dtype
        grad = grad.contiguous().to(accumulator_dtype(grad_dtype))
        if red.linear:
            if red.divide_by_count:
                grad = grad / _per_row(plan.degree.clamp(min=1), grad).to(grad.dtype)
            return _pull_per_entry(plan, grad.to(grad_dtype)), None, None
        src, out = ctx.saved_tensors
        if red.selects:
            tied = is_tie(src, _pull_per_entry(plan, out))  # equal, or both NaN: the kernels' rule
            ties = _reduce_to_owners(plan, tied.to(grad.dtype), _SUM).clamp(min=1)
            return (tied * _pull_per_entry(plan, grad / ties)).to(grad_dtype), None, None
        # prod: each rank's product of non-zero members and its count of zeros, combined on the owner
        src = src.to(grad.dtype)
        zero = src == 0
        nonzero_product = _reduce_to_owners(plan, torch.where(zero, torch.ones_like(src), src), red.name)
        zeros = _reduce_to_owners(plan, zero.to(grad.dtype), _SUM)
        packed = torch.stack([grad, zeros, nonzero_product], dim=1)
        back = _pull_per_entry(plan, packed)
        return _product_of_others(src, zero, back[:, 1], back[:, 2], back[:, 0]).to(grad_dtype), None, None
