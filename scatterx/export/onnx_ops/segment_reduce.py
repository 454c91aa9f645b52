"""ONNX translation of ``scatterx::segment_reduce``."""

from __future__ import annotations

from ._graph import (
    _from_front,
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
