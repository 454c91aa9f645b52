"""The CSR adjacency the fused layers reduce over, and its cache per ``edge_index`` tensor.

Under ``torch.compile`` (``TracedAdjacency``) the adjacency is not built while dynamo traces: the unweighted sum or
mean of a CPU layer is one op, ``scatterx::adjacency_matmul``, that takes the edge list itself and finds its CSR
structure (and its transpose, for the backward) in the same cache as eager calls, so that a compiled model sorts
its graph's edges once, not at every step; any other reduction builds the structure in the graph from
``csr_order`` (docs/decisions/pyg-integration.md).
"""

from __future__ import annotations

import weakref
from typing import Any, Dict, Optional, Tuple

import torch
from torch import Tensor
from torch_geometric import EdgeIndex

from .._reductions import resolve
from ..backends import backend_for, is_gpu
from ..kernels.cpu import segments as segment_kernels
from ..ops import csr_order, csr_transpose, gather_segment_reduce
from ..ops._checks import check_src, plain_index
from ..ops._library import define_op, register_autograd
from ._common import REDUCE


class Adjacency:
    """Edges grouped by target (CSR): ``ptr`` over targets, ``col`` the source of each edge, ``edges`` the
    position of each in the caller's edge list (None: the same order), to put per-edge weights in CSR order.
    What the fused ``propagate`` hands a layer's ``message_and_aggregate``; only the routed ``spmm`` reads it."""

    def __init__(self, ptr: Tensor, col: Tensor, node_dim: int, edges: Optional[Tensor] = None):
        self.ptr, self.col, self.node_dim, self.edges = ptr, col, node_dim, edges
        self._transposes: Dict[int, Tuple[Tensor, Tensor]] = {}

    def transpose(self, num_sources: int) -> Tuple[Tensor, Tensor]:
        """Edges grouped by source (the backward's structure), computed once per adjacency."""
        if num_sources not in self._transposes:
            self._transposes[num_sources] = csr_transpose(self.ptr, self.col, num_sources)
        return self._transposes[num_sources]

    def with_node_dim(self, node_dim: int) -> Adjacency:
        view = Adjacency(self.ptr, self.col, node_dim, self.edges)
        view._transposes = self._transposes
        return view

    def in_csr_order(self, per_edge: Tensor) -> Tensor:
        """Per-edge values (dim 0) reordered to this adjacency's edge order."""
        return per_edge if self.edges is None else per_edge.index_select(0, self.edges)

    def in_edge_order(self, per_entry: Tensor) -> Tensor:
        """Values per entry of this adjacency (dim 0) put back in the caller's edge order (differentiable)."""
        if self.edges is None:
            return per_entry
        return per_entry.new_empty(per_entry.shape).index_copy(0, self.edges, per_entry)

    def matmul(self, x: Tensor, reduce: str, weight: Optional[Tensor] = None) -> Tensor:
        """``reduce`` over each target's edges of ``x[source]``, times ``weight[edge]`` (caller's edge order;
        ``(E,)`` or ``(E, heads)``) when given."""
        dim = self.node_dim % x.dim()
        if weight is not None:
            # the weighted backward derives its transpose itself (with the entries' order, which it needs)
            return gather_segment_reduce(x, self.ptr, self.col, REDUCE[reduce], dim, weight=self.in_csr_order(weight))
        return gather_segment_reduce(x, self.ptr, self.col, REDUCE[reduce], dim, transpose=self.transpose(x.size(dim)))


#: ``(id(edge_index), targets)`` -> (weak reference, version, adjacency): a layer stack reuses one graph every
#: call. It outlives disable(), so that switching off and on again (as bench-gnn does per epoch) keeps it.
CACHE: Dict[Tuple[int, int], Tuple[Any, int, Adjacency]] = {}
CACHE_SIZE = 8
#: how many leading targets tell a shuffled edge list from a sorted one before a full pass is spent on it
SORTED_PROBE = 1024


