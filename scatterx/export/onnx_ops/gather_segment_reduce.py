"""ONNX translations of ``scatterx::gather_segment_reduce`` and its weighted form."""

from __future__ import annotations

from onnxscript import opset18 as op

from ._graph import (
    _HALF,
    _as_int64,
    _from_front,
    _ints,
    _ptr_to_index,
    _rank,
    _reduce_rows,
    _segments,
    _static_length,
    _to_front,
    _widened,
    translation,
)


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
    # half types multiplied in float32 (onnxruntime has no bfloat16 Mul), reduced so and rounded once, as eagerly
    gathered = op.Gather(_widened(src) if src.dtype in _HALF else src, _as_int64(index), axis=0)
    rows = op.Mul(gathered, op.Unsqueeze(_widened(weight) if weight.dtype in _HALF else weight, _ints([-1])))
    segment = _ptr_to_index(ptr, op.Shape(index))
    entries = _static_length(index)
    return _reduce_rows(rows, segment, _segments(ptr), reduce, rank=3, like=src, sorted=True, entries_hint=entries)
