"""PyG integration: one switch that runs PyTorch Geometric's scatter work on scatterx.

>>> import scatterx.pyg
>>> scatterx.pyg.enable()          # or: with scatterx.pyg.enabled(): ...
>>> scatterx.pyg.disable()

What the switch routes, while it is on:

- ``torch_geometric.utils.scatter`` / ``segment`` / ``softmax`` / ``spmm``: every module of ``torch_geometric`` that
  holds one of them -- the package namespaces and the modules that bound the name at import time
  (``from torch_geometric.utils import scatter``) -- gets scatterx's version. The index's order is checked per call
  (one pass), so a sorted index takes the sorted kernel; ``ptr`` takes the CSR kernel directly.
- ``Aggregation.reduce``, the one helper behind PyG's sum/mean/max/min/mul/softmax/power-mean/std/var
  aggregations: with ``ptr`` (a sorted ``EdgeIndex`` gives one to ``MessagePassing``) it always runs the CSR
  segment kernel (PyG only does so in deterministic mode); without, it reaches the routed ``scatter``.
- ``propagate`` of the layers whose message is the neighbour's features as they are
  (``FUSED_CONVS``: ``SAGEConv``, ``GINConv``) on a plain ``edge_index`` tensor: the layer's own
  ``message_and_aggregate`` runs on a CSR adjacency (cached per ``edge_index`` tensor; a sorted ``EdgeIndex``
  lends its own CSC), so the messages are
  reduced by ``gather_segment_reduce`` without being materialized. Anything the fused path does not cover -- hooks,
  explain mode, decomposed layers, ``torch.compile``, other flows -- runs PyG's own ``propagate``.

``torch.jit.script`` of PyG code with the switch on compiles PyG's own functions (TorchScript cannot compile
Numba or Triton kernels); the scripted module runs PyG's default path. Calls the kernels cannot take (a dtype or device scatterx does not support, ``reduce='any'``, a multi-dimensional
``ptr``, PyG's own argument errors) go to PyG's original function, so behaviour is PyG's everywhere else.

``ScatterAggregation(reduce)`` is the same work as an ``aggr=`` module, for code that prefers not to patch.
"""

from __future__ import annotations

import contextlib
import copy
import types
import weakref
from typing import Any, Dict, List, Optional, Tuple

import torch
from torch import Tensor

try:
    import torch_geometric  # noqa: F401
    import torch_geometric.nn.aggr.base as _aggr_base
    import torch_geometric.nn.conv.message_passing as _mp
    import torch_geometric.utils._scatter as _pyg_scatter
    import torch_geometric.utils._segment as _pyg_segment
    import torch_geometric.utils._softmax as _pyg_softmax
    import torch_geometric.utils._spmm as _pyg_spmm
    from torch_geometric import EdgeIndex
    from torch_geometric.nn import GINConv, SAGEConv
    from torch_geometric.nn.aggr import Aggregation as _PygAggregation
    from torch_geometric.typing import Adj
    from torch_geometric.utils.num_nodes import maybe_num_nodes
except ImportError as e:  # pragma: no cover - exercised by a subprocess test
    raise ImportError(
        "scatterx.pyg needs PyTorch Geometric: pip install 'scatterx[pyg]' (or torch_geometric)"
    ) from e

from ._reductions import SUPPORTED_DTYPES
from .ops import csr_transpose, gather_segment_reduce, index_scatter_reduce, segment_reduce
from .ops._checks import INDEX_DTYPES
from .ops.gpu import uses_triton

__all__ = ["enable", "disable", "enabled", "is_enabled", "clear_cache", "ScatterAggregation", "FUSED_CONVS"]

#: PyG reduce names -> scatterx's. "mul" is handled apart (PyG starts its products from 1).
_REDUCE = {"sum": "sum", "add": "sum", "mean": "mean", "min": "amin", "max": "amax", "amin": "amin", "amax": "amax"}
#: Layers whose ``message(x_j)`` returns ``x_j`` and whose ``message_and_aggregate`` is ``spmm(adj_t, x[0], aggr)``:
#: their propagate may run fused. Only the exact methods of these classes qualify (a subclass that overrides
#: either runs PyG's propagate).
FUSED_CONVS = (SAGEConv, GINConv)


