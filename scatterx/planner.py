"""The x-transformer model of a scatter or gather, the planner that lowers it, and the engine that runs its plans.

This is the layer under every frontend: for an engineer who wants to express a new framework's gather or scatter,
see how scatterx will run it, or run a map directly. The model and its worked examples are in ``docs/MODEL.md``.

**The model.** Every framework's gather/scatter is one *map* from positions ``u`` of an iterated tensor (a
scatter's updates, a gather's output) to positions ``t`` of the data tensor (a scatter's target, a gather's
source)::

    t = p( f(p1(u)) + p2(u) )

- ``p1`` picks the coordinates of ``u`` that go through the index lookup ``f``: ``f`` reads ``index`` at them and
  yields one or more target coordinates (``XMap.lookup`` -> ``XMap.coords``);
- ``p2`` carries the other coordinates over unchanged (``XMap.carry``: pairs ``(u dim, data dim)``);
- ``p`` arranges both into the data tensor's dimensions.

A scatter reduces ``updates[u]`` into ``data[t]`` (:func:`scatter`); a gather reads ``out[u] = data[t]``
(:func:`gather`). An :class:`XMap` holds a map; its constructors :meth:`XMap.along_dim`, :meth:`XMap.slices` and
:meth:`XMap.nd` build the maps of the frameworks' operators. The frontends (:mod:`scatterx.pytorch`,
:mod:`scatterx.onnx`, :mod:`scatterx.tf`, :mod:`scatterx.paddle`) only check their framework's rules, translate
their arguments into an :class:`XMap` and call :func:`scatter` or :func:`gather`; ``scatterx.reference.x_scatter``
and ``x_gather`` execute a map by its definition, element by element (the tests' oracle).

**Sliceable maps.** When a block of trailing carried dims is never touched by the lookup, every lookup moves whole
contiguous slices: the map is a 1-D row index over ``(outer, rows, inner)`` views -- a :class:`Plan` of kind
``"slice"`` that runs on ``index_scatter_reduce`` (scatter) or ``index_select`` (gather). :func:`plan`:

1. drops lookup dims the index does not vary along (stride 0, size 1, or equal values) when they are also carried
   (:func:`simplify`) -- an index expanded from 1-D, as PyG builds it, becomes 1-D again;
2. keeps a leading block of carried dims that the lookup never touches as ``outer``, and the longest such trailing
   block as ``inner``;
3. folds every remaining dim into one flat row number: lookup coordinates from ``index``, carried coordinates from
   their own position (``arange``).

When no carried block survives, the plan is of kind ``"element"``: the rows are single elements, i.e. flat offsets
into the data tensor (:func:`element_rows`), run element by element. One exception: a single coordinate into 1-D
data (a 1-D scatter) is a slice plan with ``inner == 1`` whose rows are the index itself, for the core op's
one-element-row kernels.

Coordinates must be in range when a map is run: the frontends wrap negative ones where their framework allows
them; :func:`check_coordinates` raises IndexError for the first one that is not, before anything is written.

.. Why this module is long: the model (``XMap`` and the constructors every frontend uses), the planner that
   lowers a map and the executor that runs a plan are read together -- each step is the previous one's consumer.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, replace
from typing import Optional, Sequence, Tuple

import torch

from ._memo import Memo
from ._reductions import NAMES, SUPPORTED_DTYPES, resolve
from .backends._common import overlaps
from .backends._outputs import empty, release_outputs, reusing_outputs
from .ops import element_gather, element_scatter, index_scatter_reduce_from, needs_op
from .ops._checks import INDEX_DTYPES, as_dim, check_tensor, constant_dim

__all__ = [
    "SCATTER_REDUCTIONS",
    "Plan",
    "XMap",
    "check_coordinates",
    "element_rows",
    "gather",
    "plan",
    "reduced",
    "release_outputs",
    "reusing_outputs",
    "scatter",
    "simplify",
]

#: The ``reduce`` values that :func:`scatter` accepts. ``"assign"`` writes without reducing (the last write in
#: ``u``'s row-major order wins); the others are scatterx's reductions, ``"sum"``, ``"mean"``, ``"prod"``,
#: ``"amax"`` and ``"amin"`` (their aliases ``"add"``, ``"mul"``, ``"max"``, ``"min"`` are accepted too).
SCATTER_REDUCTIONS = ("assign",) + NAMES


@dataclass(frozen=True)
class XMap:
    """A map ``u -> t`` from the positions of an iterated tensor of ``shape`` to those of a data tensor of
    ``data_shape``: ``t = p(f(p1(u)) + p2(u))`` (see the module docstring).

    Every ``u`` dim is looked up or carried (or both); every data dim is filled by exactly one coordinate or
    carried dim. Coordinates are not checked here: they must be in range when the map is run (frontends wrap
    negative ones where their framework allows them; :func:`check_coordinates` verifies it). Most maps are built
    by the constructors :meth:`along_dim`, :meth:`slices` and :meth:`nd`. A map is frozen (immutable).

    Args:
        shape: shape of the iterated tensor (a scatter's updates, a gather's output).
        data_shape: shape of the data tensor (a scatter's target, a gather's source).
        index: int32 or int64 tensor, the lookup table. Its first ``len(lookup)`` dims run along the ``u`` dims
            ``lookup`` (same sizes; a stride-0 expanded view is fine). With ``vector=True`` one more, last, dim of
            length ``len(coords)`` holds the coordinate vector (ONNX/TF ND indices); otherwise ``coords`` has one
            entry.
        lookup: the ``u`` dims the lookup reads (``p1``).
        coords: the data dims the lookup's coordinates fill, in the order of the coordinate vector.
        carry: ``(u dim, data dim)`` pairs copied unchanged (``p2``); ``u``'s size there must not exceed the
            data's (the map then covers a leading box of the data).
        vector: whether ``index`` ends with a coordinate vector.

    Raises:
        TypeError: ``index`` is not a tensor, or not int32/int64.
        IndexError: a dim in ``lookup``, ``coords`` or ``carry`` is out of range for ``shape`` / ``data_shape``.
        ValueError: ``index`` does not have the shape ``lookup`` (and ``vector``) call for, a scalar lookup fills
            more than one data dim, a data dim is filled twice or never, a ``u`` dim is neither looked up nor
            carried, or a carried dim is larger than its data dim.

    Example:
        ``torch.gather(data, 1, index)`` with ``data`` of shape ``(2, 3)``: ``u`` runs over ``index``, dim 1 is
        looked up, dim 0 carried.

        >>> index = torch.tensor([[2, 0], [1, 1]])
        >>> m = XMap((2, 2), (2, 3), index, lookup=(0, 1), coords=(1,), carry=((0, 0),))
        >>> gather(m, torch.tensor([[1., 2., 3.], [4., 5., 6.]]))
        tensor([[3., 1.],
                [5., 5.]])
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
        object.__setattr__(self, "lookup", tuple(self.lookup))
        object.__setattr__(self, "coords", tuple(self.coords))
        object.__setattr__(self, "carry", tuple(tuple(pair) for pair in self.carry))
        _check_index(self.index)
        # the checks below read shapes and dims only: a form checked once is not checked again (the planner's
        # per-call cost, docs/decisions/planner.md "A planner that costs microseconds")
        form = (self.shape, self.data_shape, tuple(self.index.shape), self.lookup, self.coords, self.carry, self.vector)
        if _VALID_FORMS.get(form) and _plain_dims(self.lookup, self.coords, self.carry):
            return
        for what, dims, rank in (
            ("lookup", self.lookup, len(self.shape)),
            ("coords", self.coords, len(self.data_shape)),
            ("carry", [s for s, _ in self.carry], len(self.shape)),
            ("carry", [t for _, t in self.carry], len(self.data_shape)),
        ):
            for d in dims:
                if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < rank:
                    raise IndexError(f"{what} names dim {d!r}, out of range for a shape of {rank} dimension(s)")
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
        _VALID_FORMS.put(form, True)

    @classmethod
    def along_dim(
        cls,
        index: torch.Tensor,
        data_shape: Sequence[int],
        dim: int,
        *,
        names: Tuple[str, str] = ("index", "input"),
        op: str = "",
    ) -> XMap:
        """The map of ``torch.gather``/``scatter``/``scatter_reduce``, ONNX ``GatherElements``/``ScatterElements``
        and Paddle's ``put_along_axis``: ``u`` runs over ``index``; ``t = u`` with ``t[dim] = index[u]``.

        Args:
            index: int32 or int64 tensor with the data's rank and, along every dim but ``dim``, at most the data's
                size (the map then covers a leading box of the data).
            data_shape: the data tensor's shape.
            dim: the data dim the index names (non-negative).
            names: the caller's words for the index and the data, in the error messages.
            op: the caller's function, in the error messages.

        Returns:
            The map, of ``shape == index.shape``.

        Raises:
            TypeError: ``index`` is not an int32/int64 tensor.
            IndexError: ``dim`` is out of range.
            ValueError: ``index``'s rank differs from the data's, or it is larger than the data along another dim.

        Example:
            >>> m = XMap.along_dim(torch.tensor([[1, 0]]), (2, 2), 1)
            >>> m.shape, m.lookup, m.coords, m.carry
            ((1, 2), (0, 1), (1,), ((0, 0),))
        """
        _check_index(index)
        known = _ALONG.get((tuple(index.shape), tuple(data_shape), dim)) if type(dim) is int else None
        if known is not None:  # a form checked before: only the index is new
            return cls._checked(known, index)
        index_name, data_name = names
        prefix = f"{op}: " if op else ""
        ndim = len(data_shape)
        dim = _check_dim(dim, ndim, prefix)
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
        m = cls(tuple(index.shape), tuple(data_shape), index, tuple(range(ndim)), (dim,), carry)
        _ALONG.put((m.shape, m.data_shape, dim), m)
        return m

    @classmethod
    def _checked(cls, like: XMap, index: torch.Tensor) -> XMap:
        """``like`` with another index of the same shape and an int dtype, without checking the form again."""
        m = object.__new__(cls)
        for name, value in (
            ("shape", like.shape),
            ("data_shape", like.data_shape),
            ("index", index),
            ("lookup", like.lookup),
            ("coords", like.coords),
            ("carry", like.carry),
            ("vector", like.vector),
        ):
            object.__setattr__(m, name, value)
        return m

    @classmethod
    def slices(cls, index: torch.Tensor, data_shape: Sequence[int], dim: int) -> XMap:
        """The map of ``index_add`` / ``index_scatter_reduce``, Paddle's ``scatter`` and TensorFlow's
        ``unsorted_segment_*``: a 1-D ``index`` names, for each slice along ``dim`` of the iterated tensor, the
        data slice it goes to: ``t = u`` with ``t[dim] = index[u[dim]]``. Always sliceable.

        Args:
            index: 1-D int32 or int64 tensor, one data row per slice.
            data_shape: the data tensor's shape.
            dim: the data dim the index names (non-negative).

        Returns:
            The map; its ``shape`` is the data's with ``index.numel()`` along ``dim``.

        Raises:
            TypeError: ``index`` is not an int32/int64 tensor.
            IndexError: ``dim`` is out of range.
            ValueError: ``index`` is not 1-D.

        Example:
            >>> m = XMap.slices(torch.tensor([2, 0, 2]), (3, 4), 0)
            >>> m.shape
            (3, 4)
            >>> plan(m).kind
            'slice'
        """
        _check_index(index)
        dim = _check_dim(dim, len(data_shape))
        shape = list(data_shape)
        shape[dim] = index.numel()
        carry = tuple((d, d) for d in range(len(data_shape)) if d != dim)
        return cls(tuple(shape), tuple(data_shape), index, (dim,), (dim,), carry)

    @classmethod
    def nd(cls, index: torch.Tensor, data_shape: Sequence[int], batch_dims: int = 0, op: str = "") -> XMap:
        """The map of ONNX ``GatherND``/``ScatterND`` and TensorFlow's ``*_nd``: ``index`` of shape
        ``B + I + (k,)`` over data of shape ``B + P``; position ``(b, i, rest)`` of the iterated tensor (shape
        ``B + I + P[k:]``) maps to ``data[b, index[b, i], rest]``. The batch dims are both looked up and carried,
        so the planner folds them into the row number; ``P[k:]`` is the slice.

        Args:
            index: int32 or int64 tensor of rank >= 1 whose last dim holds ``k`` coordinates.
            data_shape: the data tensor's shape (rank >= 1).
            batch_dims: the number of leading dims shared by ``index`` and the data.
            op: the caller's function, in the error messages.

        Returns:
            The map, of ``shape == B + I + P[k:]``.

        Raises:
            TypeError: ``index`` is not an int32/int64 tensor, or ``batch_dims`` is not an int.
            ValueError: ``batch_dims`` is negative or too large, ``index`` or the data is 0-d, ``batch_dims + k``
                exceeds the data's rank, or the batch dims of ``index`` and the data differ.

        Example:
            >>> m = XMap.nd(torch.tensor([[1], [0]]), (2, 3))  # two rows of a (2, 3) data tensor
            >>> m.shape
            (2, 3)
            >>> gather(m, torch.tensor([[1., 2., 3.], [4., 5., 6.]]))
            tensor([[4., 5., 6.],
                    [1., 2., 3.]])
        """
        _check_index(index)
        known = (
            _ND.get((tuple(index.shape), tuple(data_shape), batch_dims))
            if type(batch_dims) is int and batch_dims >= 0
            else None
        )
        if known is not None:  # a form checked before: only the index is new
            return cls._checked(known, index)
        prefix = f"{op}: " if op else ""
        data_shape = tuple(data_shape)
        if isinstance(batch_dims, bool) or not isinstance(batch_dims, int):
            raise TypeError(f"batch_dims must be an int, got {type(batch_dims).__name__}")
        if batch_dims < 0:
            raise ValueError(f"batch_dims must be a non-negative int, got {batch_dims!r}")
        if index.dim() < 1:
            raise ValueError(f"{prefix}indices must have rank >= 1, got a 0-d tensor")
        if not data_shape:
            raise ValueError(f"{prefix}data must have rank >= 1, got a 0-d tensor")
        # (traced with dynamic shapes an int argument and the index's last size are symbolic: the dims they name are
        # constants of the graph)
        b, k = constant_dim(batch_dims, len(data_shape) + 1), constant_dim(index.size(-1), len(data_shape) + 1)
        if b >= index.dim() or b > len(data_shape):
            raise ValueError(
                f"{prefix}batch_dims={b} must be less than the rank of indices ({index.dim()}) and at "
                f"most that of data ({len(data_shape)})"
            )
        if b + k > len(data_shape):
            raise ValueError(
                f"{prefix}indices.shape[-1] = {k} plus batch_dims = {b} exceeds the rank of data ({len(data_shape)})"
            )
        if tuple(index.shape[:b]) != data_shape[:b]:
            raise ValueError(
                f"{prefix}the batch dims of indices {tuple(index.shape[:b])} and data {data_shape[:b]} differ"
            )
        q = index.dim() - 1  # B + I dims of the iterated tensor
        shape = tuple(index.shape[:-1]) + data_shape[b + k :]
        carry = tuple((d, d) for d in range(b)) + tuple((q + j, b + k + j) for j in range(len(data_shape) - b - k))
        m = cls(shape, data_shape, index, tuple(range(q)), tuple(range(b, b + k)), carry, vector=True)
        _ND.put((tuple(index.shape), data_shape, b), m)
        return m

    def coordinate(self, j: int) -> torch.Tensor:
        """Coordinate ``j`` of the lookup (a view of ``index``), indexed by the ``lookup`` dims.

        Args:
            j: which coordinate, ``0 <= j < len(coords)``.

        Returns:
            ``index[..., j]`` for a vector lookup, else ``index`` itself.

        Raises:
            IndexError: ``j`` is out of range for a vector lookup.

        Example:
            >>> XMap.nd(torch.tensor([[1, 2], [0, 1]]), (2, 3)).coordinate(1)
            tensor([2, 1])
        """
        return self.index.select(-1, j) if self.vector else self.index


