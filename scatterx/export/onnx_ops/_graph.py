"""What every ONNX translation of ``export/onnx_ops/`` is built from: the registry (``translation``), small graph
helpers, and the row reduction ``_reduce_rows`` with the CSR helper ``_ptr_to_index`` that the reductions share.

Every reduction comes down to ``_reduce_rows``: the rows of a tensor (its first dim) reduced into ``rows`` targets
by an index, with no scatter that combines repeated indices:

- the index is put in order (a ``TopK``, stable by the ONNX spec; none where the op's ``sorted`` flag or a CSR
  ``ptr`` says it is sorted already), and its runs of equal targets found;
- ``_tree_reduce`` reduces each run by a pairwise tree: per level, two ``Gather``s of rows and one elementwise
  ``Add``/``Mul``/``Max``/``Min``, a run down to one row leaving the tree (ceil(log2(E)) unrolled levels: where
  the number of entries is dynamic, ``_scattered``, the ScatterElements graph, instead);
- one ``ScatterND`` of *unique* targets places the runs' rows into the start tensor -- zeros (scatterx's value for
  an empty row) or the ``base`` (``out=``; with ``include_self`` combined with it first) -- and mean divides by the
  runs' lengths (integers: floor division, as torch and scatterx).

Why this module is long: the tree, its fallback and the helpers they use are one mechanism, read together; the
translations of the ops, one module each beside this one, are short because they share it.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, cast

import numpy as np
import onnx_ir as ir
import torch
from onnx import numpy_helper
from onnxscript import FLOAT, INT32, INT64
from onnxscript import opset18 as op

_INT64 = ir.DataType.INT64
_INT64_MAX = 2**63 - 1
_HALF = (ir.DataType.FLOAT16, ir.DataType.BFLOAT16)
_INTEGER_RANGE = {
    ir.DataType.INT8: torch.iinfo(torch.int8),
    ir.DataType.INT16: torch.iinfo(torch.int16),
    ir.DataType.INT32: torch.iinfo(torch.int32),
    ir.DataType.INT64: torch.iinfo(torch.int64),
    ir.DataType.UINT8: torch.iinfo(torch.uint8),
}


#: op name (``torch.ops.scatterx.<name>``) -> its translation; each translation below registers itself
TRANSLATIONS: Dict[str, Callable[..., Any]] = {}


def translation(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Register ``fn`` as the translation of the scatterx op of the same name (``torch.ops.scatterx.<name>``)."""
    TRANSLATIONS[fn.__name__] = fn
    return fn


#: torch's ops (``torch.ops.aten.<name>.default``) the table translates too; each registers itself below
ATEN_TRANSLATIONS: Dict[str, Callable[..., Any]] = {}


