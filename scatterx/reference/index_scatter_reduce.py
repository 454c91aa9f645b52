"""Reference for ``scatterx.index_scatter_reduce``: one Python loop over the output rows."""

from __future__ import annotations

from typing import Optional

import torch

from ._rows import _name, _reduce_rows, _wide

__all__ = ["index_scatter_reduce"]


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
