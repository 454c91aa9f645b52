"""``segment_logsumexp``: ``top + log(sum exp(x - top) + eps)`` over CSR segments, one value per segment and
feature, in one kernel (two passes over each segment's rows, nothing of ``src``'s size allocated).

It is the normaliser of torch_scatter's ``scatter_logsumexp`` (``flavour="logsumexp"``: ``top`` the largest member
above -inf, NaN members add nothing) and of ``scatter_log_softmax`` (``flavour="log_softmax"``: ``top`` is
``scatter_max``'s result -- 0 where nothing beats the lowest finite value -- and NaN propagates), which
``scatterx.torch_scatter`` runs on it. The gradient of ``out[s]`` w.r.t. a member ``x`` is its share
``exp((x - top) - log(S + eps))`` (``S`` the segment's sum; 0 where ``flavour="logsumexp"`` dropped a NaN), plus,
for the member that is ``top`` (the first of tied ones, as ``scatter_max`` selects it), ``eps / (S + eps)``: ``top``
is a function of the members, and with ``eps > 0`` the result is not invariant to it. The backward recomputes
``top`` and the member that is it (``segment_arg_reduce``) and ``S`` (torch ops) rather than reading ``out - top``
(rounded at ``top``'s magnitude), so it is exact for large values too, and autograd differentiates it again.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from ..backends import backend_for
from ._checks import check_integer_vector, check_src, check_tensor, normalize_dim
from ._library import define_op, needs_op, register_autograd
from ._segments import segment_of_entries
from .segment_arg_reduce import segment_arg_reduce_op

FLAVOURS = {"logsumexp": 0, "log_softmax": 1}


def segment_logsumexp(
    src: torch.Tensor,
    ptr: torch.Tensor,
    dim: int = 0,
    *,
    perm: Optional[torch.Tensor] = None,
    eps: float = 1e-12,
    flavour: str = "logsumexp",
) -> torch.Tensor:
    """Per segment ``s`` (positions ``ptr[s]:ptr[s+1]`` along ``dim``, rows ``perm[...]`` when given) and element of
    the other dims: ``top + log(sum exp(x - top) + eps)`` (see the module docstring for ``top`` and NaN). Floating
    ``src``; half types computed in float32. Differentiable w.r.t. ``src``.

    >>> segment_logsumexp(torch.tensor([0.0, 0.0, 1.0]), torch.tensor([0, 2, 3]), eps=0.0)
    tensor([0.6931, 1.0000])
    """
    src, ptr, perm, dim = _checked(src, ptr, dim, perm, flavour)
    if not needs_op(src):
        return _forward(src, ptr, perm, dim, eps, flavour)
    return segment_logsumexp_differentiable(src, ptr, perm, dim, eps, flavour)


def _checked(src, ptr, dim, perm, flavour):
    if flavour not in FLAVOURS:
        raise ValueError(f"flavour must be one of {sorted(FLAVOURS)}, got {flavour!r}")
    check_src(src)
    if not src.dtype.is_floating_point:
        raise TypeError(f"segment_logsumexp needs a floating src, got {src.dtype}")
    check_tensor(ptr, "ptr")
    src = src.view(1) if src.dim() == 0 else src
    dim = normalize_dim(dim, src.dim())
    ptr = check_integer_vector(ptr, "ptr", src)
    for name, t in (("ptr", ptr), ("perm", perm)):
        if t is not None and t.device != src.device:
            raise ValueError(f"{name} is on {t.device} but src is on {src.device}")
    if perm is not None:
        perm = check_integer_vector(perm, "perm", src)
    return src, ptr, perm, dim


def _forward(src: Tensor, ptr: Tensor, perm: Optional[Tensor], dim: int, eps: float, flavour: str) -> Tensor:
    """What ``torch.ops.scatterx.segment_logsumexp`` runs: every check (values included), then the kernel."""
    src, ptr, perm, dim = _checked(src, ptr, dim, perm, flavour)
    backend = backend_for(src)
    n = src.size(dim)
    if perm is not None:
        backend.check_index(perm, n, "perm", f"src.size({dim})")
        perm = perm.to(torch.int64).contiguous()
    ptr = backend.check_ptr(
        ptr, n if perm is None else perm.numel(), "src.size(dim)" if perm is None else "perm.numel()"
    )
    return backend.segment_logsumexp(src, ptr, perm, dim, FLAVOURS[flavour], float(eps))


def _fake(src, ptr, perm, dim, eps, flavour):
    shape = list(src.shape) or [1]
    shape[dim % len(shape)] = ptr.size(0) - 1
    return src.new_empty(shape)


segment_logsumexp_op = define_op("segment_logsumexp", _forward, _fake)


def _setup_context(ctx, inputs, output):
    src, ptr, perm, dim, eps, flavour = inputs
    ctx.given_shape = tuple(src.shape)
    ctx.dim = dim % max(src.dim(), 1)
    ctx.eps = float(eps)
    ctx.flavour = flavour
    ctx.save_for_backward(src.view(1) if src.dim() == 0 else src, ptr, perm)


def _along(t: Tensor, d: int, like: Tensor) -> Tensor:
    """A vector along dim ``d``, broadcast to ``like``'s shape."""
    return t.view([-1 if k == d else 1 for k in range(like.dim())]).expand_as(like)


