"""PyTorch-compatible ``scatter_reduce``, ``scatter`` and ``gather`` on scatterx's engine (re-exported at the top
level as ``scatterx.scatter_reduce`` etc.). Same arguments and results as torch's functions.

An index expanded from 1-D (``index.view(-1, 1).expand_as(src)``, as PyG builds it) is recognised by the planner
and runs on the slice kernel of ``index_scatter_reduce``; any other index runs element by element.

Differences from torch, all on the side of determinism or leniency:
- duplicates in ``scatter`` (assign): the last write in the index's row-major order wins (torch: undefined);
- int32 indices are accepted as well as int64;
- bad input raises IndexError/ValueError/TypeError with the position of the culprit, before anything is written.
"""

from __future__ import annotations

import torch

from . import planner
from ._frontend import check_index, check_tensor, check_updates, normalize_axis, scalar_or_tensor
from .planner import XMap

_SCATTER_REDUCE = ("sum", "prod", "mean", "amax", "amin")
_SCATTER_MODES = {None: "assign", "add": "sum", "multiply": "prod"}


def _along_dim_map(input: torch.Tensor, dim: int, index: torch.Tensor, name: str) -> XMap:
    """torch's scatter/gather map: ``u`` runs over ``index``; ``t = u`` with ``t[dim] = index[u]``."""
    if index.dim() != input.dim():
        raise ValueError(
            f"{name}: index has {index.dim()} dimension(s) but input has {input.dim()}; they must be equal"
        )
    for d in range(input.dim()):
        if d != dim and index.size(d) > input.size(d):
            raise ValueError(
                f"{name}: index.size({d}) = {index.size(d)} exceeds input.size({d}) = {input.size(d)}"
            )
    ndim = input.dim()
    carry = tuple((d, d) for d in range(ndim) if d != dim)
    return XMap(tuple(index.shape), tuple(input.shape), index, tuple(range(ndim)), (dim,), carry)


def _prepare(input, dim, index, name):
    check_tensor(input, "input")
    check_index(index, "index", input)
    squeeze = input.dim() == 0
    if squeeze:  # torch treats a 0-d tensor as having one element along dim 0
        input = input.view(1)
        index = index.view(-1)[:1].view(index.numel()) if index.dim() == 0 else index
    dim = normalize_axis(dim, input.dim(), "dim")
    return input, dim, index, squeeze


def _src_region(src: torch.Tensor, index: torch.Tensor, name: str) -> torch.Tensor:
    if src.dim() != index.dim():
        raise ValueError(f"{name}: src has {src.dim()} dimension(s) but index has {index.dim()}")
    for d in range(index.dim()):
        if index.size(d) > src.size(d):
            raise ValueError(f"{name}: index.size({d}) = {index.size(d)} exceeds src.size({d}) = {src.size(d)}")
    for d in range(index.dim()):
        src = src.narrow(d, 0, index.size(d))
    return src


def scatter_reduce(input, dim: int, index, src, reduce: str, *, include_self: bool = True) -> torch.Tensor:
    """``torch.scatter_reduce``: ``input`` with ``src[u]`` reduced into ``input[u with u[dim] = index[u]]``.

    >>> scatter_reduce(torch.zeros(3), 0, torch.tensor([0, 2, 0]), torch.tensor([1., 2., 3.]), "sum")
    tensor([4., 0., 2.])
    """
    if reduce not in _SCATTER_REDUCE:
        raise ValueError(f"reduce must be one of {_SCATTER_REDUCE}, got {reduce!r}")
    input, dim, index, squeeze = _prepare(input, dim, index, "scatter_reduce")
    src = check_updates(src, input, "src")
    src = src.view(-1) if squeeze else src
    m = _along_dim_map(input, dim, index, "scatter_reduce")
    result = planner.scatter(m, input, _src_region(src, index, "scatter_reduce"), reduce, include_self)
    return result.view(()) if squeeze else result


def scatter(input, dim: int, index, src, *, reduce=None) -> torch.Tensor:
    """``torch.scatter``: ``src`` (a tensor, or a number for every position) written into ``input`` at ``index``
    along ``dim``; ``reduce="add"``/``"multiply"`` combine instead. Duplicates: the last write wins.

    >>> scatter(torch.zeros(3), 0, torch.tensor([2, 0, 2]), torch.tensor([1., 2., 3.]))
    tensor([2., 0., 3.])
    """
    if reduce not in _SCATTER_MODES:
        raise ValueError(f"reduce must be None, 'add' or 'multiply', got {reduce!r}")
    mode = _SCATTER_MODES[reduce]
    input, dim, index, squeeze = _prepare(input, dim, index, "scatter")
    if isinstance(src, torch.Tensor):
        src = check_updates(src, input, "src", reduces=mode != "assign")
        src = _src_region(src.view(-1) if squeeze else src, index, "scatter")
    else:
        src = scalar_or_tensor(src, input, "src").expand(index.shape)
        if mode != "assign":
            check_updates(src, input, "src")
    m = _along_dim_map(input, dim, index, "scatter")
    result = planner.scatter(m, input, src, mode, include_self=True)
    return result.view(()) if squeeze else result


def gather(input, dim: int, index, *, sparse_grad: bool = False) -> torch.Tensor:
    """``torch.gather``: ``out[u] = input[u with u[dim] = index[u]]`` (``sparse_grad`` is accepted and ignored).

    >>> gather(torch.tensor([[1, 2], [3, 4]]), 1, torch.tensor([[0, 0], [1, 0]]))
    tensor([[1, 1],
            [4, 3]])
    """
    input, dim, index, squeeze = _prepare(input, dim, index, "gather")
    result = planner.gather(_along_dim_map(input, dim, index, "gather"), input)
    return result.view(()) if squeeze else result