# ------------------------------------------------------------------------------------------------- the helpers
def _runs_here(src: Tensor, *indices: Optional[Tensor]) -> bool:
    """Whether scatterx's kernels take these tensors (else the caller falls back to PyG's function)."""
    if not isinstance(src, Tensor) or src.layout != torch.strided or src.dtype not in SUPPORTED_DTYPES:
        return False
    if src.device.type != "cpu" and not (src.device.type == "cuda" and _triton_available()):
        return False
    return all(
        isinstance(i, Tensor) and i.layout == torch.strided and i.dtype in INDEX_DTYPES and i.device == src.device
        for i in indices
        if i is not None
    )


def _triton_available() -> bool:
    from .kernels.gpu import available

    return available()


def _is_sorted(index: Tensor) -> bool:
    """One pass over the index picks the sorted kernel (CPU). Not asked under torch.compile (the answer would be a
    graph break) nor on a GPU (a host sync per call, where the unsorted strategy needs none): the unsorted path
    is correct for any order."""
    if torch.compiler.is_compiling() or index.device.type != "cpu":
        return False
    return index.numel() < 2 or bool((index[1:] >= index[:-1]).all())


def _scatter(src: Tensor, index: Tensor, dim: int, dim_size: Optional[int], reduce: str) -> Tensor:
    """PyG's ``scatter`` semantics on scatterx: rows that receive nothing are 0, and 1 for "mul"."""
    sorted = _is_sorted(index)
    if reduce == "mul":
        size = list(src.shape)
        size[dim] = dim_size if dim_size is not None else (int(index.max()) + 1 if index.numel() else 0)
        return index_scatter_reduce(dim, index, src, "prod", sorted, out=src.new_ones(size))
    return index_scatter_reduce(dim, index, src, _REDUCE[reduce], sorted, dim_size=dim_size)


def scatter(src: Tensor, index: Tensor, dim: int = 0, dim_size: Optional[int] = None, reduce: str = "sum") -> Tensor:
    """``torch_geometric.utils.scatter`` on scatterx (the sorted kernel when ``index`` is sorted)."""
    if torch.jit.is_scripting():
        return _pyg_scatter_fn(src, index, dim, dim_size, reduce)
    if (
        _patched
        and (reduce in _REDUCE or reduce == "mul")
        and _runs_here(src, index)
        and index.dim() == 1
        and -src.dim() <= dim < src.dim()
        and (reduce != "mean" or src.is_floating_point())  # PyG's integer mean divides exactly (a float result)
    ):
        dim = dim % src.dim()
        if index.numel() == src.size(dim):
            return _scatter(src, index, dim, dim_size, reduce)
    return _ORIGINAL["scatter"](src, index, dim, dim_size, reduce)


def _flat_ptr(ptr: Tensor) -> Optional[Tuple[Tensor, int]]:
    """PyG passes ``ptr`` with leading 1-dims (``expand_left``) to name the reduced dim: (1-D ptr, dim)."""
    if ptr.dim() == 0 or any(s != 1 for s in ptr.shape[:-1]):
        return None
    return ptr.reshape(-1), ptr.dim() - 1


def segment(src: Tensor, ptr: Tensor, reduce: str = "sum") -> Tensor:
    """``torch_geometric.utils.segment`` on scatterx's CSR kernel."""
    if torch.jit.is_scripting():
        return _pyg_segment_fn(src, ptr, reduce)
    flat = _flat_ptr(ptr) if isinstance(ptr, Tensor) and _patched else None
    if reduce in _REDUCE and flat is not None and _runs_here(src, flat[0]) and flat[1] < src.dim():
        return segment_reduce(src, flat[0], _REDUCE[reduce], flat[1])
    return _ORIGINAL["segment"](src, ptr, reduce)


