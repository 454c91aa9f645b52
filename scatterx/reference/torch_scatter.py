"""Reference for ``scatterx.torch_scatter``, the drop-in: torch_scatter's semantics restated loop by loop."""

from __future__ import annotations

import math
from typing import Dict, List, Tuple

import torch

from ._rows import _wide

__all__ = ["ts_gather_coo", "ts_gather_csr", "ts_scatter", "ts_segment_coo", "ts_segment_csr", "ts_softmax_family"]

# The oracle of ``scatterx.torch_scatter`` (and of ``ops.segment_arg_reduce``): torch_scatter's CPU kernels
# restated element by element -- a start value per output element (``out``'s, or the reduction's start), members
# combined in position order, min/max replacing the best only on a strict improvement. Values are widened to
# float64/int64 Python numbers; results are cast back to ``src``'s dtype.


def _ts_broadcast(index: torch.Tensor, src: torch.Tensor, dim: int) -> torch.Tensor:
    dim = dim % src.dim()
    if index.dim() == 1:
        index = index.view([1] * dim + [-1])
    index = index.view(list(index.shape) + [1] * (src.dim() - index.dim()))
    return index.expand(src.shape)


def _ts_extreme(dtype: torch.dtype, reduce: str):
    info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
    return info.min if reduce == "max" else info.max


def _ts_better(x, best, reduce: str) -> bool:
    return x > best if reduce == "max" else x < best  # False whenever NaN is involved


