"""ONNX translations of scatterx's ops (opset 18), written with onnxscript, for ``torch.onnx.export(...,
dynamo=True, custom_translation_table=...)``.

Every op comes down to one building block, ``_reduce_rows``: the rows of a tensor (its first dim) reduced into
``rows`` targets by an index -- ONNX ``ScatterElements`` with a reduction (add, mul, max, min), which combines
repeated indices, on a start tensor:

- sum: zeros; prod: ones; amax/amin: the dtype's lowest/highest value -- then the rows no index names (a count of
  0, itself a scatter-add of ones) are restored to 0, scatterx's value for an empty row;
- mean: the sum over ``max(count, 1)`` (integers: floor division, as torch and scatterx);
- a ``base`` (``out=``): with ``include_self`` the reduction starts from it (mean counts it once); without,
  rows that receive something take the members' reduction and the others keep ``base``.

**Why ScatterElements, not ScatterND.** ``ScatterND`` would scatter whole rows with a ``(E, 1)`` index, but
onnxruntime's CPU kernel splits its updates over threads with no guard for repeated indices: with reduction add
it returns different sums run to run (onnxruntime's GitHub issues 18048 and 23396; measured in
``docs/decisions/export-onnx.md``). ``ScatterElements`` (the index expanded to the rows' shape,
``E x F`` int64) is exact and deterministic, and slower: the price of a correct graph.

PyTorch's own translation of ``scatter_reduce`` maps mean to a plain overwrite, which is wrong with repeated
indices; here every reduction is exact. Other dims are transposed to the front and back. CSR offsets become an
index inside the graph (``_ptr_to_index``: a 1 at each segment start, then a running sum), so the segment ops are
the same scatter. Half types are reduced in float32 and rounded once, as the eager kernels do (onnxruntime has no
half kernel for these reductions). The ops' checks (index range, ptr shape) are not in the graph: onnxruntime's
scatters and gathers raise on an index out of range, as the eager ops do.

**Why this module is long.** It holds one translation per scatterx op (the checklist test wants every op in
``TRANSLATIONS``), and each translation is the op's whole semantics rewritten in ONNX: the start values, the empty
rows, the base, the arg-select and logsumexp flavours. They share ``_reduce_rows`` and ``_ptr_to_index``; split
by op they would be a dozen files of twenty lines importing the same two helpers.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Dict, cast

import onnx_ir as ir
import torch
from onnxscript import FLOAT, INT64
from onnxscript import opset18 as op

_INT64 = ir.DataType.INT64
_HALF = (ir.DataType.FLOAT16, ir.DataType.BFLOAT16)
_INTEGER_RANGE = {
    ir.DataType.INT8: torch.iinfo(torch.int8),
    ir.DataType.INT16: torch.iinfo(torch.int16),
    ir.DataType.INT32: torch.iinfo(torch.int32),
    ir.DataType.INT64: torch.iinfo(torch.int64),
    ir.DataType.UINT8: torch.iinfo(torch.uint8),
}
#: ScatterElements' reduction and the start value of each reduction; mean is a sum divided afterwards
_SCATTER = {
    "sum": ("add", 0.0),
    "mean": ("add", 0.0),
    "prod": ("mul", 1.0),
    "amax": ("max", -math.inf),
    "amin": ("min", math.inf),
}


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


def _reduce_rows(src, index, rows, reduce: str, base=None, include_self: bool = True, rank=None, like=None):
    """``src``'s rows (dim 0) reduced into ``rows`` targets by ``index`` (E,): scatterx's ``index_scatter_reduce``
    along dim 0, with its empty-row, mean and ``base`` rules. ``rows``: a 1-element int64 tensor. ``rank`` and
    ``like`` (a graph input of src's dtype) where ``src`` is computed and its rank and dtype unknown."""
    rank = _rank(src) if rank is None else rank
    like = src if like is None else like
    if like.dtype in _HALF:  # onnxruntime reduces no half type here: in float32, rounded once, as eagerly
        wide = op.Cast(src, to=ir.DataType.FLOAT)
        wide_base = None if base is None else op.Cast(base, to=ir.DataType.FLOAT)
        out = _reduce_rows(wide, index, rows, reduce, wide_base, include_self, rank, like=wide)
        return op.CastLike(out, like)
    mode, start = _SCATTER[reduce]
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
        _reduce_rows(front, index, rows, reduce, base_front, include_self, _rank(src), src), dim, _rank(src)
    )


