"""ONNX translation of ``scatterx::adjacency_matmul`` (the PyG switch's layers traced by ``torch.compile``)."""

from __future__ import annotations

from onnxscript import opset18 as op

from ._graph import _as_int64, _count, _counts, _int_scalar, _per_row, _rank, _reduce_rows, _static_length, translation


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
