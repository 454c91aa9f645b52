"""ONNX translations of ``scatterx::csr_order`` and ``scatterx::csr_transpose``."""

from __future__ import annotations

from onnxscript import opset18 as op

from ._graph import _as_int64, _count, _counts, _int_scalar, _ints, _ptr_to_index, translation


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