def _check_index(index) -> None:
    check_tensor(index, "index")
    if index.dtype not in INDEX_DTYPES:
        raise TypeError(f"index must have dtype int32 or int64, got {index.dtype}")


def _check_dim(dim, ndim: int, prefix: str = "") -> int:
    """``dim`` as an int (:func:`as_dim`), checked to be in ``[0, ndim)``."""
    dim = as_dim(dim, f"{prefix}dim")
    if not 0 <= dim < ndim:
        raise IndexError(f"{prefix}dim={dim} is out of range for data of {ndim} dimension(s) (0..{ndim - 1})")
    return dim


# Forms of map already checked, and plans already made, by call signature (``scatterx/_memo.py``: bounded, least
# recently used out first, shared by threads).
_REMEMBERED = 512
_VALID_FORMS = Memo("planner.valid_forms", _REMEMBERED)  # XMap's checked forms -> True
_RECIPES = Memo("planner.plans", _REMEMBERED)  # plan()'s recipes by call signature
_ALONG = Memo("planner.along_dim", _REMEMBERED)  # XMap.along_dim's maps by (index shape, data shape, dim)
_ND = Memo("planner.nd", _REMEMBERED)  # XMap.nd's by (index shape, data shape, batch dims)


def _plain_dims(lookup, coords, carry) -> bool:
    """Whether every dim is a plain int (a cached form equal to ``m``'s may hold ``1`` where ``m`` holds ``True``
    or ``1.0``: equal keys, but ``m`` must still be refused)."""
    return (
        all(type(d) is int for d in lookup)
        and all(type(d) is int for d in coords)
        and all(type(s) is int and type(t) is int for s, t in carry)
    )