def clear_cache() -> None:
    """Forget the CSR adjacencies built for the fused layers; each is rebuilt on its next use.

    With the switch on, a fused layer (:data:`FUSED_CONVS`) builds the CSR adjacency of its ``edge_index`` once
    and keeps it while that tensor lives (for a few tensors at a time), so that a stack of layers on one graph
    sorts the edges once. An in-place change of ``edge_index`` is seen (torch's version counter), but a write that
    bypasses it -- through ``.data`` or a NumPy view -- is not: then call this function (or build a new tensor).
    The cache is kept across :func:`disable`.

    Returns:
        None.

    Raises:
        : Nothing of its own (it takes no argument).

    Example:
        >>> from torch_geometric.nn import GINConv
        >>> conv = GINConv(torch.nn.Identity())  # x_i + the sum of x_j over the edges j -> i
        >>> x = torch.tensor([[1.0], [2.0], [3.0]])
        >>> edge_index = torch.tensor([[0, 1, 2], [1, 2, 1]])
        >>> with scatterx.pyg.enabled():
        ...     conv(x, edge_index)
        tensor([[1.],
                [6.],
                [5.]])
        >>> edge_index.numpy()[0, 0] = 2  # a write that torch's version counter does not see
        >>> scatterx.pyg.clear_cache()
        >>> with scatterx.pyg.enabled():
        ...     conv(x, edge_index)
        tensor([[1.],
                [8.],
                [5.]])
    """
    CACHE.clear()


def adjacency(edge_index: Tensor, num_sources: int, num_targets: int, node_dim: int) -> Adjacency:
    """The CSR adjacency (by target ``edge_index[1]``) of a ``[2, E]`` edge list, cached while the tensor lives
    and is not modified in place. (Writes that bypass torch's version counter -- through ``.data`` or a NumPy
    view -- are not seen: rebuild the tensor, or call ``clear_cache()``.) A new edge list is checked against the
    numbers of source and target nodes first, with PyG's names in the message. Under ``torch.compile``: a
    ``TracedAdjacency``, built by ops in the graph where it is needed at all."""
    if torch.compiler.is_compiling():
        return TracedAdjacency(edge_index, num_sources, num_targets, node_dim)
    key = (id(edge_index), num_targets)
    cacheable = not edge_index.is_inference()  # inference tensors have no version counter
    hit = CACHE.get(key) if cacheable else None
    if hit is not None and hit[0]() is edge_index and hit[1] == edge_index._version:
        return hit[2].with_node_dim(node_dim)
    plain = plain_index(edge_index)
    source, target = plain[0], plain[1]
    backend = backend_for(plain)
    backend.check_index(source, num_sources, "edge_index[0]", "the number of source nodes")
    built = edge_index_csc(edge_index, num_targets, node_dim)
    if built is not None:
        backend.check_index(target, num_targets, "edge_index[1]", "the number of target nodes")
    else:  # the pass that groups the targets validates them
        built = by_target(source, target, num_targets, node_dim)
    if not cacheable:
        return built
    if len(CACHE) >= CACHE_SIZE:
        CACHE.pop(next(iter(CACHE)))

    def forget(_: object) -> None:
        CACHE.pop(key, None)

    # the entry goes when the tensor does (its structure can be as large as the graph)
    ref = weakref.ref(edge_index, forget)
    CACHE[key] = (ref, edge_index._version, built)
    return built


def by_target(source: Tensor, target: Tensor, num_targets: int, node_dim: int) -> Adjacency:
    """The adjacency of a plain edge list. One already grouped by target (a neighbour sampler's batch: targets
    non-decreasing) is its own CSR: its offsets in one validating pass, no permutation, the sources as they are
    (detached: a view would keep ``edge_index`` alive through the cache, which forgets it when it goes). Any other
    is grouped by a stable counting sort."""
    ptr = sorted_ptr(target, num_targets)
    if ptr is not None:
        return Adjacency(ptr, source.detach().contiguous(), node_dim)
    ptr, edges = grouped_by_target(target, num_targets)
    return Adjacency(ptr, source.index_select(0, edges), node_dim, edges)


