"""ONNX translations of scatterx's ops (opset 18), written with onnxscript, for ``torch.onnx.export(...,
dynamo=True, custom_translation_table=...)``.

Every reduction comes down to one building block, ``_reduce_rows``: the rows of a tensor (its first dim)
reduced into ``rows`` targets by an index, with no scatter that combines repeated indices:

- the index is put in order (a ``TopK``, stable by the ONNX spec; none where the op's ``sorted`` flag or a CSR
  ``ptr`` says it is sorted already), and its runs of equal targets found;
- ``_tree_reduce`` reduces each run by a pairwise tree: per level, two ``Gather``s of rows and one elementwise
  ``Add``/``Mul``/``Max``/``Min``, a run down to one row leaving the tree (ceil(log2(E)) unrolled levels: where
  the number of entries is dynamic, ``_scattered``, the ScatterElements graph, instead);
- one ``ScatterND`` of *unique* targets places the runs' rows into the start tensor -- zeros (scatterx's value for
  an empty row) or the ``base`` (``out=``; with ``include_self`` combined with it first) -- and mean divides by the
  runs' lengths (integers: floor division, as torch and scatterx).

**Why no scatter with a reduction.** ``ScatterND`` with a reduction would be the natural row scatter, but
onnxruntime's CPU kernel splits its updates over threads with no guard for repeated indices: with reduction add
it returns different sums run to run (onnxruntime's GitHub issues 18048 and 23396). ``ScatterElements`` (the
index expanded to the rows' shape) is exact and deterministic but runs 17-44 ns an element: 35-63x eager scatterx
at the bench shape. The tree is exact (a fixed order of sums, the same on every run and thread count) and 7-28x
eager; the measurements, and what was rejected: ``docs/decisions/export-onnx.md``.

PyTorch's own translation of ``scatter_reduce`` maps mean to a plain overwrite, which is wrong with repeated
indices; here every reduction is exact. Other dims are transposed to the front and back. CSR offsets become an
index inside the graph (``_ptr_to_index``: a 1 at each segment start, then a running sum), so the segment ops are
the same reduction. The softmax, arg-select and logsumexp ops still scatter with ``ScatterElements`` (exact, slow).
``aten_scatter_add`` translates torch's own ``scatter_add`` the same way where its index is a row index broadcast
over the rows (PyG's aggregation, which the ``scatterx.pyg`` switch leaves to PyG under export). Half types are
reduced in float32 and rounded once, as the eager kernels do (onnxruntime has no half kernel for these
reductions). The ops' checks (index range, ptr shape) are not in the graph: onnxruntime's
scatters and gathers raise on an index out of range, as the eager ops do.

**Why this module is long.** It holds one translation per scatterx op (each registers itself in ``TRANSLATIONS``
with ``@translation``; the checklist test wants every op there), and each translation is the op's whole semantics
rewritten in ONNX: the start values, the empty rows, the base, the arg-select and logsumexp flavours. They share
``_reduce_rows`` and ``_ptr_to_index``; split by op they would be a dozen files of twenty lines importing the same
two helpers.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, cast

import onnx_ir as ir
import torch
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
    """A scalar of ``like``'s dtype; infinities of an integer dtype are its extremes."""
    if _is_integer(like):
        info = _INTEGER_RANGE[like.dtype]
        value = info.min if value == -math.inf else info.max if value == math.inf else int(value)
        return op.CastLike(_int_scalar(value), like)
    return op.CastLike(_float_scalar(value), like)


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


# ---------------------------------------------------------------------------------------------------- the ops
@translation
def index_scatter_reduce(
    src,
    index,
    dim: int,
    reduce: str,
    sorted: bool,
    dim_size: int,
    base=None,
    include_self: bool = True,
    torch_ties: bool = False,
):
    """``scatterx::index_scatter_reduce``: any dim (moved to the front and back)."""
    front = _to_front(src, dim)
    rows = _count(dim_size)
    base_front = None if base is None else _to_front(base, dim)
    return _from_front(
        _reduce_rows(
            front,
            index,
            rows,
            reduce,
            base_front,
            include_self,
            _rank(src),
            src,
            sorted,
            dim_size,
            _static_length(index, src, dim=dim) if _static_length(index) is None else None,
        ),
        dim,
        _rank(src),
    )