def _check_map(m) -> None:
    if not isinstance(m, XMap):
        raise TypeError(f"m must be an XMap, got {type(m).__name__}")


def _check_run(m, data, updates, reduce) -> None:
    """The arguments of :func:`scatter` / :func:`reduced` / :func:`gather` (``None``: not an argument there)."""
    _check_map(m)
    for name, t, shape in (("data", data, m.data_shape), ("updates", updates, m.shape)):
        if t is None:
            continue
        if tuple(check_tensor(t, name).shape) != shape:
            raise ValueError(f"{name} has shape {tuple(t.shape)} but the map's is {shape}")
    if data is not None and updates is not None:
        if updates.dtype != data.dtype:
            raise TypeError(f"updates has dtype {updates.dtype} but data has {data.dtype}; they must match")
        if updates.device != data.device:
            raise ValueError(f"updates is on {updates.device} but data is on {data.device}")
    if updates is not None and not isinstance(reduce, str):
        raise TypeError(f"reduce must be a str, got {type(reduce).__name__}")


@dataclass(frozen=True)
class Plan:
    """How a map runs, as :func:`plan` chooses it: ``u`` seen as ``(outer, n, inner)``, the data as
    ``(outer, S, inner)``, and ``rows`` (1-D, length ``n``) naming the data row of each ``u`` row.

    ``kind`` is ``"slice"`` when some carried dims stayed out of the lookup (each row entry moves ``outer * inner``
    elements) and ``"element"`` when every dim went through it (``rows`` are flat offsets, one per element).
    Element plans of a map the element kernels read directly (``route`` ``"along"`` or ``"coords"``) have no
    ``rows``: :func:`element_rows` builds them where they are needed (autograd). A plan is frozen (immutable);
    it is normally made by :func:`plan`, not by hand.

    Args:
        kind: ``"slice"`` or ``"element"``.
        outer: the product of the leading carried dims the lookup does not touch.
        n: the number of ``u`` rows (the length of ``rows``).
        S: the number of data rows.
        inner: the product of the trailing carried dims the lookup does not touch (the slice size).
        rows: 1-D int64 tensor, the data row of each ``u`` row; None for the element routes ``"along"`` and
            ``"coords"`` (the kernels read the map's index).
        checked: whether the planner validated ``rows`` (else the kernel's own single-pass check does it).
        region: the leading box of the data the map covers when carried dims are smaller than the data's, or None
            (the whole data).
        route: ``"slice"`` for a slice plan; ``"along"``, ``"coords"`` or ``"rows"`` for an element plan.

    Raises:
        ValueError: ``kind`` or ``route`` is not one of the values above.

    Example:
        >>> p = plan(XMap.slices(torch.tensor([1, 0, 1]), (2, 4), 0))
        >>> p.kind, p.outer, p.n, p.S, p.inner, p.rows
        ('slice', 1, 3, 2, 4, tensor([1, 0, 1]))
    """

    kind: str
    outer: int
    n: int
    S: int
    inner: int
    rows: Optional[torch.Tensor]  # None for the element routes "along" and "coords": the kernels read the index
    checked: bool  # rows validated by the planner (else the kernel's own single-pass check does it)
    region: Optional[Tuple[int, ...]]  # data is reduced only inside this leading box (carried dims smaller than data)
    route: str = "slice"  # "slice"; for element plans "along", "coords" or "rows" (see _element_route)

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {list(_KINDS)}, got {self.kind!r}")
        if self.route not in _ROUTES:
            raise ValueError(f"route must be one of {list(_ROUTES)}, got {self.route!r}")