def aten_translation(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the translation of ``torch.ops.aten.<name>.default``."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        ATEN_TRANSLATIONS[name] = fn
        return fn

    return register


# ------------------------------------------------------------------------------------------------------ helpers
# onnxscript types an op's output as the union of every tensor type it may have, which the next op's type variable
# does not take: where the type is known (a cast to int64, a constant), it is said with ``cast``.
def _ints(values):
    return op.Constant(value_ints=[int(v) for v in values])


def _int_scalar(value: int) -> INT64:
    return cast(INT64, op.Constant(value_int=value))


def _float_scalar(value: float) -> FLOAT:
    return cast(FLOAT, op.Constant(value_float=value))


def _as_int64(x) -> INT64:
    return cast(INT64, op.Cast(x, to=_INT64))


def _count(n):
    """A size argument as a 1-element int64 tensor: an int when the export fixed it, a graph value when it is
    dynamic (a SymInt, e.g. the number of nodes under ``torch.export`` with ``Dim``)."""
    if isinstance(n, int):
        return _ints([n])
    return op.Reshape(_as_int64(n), _ints([1]))


def _rank(x) -> int:
    return len(x.shape)


def _widened(x):
    """A half-precision ``x`` cast to float32 (onnxruntime reduces no half type in ``ScatterElements``), its
    shape and dtype set on the cast as the graph builder knows them for ``x`` (a computed value's are not known,
    and the translations read both)."""
    wide = cast(ir.Value, op.Cast(x, to=ir.DataType.FLOAT))  # (typed by onnxscript as a tensor type's class)
    wide.shape = None if x.shape is None else ir.Shape(x.shape)  # (a copy: the two values' shapes are their own)
    wide.dtype = ir.DataType.FLOAT
    return wide


def _is_integer(x) -> bool:
    return x.dtype in _INTEGER_RANGE


def _scalar_like(value: float, like):
    """A scalar of ``like``'s dtype; infinities of an integer dtype are its extremes. A float64 ``like`` gets a
    float64 constant (a float32 one would round it: float64's largest finite value to inf)."""
    if _is_integer(like):
        info = _INTEGER_RANGE[like.dtype]
        value = info.min if value == -math.inf else info.max if value == math.inf else int(value)
        return op.CastLike(_int_scalar(value), like)
    if like.dtype == ir.DataType.DOUBLE:
        return op.Constant(value=numpy_helper.from_array(np.array(value, dtype=np.float64)))
    return op.CastLike(_float_scalar(value), like)


#: the torch dtype of each ONNX float type, for its finite extremes
_FLOAT_TYPES = {
    ir.DataType.FLOAT16: torch.float16,
    ir.DataType.BFLOAT16: torch.bfloat16,
    ir.DataType.FLOAT: torch.float32,
    ir.DataType.DOUBLE: torch.float64,
}


def _finite_extreme(dtype, largest: bool):
    """The largest (or lowest) finite value of the ONNX type ``dtype``: an int for integer types (exact: a float
    would round int64's to 2^63), else a float -- of the type the op's values have, which a half type's translation
    reads before widening them to float32."""
    info = _INTEGER_RANGE[dtype] if dtype in _INTEGER_RANGE else torch.finfo(_FLOAT_TYPES[dtype])
    return info.max if largest else info.min


def _to_front(x, dim: int):
    rank = _rank(x)
    dim %= rank
    if dim == 0:
        return x
    return op.Transpose(x, perm=[dim] + [d for d in range(rank) if d != dim])


def _from_front(x, dim: int, rank: int):
    """Undo ``_to_front`` (a computed value's rank is not known to the graph builder: the input's is passed)."""
    dim %= rank
    if dim == 0:
        return x
    perm = [dim] + [d for d in range(rank) if d != dim]
    return op.Transpose(x, perm=[perm.index(d) for d in range(rank)])


def _per_row(values, rank: int):
    """(rows,) -> (rows, 1, ..., 1) of ``rank`` dims, to broadcast over a row's features."""
    if rank == 1:
        return values
    return op.Unsqueeze(values, _ints(range(1, rank)))


def _rows_shape(x, rows):
    """The shape of ``x`` with its first dim replaced by ``rows`` (a 1-element int64 tensor)."""
    return op.Concat(rows, op.Shape(x, start=1), axis=0)


def _scatter(data, index, updates, mode: str, rank: int):
    """``data`` with the rows of ``updates`` reduced into the rows ``index`` (E,) names (``ScatterElements`` on
    the index expanded to the updates' shape: see the module docstring for why not ``ScatterND``)."""
    index = _as_int64(index)
    if rank > 1:
        index = op.Expand(op.Unsqueeze(index, _ints(range(1, rank))), op.Shape(updates))
    return op.ScatterElements(data, index, updates, axis=0, reduction=mode)


def _gather_rows(data, index):
    return op.Gather(data, _as_int64(index), axis=0)


def _counts(index, rows):
    """How many entries name each of ``rows`` targets: int64 (rows,)."""
    ones = op.Expand(_int_scalar(1), op.Shape(index))
    zeros = op.Expand(_int_scalar(0), rows)
    return _scatter(zeros, index, ones, "add", 1)


def _floor_divide(a, b):
    """Integer floor division for a positive divisor (ONNX's Div truncates)."""
    return op.Div(op.Sub(a, op.Mod(a, b, fmod=0)), b)


#: the elementwise op that combines two rows of each reduction (mean: a sum divided afterwards)
_COMBINE = {"sum": "Add", "mean": "Add", "prod": "Mul", "amax": "Max", "amin": "Min"}


def _static_length(*values, dim: int = 0):
    """Dim ``dim`` of the first of ``values`` whose shape the export fixed (an int), else None (the number of
    entries of a reduction: it sets the tree's levels)."""
    for value in values:
        shape = getattr(value, "shape", None)
        if shape is not None and len(shape) > 0 and isinstance(shape[dim % len(shape)], int):
            return shape[dim % len(shape)]
    return None


def _flat(positions):
    """NonZero's (1, K) result as K positions."""
    return op.Reshape(positions, _ints([-1]))


def _segments_of(index, sorted: bool, narrow: bool):
    """``(order, starts, lengths, entries)`` of the runs of equal values of ``index`` (E,) in sorted order:
    ``order`` (E,) the entries in that order (None where ``index`` is sorted already), ``starts`` (U,) where each
    run begins in it, ``lengths`` (U,) its length. The sort is a TopK, whose ties keep their index order (the
    ONNX spec), so that equal targets keep their order; ``narrow``: the targets fit int32 keys (a faster TopK)."""
    index = _as_int64(index)
    entries = op.Shape(index)
    order = None
    if not sorted:
        keys = cast(INT32, op.Cast(index, to=ir.DataType.INT32)) if narrow else index
        keys, order = op.TopK(keys, entries, axis=0, largest=0, sorted=1)
        index = _as_int64(keys)
    # a run begins where an entry differs from the one before (the first entry's "before": itself minus 1)
    before = op.Concat(
        op.Sub(op.Slice(index, _ints([0]), _ints([1])), _int_scalar(1)),
        op.Slice(index, _ints([0]), _ints([-1])),
        axis=0,
    )
    first = op.Not(op.Equal(index, before))
    starts = _flat(op.NonZero(first))
    ends = op.Concat(op.Slice(starts, _ints([1]), _ints([_INT64_MAX])), entries, axis=0)
    return index, order, first, starts, op.Sub(ends, starts)


def _levels(entries_hint) -> int:
    """The tree's levels for E entries: a run of E rows is one row after ceil(log2(E)) levels."""
    return max(int(entries_hint) - 1, 0).bit_length()


def _write_back_unpaired(combined, paired, rows, left_at):
    """A row without a partner was combined with itself (a sum: doubled): written back as it was, by a
    ``ScatterND`` of unique positions."""
    alone = op.NonZero(op.Not(paired))  # (1, K)
    return op.ScatterND(combined, op.Transpose(alone), _gather_rows(rows, op.Gather(left_at, _flat(alone), axis=0)))


def _tree_reduce(src, index, sorted: bool, reduce: str, entries_hint, rows_hint):
    """Each run of equal ``index`` values reduced over its rows of ``src``: ``(values, targets, lengths)``, one
    row per distinct index value (U rows), its value and how many rows it reduced.

    A pairwise tree over the runs, no scatter: at each level every run's row pairs ``(0, 1), (2, 3), ...`` are
    combined by one elementwise op on two ``Gather``s of rows; a run's last row without a partner is copied as it
    is (max/min: combined with itself; sum/prod: written back over the doubled row with a ``ScatterND`` of unique
    positions); a run down to one row leaves the tree. Every sum is a fixed tree, so the result is the same on
    every run and thread count. The levels are unrolled: ceil(log2(E)) of them (the measurements:
    docs/decisions/export-onnx.md)."""
    combine = getattr(op, _COMBINE[reduce])
    idempotent = reduce in ("amax", "amin")
    narrow = isinstance(rows_hint, int) and rows_hint <= 2**31
    index, order, first, starts, lengths = _segments_of(index, sorted, narrow)
    entries = op.Shape(index)
    # every entry's run, its rank in the run, and the run's length
    run = op.Sub(op.CumSum(_as_int64(first), _int_scalar(0)), _int_scalar(1))
    positions = op.Range(_int_scalar(0), op.Squeeze(entries), _int_scalar(1))
    rank = op.Sub(positions, op.Gather(starts, run, axis=0))
    count = op.Gather(lengths, run, axis=0)
    at = (lambda p: p) if order is None else (lambda p: op.Gather(order, p, axis=0))
    # runs of one entry are done at once; the others enter the tree
    single = _flat(op.NonZero(op.Equal(lengths, _int_scalar(1))))
    done_rows = [_gather_rows(src, at(op.Gather(starts, single, axis=0)))]
    done_runs = [single]
    active = _flat(op.NonZero(op.Greater(count, _int_scalar(1))))
    rows = src
    where = at(active)  # each active row's position in ``rows``
    rank, count, run = (op.Gather(v, active, axis=0) for v in (rank, count, run))
    for _ in range(_levels(entries_hint)):
        n = op.Shape(where)
        left = _flat(op.NonZero(op.Equal(op.Mod(rank, _int_scalar(2)), _int_scalar(0))))
        left_rank, left_count = op.Gather(rank, left, axis=0), op.Gather(count, left, axis=0)
        left_at = op.Gather(where, left, axis=0)
        paired = op.Less(op.Add(left_rank, _int_scalar(1)), left_count)
        after = op.Min(op.Add(left, _int_scalar(1)), op.Sub(op.Squeeze(n), _int_scalar(1)))
        right_at = op.Where(paired, op.Gather(where, after, axis=0), left_at)
        lhs = op.Gather(rows, left_at, axis=0)
        combined = combine(lhs, op.Gather(rows, right_at, axis=0))
        if not idempotent:
            combined = _write_back_unpaired(combined, paired, rows, left_at)
        count = op.Div(op.Add(left_count, _int_scalar(1)), _int_scalar(2))
        rank, run = op.Div(left_rank, _int_scalar(2)), op.Gather(run, left, axis=0)
        finished = _flat(op.NonZero(op.Equal(count, _int_scalar(1))))
        done_rows.append(op.Gather(combined, finished, axis=0))
        done_runs.append(op.Gather(run, finished, axis=0))
        active = _flat(op.NonZero(op.Greater(count, _int_scalar(1))))
        rows, where = combined, active
        rank, count, run = (op.Gather(v, active, axis=0) for v in (rank, count, run))
    runs = op.Concat(*done_runs, axis=0)
    values = op.Concat(*done_rows, axis=0)
    targets = op.Gather(op.Gather(index, starts, axis=0), runs, axis=0)
    return values, targets, op.Gather(lengths, runs, axis=0)


#: ScatterElements' reduction and the start value of each reduction (``_scattered``); mean is a sum divided afterwards
_SCATTER = {
    "sum": ("add", 0.0),
    "mean": ("add", 0.0),
    "prod": ("mul", 1.0),
    "amax": ("max", -math.inf),
    "amin": ("min", math.inf),
}


def _scattered(src, index, rows, reduce: str, base, include_self: bool, rank: int, like):
    """``_reduce_rows`` where the number of entries is dynamic: ``ScatterElements`` with a reduction on the index
    expanded to the rows' shape, exact and deterministic, and slow (the tree's levels are unrolled, and 40 of them
    made onnxscript's optimizer take minutes over a GAT: docs/decisions/export-onnx.md)."""
    mode, start = _SCATTER[reduce]
    # the first len(index) rows: an index may be shorter than src's dim (the rows after it are not read), and
    # ScatterElements wants updates of the expanded index's shape
    src = op.Slice(src, _ints([0]), op.Shape(index), _ints([0]))
    counts = _counts(index, rows)
    received = _per_row(op.Greater(counts, _int_scalar(0)), rank)
    takes_base = base is not None and include_self
    first = base if takes_base else op.Expand(_scalar_like(start, like), _rows_shape(src, rows))
    reduced = _scatter(first, index, src, mode, rank)
    if reduce in ("amax", "amin") and not _is_integer(like):
        # onnxruntime's max/min scatter lets a later value replace a NaN: the NaN members are found apart, as a max
        # of NaN flags (scatterx's amax/amin propagate NaN, as torch's)
        flags = op.Cast(op.IsNaN(src), to=_INT64)
        nan = op.Greater(_scatter(op.Expand(_int_scalar(0), _rows_shape(src, rows)), index, flags, "max", rank), 0)
        if takes_base:
            nan = op.Or(nan, op.IsNaN(base))
        reduced = op.Where(nan, _scalar_like(math.nan, like), reduced)
    if reduce == "mean":
        divisor = op.Add(counts, _int_scalar(1)) if takes_base else op.Max(counts, _int_scalar(1))
        divisor = _per_row(op.CastLike(divisor, like), rank)
        reduced = _floor_divide(reduced, divisor) if _is_integer(like) else op.Div(reduced, divisor)
    if takes_base:
        return reduced
    empty = base if base is not None else op.Expand(_scalar_like(0.0, like), _rows_shape(src, rows))
    if reduce in ("sum", "mean") and base is None:
        return reduced  # an empty row already holds 0
    return op.Where(received, reduced, empty)


def _reduce_rows(
    src,
    index,
    rows,
    reduce: str,
    base=None,
    include_self: bool = True,
    rank=None,
    like=None,
    sorted: bool = False,
    rows_hint=None,
    entries_hint=None,
):
    """``src``'s rows (dim 0) reduced into ``rows`` targets by ``index`` (E,): scatterx's ``index_scatter_reduce``
    along dim 0, with its empty-row, mean and ``base`` rules. ``rows``: a 1-element int64 tensor. ``rank`` and
    ``like`` (a graph input of src's dtype) where ``src`` is computed and its rank and dtype unknown; ``sorted``:
    ``index`` is non-decreasing (no sort in the graph); ``rows_hint``: the number of targets where the export fixed
    it (an int); ``entries_hint``: E where the export fixed it and neither ``index`` nor ``src`` says so.

    The reduction is ``_tree_reduce`` (one row per target named), placed into the start tensor -- zeros, scatterx's
    value for an empty row, or ``base`` -- by one ``ScatterND`` of unique targets, which has no race; where E is
    not fixed at export, ``_scattered``."""
    rank = _rank(src) if rank is None else rank
    like = src if like is None else like
    if like.dtype in _HALF:  # onnxruntime reduces no half type here: in float32, rounded once, as eagerly
        wide = op.Cast(src, to=ir.DataType.FLOAT)
        wide_base = None if base is None else op.Cast(base, to=ir.DataType.FLOAT)
        out = _reduce_rows(
            wide, index, rows, reduce, wide_base, include_self, rank, wide, sorted, rows_hint, entries_hint
        )
        return op.CastLike(out, like)
    entries_hint = _static_length(index, src) if entries_hint is None else entries_hint
    if entries_hint is None:
        return _scattered(src, index, rows, reduce, base, include_self, rank, like)
    values, targets, lengths = _tree_reduce(src, index, sorted, reduce, entries_hint, rows_hint)
    takes_base = base is not None and include_self
    if takes_base:
        values = getattr(op, _COMBINE[reduce])(values, _gather_rows(base, targets))
    if reduce == "mean":
        divisor = op.Add(lengths, _int_scalar(1)) if takes_base else lengths
        divisor = _per_row(op.CastLike(divisor, like), rank)
        values = _floor_divide(values, divisor) if _is_integer(like) else op.Div(values, divisor)
    start = base if base is not None else op.Expand(_scalar_like(0.0, like), _rows_shape(src, rows))
    return op.ScatterND(start, op.Unsqueeze(targets, _ints([1])), values)


def _ptr_to_index(ptr, entries):
    """The segment of each of ``entries`` positions (int64, 1-element tensor) of the CSR offsets ``ptr``: a 1 at
    every segment start after the first (repeated for empty segments), then a running sum."""
    ptr = _as_int64(ptr)
    starts = op.Slice(ptr, _ints([1]), _ints([-1]))  # ptr[1:-1]: where segments 1.. begin
    marks = _scatter(
        op.Expand(_int_scalar(0), op.Add(entries, _ints([1]))),
        starts,
        op.Expand(_int_scalar(1), op.Shape(starts)),
        "add",
        1,
    )
    return op.Slice(op.CumSum(marks, _int_scalar(0)), _ints([0]), entries)


def _segments(ptr):
    return op.Sub(op.Shape(ptr), _ints([1]))


def _length(x, dim: int = 0):
    dim %= _rank(x)
    return op.Shape(x, start=dim, end=dim + 1)


def _edge_ends(ptr, index, a, b):
    index = _as_int64(index)
    targets = _ptr_to_index(ptr, op.Shape(index))
    return op.Gather(a, index, axis=0), op.Gather(b, targets, axis=0)


def _members(src, ptr, perm, dim: int):
    """``(x, rows, segment, S)`` of a segment op: the members' rows in position order (through ``perm``), the
    source row of each position, its segment, and the number of segments (1-element int64)."""
    front = _to_front(src, dim)
    if perm is not None:
        rows = _as_int64(perm)
        x = op.Gather(front, rows, axis=0)
    else:
        x = front
        rows = op.Range(_int_scalar(0), op.Squeeze(_length(src, dim)), _int_scalar(1))
    segment = _ptr_to_index(ptr, op.Shape(rows))
    return x, rows, segment, _segments(ptr)
