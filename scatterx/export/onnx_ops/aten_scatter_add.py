"""ONNX translation of torch's own ``aten::scatter_add`` where its index is a row index broadcast over the rows
(PyG's aggregation, which the ``scatterx.pyg`` switch leaves to PyG under export)."""

from __future__ import annotations

from onnxscript import opset18 as op

from ._graph import _ints, _length, _rank, _reduce_rows, _static_length, aten_translation


def _row_index(index, src, self, dim: int):
    """The 1-D row index behind an ``index`` that is a row index broadcast over ``src``'s shape (an ``Expand`` of an
    ``(E, 1, ..., 1)`` tensor, what PyG's ``scatter`` and ``broadcast`` write), or None -- also where ``self``'s
    rows are wider than ``src``'s (torch adds into their leading part) or the expanded tensor has fewer rows than
    ``src`` (an ``(1, 1)`` index broadcast down the rows too)."""
    rank = _rank(src)
    if dim % rank != 0 or index.shape is None or src.shape is None or list(index.shape) != list(src.shape):
        return None
    if self.shape is None or len(self.shape) != rank or list(self.shape)[1:] != list(src.shape)[1:]:
        return None
    producer = index.producer()
    if producer is None or producer.op_type != "Expand" or producer.domain not in ("", "ai.onnx"):
        return None
    rows = producer.inputs[0]
    if rows is None or rows.shape is None or len(rows.shape) != rank or any(d != 1 for d in list(rows.shape)[1:]):
        return None
    if rows.shape[0] != src.shape[0]:  # (the same size, or the same symbol of a dynamic export)
        return None
    return op.Reshape(rows, _ints([-1]))


@aten_translation("scatter_add")
def aten_scatter_add(self, dim: int, index, src):
    """``aten::scatter_add``: where ``index`` is a row index broadcast over ``src`` (PyG's aggregation), the rows'
    reduction of ``_reduce_rows``, added to ``self``; any other index: ``ScatterElements`` as torch translates it."""
    rows = _row_index(index, src, self, dim) if _rank(src) > 1 else None
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