def _autograd_backward(ctx, grad):
    """Each member's share of its segment's gradient (module docstring). ``top`` and the member that is it come
    from ``segment_arg_reduce``, whose selection rule (strictly above -inf, or above the dtype's lowest finite
    value for ``log_softmax``; NaN never; the first of ties) and fill (0 where nothing is selected) are the
    kernel's ``top``."""
    src, ptr, perm = ctx.saved_tensors
    d = ctx.dim
    eps = ctx.eps
    length = perm.numel() if perm is not None else src.size(d)
    segment = segment_of_entries(ptr.to(torch.int64), length)
    rows = perm.to(torch.int64) if perm is not None else torch.arange(length, device=src.device)
    x = src if perm is None else src.index_select(d, rows)
    wide = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype  # half types: as the kernel
    top, arg = segment_arg_reduce_op(src, ptr, perm, None, "amax", d, ctx.flavour == "log_softmax", "unselected")
    ids = _along(segment, d, x)
    shifted = x.to(wide) - top.to(wide).gather(d, ids)
    if ctx.flavour == "logsumexp":  # torch_scatter masks a NaN x - top to -inf: it adds nothing, and gets nothing
        shifted = shifted.masked_fill(torch.isnan(shifted), float("-inf"))
    total = torch.zeros_like(top, dtype=wide).index_add(d, segment, shifted.exp())
    share = torch.exp(shifted - torch.log(total + eps).gather(d, ids))
    if ctx.flavour == "logsumexp":
        share = torch.nan_to_num(share, nan=0.0, posinf=0.0)
    g = grad.index_select(d, segment) * share
    if perm is not None:
        g = torch.zeros_like(src, dtype=g.dtype).index_add(d, rows, g)
    if eps != 0.0:
        # the row that is top: eps / (S + eps) more, once -- also where ``perm`` names it at several positions of
        # its segment (``arg`` is a row; ``src.size(d)`` where nothing was selected, a spare row dropped here)
        shape = list(top.shape)
        shape[d] = src.size(d) + 1
        extra = grad * (eps / (total + eps))
        g = g + torch.zeros(shape, dtype=extra.dtype, device=g.device).scatter_add(d, arg, extra).narrow(
            d, 0, src.size(d)
        )
    return g.to(src.dtype).reshape(ctx.given_shape), None, None, None, None, None


segment_logsumexp_differentiable = register_autograd(segment_logsumexp_op, _forward, _autograd_backward, _setup_context)
