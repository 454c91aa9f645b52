"""Plain, obviously-correct implementations: the oracle for tests and the benchmark. Never imported by the ops.

One Python loop over output rows, each reduced with torch's own reductions in float64 (int64 for integers), then
cast to the dtype. Slow on purpose: nothing clever to get wrong.

Deliberately independent of the reduction table (``_reductions.py``) and of every other module of the package:
the kernels are generated from the table, so an oracle that read it would share its mistakes. The names and
aliases below are restated by hand.

Why this module is long: it is every oracle in one place -- the core ops, the model's ``x_scatter``/``x_gather``,
and torch_scatter's semantics (``ts_*``, restating its CPU kernels loop by loop) -- so that no test reads an
oracle from the package it checks.
"""

from __future__ import annotations

import math
from typing import Dict, List, Optional, Tuple

import torch

_NAMES = {
    "sum": "sum",
    "add": "sum",
    "mean": "mean",
    "prod": "prod",
    "mul": "prod",
    "amax": "amax",
    "max": "amax",
    "amin": "amin",
    "min": "amin",
}


def _name(reduce: str) -> str:
    if reduce not in _NAMES:
        raise ValueError(f"unknown reduce {reduce!r}")
    return _NAMES[reduce]


def _wide(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype.is_floating_point else torch.int64


def _reduce_rows(rows: torch.Tensor, name: str, dtype: torch.dtype) -> torch.Tensor:
    """Reduce ``rows`` (already widened) over dim 0."""
    if name == "sum":
        return rows.sum(0)
    if name == "prod":
        return rows.prod(0)
    if name == "amax":
        return rows.amax(0)
    if name == "amin":
        return rows.amin(0)
    if name == "mean":
        if dtype.is_floating_point:
            return rows.sum(0) / rows.size(0)
        return torch.div(rows.sum(0), rows.size(0), rounding_mode="floor")
    raise AssertionError(name)


def index_scatter_reduce(
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor,
    reduce: str = "sum",
    *,
    dim_size: Optional[int] = None,
    out: Optional[torch.Tensor] = None,
    include_self: bool = True,
) -> torch.Tensor:
    """Reference for ``scatterx.index_scatter_reduce`` (any index order; returns a new tensor, even with ``out``)."""
    name = _name(reduce)
    dim = dim % src.dim()
    m = index.numel()
    if out is not None:
        num_segments = out.size(dim)
    elif dim_size is not None:
        num_segments = dim_size
    else:
        num_segments = int(index.max()) + 1 if m else 0
    shape = list(src.shape)
    shape[dim] = num_segments
    result = out.clone() if out is not None else torch.zeros(shape, dtype=src.dtype)

    src_rows = src.movedim(dim, 0)[:m].to(_wide(src.dtype))
    result_rows = result.movedim(dim, 0)  # a view: writing a row writes result
    for s in range(num_segments):
        rows = src_rows[index.to(torch.int64) == s]
        if rows.size(0) == 0:
            continue  # rows that receive nothing: 0 without out, unchanged with it
        if out is not None and include_self:
            rows = torch.cat([result_rows[s : s + 1].to(rows.dtype), rows])
        result_rows[s] = _reduce_rows(rows, name, src.dtype).to(src.dtype)
    return result


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, reduce: str = "sum", dim: int = 0) -> torch.Tensor:
    """Reference for ``scatterx.segment_reduce``: expand ``ptr`` to an index and reduce."""
    counts = (ptr[1:] - ptr[:-1]).to(torch.int64)
    index = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    return index_scatter_reduce(dim, index, src, reduce, dim_size=counts.numel())


def gather_segment_reduce(
    src: torch.Tensor,
    ptr: torch.Tensor,
    index: torch.Tensor,
    reduce: str = "sum",
    dim: int = 0,
    weight: Optional[torch.Tensor] = None,
) -> torch.Tensor:
    """Reference for ``scatterx.gather_segment_reduce``: gather the rows (scaled by their weights: the whole row,
    or head ``h`` at ``dim + 1``), then reduce them segment by segment."""
    dim = dim % src.dim()
    rows = src.index_select(dim, index.to(torch.int64))
    if weight is not None:
        shape = [1] * rows.dim()
        shape[dim] = weight.size(0)
        if weight.dim() == 2:
            shape[dim + 1] = weight.size(1)
        wide = _wide(rows.dtype)
        return segment_reduce(rows.to(wide) * weight.to(wide).reshape(shape), ptr, reduce, dim).to(src.dtype)
    return segment_reduce(rows, ptr, reduce, dim)