def sorted_ptr(target: Tensor, num_targets: int) -> Optional[Tensor]:
    """The CSR offsets of a non-decreasing ``target`` in ``[0, num_targets)``, else None, in one validating pass
    (CPU). A shuffled list is told apart by its first entries, before that pass; one whose order breaks later
    costs the pass and the failure's diagnosis, and is grouped as any other. None on a GPU, where telling a sorted
    list apart is a host sync and grouping one by ``torch.sort`` is cheap."""
    if is_gpu(target) or target.numel() < 2:
        return None
    head = target[:SORTED_PROBE].to(torch.int64).contiguous().numpy()  # the kernels' one index layout
    if segment_kernels.first_decrease(head) >= 0:  # (a Numba pass: the cheapest probe measured, torch's included)
        return None
    try:
        return backend_for(target).index_to_ptr(target, num_targets)
    except (IndexError, ValueError):  # not sorted after all, or out of range: grouped_by_target explains the latter
        return None


def grouped_by_target(target: Tensor, num_targets: int) -> Tuple[Tensor, Tensor]:
    """``csr_order`` of the targets: the edges grouped by target, in their order within it, validated in that pass
    (a bad target is explained with PyG's names; on a GPU the device-side check carries them)."""
    backend = backend_for(target)
    if is_gpu(target):
        backend.check_index(target, num_targets, "edge_index[1]", "the number of target nodes")
        return csr_order(target, num_targets)
    try:
        return csr_order(target, num_targets)
    except IndexError:
        backend.check_index(target, num_targets, "edge_index[1]", "the number of target nodes")
        raise


def edge_index_csc(edge_index: Tensor, num_targets: int, node_dim: int) -> Optional[Adjacency]:
    """A sorted ``EdgeIndex`` keeps its own CSC (edges grouped by target): use it rather than sorting again."""
    if not isinstance(edge_index, EdgeIndex) or not edge_index.is_sorted:
        return None
    (colptr, row), perm = edge_index.get_csc()
    colptr, row = plain_index(colptr), plain_index(row)
    if colptr.numel() != num_targets + 1:  # its sparse size does not say how many targets there are
        return None
    if perm is None or (isinstance(perm, slice) and perm == slice(None)):  # PyG 2.5 says "sorted already" by a slice
        edges = None
    elif isinstance(perm, slice):
        edges = torch.arange(row.numel(), device=row.device)[perm]
    else:
        edges = plain_index(perm)
    return Adjacency(colptr, row.contiguous(), node_dim, edges)


