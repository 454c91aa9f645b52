"""Plain, obviously-correct implementations: the oracle for tests and the benchmark. Never imported by the ops.

One Python loop over output rows, each reduced with torch's own reductions in float64 (int64 for integers), then
cast to the dtype. Slow on purpose: nothing clever to get wrong.

Deliberately independent of the reduction table (``_reductions.py``) and of every other module of the package:
the kernels are generated from the table, so an oracle that read it would share its mistakes. The names and
aliases below are restated by hand.
"""

from __future__ import annotations

from typing import Optional

import torch

_NAMES = {"sum": "sum", "add": "sum", "mean": "mean", "prod": "prod", "mul": "prod",
          "amax": "amax", "max": "amax", "amin": "amin", "min": "amin"}


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
    src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, reduce: str = "sum", dim: int = 0,
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
    ptr: torch.Tensor, index: torch.Tensor, a: torch.Tensor, b: torch.Tensor, att: torch.Tensor,
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
    t = [None] * len(m.data_shape)
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

    groups = {}
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
        if include_self:
            values = [data[t]] + values
        rows = torch.stack(values).to(_wide(data.dtype))
        result[t] = _reduce_rows(rows, name, data.dtype).to(data.dtype)
    return result
