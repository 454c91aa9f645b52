"""PyG's scatter-like functions on scatterx: what ``enable()`` puts in place of ``torch_geometric.utils.scatter``,
``segment``, ``softmax``, ``spmm`` and of ``Aggregation.reduce``.

Each runs scatterx's kernels where they take the call and where that pays (``pays.py``: on the CPU, calls too small
for scatterx's fixed cost run PyG's code), and PyG's original function otherwise (a dtype or device scatterx does
not support, ``reduce='any'``, a multi-dimensional ``ptr``, PyG's own argument errors), so behaviour is PyG's
everywhere else. Under ``torch.jit.script`` each calls PyG's own function: TorchScript compiles whatever a
scripted function reaches, and it compiles neither the Numba/Triton kernels nor module-level dicts; the originals
are therefore also kept in plain module globals (``_pyg_*_fn``).

Why this module is long: each of the five replacements carries PyG's full docstring and argument checks, and the
calls the rule hands back keep scatterx's checks beside them (their helpers live here, next to their one caller).
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
from torch import Tensor
from torch_geometric.typing import Adj, SparseTensor
from torch_geometric.utils.num_nodes import maybe_num_nodes

from ..backends import backend_for
from ..ops import index_scatter_reduce, segment_reduce, segment_softmax
from ..ops._checks import check_size, check_tensor
from ._common import ORIGINAL, REDUCE, explained, is_enabled, is_sorted, runs_here
from .adjacency import Adjacency
from .pays import routed_pays

_pyg_scatter_fn = ORIGINAL["scatter"]
_pyg_segment_fn = ORIGINAL["segment"]
_pyg_softmax_fn = ORIGINAL["softmax"]
_pyg_spmm_fn = ORIGINAL["spmm"]


def _check_types(fn: str, tensors, optional=(), indices=()) -> None:
    """TypeError, before PyG's code reads an attribute of it, for an argument of ``tensors`` (name -> value) that is
    not a tensor (None is allowed for the names in ``optional``) or, for the names in ``indices``, whose dtype is
    not an integer one."""
    for name, value in tensors.items():
        if value is None and name in optional:
            continue
        check_tensor(value, f"{fn}: {name}")
        if name in indices and (value.is_floating_point() or value.is_complex() or value.dtype == torch.bool):
            raise TypeError(f"{fn}: {name} must have an integer dtype, got {value.dtype}")


def scatter_pyg(src: Tensor, index: Tensor, dim: int, dim_size: Optional[int], reduce: str) -> Tensor:
    """PyG's ``scatter`` semantics on scatterx: rows that receive nothing are 0, and 1 for "mul"."""
    sorted = is_sorted(index)
    if reduce == "mul":
        size = list(src.shape)
        size[dim] = dim_size if dim_size is not None else (int(index.max()) + 1 if index.numel() else 0)
        return index_scatter_reduce(dim, index, src, "prod", sorted, out=src.new_ones(size))
    return index_scatter_reduce(dim, index, src, REDUCE[reduce], sorted, dim_size=dim_size)


