"""``index_scatter_reduce``: reduce slices of ``src`` along ``dim`` into the output slices a 1-D index names."""

from __future__ import annotations

import torch

from .._reductions import resolve
from ._checks import check_dim_size, check_integer_vector, check_out, check_src, normalize_dim
from .segment import run_segments, segments_from_sorted_index, segments_from_unsorted_index


def index_scatter_reduce(
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor,
    reduce: str = "sum",
    sorted: bool = True,
    *,
    dim_size=None,
    out=None,
    include_self: bool = True,
) -> torch.Tensor:
    """``dst[index[i]] (+)= src[i]`` along ``dim``, for the first ``index.numel()`` slices of ``src``.

    Args:
        dim: the dimension of ``src`` that ``index`` runs along (negative counts from the end).
        index: 1-D int32/int64, ``index.numel() <= src.size(dim)``; non-decreasing when ``sorted=True``.
        src: float32/float64/float16/bfloat16/int32/int64 tensor of any shape and strides.
        reduce: ``"sum"``, ``"mean"``, ``"prod"``, ``"amax"``, ``"amin"`` (aliases add, mul, max, min).
        sorted: promise that ``index`` is non-decreasing (checked): contiguous segments, the fastest path.
            ``sorted=False`` accepts any order.
        dim_size: size of the output along ``dim``; default ``out.size(dim)``, else ``index.max() + 1``
            (the last element for a sorted index).
        out: reduce into this tensor in place and return it; ``include_self`` says whether its values take part
            (mean counts them). Its rows that receive nothing keep their values.

    Without ``out`` the result is a new tensor whose rows that receive nothing are 0.

    >>> index_scatter_reduce(0, torch.tensor([0, 0, 2]), torch.tensor([1., 2., 3.]))
    tensor([3., 0., 3.])
    """
    red = resolve(reduce)
    check_src(src)
    dim = normalize_dim(dim, src.dim())
    check_integer_vector(index, "index", src)
    if index.numel() > src.size(dim):
        raise ValueError(
            f"index has {index.numel()} entries but src.size({dim}) is {src.size(dim)}; "
            "index may not be longer than src along dim"
        )
    dim_size = check_dim_size(dim_size)
    if out is not None:
        check_out(out, src, dim, dim_size)
        num_segments = out.size(dim)
    elif dim_size is not None:
        num_segments = dim_size
    elif index.numel() == 0:
        num_segments = 0
    else:
        # a sorted index ends with its maximum (validated below); otherwise one scan
        num_segments = max(int(index[-1] if sorted else index.max()) + 1, 0)

    if sorted:
        ptr, perm = segments_from_sorted_index(index, num_segments), None
    else:
        ptr, perm = segments_from_unsorted_index(index, num_segments)
    # only the first index.numel() slices of src take part: ptr/perm never name a later one
    return run_segments(src, dim, ptr, perm, red, out, include_self)