def sddmm(ptr: torch.Tensor, index: torch.Tensor, a: torch.Tensor, b: torch.Tensor, op: str = "dot") -> torch.Tensor:
    """Reference for ``scatterx.sddmm``: both ends gathered per edge, then combined."""
    counts = (ptr[1:] - ptr[:-1]).to(torch.int64)
    targets = torch.repeat_interleave(torch.arange(counts.numel(), device=ptr.device), counts)
    x, y = a.index_select(0, index.to(torch.int64)), b.index_select(0, targets)
    if op == "add":
        return x + y
    if op == "mul":
        return x * y
    wide = _wide(a.dtype)
    return (x.to(wide) * y.to(wide)).sum(-1).to(a.dtype)


def gatv2_logits(
    ptr: torch.Tensor,
    index: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    att: torch.Tensor,
    negative_slope: float = 0.2,
) -> torch.Tensor:
    """Reference for ``scatterx.gatv2_logits``: both ends gathered per edge, summed, activated, dotted with
    ``att`` -- PyG's ``GATv2Conv.edge_update`` -- in float64 (differentiable)."""
    counts = (ptr[1:] - ptr[:-1]).to(torch.int64)
    targets = torch.repeat_interleave(torch.arange(counts.numel(), device=ptr.device), counts)
    wide = _wide(a.dtype)
    z = a.to(wide).index_select(0, index.to(torch.int64)) + b.to(wide).index_select(0, targets)
    activated = torch.nn.functional.leaky_relu(z, negative_slope)
    return (activated * att.to(wide).reshape(a.shape[1:])).sum(-1).to(a.dtype)


def segment_softmax(
    src: torch.Tensor, index: Optional[torch.Tensor] = None, ptr: Optional[torch.Tensor] = None, dim: int = 0
) -> torch.Tensor:
    """Reference for ``scatterx.segment_softmax``: ``torch.softmax`` of each group's slices, in float64."""
    dim = dim % src.dim()
    if index is None:
        if ptr is None:
            raise ValueError("segment_softmax takes either index or ptr")
        counts = (ptr[1:] - ptr[:-1]).to(torch.int64)
        index = torch.repeat_interleave(torch.arange(counts.numel()), counts)
    index = index.to(torch.int64)
    wide = src.movedim(dim, 0).to(torch.float64)
    out = torch.empty_like(wide)
    for s in index.unique().tolist():
        members = index == s
        out[members] = torch.softmax(wide[members], dim=0)
    return out.to(src.dtype).movedim(0, dim)


# ------------------------------------------------------------------------------------ the x-transformer model
def x_target(m, u) -> tuple:
    """Data position ``t`` of the iterated position ``u`` under the map ``m`` (``scatterx.planner.XMap``), straight
    from the definition ``t = p(f(p1(u)) + p2(u))``."""
    t: List[Optional[int]] = [None] * len(m.data_shape)
    at = tuple(u[d] for d in m.lookup)
    for j, d in enumerate(m.coords):
        t[d] = int(m.index[at + (j,)]) if m.vector else int(m.index[at])
    for s, d in m.carry:
        t[d] = u[s]
    return tuple(t)


def x_gather(m, data: torch.Tensor) -> torch.Tensor:
    """``out[u] = data[t(u)]``, one element at a time (IndexError for a coordinate out of range)."""
    import itertools

    out = torch.empty(m.shape, dtype=data.dtype)
    for u in itertools.product(*map(range, m.shape)):
        t = x_target(m, u)
        if any(not 0 <= c < size for c, size in zip(t, m.data_shape)):
            raise IndexError(f"position {u} maps to {t}, outside {m.data_shape}")
        out[u] = data[t]
    return out


def x_scatter(m, data: torch.Tensor, updates: torch.Tensor, reduce: str, include_self: bool = True) -> torch.Tensor:
    """``data`` with ``updates[u]`` reduced into ``t(u)``: positions are visited in ``u``'s row-major order and
    grouped by target; ``assign`` keeps the last, the others reduce the group (``data``'s value first with
    ``include_self``) in float64/int64. Positions that receive nothing keep ``data``'s value."""
    import itertools

    groups: Dict[Tuple[int, ...], List[torch.Tensor]] = {}
    for u in itertools.product(*map(range, m.shape)):
        t = x_target(m, u)
        if any(not 0 <= c < size for c, size in zip(t, m.data_shape)):
            raise IndexError(f"position {u} maps to {t}, outside {m.data_shape}")
        groups.setdefault(t, []).append(updates[u])
    result = data.clone()
    name = reduce if reduce == "assign" else _name(reduce)
    for t, values in groups.items():
        if name == "assign":
            result[t] = values[-1]
            continue
        members = [data[t]] + values if include_self else values
        rows = torch.stack(members).to(_wide(data.dtype))
        result[t] = _reduce_rows(rows, name, data.dtype).to(data.dtype)
    return result