def scatter(src: Tensor, index: Tensor, dim: int = 0, dim_size: Optional[int] = None, reduce: str = "sum") -> Tensor:
    """``torch_geometric.utils.scatter`` on scatterx: the slices of ``src`` along ``dim`` reduced into the rows
    ``index`` names.

    While the switch is on (:func:`enable`), this is ``torch_geometric.utils.scatter`` throughout PyG and runs
    scatterx's kernels; the index's order is checked on each call, and a sorted one takes the sorted kernel. Calls
    scatterx does not take (a dtype or device it does not support, ``reduce="any"``, the ``"mean"`` of an integer
    tensor, an ``index`` whose length is not ``src.size(dim)``) run PyG's own function, as does every call while
    the switch is off or under ``torch.jit.script``. PyG's conventions hold: rows that receive nothing are 0 (1 for
    ``"mul"``).

    Args:
        src: the values.
        index: 1-D int64 or int32, the output row of each slice of ``src`` along ``dim`` (``src.size(dim)``
            entries).
        dim: the dim of ``src`` to reduce (negative counts from the end).
        dim_size: the output's size along ``dim``; default ``index.max() + 1``.
        reduce: ``"sum"`` (or ``"add"``), ``"mean"``, ``"mul"``, ``"min"``, ``"max"`` (or ``"amin"``,
            ``"amax"``), or PyG's ``"any"``.

    Returns:
        A new tensor on ``src``'s device, shaped as ``src`` with ``src.size(dim)`` replaced by ``dim_size``, of
        ``src``'s dtype (PyG's ``"mean"`` of an integer tensor is floating).

    Raises:
        TypeError: ``src`` or ``index`` is not a tensor, or ``index`` has a non-integer dtype.
        ValueError: ``index`` is not 1-D, ``dim`` is out of range or ``reduce`` is not a known name (PyG's checks);
            with the switch on, ``dim_size`` is negative.
        IndexError: with the switch on, an entry of ``index`` is negative or not below ``dim_size``.
        RuntimeError: ``index``'s length is not ``src.size(dim)``; with the switch off (torch's error in PyG's
            code), an entry of ``index`` is out of range or ``dim_size`` is negative.

    Example:
        >>> src = torch.tensor([1.0, 2.0, 3.0, 4.0])
        >>> index = torch.tensor([0, 0, 1, 3])
        >>> with scatterx.pyg.enabled():
        ...     scatterx.pyg.scatter(src, index, reduce="max")
        tensor([2., 3., 0., 4.])
        >>> scatterx.pyg.scatter(src, index, dim_size=5, reduce="mean")  # the switch off: PyG's own function
        tensor([1.5000, 3.0000, 0.0000, 4.0000, 0.0000])
    """
    if torch.jit.is_scripting():
        return _pyg_scatter_fn(src, index, dim, dim_size, reduce)
    _check_types("scatter", {"src": src, "index": index}, indices=("index",))
    if (
        is_enabled()
        and (reduce in REDUCE or reduce == "mul")
        and runs_here(src, index)
        and index.dim() == 1
        and -src.dim() <= dim < src.dim()
        and (reduce != "mean" or src.is_floating_point())  # PyG's integer mean divides exactly (a float result)
        and (dim_size is not None or not torch.compiler.is_compiling())  # (else index.max(): a graph break)
    ):
        dim = dim % src.dim()
        if index.numel() == src.size(dim):
            if _pays(src, dim, REDUCE.get(reduce, "prod")):
                return scatter_pyg(src, index, dim, dim_size, reduce)
            return _scatter_handed_back(src, index, dim, dim_size, reduce)
    return ORIGINAL["scatter"](src, index, dim, dim_size, reduce)


# (``torch.jit.ignore``: TorchScript, which compiles the bodies of the functions above though it never runs past
# their ``is_scripting()`` return, cannot compile a lambda)
@torch.jit.ignore
def _scatter_handed_back(src: Tensor, index: Tensor, dim: int, dim_size: Optional[int], reduce: str) -> Tensor:
    """PyG's scatter on a call the rule handed back: scatterx's checks of the size, and its words for an index
    torch's scatter rejects."""
    check_size(dim_size, "dim_size")
    return explained(
        lambda: ORIGINAL["scatter"](src, index, dim, dim_size, reduce),
        lambda: _check_index(src, index, dim_size, "dim_size"),
    )


@torch.jit.ignore
def _softmax_handed_back(src: Tensor, index: Tensor, num_segments: int, dim: int) -> Tensor:
    """PyG's softmax by ``index`` on a call the rule handed back, with scatterx's checks (as ``_scatter_...``)."""
    check_size(num_segments, "num_segments")
    return explained(
        lambda: ORIGINAL["softmax"](src, index, None, num_segments, dim),
        lambda: _check_index(src, index, num_segments, "num_segments"),
    )


def _pays(src: Tensor, dim: int, reduce: str) -> bool:
    """``pays.routed_pays`` for the reduction ``reduce`` (scatterx's name, or "softmax") of ``src`` along ``dim``
    (under ``torch.compile`` too, from the traced shapes: docs/decisions/pyg-switch-rule.md)."""
    width = 1
    for d, size in enumerate(src.shape):  # (a product, not numel // rows: traced sizes may be symbolic)
        if d != dim:
            width = width * size
    grad = src.requires_grad and torch.is_grad_enabled()
    return routed_pays(src.size(dim), width, reduce, grad, src.device.type)


def _check_index(src: Tensor, index: Tensor, size: Optional[int], size_name: str) -> None:
    """scatterx's check of ``index``'s entries against ``size`` (None: they must not be negative)."""
    high = size if size is not None else (int(index.max()) + 1 if index.numel() else 0)
    backend_for(src).check_index(index, high, "index", size_name)


def _check_ptr(src: Tensor, ptr: Tensor, dim: int) -> None:
    """scatterx's check of CSR offsets over ``src``'s ``dim`` (their ends and order), as its segment ops make it.
    PyG's own path does not check them: a ``ptr`` that ends past ``src``'s rows reads outside its memory. Not
    traced (no value is read in a graph)."""
    if not torch.compiler.is_compiling():
        backend_for(src).check_ptr(ptr, src.size(dim), f"src.size({dim})")


def _flat_ptr(ptr: Tensor) -> Optional[Tuple[Tensor, int]]:
    """PyG passes ``ptr`` with leading 1-dims (``expand_left``) to name the reduced dim: (1-D ptr, dim)."""
    if ptr.dim() == 0 or any(s != 1 for s in ptr.shape[:-1]):
        return None
    return ptr.reshape(-1), ptr.dim() - 1


