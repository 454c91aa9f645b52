"""ONNX translations of ``scatterx::segment_reduce`` and of the conversions ``scatterx::index_to_ptr`` and
``scatterx::ptr_to_index``."""

from __future__ import annotations

from onnxscript import opset18 as op

from ._graph import (
    _as_int64,
    _count,
    _counts,
    _from_front,
    _int_scalar,
    _ints,
    _length,
    _ptr_to_index,
    _rank,
    _reduce_rows,
    _segments,
    _static_length,
    _to_front,
    translation,
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
def index_to_ptr(index, dim_size: int):
    """``scatterx::index_to_ptr``: 0, then the running count of entries below each segment's end."""
    counts = _counts(_as_int64(index), _count(dim_size))
    return op.Concat(_ints([0]), op.CumSum(counts, _int_scalar(0)), axis=0)


@translation
def ptr_to_index(ptr):
    """``scatterx::ptr_to_index``: the segment of each of ``ptr[-1]`` positions."""
    ptr = _as_int64(ptr)
    return _ptr_to_index(ptr, op.Slice(ptr, _ints([-1]), _ints([2**62])))