_KINDS = ("slice", "element")
_ROUTES = ("slice", "along", "coords", "rows")


_SHORT_LINE = 256


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
    if line.numel() <= _SHORT_LINE:  # read on the host: cheaper than two tensor ops for a few values
        values = line.tolist()
        if values.count(values[0]) != len(values):
            return False
    elif not bool((line == line[0]).all()):
        return False
    first = index.narrow(axis, 0, 1)
    return bool(torch.equal(index, first.expand_as(index)))


def simplify(m: XMap) -> XMap:
    """Drop lookup dims that are also carried and along which the index does not vary: the lookup ignores them.

    A dim is seen constant for free when the index has stride 0 or size 1 along it (an index expanded from 1-D, as
    PyG builds it); otherwise its values are compared once. :func:`plan` simplifies every map it is given.

    Args:
        m: the map.

    Returns:
        An equivalent :class:`XMap` with fewer lookup dims, or ``m`` itself when none can be dropped.

    Raises:
        TypeError: ``m`` is not an :class:`XMap`.

    Example:
        >>> index = torch.tensor([1, 0]).view(2, 1).expand(2, 3)  # the same row index in every column
        >>> m = simplify(XMap.along_dim(index, (2, 3), 0))
        >>> m.lookup, m.index
        ((0,), tensor([1, 0]))
    """
    _check_map(m)
    return _simplified(m)[0]


