"""ONNX translation of ``scatterx::segment_softmax``."""

from __future__ import annotations

import math

from onnxscript import opset18 as op

from ._graph import (
    _HALF,
    _count,
    _from_front,
    _gather_rows,
    _length,
    _ptr_to_index,
    _rank,
    _rows_shape,
    _scalar_like,
    _scatter,
    _segments,
    _to_front,
    _widened,
    translation,
)


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