def softmax(
    src: Tensor,
    index: Optional[Tensor] = None,
    ptr: Optional[Tensor] = None,
    num_nodes: Optional[int] = None,
    dim: int = 0,
) -> Tensor:
    """``torch_geometric.utils.softmax`` with its group max and sum on scatterx (PyG's formula otherwise)."""
    if torch.jit.is_scripting():
        return _pyg_softmax_fn(src, index, ptr, num_nodes, dim)
    if not (_patched and _runs_here(src, index, ptr) and -src.dim() <= dim < src.dim()):
        return _ORIGINAL["softmax"](src, index, ptr, num_nodes, dim)
    dim = dim % src.dim()
    if ptr is not None and ptr.dim() == 1:
        count = ptr.diff()
        size = src.size(dim)
        src_max = segment_reduce(src.detach(), ptr, "amax", dim).repeat_interleave(count, dim, output_size=size)
        out = (src - src_max).exp()
        out_sum = (segment_reduce(out, ptr, "sum", dim) + 1e-16).repeat_interleave(count, dim, output_size=size)
        return out / out_sum
    if ptr is None and index is not None and index.dim() == 1 and index.numel() == src.size(dim):
        n = maybe_num_nodes(index, num_nodes)
        sorted = _is_sorted(index)
        src_max = index_scatter_reduce(dim, index, src.detach(), "amax", sorted, dim_size=n)
        out = (src - src_max.index_select(dim, index)).exp()
        out_sum = index_scatter_reduce(dim, index, out, "sum", sorted, dim_size=n) + 1e-16
        return out / out_sum.index_select(dim, index)
    return _ORIGINAL["softmax"](src, index, ptr, num_nodes, dim)


def spmm(src: Adj, other: Tensor, reduce: str = "sum") -> Tensor:
    """``torch_geometric.utils.spmm``: scatterx's fused kernel for the adjacency the fused propagate builds."""
    if torch.jit.is_scripting():
        return _pyg_spmm_fn(src, other, reduce)
    if isinstance(src, _Adjacency):
        return src.matmul(other, reduce)
    return _ORIGINAL["spmm"](src, other, reduce)