def segment(src: Tensor, ptr: Tensor, reduce: str = "sum") -> Tensor:
    """``torch_geometric.utils.segment`` on scatterx's CSR kernel: the rows of ``src`` reduced per segment of
    ``ptr``.

    While the switch is on (:func:`enable`), this is ``torch_geometric.utils.segment`` throughout PyG and runs
    scatterx's segment kernel (deterministic: no atomics), which checks ``ptr``. Calls scatterx does not take (a
    dtype or device it does not support, an integer ``src``, a ``ptr`` with more than one dim that is not 1) run
    PyG's own function, as does every call while the switch is off or under ``torch.jit.script``; PyG's function
    does not check ``ptr``, and raises for an integer ``src``.
    Empty segments are 0.

    Args:
        src: the values; its first dim is reduced (PyG's ``ptr`` with leading 1-dims, ``(1, ..., 1, S + 1)``,
            names a later dim: the one after those leading dims).
        ptr: int64 or int32 ``(S + 1,)``, the CSR offsets of the segments: non-decreasing, ``ptr[0] == 0`` and
            ``ptr[-1] == src.size(0)``.
        reduce: ``"sum"``, ``"mean"``, ``"min"`` or ``"max"``.

    Returns:
        A new tensor of ``src``'s dtype and device, shaped as ``src`` with the reduced dim of size ``S``.

    Raises:
        TypeError: ``src`` or ``ptr`` is not a tensor, or ``ptr`` has a non-integer dtype.
        ValueError: with the switch on, ``ptr`` does not start at 0, decreases or does not end at the size of the
            reduced dim.
        RuntimeError: ``reduce`` is not a known name (torch's ``segment_reduce``, which PyG calls); with the switch
            off, ``ptr`` decreases.
        ImportError: ``ptr`` has several dims that are not 1 (PyG needs the ``torch_scatter`` package for it).

    Example:
        >>> src = torch.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> ptr = torch.tensor([0, 2, 2, 3])  # segments: rows 0-1, none, row 2
        >>> with scatterx.pyg.enabled():
        ...     scatterx.pyg.segment(src, ptr, "sum")
        tensor([[4., 6.],
                [0., 0.],
                [5., 6.]])
    """
    if torch.jit.is_scripting():
        return _pyg_segment_fn(src, ptr, reduce)
    _check_types("segment", {"src": src, "ptr": ptr}, indices=("ptr",))
    flat = _flat_ptr(ptr) if isinstance(ptr, Tensor) and is_enabled() else None
    if reduce in REDUCE and flat is not None and runs_here(src, flat[0]) and flat[1] < src.dim():
        # an integer src is PyG's at every size: torch's segment_reduce, which PyG calls, takes none (it raises)
        if src.is_floating_point() and _pays(src, flat[1], REDUCE[reduce]):
            return segment_reduce(src, flat[0], REDUCE[reduce], flat[1])
        _check_ptr(src, flat[0], flat[1])  # handed back
    return ORIGINAL["segment"](src, ptr, reduce)


