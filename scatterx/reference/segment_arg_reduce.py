"""Reference for ``scatterx.ops.segment_arg_reduce`` (torch_scatter's min/max with their arg): the first
member that strictly beats the best so far."""

from __future__ import annotations

import math

import torch

from ._rows import _name, _wide

__all__ = ["segment_arg_reduce"]


def segment_arg_reduce(src, ptr, reduce="amax", dim=0, perm=None, base=None, finite_start=False, fill="unselected"):
    """``ops.segment_arg_reduce`` by its definition: per segment and element, the first member (in position order)
    that strictly beats the best so far, starting from ``base`` or the start value; ``(values, arg)``."""
    reduce = _name(reduce)
    dim = dim % max(src.dim(), 1)
    n = src.size(dim)
    rows = perm.tolist() if perm is not None else list(range(n))
    moved = src.movedim(dim, 0).to(_wide(src.dtype))
    S = ptr.numel() - 1
    if finite_start:
        info = torch.finfo(src.dtype) if src.dtype.is_floating_point else torch.iinfo(src.dtype)
        start = info.max if reduce == "amin" else info.min
    else:
        start = (
            (math.inf if reduce == "amin" else -math.inf)
            if src.dtype.is_floating_point
            else (torch.iinfo(src.dtype).max if reduce == "amin" else torch.iinfo(src.dtype).min)
        )
    values = torch.empty((S,) + tuple(moved.shape[1:]), dtype=moved.dtype)
    args = torch.full(values.shape, n, dtype=torch.int64)
    inner = torch.Size(moved.shape[1:]).numel()
    flat_values, flat_args = values.view(S, inner), args.view(S, inner)
    members = moved.reshape(n, inner)
    begin = base.movedim(dim, 0).reshape(S, inner).to(moved.dtype) if base is not None else None
    value = float if src.dtype.is_floating_point else int  # (an int64 through a float is rounded: 2^63 - 1 wraps)
    for s in range(S):
        lo, hi = int(ptr[s]), int(ptr[s + 1])
        for j in range(members.size(1)):
            best = value(begin[s, j]) if begin is not None else start
            which = n
            for i in range(lo, hi):
                x = value(members[rows[i], j])
                if (x > best) if reduce == "amax" else (x < best):
                    best, which = x, rows[i]
            if (fill == "unselected" and which == n) or (fill == "empty" and hi == lo):
                best = 0
            flat_values[s, j] = best
            flat_args[s, j] = which
    return values.to(src.dtype).movedim(0, dim), args.movedim(0, dim)