@translation
def segment_reduce(src, ptr, reduce: str, dim: int):
    """``scatterx::segment_reduce``: CSR segments along ``dim``."""
    front = _to_front(src, dim)
    index = _ptr_to_index(ptr, _length(src, dim))
    entries = _static_length(src, dim=dim)
    out = _reduce_rows(
        front, index, _segments(ptr), reduce, rank=_rank(src), like=src, sorted=True, entries_hint=entries
    )
    return _from_front(out, dim, _rank(src))


@translation
def gather_segment_reduce(src, ptr, index, reduce: str, dim: int, ptr_t=None, index_t=None):
    """``scatterx::gather_segment_reduce``: the rows ``index`` names, reduced per CSR segment."""
    front = op.Gather(_to_front(src, dim), _as_int64(index), axis=0)
    segment = _ptr_to_index(ptr, op.Shape(index))
    entries = _static_length(index)
    out = _reduce_rows(
        front, segment, _segments(ptr), reduce, rank=_rank(src), like=src, sorted=True, entries_hint=entries
    )
    return _from_front(out, dim, _rank(src))


@translation
def weighted_gather_segment_reduce(src, ptr, index, weight, reduce: str):
    """``scatterx::weighted_gather_segment_reduce``: src (N, H, C), weight (E, H)."""
    rows = op.Mul(op.Gather(src, _as_int64(index), axis=0), op.Unsqueeze(weight, _ints([-1])))
    segment = _ptr_to_index(ptr, op.Shape(index))
    entries = _static_length(index)
    return _reduce_rows(rows, segment, _segments(ptr), reduce, rank=3, like=src, sorted=True, entries_hint=entries)


def _edge_ends(ptr, index, a, b):
    index = _as_int64(index)
    targets = _ptr_to_index(ptr, op.Shape(index))
    return op.Gather(a, index, axis=0), op.Gather(b, targets, axis=0)


@translation
def sddmm(ptr, index, a, b, op_name: str):
    """``scatterx::sddmm``: (E, H, C) for add/mul, (E, H, 1) for dot."""
    x, y = _edge_ends(ptr, index, a, b)
    if op_name == "add":
        return op.Add(x, y)
    if op_name == "mul":
        return op.Mul(x, y)
    return op.ReduceSum(op.Mul(x, y), _ints([-1]), keepdims=1)


@translation
def gatv2_logits(ptr, index, a, b, att, negative_slope: float):
    """``scatterx::gatv2_logits``: (E, H)."""
    x, y = _edge_ends(ptr, index, a, b)
    activated = op.LeakyRelu(op.Add(x, y), alpha=float(negative_slope))
    return op.ReduceSum(op.Mul(activated, att), _ints([-1]), keepdims=0)


@translation
def segment_softmax(src, index=None, ptr=None, dim: int = 0, num_segments: int = 0, sorted: bool = False):
    """``scatterx::segment_softmax``: softmax of each group's slices along ``dim``, groups by ``index`` or
    ``ptr``; half types in float32, rounded once, as eagerly."""
    if src.dtype in _HALF:
        return op.CastLike(segment_softmax(_widened(src), index, ptr, dim, num_segments, sorted), src)
    front = _to_front(src, dim)
    if ptr is not None:
        index, rows = _ptr_to_index(ptr, _length(src, dim)), _segments(ptr)
    else:
        rows = _count(num_segments)
    rank = _rank(src)
    lowest = op.Expand(_scalar_like(-math.inf, src), _rows_shape(front, rows))
    peak = _gather_rows(_scatter(lowest, index, front, "max", rank), index)
    exp = op.Exp(op.Sub(front, peak))
    zeros = op.Expand(_scalar_like(0.0, src), _rows_shape(front, rows))
    total = _scatter(zeros, index, exp, "add", rank)
    return _from_front(op.Div(exp, _gather_rows(total, index)), dim, rank)


@translation
def segment_of_entries(ptr, entries: int):
    """``scatterx::segment_of_entries``: the segment of each of ``entries`` positions of the CSR offsets."""
    return _ptr_to_index(ptr, _count(entries))