def _simplified(m: XMap) -> Tuple[XMap, Tuple[int, ...], bool]:
    """:func:`simplify`'s map, the positions of ``m.lookup`` it dropped (last first) and whether a drop rests on
    the index's values (a comparison) rather than on its shape and strides alone."""
    carried = {s for s, _ in m.carry}
    index, lookup = m.index, list(m.lookup)
    dropped = []
    by_values = False
    for pos in range(len(lookup) - 1, -1, -1):
        if lookup[pos] in carried and index.size(pos) > 0 and _constant_along(index, pos):
            by_values = by_values or not (index.size(pos) <= 1 or index.stride(pos) == 0)
            index = index.select(pos, 0)
            del lookup[pos]
            dropped.append(pos)
    if not dropped:
        return m, (), False
    return XMap(m.shape, m.data_shape, index, tuple(lookup), m.coords, m.carry, m.vector), tuple(dropped), by_values


def check_coordinates(m: XMap, name: str = "index") -> None:
    """Check that every coordinate of ``m``'s index is inside its data dim (no negative ones).

    :func:`scatter` and :func:`gather` run it before anything is written. Traced (``torch.export``,
    ``torch.compile``) no value can be read and nothing is checked here: the flat offsets of a row with a coordinate
    outside its dim are put past the data, and the ops' range check refuses them (an IndexError without the
    coordinate's position).

    Args:
        m: the map.
        name: the index's name in the error message.

    Returns:
        None.

    Raises:
        TypeError: ``m`` is not an :class:`XMap`.
        IndexError: for the first coordinate out of range, with its position in ``m.index``.

    Example:
        >>> check_coordinates(XMap.slices(torch.tensor([0, 5]), (2, 4), 0))
        Traceback (most recent call last):
        ...
        IndexError: index[1] = 5 is out of bounds for dimension 0 with size 2
    """
    _check_map(m)
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
            raise IndexError(f"{name}{list(where)} = {value} is out of bounds for dimension {d} with size {size}")


def plan(m: XMap) -> Plan:
    """Choose how ``m`` runs: a slice plan when a block of carried dims is untouched by the lookup, else an
    element plan (see the module docstring for the three steps).

    Coordinates are validated here when the planner builds the rows; when the rows are the index itself (one
    coordinate into one data dim) or the element kernels read the index directly, the plan's ``checked`` is False
    and the kernel validates them in its own pass.

    Args:
        m: the map.

    Returns:
        The :class:`Plan`.

    Raises:
        TypeError: ``m`` is not an :class:`XMap`.
        IndexError: a coordinate is out of range and the planner builds the rows (``checked`` would be True).

    Example:
        An index expanded from 1-D (PyG's ``index.view(-1, 1).expand_as(src)``) moves whole rows; an index that
        varies along every dim goes element by element:

        >>> rows = torch.tensor([2, 0, 2]).view(3, 1).expand(3, 4)
        >>> p = plan(XMap.along_dim(rows, (3, 4), 0))
        >>> p.kind, p.n, p.inner, p.rows
        ('slice', 3, 4, tensor([2, 0, 2]))
        >>> plan(XMap.along_dim(torch.tensor([[1, 0], [0, 1]]), (2, 2), 0)).kind
        'element'
    """
    _check_map(m)
    if torch.compiler.is_compiling():  # traced: the plan is made in the graph's Python, once
        return _plan(m)[0]
    index = m.index
    key = (m.shape, m.data_shape, m.lookup, m.coords, m.carry, m.vector) + (
        tuple(index.shape),
        index.stride(),
        index.dtype,
        index.device,
    )
    recipe = _RECIPES.get(key)
    if recipe is None:
        made, recipe = _plan(m)
        if recipe is not None:
            _RECIPES.put(key, recipe)
        return made
    return recipe.apply(m)