def _aggregation_reduce(
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
    if _patched and ptr is not None and reduce in _REDUCE and isinstance(ptr, Tensor) and ptr.dim() == 1:
        if _runs_here(x, ptr) and -x.dim() <= dim < x.dim():
            return segment_reduce(x, ptr, _REDUCE[reduce], dim % x.dim())
    return _ORIGINAL["Aggregation.reduce"](self, x, index, ptr, dim_size, dim, reduce)


_aggregation_reduce.__name__ = "reduce"  # TorchScript compiles a method under its function's __name__


# --------------------------------------------------------------------------------------- fused message passing
class _Adjacency:
    """Edges grouped by target (CSR): ``ptr`` over targets, ``col`` the source of each edge. What the fused
    ``propagate`` hands a layer's ``message_and_aggregate``; only the routed ``spmm`` reads it."""

    def __init__(self, ptr: Tensor, col: Tensor, node_dim: int):
        self.ptr, self.col, self.node_dim = ptr, col, node_dim
        self._transposes: Dict[int, Tuple[Tensor, Tensor]] = {}

    def transpose(self, num_sources: int) -> Tuple[Tensor, Tensor]:
        """Edges grouped by source (the backward's structure), computed once per adjacency."""
        if num_sources not in self._transposes:
            self._transposes[num_sources] = csr_transpose(self.ptr, self.col, num_sources)
        return self._transposes[num_sources]

    def with_node_dim(self, node_dim: int) -> "_Adjacency":
        view = _Adjacency(self.ptr, self.col, node_dim)
        view._transposes = self._transposes
        return view

    def matmul(self, x: Tensor, reduce: str) -> Tensor:
        dim = self.node_dim % x.dim()
        return gather_segment_reduce(
            x, self.ptr, self.col, _REDUCE[reduce], dim, transpose=self.transpose(x.size(dim))
        )


#: ``(id(edge_index), targets)`` -> (weak reference, version, adjacency): a layer stack reuses one graph every
#: call. It outlives disable(), so that switching off and on again (as bench-gnn does per epoch) keeps it.
_ADJACENCY_CACHE: Dict[Tuple[int, int], Tuple[Any, int, _Adjacency]] = {}
_ADJACENCY_CACHE_SIZE = 8


def _adjacency(edge_index: Tensor, num_targets: int, node_dim: int) -> _Adjacency:
    """The CSR adjacency (by target ``edge_index[1]``) of a ``[2, E]`` edge list, cached while the tensor lives
    and is not modified in place. (Writes that bypass torch's version counter -- through ``.data`` or a NumPy
    view -- are not seen: rebuild the tensor, or call ``clear_cache()``.)"""
    key = (id(edge_index), num_targets)
    cacheable = not edge_index.is_inference()  # inference tensors have no version counter
    hit = _ADJACENCY_CACHE.get(key) if cacheable else None
    if hit is not None and hit[0]() is edge_index and hit[1] == edge_index._version:
        return hit[2].with_node_dim(node_dim)
    adjacency = _edge_index_csc(edge_index, num_targets, node_dim)
    if adjacency is None:
        plain = edge_index.as_subclass(Tensor) if type(edge_index) is not Tensor else edge_index
        source, target = plain[0], plain[1]
        each_edge = torch.arange(target.numel() + 1, device=target.device)
        # grouping the edges by target is the transpose of "edge e reads target[e]"
        ptr, edges = csr_transpose(each_edge, target, num_targets)
        adjacency = _Adjacency(ptr, source[edges].contiguous(), node_dim)
    if not cacheable:
        return adjacency
    if len(_ADJACENCY_CACHE) >= _ADJACENCY_CACHE_SIZE:
        _ADJACENCY_CACHE.pop(next(iter(_ADJACENCY_CACHE)))
    # the entry goes when the tensor does (its structure can be as large as the graph)
    ref = weakref.ref(edge_index, lambda _, key=key: _ADJACENCY_CACHE.pop(key, None))
    _ADJACENCY_CACHE[key] = (ref, edge_index._version, adjacency)
    return adjacency


def _edge_index_csc(edge_index: Tensor, num_targets: int, node_dim: int) -> Optional[_Adjacency]:
    """A sorted ``EdgeIndex`` keeps its own CSC (edges grouped by target): use it rather than sorting again."""
    if not isinstance(edge_index, EdgeIndex) or not edge_index.is_sorted:
        return None
    (colptr, row), _ = edge_index.get_csc()
    colptr, row = colptr.as_subclass(Tensor), row.as_subclass(Tensor)
    if colptr.numel() != num_targets + 1:  # its sparse size does not say how many targets there are
        return None
    return _Adjacency(colptr, row.contiguous(), node_dim)


_HOOKS = (
    "_propagate_forward_pre_hooks",
    "_propagate_forward_hooks",
    "_message_forward_pre_hooks",
    "_message_forward_hooks",
    "_aggregate_forward_pre_hooks",
    "_aggregate_forward_hooks",
    "_message_and_aggregate_forward_pre_hooks",
    "_message_and_aggregate_forward_hooks",
)


def _fusable(conv) -> bool:
    cls = type(conv)
    if not any(
        cls.message is base.message and cls.message_and_aggregate is base.message_and_aggregate
        for base in FUSED_CONVS
    ):
        return False
    return (
        conv.fuse
        and not conv.explain
        and conv.decomposed_layers == 1
        and conv.flow == "source_to_target"
        and not torch.compiler.is_compiling()
        and not torch.jit.is_scripting()
        and not any(getattr(conv, hooks, None) for hooks in _HOOKS)
    )


def _fused_propagate(conv, edge_index, size, kwargs) -> Optional[Tensor]:
    """PyG's fused branch of ``propagate`` on a plain edge list, or None when it does not apply."""
    if not (_fusable(conv) and isinstance(edge_index, Tensor) and edge_index.layout == torch.strided):
        return None
    x = kwargs.get("x")
    if not (isinstance(x, (tuple, list)) and len(x) == 2 and isinstance(x[0], Tensor)):
        return None
    x_j, x_i = x
    if not _runs_here(x_j, edge_index if edge_index.dim() == 2 else None) or x_j.dim() == 0:
        return None
    mutable_size = conv._check_input(edge_index, size)  # PyG's own checks of edge_index and size
    conv._set_size(mutable_size, 0, x_j)
    if isinstance(x_i, Tensor):
        conv._set_size(mutable_size, 1, x_i)
    num_targets = mutable_size[1] if mutable_size[1] is not None else mutable_size[0]
    adjacency = _adjacency(edge_index, num_targets, conv.node_dim)
    coll = conv._collect(conv._fused_user_args, edge_index, mutable_size, kwargs)
    out = conv.message_and_aggregate(adjacency, **conv.inspector.collect_param_data("message_and_aggregate", coll))
    return conv.update(out, **conv.inspector.collect_param_data("update", coll))


def _routed_propagate(cls):
    """``cls.propagate`` that tries the fused path first. PyG gives each layer class its own ``propagate``, made
    from a template on first instantiation, unless the class already has one whose ``__module__`` carries the
    template's name; the wrapper takes that name, so PyG keeps it. Returns (what ``cls`` had, the wrapper)."""
    had = cls.__dict__.get("propagate", _ABSENT)
    pyg_propagate = _mp.MessagePassing.propagate if had is _ABSENT else had

    def propagate(self, edge_index, size=None, **kwargs):
        out = _fused_propagate(self, edge_index, size, kwargs) if is_enabled() else None
        if out is not None:
            return out
        return pyg_propagate(self, edge_index, size=size, **kwargs)

    propagate.__module__ = f"{cls.__module__}_{cls.__name__}_propagate" if had is _ABSENT else had.__module__
    propagate.__doc__ = pyg_propagate.__doc__
    return had, propagate


#: the propagate wrappers enable() installed, and per layer class a subclass with PyG's propagate (for scripting)
_WRAPPERS: set = set()
_SCRIPTABLE: Dict[type, type] = {}


def _prepare_scriptable(self):
    """``torch.jit.script(conv)`` calls this first: TorchScript cannot compile the wrapper (``**kwargs``, Numba),
    so it scripts a copy whose class has PyG's own template-made ``propagate``; the eager layer stays fused."""
    cls = type(self)
    if cls.__dict__.get("propagate") not in _WRAPPERS and getattr(cls, "propagate", None) not in _WRAPPERS:
        return self
    if cls not in _SCRIPTABLE:
        _SCRIPTABLE[cls] = type(
            cls.__name__, (cls,), {"propagate": _mp.MessagePassing.propagate, "__module__": cls.__module__}
        )
    clone = copy.copy(self)
    clone.__class__ = _SCRIPTABLE[cls]
    clone._set_jittable_templates(raise_on_error=True)
    return clone


# ------------------------------------------------------------------------------------------------- the switch
_ORIGINAL = {
    "scatter": _pyg_scatter.scatter,
    "segment": _pyg_segment.segment,
    "softmax": _pyg_softmax.softmax,
    "spmm": _pyg_spmm.spmm,
    "Aggregation.reduce": _aggr_base.Aggregation.reduce,
}
# Under torch.jit.script the routed functions call PyG's own through these plain globals: TorchScript compiles
# what it reaches, and it reads neither dicts like _ORIGINAL nor the Numba and Triton kernels.
_pyg_scatter_fn = _pyg_scatter.scatter
_pyg_segment_fn = _pyg_segment.segment
_pyg_softmax_fn = _pyg_softmax.softmax
_pyg_spmm_fn = _pyg_spmm.spmm
_REPLACEMENT = {"scatter": scatter, "segment": segment, "softmax": softmax, "spmm": spmm}
_METHODS = {"Aggregation.reduce": (_aggr_base.Aggregation, "reduce", _aggregation_reduce)}
#: an attribute the class did not have before enable(): disable() deletes it
_ABSENT = object()
#: what enable() changed: (owner, attribute, original or _ABSENT), undone by disable()
_patched: List[Tuple[Any, str, Any]] = []


def _renamed(fn, name):
    """A copy of function ``fn`` named ``name`` (TorchScript compiles a method under its function's __name__)."""
    renamed = types.FunctionType(fn.__code__, fn.__globals__, name, fn.__defaults__, fn.__closure__)
    renamed.__kwdefaults__ = fn.__kwdefaults__
    renamed.__annotations__ = dict(fn.__annotations__)
    renamed.__module__ = fn.__module__
    renamed.__qualname__ = fn.__qualname__.rsplit(".", 1)[0] + "." + name
    return renamed


def is_enabled() -> bool:
    return bool(_patched)


def enable() -> None:
    """Route PyG's scatter/segment/softmax/spmm, its aggregations and the fused layers through scatterx.

    Names bound at import time are found by identity in every loaded ``torch_geometric`` module; modules loaded
    later import the routed functions from the patched package. Calling it again is a no-op."""
    if _patched:
        return
    import sys

    originals = {id(fn): name for name, fn in _ORIGINAL.items() if name in _REPLACEMENT}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "torch_geometric" or module_name.startswith("torch_geometric.")):
            continue
        for attr, value in list(vars(module).items()):
            name = originals.get(id(value))
            if name is not None and value is _ORIGINAL[name]:
                _patched.append((module, attr, value))
                setattr(module, attr, _REPLACEMENT[name])
    _patched.append((_aggr_base.Aggregation, "_pyg_reduce", _ABSENT))
    _aggr_base.Aggregation._pyg_reduce = _renamed(_ORIGINAL["Aggregation.reduce"], "_pyg_reduce")
    for name, (owner, attr, replacement) in _METHODS.items():
        _patched.append((owner, attr, _ORIGINAL[name]))
        setattr(owner, attr, replacement)
    for cls in FUSED_CONVS:
        had, wrapper = _routed_propagate(cls)
        _patched.append((cls, "propagate", had))
        cls.propagate = wrapper
        _WRAPPERS.add(wrapper)
        _patched.append((cls, "__prepare_scriptable__", cls.__dict__.get("__prepare_scriptable__", _ABSENT)))
        cls.__prepare_scriptable__ = _prepare_scriptable