def segment_reduce(src, ptr, reduce: str, dim: int):
    """``scatterx::segment_reduce``: CSR segments along ``dim``."""
    front = _to_front(src, dim)
    index = _ptr_to_index(ptr, _length(src, dim))
    return _from_front(_reduce_rows(front, index, _segments(ptr), reduce, rank=_rank(src), like=src), dim, _rank(src))


def gather_segment_reduce(src, ptr, index, reduce: str, dim: int, ptr_t=None, index_t=None):
    """``scatterx::gather_segment_reduce``: the rows ``index`` names, reduced per CSR segment."""
    front = op.Gather(_to_front(src, dim), _as_int64(index), axis=0)
    segment = _ptr_to_index(ptr, op.Shape(index))
    return _from_front(_reduce_rows(front, segment, _segments(ptr), reduce, rank=_rank(src), like=src), dim, _rank(src))


def weighted_gather_segment_reduce(src, ptr, index, weight, reduce: str):
    """``scatterx::weighted_gather_segment_reduce``: src (N, H, C), weight (E, H)."""
    rows = op.Mul(op.Gather(src, _as_int64(index), axis=0), op.Unsqueeze(weight, _ints([-1])))
    segment = _ptr_to_index(ptr, op.Shape(index))
    return _reduce_rows(rows, segment, _segments(ptr), reduce, rank=3, like=src)


def _edge_ends(ptr, index, a, b):
    index = _as_int64(index)
    targets = _ptr_to_index(ptr, op.Shape(index))
    return op.Gather(a, index, axis=0), op.Gather(b, targets, axis=0)


def sddmm(ptr, index, a, b, op_name: str):
    """``scatterx::sddmm``: (E, H, C) for add/mul, (E, H, 1) for dot."""
    x, y = _edge_ends(ptr, index, a, b)
    if op_name == "add":
        return op.Add(x, y)
    if op_name == "mul":
        return op.Mul(x, y)
    return op.ReduceSum(op.Mul(x, y), _ints([-1]), keepdims=1)


def gatv2_logits(ptr, index, a, b, att, negative_slope: float):
    """``scatterx::gatv2_logits``: (E, H)."""
    x, y = _edge_ends(ptr, index, a, b)
    activated = op.LeakyRelu(op.Add(x, y), alpha=float(negative_slope))
    return op.ReduceSum(op.Mul(activated, att), _ints([-1]), keepdims=0)


def segment_softmax(src, index=None, ptr=None, dim: int = 0, num_segments: int = 0, sorted: bool = False):
    """``scatterx::segment_softmax``: softmax of each group's slices along ``dim``, groups by ``index`` or
    ``ptr``."""
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
        wide_base = None if base is None else op.Cast(base, to=ir.DataType.FLOAT)
        values, arg = segment_arg_reduce(
            op.Cast(src, to=ir.DataType.FLOAT), ptr, perm, wide_base, reduce, dim, finite_start, fill
        )
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


def segment_logsumexp(src, ptr, perm=None, dim: int = 0, eps: float = 1e-12, flavour: str = "logsumexp"):
    """``scatterx::segment_logsumexp``: ``top + log(sum exp(x - top) + eps)`` per segment, with the op's ``top``
    and NaN rules for each flavour."""
    if src.dtype in _HALF:
        return op.CastLike(segment_logsumexp(op.Cast(src, to=ir.DataType.FLOAT), ptr, perm, dim, eps, flavour), src)
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


#: op name (``torch.ops.scatterx.<name>``) -> translation
TRANSLATIONS: Dict[str, Callable[..., Any]] = {
    "index_scatter_reduce": index_scatter_reduce,
    "segment_reduce": segment_reduce,
    "gather_segment_reduce": gather_segment_reduce,
    "weighted_gather_segment_reduce": weighted_gather_segment_reduce,
    "sddmm": sddmm,
    "gatv2_logits": gatv2_logits,
    "segment_softmax": segment_softmax,
    "csr_order": csr_order,
    "csr_transpose": csr_transpose,
    "segment_arg_reduce": segment_arg_reduce,
    "segment_logsumexp": segment_logsumexp,
}
