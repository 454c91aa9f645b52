"""``ScatterAggregation``: scatterx as an ``aggr=`` module, for code that prefers not to patch PyG."""

from __future__ import annotations

from torch import Tensor
from torch_geometric.nn.aggr import Aggregation

from ..ops import segment_reduce
from ._common import ORIGINAL, REDUCE
from .routed import scatter_pyg


class ScatterAggregation(Aggregation):
    """An ``aggr=`` module on scatterx: ``SAGEConv(..., aggr=ScatterAggregation("mean"))``.

    ``reduce``: "sum" ("add"), "mean", "mul", "min", "max" (also "amin", "amax"), with PyG's conventions (rows
    that receive nothing are 0, or 1 for "mul"). ``ptr`` runs the CSR kernel; an index is checked for order per
    call, and a sorted one takes the sorted kernel."""

    def __init__(self, reduce: str = "sum"):
        super().__init__()
        if reduce not in REDUCE and reduce != "mul":
            raise ValueError(f"ScatterAggregation: unknown reduce {reduce!r}; one of {sorted(REDUCE) + ['mul']}")
        self.reduce_name = reduce

    def forward(self, x, index=None, ptr=None, dim_size=None, dim: int = -2, max_num_elements=None) -> Tensor:
        dim = dim % x.dim()
        if ptr is not None and self.reduce_name in REDUCE and ptr.dim() == 1:
            return segment_reduce(x, ptr, REDUCE[self.reduce_name], dim)
        self.assert_index_present(index)
        if self.reduce_name == "mean" and not x.is_floating_point():  # PyG's integer mean divides exactly
            return ORIGINAL["scatter"](x, index, dim, dim_size, "mean")
        return scatter_pyg(x, index, dim, dim_size, self.reduce_name)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.reduce_name!r})"
