"""ONNX translation of ``scatterx::segment_arg_reduce``."""

from __future__ import annotations

import math

from onnxscript import opset18 as op

from ._graph import (
    _HALF,
    _counts,
    _finite_extreme,
    _from_front,
    _gather_rows,
    _int_scalar,
    _ints,
    _length,
    _members,
    _per_row,
    _rank,
    _rows_shape,
    _scalar_like,
    _scatter,
    _to_front,
    _widened,
    translation,
)


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
        values, arg = _selection(_widened(src), ptr, perm, wide_base, reduce, dim, finite_start, fill, src.dtype)
        return op.CastLike(values, src), arg
    return _selection(src, ptr, perm, base, reduce, dim, finite_start, fill, src.dtype)


def _selection(src, ptr, perm, base, reduce: str, dim: int, finite_start: bool, fill: str, dtype):
    """The translation on ``src`` (a half type's widened to float32); ``dtype``: the op's own value type, whose
    finite extreme is ``finite_start``'s start."""
    rank = _rank(src)
    maximum = reduce in ("amax", "max")
    x, rows, segment, S = _members(src, ptr, perm, dim)
    worst = -math.inf if maximum else math.inf
    start = _scalar_like(_finite_extreme(dtype, largest=not maximum) if finite_start else worst, src)
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
