"""The planner's element plans on the GPU. There is no element kernel here: the index becomes flat offsets (each
coordinate asserted in range on the device), a 1-D index over single elements that ``index_scatter_reduce`` takes,
and gathers are ``index_select``."""

from __future__ import annotations

from typing import Optional

import torch

from ..._reductions import BY_NAME
from .index_scatter_reduce import index_scatter_reduce
from .segments import assert_index

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["element_gather", "element_scatter"]


def element_scatter(
    src: torch.Tensor, index: torch.Tensor, base: torch.Tensor, dim: Optional[int], reduce: str, include_self: bool
) -> torch.Tensor:
    """As ``backends.cpu.element_scatter``. There is no element kernel on the GPU: the index becomes flat offsets
    (each coordinate asserted in range on the device), a 1-D index over single elements that the segment path
    takes (assign: the last position per target by amax, then one collision-free copy)."""
    rows = _element_offsets(index, base.shape, dim)
    n, size = rows.numel(), base.numel()
    flat_src, flat_base = src.reshape(-1), base.reshape(-1)
    if reduce == "assign":
        positions = torch.arange(n, dtype=torch.int64, device=src.device)
        initial = torch.full((size,), -1, dtype=torch.int64, device=src.device)
        last = index_scatter_reduce(positions, rows, 0, BY_NAME["amax"], None, size, base=initial)
        targets = torch.nonzero(last >= 0).view(-1)
        result = flat_base.index_copy(0, targets, flat_src.index_select(0, last[targets]))
    else:
        result = index_scatter_reduce(
            flat_src, rows, 0, BY_NAME[reduce], None, size, base=flat_base, include_self=include_self
        )
    return result.view(base.shape)


def element_gather(data: torch.Tensor, index: torch.Tensor, dim: Optional[int]) -> torch.Tensor:
    """As ``backends.cpu.element_gather``: flat offsets (asserted on the device), then ``index_select``."""
    shape = index.shape if dim is not None else index.shape[:-1]
    return data.reshape(-1).index_select(0, _element_offsets(index, data.shape, dim)).view(shape)


def _element_offsets(index: torch.Tensor, shape, dim: Optional[int]) -> torch.Tensor:
    """Flat int64 offsets into a C-contiguous tensor of ``shape`` for an element-plan index (along ``dim``, or
    coordinate vectors), each coordinate asserted in range on the device (no host sync)."""
    strides = [torch.Size(shape[d + 1 :]).numel() for d in range(len(shape))]
    if dim is None:
        sizes = torch.tensor(list(shape), dtype=torch.int64, device=index.device)  # (a size may not fit int32)
        torch._assert_async(~((index < 0) | (index >= sizes)).any(), "index out of range for the data's shape")
        return (index.to(torch.int64) * torch.tensor(strides, device=index.device)).sum(-1).reshape(-1)
    assert_index(index, shape[dim], False, "index", f"size of dim {dim}")
    rows = index.to(torch.int64) * strides[dim]  # a new tensor: the carried coordinates are added in place
    for d in (d for d in range(len(shape)) if d != dim and index.size(d) > 1):
        rows.add_(
            torch.arange(index.size(d), device=index.device).view([-1] + [1] * (len(shape) - 1 - d)), alpha=strides[d]
        )
    return rows.reshape(-1)