@dataclass(frozen=True)
class _Recipe:
    """What :func:`plan` decided for a call signature (the map's dims, the index's shape, strides, dtype and
    device), to be applied to a new index of that signature: the lookup dims the index's strides let it drop, and
    the plan without its rows. Applying it still builds the rows from the index and checks them as the plan
    says (``checked``) -- a recipe never skips a check that depends on the index's values. A plan whose
    simplification compared the index's values is not remembered (:func:`plan` runs in full each time)."""

    dropped: Tuple[int, ...]
    lookup: Tuple[int, ...]
    mid_u: Tuple[int, ...]
    mid_t: Tuple[int, ...]
    single: bool
    template: Plan  # rows None
    order: Optional[Tuple[int, ...]] = None  # single: the permutation that puts the index's dims in u's order

    def apply(self, m: XMap) -> Plan:
        t = self.template
        if t.route in ("along", "coords"):  # the kernels read the caller's index and validate it themselves
            return t
        index = m.index
        for pos in self.dropped:
            index = index.select(pos, 0)
        if self.single:  # the index's one coordinate, its dims in u's order, flat (``_u_order`` of every middle dim)
            c = index.select(-1, 0) if m.vector else index
            rows = (c if self.order is None else c.permute(self.order)).reshape(-1)
            return Plan(t.kind, t.outer, t.n, t.S, t.inner, rows, t.checked, t.region, t.route)
        s = m if not self.dropped else XMap(m.shape, m.data_shape, index, self.lookup, m.coords, m.carry, m.vector)
        check_coordinates(s)
        rows = _flat_rows(s, list(self.mid_u), list(self.mid_t))
        return Plan(t.kind, t.outer, t.n, t.S, t.inner, rows, t.checked, t.region, t.route)


def _plan(m: XMap) -> Tuple[Plan, Optional[_Recipe]]:
    """:func:`plan` in full: the plan, and the recipe that makes it again for this call signature (None when the
    plan rests on the index's values)."""
    original = m
    m, dropped, by_values = _simplified(m)
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
    # kernels (see docs/decisions/torch-scatter-dropin.md, "The 1-D form")
    kind = "slice" if lead + k > 0 or single else "element"
    route = _element_route(original) if kind == "element" else "slice"
    if route in ("along", "coords"):  # the kernels read the caller's index and validate it themselves
        template = Plan(kind, outer, n, S, inner, None, False, None, route)
        rows = None
    elif single:
        # rows are the index itself: the kernel validates it in its own pass
        template = Plan(kind, outer, n, S, inner, None, False, region, route)
        rows = _u_order(m.coordinate(0), m.lookup, mid_u).reshape(-1)
    else:
        template = Plan(kind, outer, n, S, inner, None, True, region, route)
        check_coordinates(m)
        rows = _flat_rows(m, mid_u, mid_t)
    made = template if rows is None else replace(template, rows=rows)
    if by_values:
        return made, None
    order = None
    if single:
        order = tuple(sorted(range(len(m.lookup)), key=lambda i: m.lookup[i]))
        order = None if order == tuple(range(len(m.lookup))) else order
    return made, _Recipe(dropped, m.lookup, tuple(mid_u), tuple(mid_t), single, template, order)


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
    """The flat data offset of every ``u`` position of a map, the rows of its element plan.

    Args:
        m: the map.

    Returns:
        A new 1-D int64 tensor of ``prod(m.shape)`` offsets into the flattened data, in ``u``'s row-major order.

    Raises:
        TypeError: ``m`` is not an :class:`XMap`.
        IndexError: a coordinate is out of range (checked first, with its position in ``m.index``).

    Example:
        >>> element_rows(XMap.along_dim(torch.tensor([[1, 0, 1]]), (2, 3), 0))  # index * 3 + column
        tensor([3, 1, 5])
    """
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
            # (a stride is 0 where a later data dim is empty: no arange with a step of 0)
            rows.add_((torch.arange(m.shape[s], device=m.index.device) * strides[t]).view(shape))
    if torch.compiler.is_compiling() and m.coords:
        # traced, no coordinate was checked (check_coordinates reads values): a row with a coordinate outside its
        # own dim would land on another element in range, so it is sent one past the block, where the op's range
        # check refuses it (IndexError)
        bad = torch.zeros((), dtype=torch.bool, device=rows.device)
        for j, t in enumerate(m.coords):
            c = _u_order(m.coordinate(j), m.lookup, mid_u)
            bad = bad | (c < 0) | (c >= m.data_shape[t])
        rows = torch.where(bad.expand(mid_shape), acc, rows)
    return rows.view(-1)