def softmax(
    src: Tensor,
    index: Optional[Tensor] = None,
    ptr: Optional[Tensor] = None,
    num_nodes: Optional[int] = None,
    dim: int = 0,
) -> Tensor:
    """``torch_geometric.utils.softmax`` on scatterx: the softmax of ``src`` within each group of slices along
    ``dim``, groups named by ``index`` or by the CSR offsets ``ptr``.

    While the switch is on (:func:`enable`), this is ``torch_geometric.utils.softmax`` throughout PyG and runs
    :func:`scatterx.segment_softmax`, an exact softmax per group (PyG adds 1e-16 to the denominator, which changes
    results by about 1e-16 relatively). Calls scatterx does not take (an integer ``src``, a dtype or device it does
    not support, a ``ptr`` of several dims) run PyG's own function, as does every call while the switch is off or
    under ``torch.jit.script``.

    Args:
        src: the values (floating point).
        index: 1-D int64 or int32, the group of each slice of ``src`` along ``dim``; used when ``ptr`` is None.
        ptr: int64 or int32 ``(G + 1,)``, the CSR offsets of the groups, for slices sorted by group.
        num_nodes: the number of groups; default ``index.max() + 1``.
        dim: the dim of ``src`` the groups run along.

    Returns:
        A new tensor of ``src``'s shape, dtype and device: within each group, the slices sum to 1.

    Raises:
        TypeError: ``src`` is not a tensor, or ``index`` or ``ptr`` is neither a tensor nor None, or has a
            non-integer dtype.
        NotImplementedError: neither ``index`` nor ``ptr`` is given (PyG's error).
        ValueError: ``dim`` is out of range (PyG's check); with the switch on, ``ptr`` does not start at 0,
            decreases or does not end at ``src.size(dim)``.
        IndexError: with the switch on, an entry of ``index`` is negative or not below ``num_nodes``.
        RuntimeError: with the switch off (torch's error in PyG's code), an entry of ``index`` is out of range or
            ``ptr`` does not match ``src``.

    Example:
        >>> src = torch.tensor([1.0, 1.0, 2.0, 0.0])
        >>> with scatterx.pyg.enabled():
        ...     scatterx.pyg.softmax(src, torch.tensor([0, 0, 1, 1]))
        tensor([0.5000, 0.5000, 0.8808, 0.1192])
    """
    if torch.jit.is_scripting():
        return _pyg_softmax_fn(src, index, ptr, num_nodes, dim)
    _check_types(
        "softmax", {"src": src, "index": index, "ptr": ptr}, optional=("index", "ptr"), indices=("index", "ptr")
    )
    if (
        is_enabled()
        and runs_here(src, index, ptr)
        and src.is_floating_point()
        and src.dim() > 0
        and -src.dim() <= dim < src.dim()
    ):
        d = dim % src.dim()
        pays = _pays(src, d, "softmax")
        if ptr is not None and ptr.dim() == 1:
            if pays:
                return segment_softmax(src, ptr=ptr, dim=d)
            _check_ptr(src, ptr, d)  # handed back
        elif ptr is None and index is not None and index.dim() == 1 and index.numel() == src.size(d):
            n = maybe_num_nodes(index, num_nodes)
            if pays:
                return segment_softmax(src, index, dim=d, num_segments=n, sorted=is_sorted(index))
            return _softmax_handed_back(src, index, n, dim)
    return ORIGINAL["softmax"](src, index, ptr, num_nodes, dim)


def spmm(src: Adj, other: Tensor, reduce: str = "sum") -> Tensor:
    """``torch_geometric.utils.spmm``: the sparse matrix ``src`` times the dense ``other``, each output row the
    ``reduce`` of the rows of ``other`` its non-zeros name, weighted by their values.

    While the switch is on (:func:`enable`), this is ``torch_geometric.utils.spmm`` throughout PyG. The fused layers
    (:data:`FUSED_CONVS`) hand their ``message_and_aggregate`` scatterx's CSR adjacency, which this function reduces
    with scatterx's fused gather-and-reduce kernel; any other ``src`` (a sparse ``torch.Tensor``, a
    ``torch_sparse.SparseTensor``) runs PyG's own function, as does every call under ``torch.jit.script``.

    Args:
        src: the sparse ``(N, M)`` matrix: a sparse COO or CSR ``torch.Tensor``, an ``EdgeIndex`` or a
            ``torch_sparse.SparseTensor``.
        other: the dense ``(M, F)`` matrix.
        reduce: ``"sum"`` (or ``"add"``), ``"mean"``, ``"min"`` or ``"max"``.

    Returns:
        A new dense ``(N, F)`` tensor of ``other``'s dtype and device.

    Raises:
        TypeError: ``src`` is not a tensor or a ``SparseTensor``, or ``other`` is not a tensor.
        ValueError: ``src`` is a dense tensor, or ``reduce`` is not supported (PyG's checks).
        RuntimeError: the shapes do not match (torch's error).

    Example:
        >>> adj = torch.tensor([[0.0, 1.0], [1.0, 1.0]]).to_sparse_csr()
        >>> x = torch.tensor([[1.0], [2.0]])
        >>> scatterx.pyg.spmm(adj, x, "mean")
        tensor([[2.0000],
                [1.5000]])
    """
    if torch.jit.is_scripting():
        return _pyg_spmm_fn(src, other, reduce)
    if not isinstance(src, (Tensor, SparseTensor, Adjacency)):
        raise TypeError(f"spmm: src must be a sparse torch.Tensor or a SparseTensor, got {type(src).__name__}")
    _check_types("spmm", {"other": other})
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
    if (
        is_enabled()
        and ptr is not None
        and reduce in REDUCE
        and isinstance(ptr, Tensor)
        and ptr.dim() == 1
        and runs_here(x, ptr)
        and -x.dim() <= dim < x.dim()
    ):
        if _pays(x, dim % x.dim(), REDUCE[reduce]):
            return segment_reduce(x, ptr, REDUCE[reduce], dim % x.dim())
        _check_ptr(x, ptr, dim % x.dim())  # handed back
    return ORIGINAL["Aggregation.reduce"](self, x, index, ptr, dim_size, dim, reduce)


aggregation_reduce.__name__ = "reduce"  # TorchScript compiles a method under its function's __name__

#: the module-level functions enable() installs, by the name of PyG's function each replaces
REPLACEMENT = {"scatter": scatter, "segment": segment, "softmax": softmax, "spmm": spmm}