@translation
def adjacency_matmul(x, edge_index, num_sources: int, num_targets: int, reduce: str, transposed: bool):
    """``scatterx::adjacency_matmul`` (the PyG switch's layers traced by ``torch.compile``): each edge's source row
    reduced into its target; ``transposed``: each edge's target row into its source, a mean's rows divided by
    their target's count first."""
    edge_index = _as_int64(edge_index)
    source, target = op.Gather(edge_index, _int_scalar(0), axis=0), op.Gather(edge_index, _int_scalar(1), axis=0)
    entries = _static_length(edge_index, dim=1)
    if not transposed:
        rows = op.Gather(x, source, axis=0)
        return _reduce_rows(rows, target, _count(num_targets), reduce, rank=_rank(x), like=x, entries_hint=entries)
    if reduce == "mean":
        counts = op.Max(_counts(target, _count(num_targets)), _int_scalar(1))
        x = op.Div(x, _per_row(op.CastLike(counts, x), _rank(x)))
    rows = op.Gather(x, target, axis=0)
    return _reduce_rows(rows, source, _count(num_sources), "sum", rank=_rank(x), like=x, entries_hint=entries)


@translation
def csr_order(index, num_rows: int):
    """``scatterx::csr_order``: (ptr, order) -- the offsets of ``index``'s rows and the stable order of its
    entries by row (TopK on ``row * E + position``, keys all distinct)."""
    index = _as_int64(index)
    entries = op.Shape(index)
    positions = op.Range(_int_scalar(0), op.Squeeze(entries), _int_scalar(1))
    keys = op.Add(op.Mul(index, op.Squeeze(entries)), positions)
    _, order = op.TopK(keys, entries, axis=0, largest=0, sorted=1)
    counts = _counts(index, _count(num_rows))
    ptr = op.Concat(_ints([0]), op.CumSum(counts, _int_scalar(0)), axis=0)
    return ptr, order


@translation
def csr_transpose(ptr, index, num_rows: int):
    """``scatterx::csr_transpose``: (ptr_t, index_t), entries by source row, each naming its segment."""
    ptr_t, order = csr_order(index, num_rows)
    segment = _ptr_to_index(ptr, op.Shape(index))
    return ptr_t, op.Gather(segment, order, axis=0)


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


@translation
def segment_arg_reduce(
    src,
    ptr,
    perm=None,
    base=None,
    reduce: str = "amax",
    dim: int = 0,
    finite_start: bool = False,
    fill: str = "unselected",
):
    """``scatterx::segment_arg_reduce``: the strict selection as two scatters -- the best member that is not NaN
    (``max``/``min``), then the first position holding it (``min`` of positions) -- kept only where it strictly
    beats the start value (``base`` or the start); ``(values, arg)``."""
    if src.dtype in _HALF:  # selected in float32 (exact for half values), written back once
        wide_base = None if base is None else _widened(base)
        values, arg = segment_arg_reduce(_widened(src), ptr, perm, wide_base, reduce, dim, finite_start, fill)
        return op.CastLike(values, src), arg
    rank = _rank(src)
    maximum = reduce in ("amax", "max")
    x, rows, segment, S = _members(src, ptr, perm, dim)
    worst = -math.inf if maximum else math.inf
    if finite_start:
        info = _INTEGER_RANGE.get(src.dtype) or torch.finfo(
            torch.float64 if src.dtype == ir.DataType.DOUBLE else torch.float32
        )
        start = _scalar_like(float(info.min if maximum else info.max), src)
    else:
        start = _scalar_like(worst, src)
    shape = _rows_shape(x, S)
    begin = _to_front(base, dim) if base is not None else op.Expand(start, shape)
    candidate = op.Where(op.Equal(x, x), x, _scalar_like(worst, src))  # NaN never selected
    top = _scatter(op.Expand(_scalar_like(worst, src), shape), segment, candidate, "max" if maximum else "min", rank)
    selected = op.Greater(top, begin) if maximum else op.Less(top, begin)
    at_top = op.And(op.Equal(x, _gather_rows(top, segment)), op.Equal(x, x))
    n = op.Shape(rows)
    positions = op.Range(_int_scalar(0), op.Squeeze(n), _int_scalar(1))
    positions = op.Expand(_per_row(positions, rank), op.Shape(x))
    big = op.Squeeze(n)
    first = _scatter(op.Expand(big, shape), segment, op.Where(at_top, positions, big), "min", rank)
    row = op.Gather(op.Concat(rows, _ints([0]), axis=0), first, axis=0)  # (position n: a dummy row)
    none = op.Squeeze(_length(src, dim))
    arg = op.Where(selected, row, none)
    values = op.Where(selected, top, begin)
    zero = _scalar_like(0.0, src)
    if fill == "unselected":
        values = op.Where(selected, values, zero)
    elif fill == "empty":
        received = _per_row(op.Greater(_counts(segment, S), _int_scalar(0)), rank)
        values = op.Where(received, values, zero)
    return _from_front(values, dim, rank), _from_front(arg, dim, rank)