# --------------------------------------------------------------------------------------------------- execution
def scatter(
    m: XMap, data: torch.Tensor, updates: torch.Tensor, reduce: str, include_self: bool = True, torch_ties: bool = False
) -> torch.Tensor:
    """Run a scatter: ``data`` with ``updates[u]`` reduced into position ``t(u)`` for every ``u``.

    Positions that receive nothing keep ``data``'s value. Differentiable w.r.t. ``data`` and ``updates``.

    Args:
        m: the map.
        data: the target, of shape ``m.data_shape``; it is read, never written.
        updates: the values, of shape ``m.shape``, with ``data``'s dtype and device.
        reduce: one of :data:`SCATTER_REDUCTIONS` (or an alias): ``"assign"`` (the last write in ``u``'s
            row-major order wins; ``include_self`` is then irrelevant) or a reduction.
        include_self: whether ``data``'s value takes part in each reduction (mean counts it).
        torch_ties: amax/amin split their gradient as ``torch.scatter_reduce`` does (``data``'s value counts
            among the ties even with ``include_self=False``).

    Returns:
        A new tensor of ``data``'s shape, dtype and device.

    Raises:
        TypeError: ``m`` is not an :class:`XMap`, ``data`` or ``updates`` is not a tensor, ``reduce`` is not a
            string, ``updates``' dtype differs from ``data``'s, or a reduction is asked of a dtype scatterx does
            not reduce (``"assign"`` takes any dtype).
        ValueError: ``reduce`` is not a reduction, the shapes differ from ``m``'s, or ``updates`` is on another
            device.
        IndexError: a coordinate is out of range (nothing is computed).

    Example:
        >>> m = XMap.slices(torch.tensor([0, 2, 0]), (3,), 0)
        >>> scatter(m, torch.zeros(3), torch.tensor([1., 2., 3.]), "sum")
        tensor([4., 0., 2.])
        >>> scatter(m, torch.zeros(3), torch.tensor([1., 2., 3.]), "assign")
        tensor([3., 0., 2.])
    """
    _check_run(m, data, updates, reduce)
    reduce = reduce if reduce == "assign" else resolve(reduce).name
    p = plan(m)
    if p.kind == "element" and updates.numel() and _element_kernels(data, updates):
        flat = updates if p.route != "rows" else updates.reshape(-1)
        return _element(
            m, p, data, lambda index, box, dim: element_scatter(index, flat, box, reduce, include_self, dim)
        ).reshape(data.shape)
    rows = p.rows
    if rows is None:  # with autograd: the flat offsets, on the slice path's op
        rows = element_rows(m)
        p = replace(p, rows=rows, checked=True, route="rows")
    if p.region is not None:
        box = tuple(slice(0, r) for r in p.region)
        result = data.clone()
        result[box] = _run(p, rows, data[box], updates, reduce, include_self, torch_ties)
        return result
    return _run(p, rows, data, updates, reduce, include_self, torch_ties)


def reduced(m: XMap, updates: torch.Tensor, reduce: str) -> torch.Tensor:
    """Run a scatter into zeros: ``updates[u]`` reduced into position ``t(u)``, positions that receive nothing 0
    (the core op's result without ``out``).

    The same as ``scatter(m, zeros, updates, reduce, include_self=False)``, without the zeros for a slice plan.

    Args:
        m: the map.
        updates: the values, of shape ``m.shape``.
        reduce: a reduction (not ``"assign"``): ``"sum"``, ``"mean"``, ``"prod"``, ``"amax"``, ``"amin"`` or an
            alias.

    Returns:
        A new tensor of shape ``m.data_shape``, with ``updates``' dtype and device.

    Raises:
        TypeError: ``m`` is not an :class:`XMap`, ``updates`` is not a tensor, ``reduce`` is not a string, or
            ``updates``' dtype is not one scatterx reduces.
        ValueError: ``reduce`` is not a reduction, or ``updates``' shape is not ``m.shape``.
        IndexError: a coordinate is out of range.

    Example:
        >>> m = XMap.slices(torch.tensor([0, 2, 0]), (3,), 0)
        >>> reduced(m, torch.tensor([1., 2., 3.]), "amax")
        tensor([3., 0., 2.])
    """
    _check_run(m, None, updates, reduce)
    resolve(reduce)  # a reduction: "assign" has no meaning without data
    # a slice plan skips the zeros: allocating and reading them is a measurable part of the whole
    p = plan(m)
    if p.kind != "slice" or p.rows is None or p.region is not None or p.n == 0 or updates.numel() == 0:
        zeros = torch.zeros(m.data_shape, dtype=updates.dtype, device=updates.device)
        return scatter(m, zeros, updates, reduce, include_self=False)
    src = updates.reshape(p.outer, p.n, p.inner)
    result = index_scatter_reduce_from(1, p.rows, src, resolve(reduce).name, None, None, dim_size=p.S)
    return result.reshape(m.data_shape)


def _run(p: Plan, rows: torch.Tensor, data, updates, reduce, include_self, torch_ties):
    """Run ``p`` on the slice path, with ``rows``: the plan's, or the flat offsets built for an element plan."""
    src = updates.reshape(p.outer, p.n, p.inner)
    base = data.reshape(p.outer, p.S, p.inner)
    if p.n == 0 and not (updates.requires_grad and torch.is_grad_enabled()):
        return data.clone()  # no row, so no index entry: nothing to reduce or check (with a gradient wanted, the op
        # runs: the result stays in updates' graph, whose gradient is empty)
    # rows with no element (an empty outer or inner dim) still go to the op, whose pass over them checks each one:
    # a row out of range raises as it would with elements to move
    if reduce == "assign":
        result = _assign(p, rows, src, base)
    else:  # sorted=None: the sorted path when the rows happen to be sorted
        result = index_scatter_reduce_from(1, rows, src, reduce, None, base, include_self, torch_ties)
    return result.reshape(data.shape)