def _ts_trunc_div(a, b):
    return -((-a) // b) if a < 0 else a // b


def ts_scatter(src, index, dim=-1, out=None, dim_size=None, reduce="sum"):
    """torch_scatter's ``scatter`` (any reduce), and for min/max ``(values, arg)``."""
    dim = dim % src.dim()
    full = _ts_broadcast(index, src, dim)
    shape = list(src.shape)
    shape[dim] = (
        out.size(dim)
        if out is not None
        else (dim_size if dim_size is not None else (int(full.max()) + 1 if full.numel() else 0))
    )
    floating = src.dtype.is_floating_point
    s = src.tolist() if src.dim() else [src.item()]
    flat_src = src.reshape(-1).tolist()
    idx = full.reshape(-1).tolist()
    start = {
        "sum": 0,
        "add": 0,
        "mean": 0,
        "mul": 1,
        "min": _ts_extreme(src.dtype, "min"),
        "max": _ts_extreme(src.dtype, "max"),
    }[reduce]
    acc = out.reshape(-1).tolist() if out is not None else [start] * (torch.Size(shape).numel())
    arg = [src.size(dim)] * len(acc)
    count = [0] * len(acc)
    del s
    for u, pos in enumerate(
        torch.cartesian_prod(*[torch.arange(n) for n in src.shape]).view(-1, src.dim()).tolist() if src.numel() else []
    ):
        t = list(pos)
        t[dim] = idx[u]
        k = 0
        for d in range(len(shape)):
            k = k * shape[d] + t[d]
        x = flat_src[u]
        count[k] += 1
        if reduce in ("sum", "add", "mean"):
            acc[k] = acc[k] + x
        elif reduce == "mul":
            acc[k] = acc[k] * x
        elif _ts_better(x, acc[k], reduce):
            acc[k], arg[k] = x, pos[dim]
    if reduce == "mean":
        acc = [a / max(c, 1) if floating else a // max(c, 1) for a, c in zip(acc, count)]
    if reduce in ("min", "max") and out is None:
        acc = [0 if a == start else a for a in acc]
    if src.numel() == 0 and out is None:  # torch_scatter's kernel returns zeros at once (mul too)
        acc = [0] * len(acc)
    values = torch.tensor(acc, dtype=_wide(src.dtype)).view(shape).to(src.dtype)
    if reduce in ("min", "max"):
        return values, torch.tensor(arg, dtype=torch.int64).view(shape)
    return values


def _ts_rows(src: torch.Tensor, dim: int):
    """``src`` as ``(batch, rows, inner)`` nested lists of Python numbers."""
    batch = 1
    for n in src.shape[:dim]:
        batch *= n
    return src.reshape(batch, src.size(dim), -1).tolist() if src.numel() else None


def ts_segment_csr(src, indptr, out=None, reduce="sum"):
    """torch_scatter's ``segment_*_csr``: ``(values, arg)`` for min/max (arg ``src.size(dim)`` where nothing was
    selected, also in a non-empty segment, where torch_scatter leaves a stale value)."""
    dim = indptr.dim() - 1
    lead = list(src.shape[:dim])
    indptr = indptr.expand(lead + [indptr.size(-1)]).reshape(-1, indptr.size(-1)).tolist()
    M = max(len(indptr[0]) - 1, 0) if indptr else 0
    shape = list(src.shape)
    shape[dim] = M
    inner = torch.Size(shape[dim + 1 :]).numel()
    rows = _ts_rows(src, dim)
    N = src.size(dim)
    values, args = [], []
    for b, ptr in enumerate(indptr):
        for i in range(M):
            members = range(ptr[i], ptr[i + 1])
            for j in range(inner):
                xs = [(rows[b][e][j], e) for e in members] if rows is not None else []
                arg = N
                if reduce in ("sum", "add"):
                    v = sum(x for x, _ in xs)
                elif reduce == "mean":
                    total = sum(x for x, _ in xs)
                    c = max(len(xs), 1)
                    v = total / c if src.dtype.is_floating_point else _ts_trunc_div(total, c)
                else:
                    # the start is float32's extreme for half types (written back to them, it rounds to inf)
                    wide = torch.float32 if src.dtype in (torch.float16, torch.bfloat16) else src.dtype
                    v = _ts_extreme(wide, reduce)
                    for x, e in xs:
                        if _ts_better(x, v, reduce):
                            v, arg = x, e
                    if not xs:
                        v = 0
                values.append(v)
                args.append(arg)
    result = torch.tensor(values, dtype=_wide(src.dtype)).view(shape).to(src.dtype)
    if src.numel() == 0 and out is not None:  # torch_scatter returns out as it is
        result = out.clone()
    if reduce in ("min", "max"):
        return result, torch.tensor(args, dtype=torch.int64).view(result.shape)
    return result


def ts_segment_coo(src, index, out=None, dim_size=None, reduce="sum"):
    """torch_scatter's ``segment_*_coo`` (index sorted along its last dim): ``(values, arg)`` for min/max."""
    dim = index.dim() - 1
    lead = list(src.shape[:dim])
    index = index.expand(lead + [src.size(dim)])
    size = (
        out.size(dim)
        if out is not None
        else (dim_size if dim_size is not None else (int(index[..., -1].max()) + 1 if index.numel() else 0))
    )
    shape = list(src.shape)
    shape[dim] = size
    inner = torch.Size(shape[dim + 1 :]).numel()
    rows = _ts_rows(src, dim)
    batches = torch.Size(lead).numel()
    idx = index.reshape(batches, src.size(dim)).tolist()
    base = out.reshape(batches, size, inner).tolist() if out is not None else None
    start = {"sum": 0, "add": 0, "mean": 0, "min": _ts_extreme(src.dtype, "min"), "max": _ts_extreme(src.dtype, "max")}[
        reduce
    ]
    values, args = [], []
    for b in range(batches):
        for s in range(size):
            members = [e for e, t in enumerate(idx[b]) if t == s]
            for j in range(inner):
                v = base[b][s][j] if base is not None else start
                arg = src.size(dim)
                if reduce in ("sum", "add", "mean"):
                    v = v + sum(rows[b][e][j] for e in members)
                    if reduce == "mean" and members:
                        c = len(members)
                        v = v / c if src.dtype.is_floating_point else _ts_trunc_div(v, c)
                else:
                    for e in members:
                        if _ts_better(rows[b][e][j], v, reduce):
                            v, arg = rows[b][e][j], e
                    if base is None and v == start:
                        v = 0
                values.append(v)
                args.append(arg)
    result = torch.tensor(values, dtype=_wide(src.dtype)).view(shape).to(src.dtype)
    if reduce in ("min", "max"):
        return result, torch.tensor(args, dtype=torch.int64).view(shape)
    return result


def ts_gather_csr(src, indptr):
    """``out[..., e, ...] = src[..., i, ...]`` for ``e`` in ``indptr[i]:indptr[i+1]`` (uncovered positions 0)."""
    dim = indptr.dim() - 1
    lead = list(src.shape[:dim])
    ptrs = indptr.expand(lead + [indptr.size(-1)]).reshape(-1, indptr.size(-1)).tolist()
    E = ptrs[-1][-1] if ptrs and ptrs[-1] else 0
    shape = list(src.shape)
    shape[dim] = E
    inner = torch.Size(shape[dim + 1 :]).numel()
    out = torch.zeros(shape, dtype=src.dtype).reshape(len(ptrs), E, inner)
    flat = src.reshape(len(ptrs), src.size(dim), inner)
    for b, ptr in enumerate(ptrs):
        for i in range(len(ptr) - 1):
            for e in range(ptr[i], ptr[i + 1]):
                out[b, e] = flat[b, i]
    return out.view(shape)


def ts_gather_coo(src, index):
    dim = index.dim() - 1
    out = torch.stack([src.select(dim, int(i)) for i in index.reshape(-1)], dim) if index.dim() == 1 else None
    if out is not None:
        return out
    lead = list(src.shape[:dim])
    flat = src.reshape(torch.Size(lead).numel(), src.size(dim), -1)
    idx = index.reshape(flat.size(0), -1)
    rows = [torch.stack([flat[b, int(i)] for i in idx[b]]) for b in range(flat.size(0))]
    shape = list(src.shape)
    shape[dim] = index.size(-1)
    return torch.stack(rows).view(shape)


def ts_softmax_family(src, index, dim=-1, kind="softmax", eps=1e-12, dim_size=None):
    """torch_scatter's composites by their formulas, in float64, one group at a time: ``kind`` is "softmax",
    "log_softmax", "logsumexp" or "std" (unbiased) / "std_biased"."""
    dim = dim % src.dim()
    full = _ts_broadcast(index, src, dim)
    size = dim_size if dim_size is not None else (int(full.max()) + 1 if full.numel() else 0)
    x = src.to(torch.float64)
    groups: Dict[Tuple[int, ...], List[Tuple[int, ...]]] = {}
    for pos in (
        torch.cartesian_prod(*[torch.arange(n) for n in src.shape]).view(-1, src.dim()).tolist() if src.numel() else []
    ):
        target = list(pos)
        target[dim] = int(full[tuple(pos)])
        groups.setdefault(tuple(target), []).append(tuple(pos))
    if kind in ("softmax", "log_softmax"):
        out = torch.empty_like(x)
        for members in groups.values():
            vals = [float(x[p]) for p in members]
            top = max([v for v in vals if v == v and v != -math.inf], default=0.0)  # scatter_max: 0 if none
            shifted = [v - top for v in vals]
            total = sum(math.exp(v) if v == v else math.nan for v in shifted)
            for p, v in zip(members, shifted):
                out[p] = (
                    (math.exp(v) / total if total else math.nan) if kind == "softmax" else v - math.log(total + eps)
                )
        return out.to(src.dtype)
    shape = list(src.shape)
    shape[dim] = size
    out = torch.zeros(shape, dtype=torch.float64)
    for key, members in groups.items():
        vals = [float(x[p]) for p in members]
        if kind == "logsumexp":
            finite = [v for v in vals if v == v]
            top = max(finite) if finite else -math.inf
            if top == -math.inf:
                out[key] = 0.0
                continue
            shifted = [v - top for v in vals]
            total = sum(math.exp(v) if v == v else 0.0 for v in shifted)  # NaN shifts count as -inf
            value = math.log(total + eps) + top
            # torch_scatter's nan_to_num(neginf=0): NaN -> 0, +inf -> the dtype's largest finite value
            out[key] = 0.0 if value != value else min(value, torch.finfo(src.dtype).max)
        else:
            n = len(vals)
            mean = sum(vals) / n
            var = sum((v - mean) ** 2 for v in vals)
            out[key] = math.sqrt(var / ((max(n - 1, 1) if kind == "std" else n) + 1e-6))
    return out.to(src.dtype)
