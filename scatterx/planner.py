"""The x-transformer model of a scatter or gather, the sliceability planner, and the engine that runs its plans.

Every framework's gather/scatter is one *map* from positions ``u`` of an iterated tensor (a scatter's updates, a
gather's output) to positions ``t`` of the data tensor (a scatter's target, a gather's source):

    t = p( f(p1(u)) + p2(u) )

- ``p1`` picks the coordinates of ``u`` that go through the index lookup ``f``: ``f`` reads ``index`` at them and
  yields one or more target coordinates (``XMap.lookup`` -> ``XMap.coords``);
- ``p2`` carries the other coordinates over unchanged (``XMap.carry``: pairs ``(u dim, data dim)``);
- ``p`` arranges both into the data tensor's dimensions.

A scatter reduces ``updates[u]`` into ``data[t]``; a gather reads ``out[u] = data[t]``.

**Sliceable.** When a block of trailing carried dims is never touched by the lookup, every lookup moves whole
contiguous slices: the map is a 1-D row index over ``(outer, rows, inner)`` views -- a :class:`Plan` of kind
``"slice"`` that runs on ``index_scatter_reduce`` (scatter) or ``index_select`` (gather). The planner:

1. drops lookup dims the index does not vary along (stride 0, size 1, or equal values) when they are also carried
   -- an index expanded from 1-D, as PyG builds it, becomes 1-D again;
2. keeps a leading block of carried dims that the lookup never touches as ``outer``, and the longest such trailing
   block as ``inner``;
3. folds every remaining dim into one flat row number: lookup coordinates from ``index``, carried coordinates from
   their own position (``arange``).

When no carried block survives the plan is of kind ``"element"``: the rows are single elements, i.e. flat offsets
into the data tensor, run element by element. One exception: a single coordinate into 1-D data (a 1-D scatter)
is a slice plan with ``inner == 1`` whose rows are the index itself, for the core op's one-element-row kernels.

Worked examples are in docs/MODEL.md. Frontends (``scatterx.pytorch``, ``scatterx.onnx``, ``scatterx.tf``,
``scatterx.paddle``) only translate their arguments into an :class:`XMap` and call :func:`scatter` or
:func:`gather`; ``scatterx.reference.x_scatter`` / ``x_gather`` execute a map by its definition, element by element.

Why this module is long: the model (``XMap`` and the constructors every frontend uses), the planner that lowers a
map and the executor that runs a plan are read together -- each step is the previous one's consumer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional, Sequence, Tuple

import torch

from ._reductions import NAMES, SUPPORTED_DTYPES, resolve
from .backends._common import empty
from .ops import element_gather, element_scatter, index_scatter_reduce_from, needs_op

#: reductions of :func:`scatter`: ``"assign"`` (the last write in ``u``'s row-major order wins) and the table's
SCATTER_REDUCTIONS = ("assign",) + NAMES


@dataclass(frozen=True)
class XMap:
    """A map ``u -> t`` from the positions of an iterated tensor of ``shape`` to those of a data tensor of
    ``data_shape`` (see the module docstring).

    index: integer tensor. Its first ``len(lookup)`` dims run along the ``u`` dims ``lookup`` (same sizes; a
        stride-0 expanded view is fine). With ``vector=True`` one more, last, dim of length ``len(coords)`` holds
        the coordinate vector (ONNX/TF ND indices); otherwise ``coords`` has one entry.
    lookup: ``u`` dims the lookup reads (p1).
    coords: data dims the lookup's coordinates fill, in the order of the coordinate vector.
    carry: ``(u dim, data dim)`` pairs copied unchanged (p2); ``u``'s size must not exceed the data's.
    Every ``u`` dim is looked up or carried (or both); every data dim is filled by exactly one of them.
    Coordinates must already be in range (frontends wrap negative ones where their framework does);
    :func:`check_coordinates` verifies it.
    """

    shape: Tuple[int, ...]
    data_shape: Tuple[int, ...]
    index: torch.Tensor
    lookup: Tuple[int, ...]
    coords: Tuple[int, ...]
    carry: Tuple[Tuple[int, int], ...]
    vector: bool = False

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        object.__setattr__(self, "data_shape", tuple(int(s) for s in self.data_shape))
        expected = [self.shape[d] for d in self.lookup] + ([len(self.coords)] if self.vector else [])
        if list(self.index.shape) != expected:
            raise ValueError(f"index has shape {tuple(self.index.shape)}, expected {tuple(expected)}")
        if not self.vector and len(self.coords) != 1:
            raise ValueError("a scalar lookup fills exactly one data dim")
        filled = list(self.coords) + [t for _, t in self.carry]
        if sorted(filled) != list(range(len(self.data_shape))):
            raise ValueError(f"data dims filled {filled}: each of {len(self.data_shape)} dims must be filled once")
        used = set(self.lookup) | {s for s, _ in self.carry}
        if used != set(range(len(self.shape))):
            raise ValueError(f"u dims {sorted(set(range(len(self.shape))) - used)} are neither looked up nor carried")
        for s, t in self.carry:
            if self.shape[s] > self.data_shape[t]:
                raise ValueError(f"carried dim {s} (size {self.shape[s]}) exceeds data dim {t} ({self.data_shape[t]})")

    @classmethod
    def along_dim(cls, index: torch.Tensor, data_shape, dim: int, *, names=("index", "input"), op: str = "") -> "XMap":
        """The map of ``torch.gather``/``scatter``/``scatter_reduce``, ONNX ``GatherElements``/``ScatterElements``
        and Paddle's ``put_along_axis``: ``u`` runs over ``index``; ``t = u`` with ``t[dim] = index[u]``.

        ``index`` must have the data's rank and, along every other dim, at most the data's size (the map then
        covers a leading box of the data). ``names``: the caller's words for the index and the data, ``op`` its
        function, in the ValueError messages."""
        index_name, data_name = names
        prefix = f"{op}: " if op else ""
        ndim = len(data_shape)
        if index.dim() != ndim:
            raise ValueError(
                f"{prefix}{index_name} has {index.dim()} dimension(s) but {data_name} has {ndim}; they must be equal"
            )
        for d in range(ndim):
            if d != dim and index.size(d) > data_shape[d]:
                raise ValueError(
                    f"{prefix}{index_name}.size({d}) = {index.size(d)} exceeds {data_name}.size({d}) = {data_shape[d]}"
                )
        carry = tuple((d, d) for d in range(ndim) if d != dim)
        return cls(tuple(index.shape), tuple(data_shape), index, tuple(range(ndim)), (dim,), carry)

    @classmethod
    def slices(cls, index: torch.Tensor, data_shape, dim: int) -> "XMap":
        """The map of ``index_add`` / ``index_scatter_reduce``, Paddle's ``scatter`` and TensorFlow's
        ``unsorted_segment_*``: a 1-D ``index`` names, for each slice along ``dim`` of the iterated tensor (the
        data's shape with ``index.numel()`` along ``dim``), the data slice it goes to: ``t = u`` with
        ``t[dim] = index[u[dim]]``. Always sliceable."""
        shape = list(data_shape)
        shape[dim] = index.numel()
        carry = tuple((d, d) for d in range(len(data_shape)) if d != dim)
        return cls(tuple(shape), tuple(data_shape), index, (dim,), (dim,), carry)

    @classmethod
    def nd(cls, index: torch.Tensor, data_shape, batch_dims: int = 0, op: str = "") -> "XMap":
        """The map of ONNX ``GatherND``/``ScatterND`` and TensorFlow's ``*_nd``: ``index`` of shape
        ``B + I + (k,)`` over data of shape ``B + P``; position ``(b, i, rest)`` of the iterated tensor (shape
        ``B + I + P[k:]``) maps to ``data[b, index[b, i], rest]``. The batch dims are both looked up and carried,
        so the planner folds them into the row number; ``P[k:]`` is the slice."""
        prefix = f"{op}: " if op else ""
        data_shape = tuple(data_shape)
        if isinstance(batch_dims, bool) or not isinstance(batch_dims, int) or batch_dims < 0:
            raise ValueError(f"batch_dims must be a non-negative int, got {batch_dims!r}")
        if index.dim() < 1:
            raise ValueError(f"{prefix}indices must have rank >= 1, got a 0-d tensor")
        b, k = batch_dims, index.size(-1)
        if b >= index.dim() or b > len(data_shape):
            raise ValueError(f"{prefix}batch_dims={b} must be less than the rank of indices ({index.dim()}) and at "
                             f"most that of data ({len(data_shape)})")
        if b + k > len(data_shape):
            raise ValueError(f"{prefix}indices.shape[-1] = {k} plus batch_dims = {b} exceeds the rank of data "
                             f"({len(data_shape)})")
        if tuple(index.shape[:b]) != data_shape[:b]:
            raise ValueError(f"{prefix}the batch dims of indices {tuple(index.shape[:b])} and data "
                             f"{data_shape[:b]} differ")
        q = index.dim() - 1  # B + I dims of the iterated tensor
        shape = tuple(index.shape[:-1]) + data_shape[b + k :]
        carry = tuple((d, d) for d in range(b)) + tuple((q + j, b + k + j) for j in range(len(data_shape) - b - k))
        return cls(shape, data_shape, index, tuple(range(q)), tuple(range(b, b + k)), carry, vector=True)

    def coordinate(self, j: int) -> torch.Tensor:
        """Coordinate ``j`` of the lookup, indexed by the ``lookup`` dims."""
        return self.index.select(-1, j) if self.vector else self.index


@dataclass(frozen=True)
class Plan:
    """How a map runs: ``u`` seen as ``(outer, n, inner)``, the data as ``(outer, S, inner)``, and ``rows`` (1-D,
    length ``n``) naming the data row of each ``u`` row. ``kind`` is ``"slice"`` when some carried dims stayed out
    of the lookup (each row entry moves ``outer * inner`` elements) and ``"element"`` when every dim went through
    it (``rows`` are flat offsets, one per element). Element plans of a map the element kernels read directly
    (``route`` "along" or "coords") have no ``rows``: :func:`element_rows` builds them where they are needed
    (autograd)."""

    kind: str
    outer: int
    n: int
    S: int
    inner: int
    rows: Optional[torch.Tensor]  # None for the element routes "along" and "coords": the kernels read the index
    checked: bool  # rows validated by the planner (else the kernel's own single-pass check does it)
    region: Optional[Tuple[int, ...]]  # data is reduced only inside this leading box (carried dims smaller than data)
    route: str = "slice"  # "slice"; for element plans "along", "coords" or "rows" (see _element_route)


def _constant_along(index: torch.Tensor, axis: int) -> bool:
    """Whether ``index`` holds the same values at every position along ``axis`` (free for an expanded view)."""
    if index.size(axis) <= 1 or index.stride(axis) == 0:
        return True
    if index.numel() == 0:
        return True
    if torch.compiler.is_compiling():  # traced: no value is read; a varying index is the plan that is always right
        return False
    # one line along ``axis`` first: a general index differs there, and the full comparison (a pass over the whole
    # index, ~8 ms at 200k x 64) is then not made
    line = index[tuple(slice(None) if d == axis else 0 for d in range(index.dim()))]
    if not bool((line == line[0]).all()):
        return False
    first = index.narrow(axis, 0, 1)
    return bool(torch.equal(index, first.expand_as(index)))


def simplify(m: XMap) -> XMap:
    """Drop lookup dims that are also carried and along which the index does not vary: the lookup ignores them."""
    carried = {s for s, _ in m.carry}
    index, lookup = m.index, list(m.lookup)
    for pos in range(len(lookup) - 1, -1, -1):
        if lookup[pos] in carried and index.size(pos) > 0 and _constant_along(index, pos):
            index = index.select(pos, 0)
            del lookup[pos]
    if len(lookup) == len(m.lookup):
        return m
    return XMap(m.shape, m.data_shape, index, tuple(lookup), m.coords, m.carry, m.vector)


def check_coordinates(m: XMap, name: str = "index") -> None:
    """IndexError for the first coordinate outside its data dim (run before anything is written). Traced
    (``torch.export``, ``torch.compile``) no value can be read: the ops check the flat offsets instead (in range of
    the data, though a coordinate outside its own dim may then land on another element)."""
    if torch.compiler.is_compiling():
        return
    for j, d in enumerate(m.coords):
        c = m.coordinate(j)
        size = m.data_shape[d]
        if c.numel() == 0:
            continue
        low, high = torch.aminmax(c)  # one pass; the position is looked for only on failure
        if int(low) < 0 or int(high) >= size:
            bad = (c < 0) | (c >= size)
            where = tuple(int(i) for i in torch.nonzero(bad)[0])
            if m.vector:
                where = where + (j,)
            value = int(m.index[where])
            raise IndexError(
                f"{name}{list(where)} = {value} is out of bounds for dimension {d} with size {size}"
            )


def plan(m: XMap) -> Plan:
    """Choose how ``m`` runs (see the module docstring): a slice plan when a trailing block of carried dims is
    untouched by the lookup, else an element plan. Coordinates are validated here unless the kernel will."""
    original, m = m, simplify(m)
    looked_up = set(m.lookup)
    to_data = dict(m.carry)
    untouched = {s for s in to_data if s not in looked_up}
    ndim, data_ndim = len(m.shape), len(m.data_shape)

    def block(dims_u, dims_t):  # carried, untouched, same position order in u and data
        return all(s in untouched and to_data[s] == t for s, t in zip(dims_u, dims_t))

    # longest trailing block: u dims ndim-k.. carried in order to data dims data_ndim-k..
    k = 0
    while k < min(ndim, data_ndim) and block([ndim - 1 - k], [data_ndim - 1 - k]):
        k += 1
    # leading block, not overlapping the trailing one
    lead = 0
    while lead < min(ndim, data_ndim) - k and block([lead], [lead]):
        lead += 1

    mid_u = list(range(lead, ndim - k))
    mid_t = list(range(lead, data_ndim - k))
    # carried outer/inner dims smaller than the data's: the map covers a leading box of the data only
    region = None
    if any(m.shape[s] != m.data_shape[to_data[s]] for s in [*range(lead), *range(ndim - k, ndim)]):
        box = list(m.data_shape)
        for s in [*range(lead), *range(ndim - k, ndim)]:
            box[to_data[s]] = m.shape[s]
        region = tuple(box)

    outer = math.prod(m.shape[:lead])
    inner = math.prod(m.shape[ndim - k :])
    n = math.prod([m.shape[s] for s in mid_u])  # (a list: dynamo cannot trace a generator here)
    S = math.prod([m.data_shape[t] for t in mid_t])

    # one coordinate into one data dim, every middle u dim looked up: the rows are the index itself
    single = len(m.coords) == 1 and len(mid_t) == 1 and all(s in looked_up for s in mid_u)
    # "element": every dim went through the lookup, one row per element; "slice": each row moves a group. With no
    # carried block but a single coordinate into 1-D data (a 1-D src and index, or any index into a vector) the
    # rows are single elements of the index itself: a slice plan with inner = 1, on the core op's one-element-row
    # kernels (docs/DESIGN.md, "One coordinate into a vector")
    kind = "slice" if lead + k > 0 or single else "element"
    route = _element_route(original) if kind == "element" else "slice"
    if route in ("along", "coords"):  # the kernels read the caller's index and validate it themselves
        return Plan(kind, outer, n, S, inner, None, False, None, route)
    if single:
        # rows are the index itself: the kernel validates it in its own pass
        rows = _u_order(m.coordinate(0), m.lookup, mid_u).reshape(-1)
        checked = False
    else:
        check_coordinates(m)
        rows = _flat_rows(m, mid_u, mid_t)
        checked = True
    return Plan(kind, outer, n, S, inner, rows, checked, region, route)


def _element_route(m: XMap) -> str:
    """How an element plan of the (unsimplified) map ``m`` runs without a gradient:

    - ``"along"``: ``m`` is ``XMap.along_dim``'s form (``t = u`` with one coordinate replaced by ``index[u]``);
    - ``"coords"``: every ``u`` dim is looked up in order and the coordinates fill the data dims in order
      (``XMap.nd`` with full coordinates and no batch dims, or a scalar index into 1-D data);
    - ``"rows"``: anything else -- flat offsets are built (:func:`element_rows`) and scattered by coordinate.
    """
    ndim, data_ndim = len(m.shape), len(m.data_shape)
    in_order = tuple(m.lookup) == tuple(range(ndim))
    if not m.vector and in_order and ndim == data_ndim:
        d = m.coords[0]
        if tuple(m.carry) == tuple((e, e) for e in range(ndim) if e != d):
            return "along"
    if in_order and not m.carry and tuple(m.coords) == tuple(range(data_ndim)):
        return "coords"
    return "rows"


def element_rows(m: XMap) -> torch.Tensor:
    """The flat data offset of every ``u`` position of an element plan (int64, ``u``'s row-major order), after
    checking every coordinate (IndexError with its position in the caller's index)."""
    check_coordinates(m)
    m = simplify(m)
    return _flat_rows(m, list(range(len(m.shape))), list(range(len(m.data_shape))))


def _u_order(c: torch.Tensor, lookup: Sequence[int], mid_u: Sequence[int]) -> torch.Tensor:
    """``c`` (dims in ``lookup`` order) broadcast to the middle ``u`` dims, in ``u``'s order."""
    order = sorted(range(len(lookup)), key=lambda i: lookup[i])
    c = c.permute(order) if order != list(range(len(lookup))) else c
    present = sorted(lookup)
    return c.reshape([c.size(present.index(s)) if s in present else 1 for s in mid_u])


def _flat_rows(m: XMap, mid_u, mid_t) -> torch.Tensor:
    """Row number in the middle data block for every middle ``u`` position (int64, flattened)."""
    strides = {}
    acc = 1
    for t in reversed(mid_t):
        strides[t] = acc
        acc *= m.data_shape[t]
    mid_shape = [m.shape[s] for s in mid_u]
    rows = None  # summed in place: one full-size int64 tensor, no temporaries
    for j, t in enumerate(m.coords):
        term = _u_order(m.coordinate(j), m.lookup, mid_u)
        if rows is None:  # widened before multiplying: an int32 index times a stride may overflow int32
            rows = torch.empty(mid_shape, dtype=torch.int64, device=m.index.device).copy_(term.expand(mid_shape))
            if strides[t] != 1:
                rows.mul_(strides[t])
        else:
            rows.add_(term, alpha=strides[t])
    if rows is None:
        rows = torch.zeros(mid_shape, dtype=torch.int64, device=m.index.device)
    for s, t in m.carry:
        if s in mid_u:
            shape = [1] * len(mid_u)
            shape[mid_u.index(s)] = m.shape[s]
            rows.add_(torch.arange(0, m.shape[s] * strides[t], strides[t], device=m.index.device).view(shape))
    return rows.view(-1)


# --------------------------------------------------------------------------------------------------- execution
def scatter(
    m: XMap, data: torch.Tensor, updates: torch.Tensor, reduce: str, include_self: bool = True, torch_ties: bool = False
) -> torch.Tensor:
    """A new tensor: ``data`` with ``updates[u]`` reduced into position ``t(u)`` for every ``u``.

    reduce: ``"assign"`` (last write in ``u`` order wins; ``include_self`` is irrelevant) or a reduction of the
    table. ``include_self``: ``data``'s value takes part in each reduction (mean counts it). Positions that
    receive nothing keep ``data``'s value. Differentiable w.r.t. ``data`` and ``updates``; ``torch_ties``: amax/amin
    split their gradient as ``torch.scatter_reduce`` does (``data``'s value counts among the ties even with
    ``include_self=False``).
    """
    reduce = reduce if reduce == "assign" else resolve(reduce).name
    p = plan(m)
    if p.kind == "element" and updates.numel() and _element_kernels(data, updates):
        flat = updates if p.route != "rows" else updates.reshape(-1)
        return _element(m, p, data, lambda index, box, dim: element_scatter(
            index, flat, box, reduce, include_self, dim)).reshape(data.shape)
    if p.rows is None:  # with autograd: the flat offsets, on the slice path's op
        p = replace(p, rows=element_rows(m), checked=True, route="rows")
    if p.region is not None:
        box = tuple(slice(0, r) for r in p.region)
        result = data.clone()
        result[box] = _run(m, p, data[box], updates, reduce, include_self, torch_ties)
        return result
    return _run(m, p, data, updates, reduce, include_self, torch_ties)


def reduced(m: XMap, updates: torch.Tensor, reduce: str) -> torch.Tensor:
    """A new tensor of ``m.data_shape``: ``updates[u]`` reduced into position ``t(u)``, positions that receive
    nothing 0 (the core op's result without ``out``). The same as ``scatter(m, zeros, updates, reduce,
    include_self=False)``; a slice plan skips the zeros (allocating and reading them cost ~1 ms of ~8 at the
    bench's shape)."""
    p = plan(m)
    if p.kind != "slice" or p.rows is None or p.region is not None or p.n == 0 or updates.numel() == 0:
        zeros = torch.zeros(m.data_shape, dtype=updates.dtype, device=updates.device)
        return scatter(m, zeros, updates, reduce, include_self=False)
    src = updates.reshape(p.outer, p.n, p.inner)
    result = index_scatter_reduce_from(1, p.rows, src, resolve(reduce).name, None, None, dim_size=p.S)
    return result.reshape(m.data_shape)


def _run(m: XMap, p: Plan, data, updates, reduce, include_self, torch_ties):
    src = updates.reshape(p.outer, p.n, p.inner)
    base = data.reshape(p.outer, p.S, p.inner)
    if p.n == 0 or src.numel() == 0:
        return data.clone()
    if reduce == "assign":
        result = _assign(p, src, base)
    else:  # sorted=None: the sorted path when the rows happen to be sorted
        result = index_scatter_reduce_from(1, p.rows, src, reduce, None, base, include_self, torch_ties)
    return result.reshape(data.shape)


def _assign(p: Plan, src, base):
    """Last write wins: the last ``u`` row of each data row (an amax of positions, on scatterx's kernel), then one
    collision-free copy. Differentiable through ``index_select`` / ``index_copy``."""
    positions = torch.arange(p.n, dtype=torch.int64, device=src.device)
    initial = torch.full((p.S,), -1, dtype=torch.int64, device=src.device)
    last = index_scatter_reduce_from(0, p.rows, positions, "amax", None, initial)
    targets = torch.nonzero(last >= 0).view(-1)
    return base.index_copy(1, targets, src.index_select(1, last[targets]))


def _element_kernels(data: torch.Tensor, *others: torch.Tensor) -> bool:
    """Whether an element plan runs on the element kernels: no gradient wanted, nothing traced, a kernel dtype."""
    return data.dtype in SUPPORTED_DTYPES and not needs_op(data, *others)


def _element(m: XMap, p: Plan, data: torch.Tensor, run, scatters: bool = True) -> torch.Tensor:
    """Run an element plan on the element kernels: ``run(index, data_or_box, dim)`` (``dim`` None: coordinates)
    gets the caller's index as it is for the routes "along" and "coords", flat offsets for "rows". A bad index
    is reported at its position in the caller's index; nothing of ``data`` is written."""
    try:
        if p.route == "along":
            dim = m.coords[0]
            box = [m.shape[d] if d != dim else m.data_shape[d] for d in range(len(m.shape))]
            if box == list(m.data_shape):  # the index covers the data (else a leading box of it, as torch allows)
                return run(m.index, data, dim)
            inside = tuple(slice(0, b) for b in box)
            if not scatters:
                return run(m.index, data[inside], dim)
            result = data.clone()
            result[inside] = run(m.index, data[inside], dim)
            return result
        if p.route == "coords":
            return run(m.index if m.vector else m.index.unsqueeze(-1), data, None)
        rows = p.rows if p.rows is not None else element_rows(m)
        return run(rows.view(-1, 1), data.reshape(-1), None)  # flat: the caller reshapes
    except IndexError:
        check_coordinates(m)  # the culprit, at its position in the caller's index
        raise


def gather(m: XMap, data: torch.Tensor) -> torch.Tensor:
    """``out[u] = data[t(u)]``, a new tensor of shape ``m.shape``. Differentiable w.r.t. ``data``."""
    p = plan(m)
    if p.kind == "element" and p.route != "rows" and math.prod(m.shape) and _element_kernels(data):
        return _element(m, p, data, lambda index, box, dim: element_gather(box, index, dim), False).reshape(m.shape)
    if p.rows is None:  # with autograd: the flat offsets, gathered by index_select
        p = replace(p, rows=element_rows(m), checked=True, route="rows")
    if not p.checked and not torch.compiler.is_compiling():  # (traced, index_select checks the rows)
        bad = (p.rows < 0) | (p.rows >= p.S)
        if bool(bad.any()):
            check_coordinates(m)  # raises with the position in the caller's index
    if p.region is not None:
        data = data[tuple(slice(0, r) for r in p.region)]
    view = data.reshape(p.outer, p.S, p.inner)
    if view.device.type == "cpu" and not needs_op(view):  # into a buffer on huge pages (backends._common.empty)
        buffer = empty((p.outer, p.rows.numel(), p.inner), view.dtype, view.device)
        return torch.index_select(view, 1, p.rows, out=buffer).reshape(m.shape)
    return view.index_select(1, p.rows).reshape(m.shape)