def _assign(p: Plan, rows: torch.Tensor, src, base):
    """Last write wins: the last ``u`` row of each data row written, then one collision-free copy. Differentiable
    through ``index_select`` / ``index_copy``.

    In eager calls the last rows come from a stable sort of the ``n`` rows (the last of each run of equal rows), in
    memory of the updates' size: a few updates into a large tensor allocate nothing of the data's size. Traced
    (where the number of distinct rows is no shape), from an amax of positions on scatterx's kernel into a table of
    one entry per data row. Both give the same rows in the same order; a row out of range takes the kernel's path,
    whose check raises."""
    if not torch.compiler.is_compiling() and rows.numel() and _in_range(rows, p.S):
        sorted_rows, order = torch.sort(rows.to(torch.int64), stable=True)
        last = torch.ones_like(sorted_rows, dtype=torch.bool)
        last[:-1] = sorted_rows[1:] != sorted_rows[:-1]
        return base.index_copy(1, sorted_rows[last], src.index_select(1, order[last]))
    positions = torch.arange(p.n, dtype=torch.int64, device=src.device)
    initial = torch.full((p.S,), -1, dtype=torch.int64, device=src.device)
    last = index_scatter_reduce_from(0, rows, positions, "amax", None, initial)
    targets = torch.nonzero(last >= 0).view(-1)
    return base.index_copy(1, targets, src.index_select(1, last[targets]))


def _in_range(rows: torch.Tensor, size: int) -> bool:
    """Every entry of ``rows`` in ``[0, size)``: one pass for both ends (one host sync on a GPU)."""
    low, high = torch.aminmax(rows)
    return int(low) >= 0 and int(high) < size


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


def gather(m: XMap, data: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Run a gather: ``out[u] = data[t(u)]``. Differentiable w.r.t. ``data`` (without ``out``).

    Args:
        m: the map.
        data: the source, of shape ``m.data_shape`` (any dtype).
        out: a tensor of shape ``m.shape`` and ``data``'s dtype and device to write the result into; written only
            by a call that succeeds. A slice plan gathers into it directly when it is contiguous and shares no
            memory with ``data``; otherwise the result is copied into it.

    Returns:
        A new tensor of shape ``m.shape``, with ``data``'s dtype and device; ``out`` when given.

    Raises:
        TypeError: ``m`` is not an :class:`XMap`, ``data`` or ``out`` is not a tensor, or ``out``'s dtype is not
            ``data``'s.
        ValueError: ``data``'s shape is not ``m.data_shape``, ``out``'s is not ``m.shape``, ``out`` is on another
            device, or ``out`` is given while ``data`` requires grad.
        IndexError: a coordinate is out of range (``out`` is not written).

    Example:
        >>> gather(XMap.slices(torch.tensor([2, 0]), (3,), 0), torch.tensor([10., 20., 30.]))
        tensor([30., 10.])
    """
    _check_run(m, data, None, None)
    if out is not None:
        _check_out(out, m, data)
        if torch.compiler.is_compiling():  # (the graph's own result copied: no address is read while tracing)
            return out.copy_(gather(m, data))
    p = plan(m)
    if p.kind == "element" and p.route != "rows" and math.prod(m.shape) > 0 and _element_kernels(data):
        with reusing_outputs() if out is not None else _NOTHING:
            result = _element(m, p, data, lambda index, box, dim: element_gather(box, index, dim), False)
        return result.reshape(m.shape) if out is None else out.copy_(result.reshape(m.shape))
    rows = p.rows
    if rows is None:  # with autograd: the flat offsets, gathered by index_select
        rows = element_rows(m)
        p = replace(p, rows=rows, checked=True, route="rows")
    if p.region is not None:
        data = data[tuple(slice(0, r) for r in p.region)]
    # one outer slice: rows of a 2-D view along dim 0, torch's fast path (along dim 1 of a 3-D view, index_select
    # took twice as long at 200k x 64: docs/decisions/huge-pages.md, "Reused outputs")
    shape, dim = ((p.S, p.inner), 0) if p.outer == 1 else ((p.outer, p.S, p.inner), 1)
    view = data.reshape(shape)
    picked = (rows.numel(), p.inner) if p.outer == 1 else (p.outer, rows.numel(), p.inner)
    if out is not None:
        if not p.checked and rows.numel():  # before anything of ``out`` is written
            low, high = torch.aminmax(rows)  # one pass; the culprit is looked for only on failure
            if int(low) < 0 or int(high) >= p.S:
                check_coordinates(m)  # raises with the position in the caller's index
        if out.is_contiguous() and not overlaps(out, data) and not overlaps(out, rows):
            torch.index_select(view, dim, rows, out=out.view(picked))
            return out
        return out.copy_(view.index_select(dim, rows).reshape(m.shape))
    # index_select checks the rows itself, and what it wrote of a new tensor is lost when it raises: the map's
    # own check then finds the culprit, at its position in the caller's index (traced: index_select's error)
    try:
        if view.device.type == "cpu" and not needs_op(view):  # into a buffer on huge pages (backends._outputs.empty)
            buffer = empty(picked, view.dtype, view.device)
            return torch.index_select(view, dim, rows, out=buffer).reshape(m.shape)
        return view.index_select(dim, rows).reshape(m.shape)
    except (IndexError, RuntimeError):
        if not torch.compiler.is_compiling():
            check_coordinates(m)
        raise


def _check_out(out, m: XMap, data: torch.Tensor) -> None:
    check_tensor(out, "out")
    if tuple(out.shape) != m.shape:
        raise ValueError(f"out has shape {tuple(out.shape)} but the map's is {m.shape}")
    if out.dtype != data.dtype:
        raise TypeError(f"out has dtype {out.dtype} but data has {data.dtype}")
    if out.device != data.device:
        raise ValueError(f"out is on {out.device} but data is on {data.device}")
    if torch.is_grad_enabled() and (data.requires_grad or out.requires_grad):
        raise ValueError("out= does not support automatic differentiation, and data (or out) requires grad")


_NOTHING = contextlib.nullcontext()
