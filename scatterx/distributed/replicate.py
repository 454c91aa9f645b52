"""``replicate``: one model on every rank, trained as one -- the same parameters checked across ranks at the
start, the gradient of each rank's output weighted by the rank's share of the global loss, and before every
optimizer step the gradients summed over the ranks (one ``all_reduce`` per dtype), so that every rank takes the
same step.

Why the weight goes on the output's gradient, not on the parameters' gradients: on a sharded graph a rank's loss
reaches other ranks' computations (the halo rows it fetched), whose gradients are pushed back and land in those
ranks' parameter gradients. Scaling a rank's parameter gradients by its own share would scale the other ranks'
contributions with it; scaling where its loss enters the graph -- the model's output -- scales exactly its own."""

from __future__ import annotations

import hashlib
from typing import Dict, List, Optional, Tuple

import torch
import torch.distributed as dist

from .plan import rank_and_world


def replicate(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    *,
    weight: Optional[float] = None,
    group: Optional[torch.distributed.ProcessGroup] = None,
) -> torch.nn.Module:
    """Train ``model`` on every rank of ``group`` as one model.

    Checks that every rank's parameters are equal (same names, shapes, dtypes and values: build the model from one
    seed, or load one state dict); then scales the gradient flowing into the model's output (its forward's tensor
    result) by ``weight``, and before each ``optimizer.step()`` replaces every parameter's gradient by its sum over
    the ranks. With ``weight`` a rank's share of the global loss -- a :class:`Shard`'s ``train_share`` when each
    rank's loss is the mean over its own training nodes -- the step is the single-process step on the whole graph
    (the loss must depend on the parameters through the model's output only). A collective: every rank calls it,
    and every ``step``, together.

    Calling it again on the same model replaces what the previous call installed. The gradients are summed when
    ``optimizer.step()`` begins: what runs on them before -- gradient clipping, ``GradScaler.unscale_`` and its
    inf checks -- sees each rank's own; and every rank must call ``step()`` (a ``GradScaler`` that skips the step
    on one rank only leaves the others waiting).

    Args:
        model: the module (the same on every rank).
        optimizer: its optimizer.
        weight: this rank's weight in the sum; default ``1 / world_size`` (the mean of the ranks' gradients, as
            ``DistributedDataParallel``).
        group: the ``torch.distributed`` process group; default the whole world.

    Returns:
        ``model`` itself.

    Raises:
        ValueError: the ranks' parameters differ (on every rank, naming the first that differs).
        TypeError: (at a forward call) the model returned something other than a tensor, or a tuple or list of them.

    Example:
        >>> model = torch.nn.Linear(2, 1)
        >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> replicate(model, optimizer) is model  # one process: nothing to sum
        True
    """
    _rank, world = rank_and_world(group)
    named = list(model.named_parameters())
    if world > 1:
        mine = [(name, tuple(p.shape), str(p.dtype), _digest(p)) for name, p in named]
        everyone: List = [None] * world
        dist.all_gather_object(everyone, mine, group=group)
        for r, theirs in enumerate(everyone):
            if theirs != everyone[0]:
                diff = next((a[0] for a, b in zip(everyone[0], theirs) if a != b), "their number")
                raise ValueError(
                    f"the model's parameters differ between rank 0 and rank {r} (first: {diff}): build "
                    "the model from the same seed on every rank, or load one state dict"
                )
    share = 1.0 / world if weight is None else float(weight)

    def scaled(output):
        if isinstance(output, torch.Tensor):
            if output.requires_grad:
                output.register_hook(lambda grad: grad * share)
        elif isinstance(output, (tuple, list)):
            for item in output:
                scaled(item)
        elif output is not None:
            raise TypeError(
                f"replicate: the model returned a {type(output).__name__}; it scales the gradient of a "
                "tensor output, or of the tensors of a tuple or list"
            )

    def forward_hook(module, inputs, output):
        if share != 1.0:
            scaled(output)
        return None

    def step_pre_hook(opt, args, kwargs):
        if world > 1:
            _sum_gradients([p for g in opt.param_groups for p in g["params"] if p.requires_grad], group)
        return None

    # a second call replaces the first's hooks (its weight would otherwise apply twice)
    for handle in getattr(model, "_scatterx_replicate_hooks", ()):
        handle.remove()
    # torch annotates Module.__setattr__ for tensors and modules only, but stores any other value as a plain attribute
    model._scatterx_replicate_hooks = (  # type: ignore[assignment]  # torch's annotation is too narrow (above)
        model.register_forward_hook(forward_hook),
        optimizer.register_step_pre_hook(step_pre_hook),
    )
    return model


def _sum_gradients(params: List[torch.Tensor], group: Optional[torch.distributed.ProcessGroup]) -> None:
    """Each parameter's gradient summed over the ranks, one ``all_reduce`` per (device, dtype): the gradients and,
    after them, one flag per parameter counting the ranks that had one (a parameter no rank has a gradient for
    keeps None, as the optimizer then skips it)."""
    buckets: Dict[Tuple[torch.device, torch.dtype], List[torch.Tensor]] = {}
    for p in params:
        buckets.setdefault((p.device, p.dtype), []).append(p)
    for (device, dtype), bucket in buckets.items():
        sizes = [p.numel() for p in bucket]
        flat = torch.zeros(sum(sizes) + len(bucket), dtype=dtype, device=device)
        offset = 0
        for i, (p, n) in enumerate(zip(bucket, sizes)):
            if p.grad is not None:
                flat[offset : offset + n].copy_(p.grad.reshape(-1))
                flat[sum(sizes) + i] = 1
            offset += n
        dist.all_reduce(flat, group=group)
        had = flat[sum(sizes) :].tolist()
        offset = 0
        for i, (p, n) in enumerate(zip(bucket, sizes)):
            if had[i] > 0:
                summed = flat[offset : offset + n].view_as(p)
                if p.grad is None:
                    p.grad = summed.clone()
                else:
                    p.grad.copy_(summed)
            offset += n


def _digest(t: torch.Tensor) -> str:
    data = t.detach().cpu().contiguous().reshape(-1).view(torch.uint8)
    return hashlib.sha256(data.numpy().tobytes()).hexdigest()[:16]