# ------------------------------------------------------------------------------------------- under torch.compile
class TracedAdjacency(Adjacency):
    """The adjacency of an edge list under ``torch.compile``. ``matmul`` of an unweighted sum or mean on the CPU
    is ``scatterx::adjacency_matmul`` on the edge list itself (the structure cached across steps, in the op); any
    other use builds ``ptr``, ``col`` and ``edges`` in the graph, once per object, from ``csr_order`` of the
    targets (which checks them; ``col``'s sources are checked by the op that gathers through them)."""

    def __init__(self, edge_index: Tensor, num_sources: int, num_targets: int, node_dim: int):
        self.edge_index, self.num_sources, self.num_targets, self.node_dim = (
            edge_index,
            num_sources,
            num_targets,
            node_dim,
        )
        self._built: Optional[Tuple[Tensor, Tensor, Tensor]] = None

    def _structure(self) -> Tuple[Tensor, Tensor, Tensor]:
        if self._built is None:
            ptr, order = csr_order(self.edge_index[1], self.num_targets)
            self._built = (ptr, self.edge_index[0].index_select(0, order), order)
        return self._built

    # (plain attributes in the eager adjacency, properties here: built on first use)
    @property
    def ptr(self) -> Tensor:  # type: ignore[override]
        return self._structure()[0]

    @property
    def col(self) -> Tensor:  # type: ignore[override]
        return self._structure()[1]

    @property
    def edges(self) -> Tensor:  # type: ignore[override]
        return self._structure()[2]

    def transpose(self, num_sources: int) -> Tuple[Tensor, Tensor]:
        return csr_transpose(self.ptr, self.col, num_sources)

    def with_node_dim(self, node_dim: int) -> TracedAdjacency:
        view = TracedAdjacency(self.edge_index, self.num_sources, self.num_targets, node_dim)
        view._built = self._built
        return view

    def matmul(self, x: Tensor, reduce: str, weight: Optional[Tensor] = None) -> Tensor:
        dim = self.node_dim % x.dim()
        red = REDUCE[reduce]
        if weight is None and dim == 0 and resolve(red).linear and not is_gpu(x) and x.size(0) == self.num_sources:
            return adjacency_matmul(x, self.edge_index, self.num_sources, self.num_targets, red, False)
        if weight is not None:
            return gather_segment_reduce(x, self.ptr, self.col, red, dim, weight=self.in_csr_order(weight))
        return gather_segment_reduce(x, self.ptr, self.col, red, dim)


def _adjacency_matmul(
    x: Tensor, edge_index: Tensor, num_sources: int, num_targets: int, reduce: str, transposed: bool
) -> Tensor:
    """``A @ x`` (``transposed``: ``A.T @ x``) for ``A`` the adjacency of ``edge_index`` (``A[t, s]``: the edges
    ``s -> t``, by target), reduced by ``reduce``: a sum, or a mean over each target's edges (transposed: each
    edge's term divided by its target's count, ``mean``'s gradient). The CSR structure and its transpose come from
    the cache of ``adjacency``, which builds and checks them for an edge list it has not seen."""
    check_src(x, "x")
    red = resolve(reduce)
    rows = num_targets if transposed else num_sources
    if x.dim() == 0 or x.size(0) != rows or not red.linear or edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(
            f"adjacency_matmul: x must have {rows} rows (got shape {tuple(x.shape)}), edge_index shape (2, E) (got "
            f"{tuple(edge_index.shape)}) and reduce a sum or mean (got {reduce!r})"
        )
    adj = adjacency(edge_index, num_sources, num_targets, 0)
    with torch.no_grad():  # (the op's autograd is its own)
        if not transposed:
            return gather_segment_reduce(x, adj.ptr, adj.col, red.name, 0)
        if red.divide_by_count:
            counts = adj.ptr.diff().clamp(min=1).to(x.dtype)
            x = x / counts.view(-1, *([1] * (x.dim() - 1)))
        return gather_segment_reduce(x, *adj.transpose(num_sources), "sum", 0)


def _adjacency_matmul_fake(x, edge_index, num_sources, num_targets, reduce, transposed):
    return x.new_empty((num_sources if transposed else num_targets, *x.shape[1:]))


adjacency_matmul_op = define_op("adjacency_matmul", _adjacency_matmul, _adjacency_matmul_fake)


def _setup_context(ctx, inputs, output):
    _x, edge_index, ctx.num_sources, ctx.num_targets, ctx.reduce, ctx.transposed = inputs
    ctx.save_for_backward(edge_index)


def _backward(ctx, grad):
    """The gradient of ``A @ x`` is ``A.T @ grad`` (a mean's: each target's gradient divided by its count, then
    read back along the edges) and the other way round: the same op, transposed the other way."""
    (edge_index,) = ctx.saved_tensors
    grad_x = adjacency_matmul_op(
        grad.contiguous(), edge_index, ctx.num_sources, ctx.num_targets, ctx.reduce, not ctx.transposed
    )
    return grad_x, None, None, None, None, None


adjacency_matmul = register_autograd(adjacency_matmul_op, _adjacency_matmul, _backward, _setup_context)
