"""Reference for the element plans (``scatterx.ops.element_scatter``, reached through ``scatterx.planner``):
the x-transformer model's map ``t = p(f(p1(u)) + p2(u))`` applied one element at a time."""

from __future__ import annotations

import itertools
from typing import Dict, List, Optional, Tuple

import torch

from ._rows import _name, _reduce_rows, _wide

__all__ = ["x_gather", "x_scatter", "x_target"]


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
