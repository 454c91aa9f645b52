"""ONNX translation of ``scatterx::index_scatter_reduce``."""

from __future__ import annotations

from ._graph import _count, _from_front, _rank, _reduce_rows, _static_length, _to_front, translation


@translation
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
        _reduce_rows(
            front,
            index,
            rows,
            reduce,
            base_front,
            include_self,
            _rank(src),
            src,
            sorted,
            dim_size,
            _static_length(index, src, dim=dim) if _static_length(index) is None else None,
        ),
        dim,
        _rank(src),
    )
