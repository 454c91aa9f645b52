"""ONNX translation of ``scatterx::segment_of_entries``, the segment of each CSR position."""

from __future__ import annotations

from ._graph import _count, _ptr_to_index, translation


@translation
def segment_of_entries(ptr, entries: int):
    """``scatterx::segment_of_entries``: the segment of each of ``entries`` positions of the CSR offsets."""
    return _ptr_to_index(ptr, _count(entries))