def disable() -> None:
    """Undo ``enable()``: every patched name gets PyG's function back."""
    while _patched:
        owner, attr, original = _patched.pop()
        if original is _ABSENT:
            delattr(owner, attr)
        else:
            setattr(owner, attr, original)


def clear_cache() -> None:
    """Forget the CSR adjacencies built for fused layers (they are rebuilt on the next call)."""
    _ADJACENCY_CACHE.clear()


@contextlib.contextmanager
def enabled():
    """``with scatterx.pyg.enabled(): ...``: the switch on inside the block, as it was before after it (an
    ``enable()`` called inside a block that found the switch off is undone at its end too)."""
    was_on = is_enabled()
    enable()
    try:
        yield
    finally:
        if not was_on:
            disable()


# ------------------------------------------------------------------------------------------- aggr= without patching
class ScatterAggregation(_PygAggregation):
    """An ``aggr=`` module on scatterx: ``SAGEConv(..., aggr=ScatterAggregation("mean"))``.

    ``reduce``: "sum" ("add"), "mean", "mul", "min", "max" (also "amin", "amax"), with PyG's conventions (rows
    that receive nothing are 0, or 1 for "mul"). ``ptr`` runs the CSR kernel; an index is checked for order per
    call, and a sorted one takes the sorted kernel."""

    def __init__(self, reduce: str = "sum"):
        super().__init__()
        if reduce not in _REDUCE and reduce != "mul":
            raise ValueError(f"ScatterAggregation: unknown reduce {reduce!r}; one of {sorted(_REDUCE) + ['mul']}")
        self.reduce_name = reduce

    def forward(self, x, index=None, ptr=None, dim_size=None, dim: int = -2, max_num_elements=None) -> Tensor:
        dim = dim % x.dim()
        if ptr is not None and self.reduce_name in _REDUCE and ptr.dim() == 1:
            return segment_reduce(x, ptr, _REDUCE[self.reduce_name], dim)
        self.assert_index_present(index)
        if self.reduce_name == "mean" and not x.is_floating_point():  # PyG's integer mean divides exactly
            return _ORIGINAL["scatter"](x, index, dim, dim_size, "mean")
        return _scatter(x, index, dim, dim_size, self.reduce_name)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.reduce_name!r})"
