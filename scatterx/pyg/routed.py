"""PyG's scatter-like functions on scatterx: what ``enable()`` puts in place of ``torch_geometric.utils.scatter``,
``segment``, ``softmax``, ``spmm`` and of ``Aggregation.reduce``.

Each runs scatterx's kernels where they take the call and PyG's original function otherwise (a dtype or device
scatterx does not support, ``reduce='any'``, a multi-dimensional ``ptr``, PyG's own argument errors), so behaviour
is PyG's everywhere else. Under ``torch.jit.script`` each calls PyG's own function: TorchScript compiles whatever a
scripted function reaches, and it compiles neither the Numba/Triton kernels nor module-level dicts; the originals
are therefore also kept in plain module globals (``_pyg_*_fn``).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor
from torch_geometric.typing import Adj
from torch_geometric.utils.num_nodes import maybe_num_nodes

from ..ops import index_scatter_reduce, segment_reduce, segment_softmax
from ._common import ORIGINAL, REDUCE, is_enabled, is_sorted, runs_here
from .adjacency import Adjacency

_pyg_scatter_fn = ORIGINAL["scatter"]
_pyg_segment_fn = ORIGINAL["segment"]
_pyg_softmax_fn = ORIGINAL["softmax"]
_pyg_spmm_fn = ORIGINAL["spmm"]


def scatter_pyg(src: Tensor, index: Tensor, dim: int, dim_size: Optional[int], reduce: str) -> Tensor:
    """PyG's ``scatter`` semantics on scatterx: rows that receive nothing are 0, and 1 for "mul"."""
    sorted = is_sorted(index)
    if reduce == "mul":
        size = list(src.shape)
        size[dim] = dim_size if dim_size is not None else (int(index.max()) + 1 if index.numel() else 0)
        return index_scatter_reduce(dim, index, src, "prod", sorted, out=src.new_ones(size))
    return index_scatter_reduce(dim, index, src, REDUCE[reduce], sorted, dim_size=dim_size)


def scatter(src: Tensor, index: Tensor, dim: int = 0, dim_size: Optional[int] = None, reduce: str = "sum") -> Tensor:
    """``torch_geometric.utils.scatter`` on scatterx (the sorted kernel when ``index`` is sorted)."""
    if torch.jit.is_scripting():
        return _pyg_scatter_fn(src, index, dim, dim_size, reduce)
    if (
        is_enabled()
        and (reduce in REDUCE or reduce == "mul")
        and runs_here(src, index)
        and index.dim() == 1
        and -src.dim() <= dim < src.dim()
        and (reduce != "mean" or src.is_floating_point())  # PyG's integer mean divides exactly (a float result)
    ):
        dim = dim % src.dim()
        if index.numel() == src.size(dim):
            return scatter_pyg(src, index, dim, dim_size, reduce)
    return ORIGINAL["scatter"](src, index, dim, dim_size, reduce)


def _flat_ptr(ptr: Tensor) -> Optional[Tuple[Tensor, int]]:
    """PyG passes ``ptr`` with leading 1-dims (``expand_left``) to name the reduced dim: (1-D ptr, dim)."""
    if ptr.dim() == 0 or any(s != 1 for s in ptr.shape[:-1]):
        return None
    return ptr.reshape(-1), ptr.dim() - 1


def segment(src: Tensor, ptr: Tensor, reduce: str = "sum") -> Tensor:
    """``torch_geometric.utils.segment`` on scatterx's CSR kernel."""
    if torch.jit.is_scripting():
        return _pyg_segment_fn(src, ptr, reduce)
    flat = _flat_ptr(ptr) if isinstance(ptr, Tensor) and is_enabled() else None
    if reduce in REDUCE and flat is not None and runs_here(src, flat[0]) and flat[1] < src.dim():
        return segment_reduce(src, flat[0], REDUCE[reduce], flat[1])
    return ORIGINAL["segment"](src, ptr, reduce)


def softmax(
    src: Tensor,
    index: Optional[Tensor] = None,
    ptr: Optional[Tensor] = None,
    num_nodes: Optional[int] = None,
    dim: int = 0,
) -> Tensor:
    """``torch_geometric.utils.softmax`` on ``scatterx.segment_softmax`` (exact softmax per group: PyG adds 1e-16
    to the denominator, which changes results by about 1e-16 relatively)."""
    if torch.jit.is_scripting():
        return _pyg_softmax_fn(src, index, ptr, num_nodes, dim)
    if (
        is_enabled()
        and runs_here(src, index, ptr)
        and src.is_floating_point()
        and src.dim() > 0
        and -src.dim() <= dim < src.dim()
    ):
        dim = dim % src.dim()
        if ptr is not None and ptr.dim() == 1:
            return segment_softmax(src, ptr=ptr, dim=dim)
        if ptr is None and index is not None and index.dim() == 1 and index.numel() == src.size(dim):
            n = maybe_num_nodes(index, num_nodes)
            return segment_softmax(src, index, dim=dim, num_segments=n, sorted=is_sorted(index))
    return ORIGINAL["softmax"](src, index, ptr, num_nodes, dim)


def spmm(src: Adj, other: Tensor, reduce: str = "sum") -> Tensor:
    """``torch_geometric.utils.spmm``: scatterx's fused kernel for the adjacency the fused propagate builds."""
    if torch.jit.is_scripting():
        return _pyg_spmm_fn(src, other, reduce)
    if isinstance(src, Adjacency):
        return src.matmul(other, reduce)
    return ORIGINAL["spmm"](src, other, reduce)


def aggregation_reduce(
    self,
    x: Tensor,
    index: Optional[Tensor] = None,
    ptr: Optional[Tensor] = None,
    dim_size: Optional[int] = None,
    dim: int = -2,
    reduce: str = "sum",
) -> Tensor:
    """``Aggregation.reduce``: with ``ptr`` the CSR kernel (deterministic, no atomics, no index pass)."""
    if torch.jit.is_scripting():
        return self._pyg_reduce(x, index, ptr, dim_size, dim, reduce)
    if is_enabled() and ptr is not None and reduce in REDUCE and isinstance(ptr, Tensor) and ptr.dim() == 1:
        if runs_here(x, ptr) and -x.dim() <= dim < x.dim():
            return segment_reduce(x, ptr, REDUCE[reduce], dim % x.dim())
    return ORIGINAL["Aggregation.reduce"](self, x, index, ptr, dim_size, dim, reduce)


aggregation_reduce.__name__ = "reduce"  # TorchScript compiles a method under its function's __name__

#: the module-level functions enable() installs, by the name of PyG's function each replaces
REPLACEMENT = {"scatter": scatter, "segment": segment, "softmax": softmax, "spmm": spmm}