@translation
def segment_logsumexp(src, ptr, perm=None, dim: int = 0, eps: float = 1e-12, flavour: str = "logsumexp"):
    """``scatterx::segment_logsumexp``: ``top + log(sum exp(x - top) + eps)`` per segment, with the op's ``top``
    and NaN rules for each flavour."""
    if src.dtype in _HALF:
        return op.CastLike(segment_logsumexp(_widened(src), ptr, perm, dim, eps, flavour), src)
    rank = _rank(src)
    x, _rows, segment, S = _members(src, ptr, perm, dim)
    shape = _rows_shape(x, S)
    minus_inf = _scalar_like(-math.inf, src)
    candidate = op.Where(op.Equal(x, x), x, minus_inf)
    top = _scatter(op.Expand(minus_inf, shape), segment, candidate, "max", rank)
    if flavour == "log_softmax":  # scatter_max's result: 0 where nothing beats the lowest finite value
        lowest = float(torch.finfo(torch.float64 if src.dtype == ir.DataType.DOUBLE else torch.float32).min)
        top = op.Where(op.Greater(top, _scalar_like(lowest, src)), top, _scalar_like(0.0, src))
    shifted = op.Sub(x, _gather_rows(top, segment))
    terms = op.Exp(shifted)
    if flavour == "logsumexp":  # a NaN difference adds nothing
        terms = op.Where(op.Equal(shifted, shifted), terms, _scalar_like(0.0, src))
    total = _scatter(op.Expand(_scalar_like(0.0, src), shape), segment, terms, "add", rank)
    # eps as a 1-element constant: a scalar value_float of 1e-12 did not survive the exporter's optimisation
    eps_value = op.CastLike(cast(FLOAT, op.Constant(value_floats=[float(eps)])), src)
    out = op.Add(top, op.Log(op.Add(total, eps_value)))
    return _from_front(out, dim, rank)


# ------------------------------------------------------------------------------------------ torch's own scatter
def _row_index(index, src, dim: int):
    """The 1-D row index behind an ``index`` that is a row index broadcast over ``src``'s shape (an ``Expand`` of an
    ``(E, 1, ..., 1)`` tensor, what PyG's ``scatter`` and ``broadcast`` write), or None."""
    rank = _rank(src)
    if dim % rank != 0 or index.shape is None or src.shape is None or list(index.shape) != list(src.shape):
        return None
    producer = index.producer()
    if producer is None or producer.op_type != "Expand" or producer.domain not in ("", "ai.onnx"):
        return None
    rows = producer.inputs[0]
    if rows is None or rows.shape is None or len(rows.shape) != rank or any(d != 1 for d in list(rows.shape)[1:]):
        return None
    return op.Reshape(rows, _ints([-1]))


def aten_scatter_add(self, dim: int, index, src):
    """``aten::scatter_add``: where ``index`` is a row index broadcast over ``src`` (PyG's aggregation), the rows'
    reduction of ``_reduce_rows``, added to ``self``; any other index: ``ScatterElements`` as torch translates it."""
    rows = _row_index(index, src, dim) if _rank(src) > 1 else None
    if rows is None or _static_length(src) is None:  # (a dynamic number of rows: see ``_scattered``)
        return op.ScatterElements(self, index, src, axis=dim, reduction="add")
    return _reduce_rows(
        src,
        rows,
        _length(self),
        "sum",
        base=self,
        include_self=True,
        rows_hint=_static_length(self),
        entries_hint=_static_length(src),
    )


#: torch's ops (``torch.ops.aten.<name>.default``) the table translates too
ATEN_TRANSLATIONS: Dict[str, Callable[..., Any]] = {"scatter_add": aten_scatter_add}
