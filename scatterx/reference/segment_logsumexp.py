"""Reference for ``scatterx.ops.segment_logsumexp`` (torch_scatter's logsumexp and the log-softmax's
normaliser)."""

from __future__ import annotations

import math

import torch

__all__ = ["segment_logsumexp"]


def segment_logsumexp(src, ptr, dim=0, perm=None, eps=1e-12, flavour="logsumexp"):
    """``ops.segment_logsumexp`` by its definition, in float64: per segment and element, ``top + log(sum exp(x -
    top) + eps)`` with torch_scatter's ``top`` and NaN rule for each flavour (see the op's docstring)."""
    dim = dim % max(src.dim(), 1)
    n = src.size(dim)
    rows = perm.tolist() if perm is not None else list(range(n))
    moved = src.movedim(dim, 0).to(torch.float64)
    inner = torch.Size(moved.shape[1:]).numel()
    members = moved.reshape(n, inner).tolist()
    S = ptr.numel() - 1
    lowest = torch.finfo(src.dtype).min
    out = torch.empty(S, inner, dtype=torch.float64)
    for s in range(S):
        lo, hi = int(ptr[s]), int(ptr[s + 1])
        for j in range(inner):
            xs = [members[rows[i]][j] for i in range(lo, hi)]
            start = -math.inf if flavour == "logsumexp" else lowest
            top = start
            for x in xs:
                if x > top:
                    top = x
            if flavour == "log_softmax" and top == start:
                top = 0.0
            total = 0.0
            for x in xs:
                d = x - top
                if flavour == "logsumexp" and d != d:
                    continue
                total += math.exp(d) if d == d else math.nan
            v = total + eps
            out[s, j] = math.nan if v != v else top + (math.log(v) if v > 0 else -math.inf)
    return out.view((S,) + tuple(moved.shape[1:])).movedim(0, dim).to(src.dtype)
