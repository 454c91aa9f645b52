"""``ScatterAggregation``: scatterx as an ``aggr=`` module, for code that prefers not to patch PyG."""

from __future__ import annotations

from typing import Optional

from torch import Tensor
from torch_geometric.nn.aggr import Aggregation

from ..ops import segment_reduce
from ._common import ORIGINAL, REDUCE
from .routed import _check_types, scatter_pyg


class ScatterAggregation(Aggregation):
    """A PyG aggregation module (``aggr=``) that reduces on scatterx's kernels, without the switch.

    It is PyG's ``SumAggregation``, ``MeanAggregation``, ``MaxAggregation``, ``MinAggregation`` or
    ``MulAggregation``, with PyG's conventions (rows that receive nothing are 0, or 1 for ``"mul"``), for code that
    prefers not to patch PyG with :func:`enable`: ``SAGEConv(16, 32, aggr=ScatterAggregation("mean"))``. Called
    with a CSR ``ptr``, it runs the CSR segment kernel (``"mul"`` needs an ``index``); with an ``index``, the
    index's order is checked on each call and a sorted one takes the sorted kernel. An integer ``"mean"`` runs
    PyG's own exact division.

    Args:
        reduce: ``"sum"`` (or ``"add"``), ``"mean"``, ``"mul"``, ``"min"``, ``"max"`` (or ``"amin"``,
            ``"amax"``).

    Raises:
        TypeError: ``reduce`` is not a string; when called, ``x``, ``index`` or ``ptr`` is not a tensor, or
            ``index`` or ``ptr`` has a non-integer dtype.
        ValueError: ``reduce`` is not one of the names above; when called, ``index`` is not 1-D or its length is
            not ``x.size(dim)``, ``dim`` is out of range, ``dim_size`` is smaller than ``index.max() + 1`` or
            ``ptr`` does not span ``x.size(dim)`` (PyG's checks, and scatterx's).
        IndexError: when called, ``index`` holds a negative value.
        NotImplementedError: ``"mul"`` called with a ``ptr`` and no ``index`` (as PyG's ``MulAggregation``).

    Example:
        >>> aggr = ScatterAggregation("mean")
        >>> aggr
        ScatterAggregation('mean')
        >>> x = torch.tensor([[1.0], [2.0], [3.0]])
        >>> aggr(x, torch.tensor([0, 0, 2]))
        tensor([[1.5000],
                [0.0000],
                [3.0000]])
        >>> aggr(x, ptr=torch.tensor([0, 2, 3]))
        tensor([[1.5000],
                [3.0000]])
        >>> from torch_geometric.nn import SAGEConv
        >>> conv = SAGEConv(1, 2, aggr=ScatterAggregation("max"))
        >>> conv(x, torch.tensor([[0, 1, 2], [1, 2, 0]])).shape
        torch.Size([3, 2])
    """

    def __init__(self, reduce: str = "sum"):
        super().__init__()
        if not isinstance(reduce, str):
            raise TypeError(f"ScatterAggregation: reduce must be a string, got {type(reduce).__name__}")
        if reduce not in REDUCE and reduce != "mul":
            raise ValueError(f"ScatterAggregation: unknown reduce {reduce!r}; one of {sorted(REDUCE) + ['mul']}")
        self.reduce_name = reduce

    def __call__(
        self,
        x: Tensor,
        index: Optional[Tensor] = None,
        ptr: Optional[Tensor] = None,
        dim_size: Optional[int] = None,
        dim: int = -2,
        **kwargs,
    ) -> Tensor:
        # PyG's __call__ reads x.dim() and index.max() first: a wrong type is refused here, as a TypeError
        _check_types(
            "ScatterAggregation",
            {"x": x, "index": index, "ptr": ptr},
            optional=("index", "ptr"),
            indices=("index", "ptr"),
        )
        return super().__call__(x, index, ptr, dim_size, dim, **kwargs)

    def forward(
        self,
        x: Tensor,
        index: Optional[Tensor] = None,
        ptr: Optional[Tensor] = None,
        dim_size: Optional[int] = None,
        dim: int = -2,
        max_num_elements: Optional[int] = None,
    ) -> Tensor:
        """Reduce the rows of ``x`` (along ``dim``) per group; called through the module, as PyG's aggregations.

        Args:
            x: the values, e.g. the messages ``(E, F)``.
            index: ``(x.size(dim),)`` int64/int32, the group of each row (all rows in group 0 when neither
                ``index`` nor ``ptr`` is given).
            ptr: the CSR offsets of the groups, for rows sorted by group (``ptr[0] == 0``,
                ``ptr[-1] == x.size(dim)``).
            dim_size: the number of groups; default ``index.max() + 1`` (or ``ptr.numel() - 1``).
            dim: the dim of ``x`` to reduce.
            max_num_elements: unused (PyG's argument for its dense aggregations).

        Returns:
            A new tensor of ``x``'s dtype and device, ``x.size(dim)`` replaced by the number of groups.
        """
        dim = dim % x.dim()
        if ptr is not None and self.reduce_name in REDUCE and ptr.dim() == 1:
            return segment_reduce(x, ptr, REDUCE[self.reduce_name], dim)
        self.assert_index_present(index)
        assert index is not None  # (assert_index_present raised otherwise)
        if index.dim() == 1 and index.numel() != x.size(dim):
            raise ValueError(
                f"ScatterAggregation: index has {index.numel()} entries but x has {x.size(dim)} rows along dim {dim}"
            )
        if self.reduce_name == "mean" and not x.is_floating_point():  # PyG's integer mean divides exactly
            return ORIGINAL["scatter"](x, index, dim, dim_size, "mean")
        return scatter_pyg(x, index, dim, dim_size, self.reduce_name)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}({self.reduce_name!r})"