# ----------------------------------------------------------------------------------- torch_scatter's semantics
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
    import math

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
    for s in range(S):
        lo, hi = int(ptr[s]), int(ptr[s + 1])
        for j in range(members.size(1)):
            best = float(begin[s, j]) if begin is not None else start
            which = n
            for i in range(lo, hi):
                x = float(members[rows[i], j]) if src.dtype.is_floating_point else int(members[rows[i], j])
                if (x > best) if reduce == "amax" else (x < best):
                    best, which = x, rows[i]
            if (fill == "unselected" and which == n) or (fill == "empty" and hi == lo):
                best = 0
            flat_values[s, j] = best
            flat_args[s, j] = which
    return values.to(src.dtype).movedim(0, dim), args.movedim(0, dim)


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


# ------------------------------------------------------------------------------------------- neighbour sampling
_M64 = (1 << 64) - 1


def _splitmix(x: int) -> int:
    x &= _M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _M64
    return x ^ (x >> 31)


def _stream_bits(key: int, k: int) -> int:
    return _splitmix(key + (k + 1) * 0x9E3779B97F4A7C15)


def _substream(key: int, number: int) -> int:
    return _splitmix(key ^ _splitmix(number))


def _stream_below(bits: int, n: int) -> int:
    """Uniform in [0, n): the high word of ``bits * n`` below 2^32, ``bits % n`` above."""
    return (bits * n) >> 64 if n < (1 << 32) else bits % n


def _stream_unit(bits: int) -> float:
    return (bits >> 11) * (1.0 / 9007199254740992.0)


def neighbor_sample(colptr, row, seed, num_neighbors, replace=False, floyd_max=64):
    """Uniform neighbour sampling on a CSC graph, one node at a time, with the random sequences of the kernels:
    torch's generator gives one base per call; the draws of frontier node i in a hop have the key
    ``substream(substream(base, hop), i)``, and draw j is splitmix64 of ``key + (j + 1) * golden``. Returns
    (neighbour local, frontier local, edge position, node ids, nodes per hop, edges per hop), as
    ``scatterx.pyg_lib.sampler.neighbor_sample(..., csc=True)``."""
    colptr, row, seed = colptr.tolist(), row.tolist(), seed.tolist()
    base = int(torch.randint(0, 1 << 62, (1,)).item())
    nodes = list(seed)
    local = {v: i for i, v in enumerate(seed)}  # a seed given twice maps to its last place
    rows, cols, edges, nodes_per_hop, edges_per_hop = [], [], [], [len(seed)], []
    begin = 0
    for hop, count in enumerate(num_neighbors):
        hop_key = _substream(base, hop)
        end = len(nodes)
        drawn_this_hop = 0
        for i in range(begin, end):
            a, b = colptr[nodes[i]], colptr[nodes[i] + 1]
            pop = b - a
            k = pop if count < 0 or (not replace and count >= pop) else (count if pop > 0 else 0)
            h = _substream(hop_key, i - begin)

            def below(j, m, h=h):
                return _stream_below(_stream_bits(h, j), m)

            if k == pop and (count < 0 or not replace):
                picks = list(range(pop))
            elif replace:
                picks = [below(j, pop) for j in range(k)]
            elif k <= floyd_max:
                picks = []
                for j in range(k):
                    t = below(j, pop - k + j + 1)
                    picks.append(pop - k + j if t in picks else t)
            else:
                chosen, need = [], k
                for e in range(pop):
                    if need and _stream_unit(_stream_bits(h, e)) * (pop - e) < need:
                        chosen.append(e)
                        need -= 1
                picks = chosen
            for p in picks:
                u = row[a + p]
                if u not in local:
                    local[u] = len(nodes)
                    nodes.append(u)
                rows.append(local[u])
                cols.append(i)
                edges.append(a + p)
            drawn_this_hop += len(picks)
        begin = end
        nodes_per_hop.append(len(nodes) - end)
        edges_per_hop.append(drawn_this_hop)
    as_t = lambda x: torch.tensor(x, dtype=torch.int64)  # noqa: E731
    return as_t(rows), as_t(cols), as_t(edges), as_t(nodes), nodes_per_hop, edges_per_hop
