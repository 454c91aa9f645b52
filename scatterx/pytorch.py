"""PyTorch-compatible ``scatter_reduce``, ``scatter`` and ``gather`` on scatterx's engine (re-exported at the top
level as ``scatterx.scatter_reduce`` etc.). Same arguments, results and gradients as torch's functions.

An index expanded from 1-D (``index.view(-1, 1).expand_as(src)``, as PyG builds it) is recognised by the planner
and runs on the slice kernel of ``index_scatter_reduce``; any other index runs element by element.

torch's conventions kept on purpose: a 0-d ``input``, ``index`` or ``src`` counts as a 1-D tensor of one element
(the result of ``gather`` has ``index``'s shape, that of the scatters ``input``'s); an empty index is accepted
whatever its dtype and shape (nothing is read or written); the amax/amin gradient of ``scatter_reduce`` with
``include_self=False`` counts ``input``'s own value among the ties when it equals the result, as torch does.

Reductions of a dtype scatterx's kernels do not take (int8, uint8, int16, bool, complex) are handed to torch's own
function after the argument checks: torch's results, torch's wraparound, torch's errors.

Differences from torch, all on the side of determinism or leniency:
- duplicates in ``scatter`` (assign): the last write in the index's row-major order wins (torch: undefined);
- int32 indices are accepted as well as int64;
- bad input raises IndexError/ValueError/TypeError with the position of the culprit, before anything is written.
"""

from __future__ import annotations

import torch

from . import planner
from ._frontend import check_index, check_tensor, check_updates, normalize_axis, scalar_or_tensor
from ._reductions import SUPPORTED_DTYPES
from .planner import XMap

_SCATTER_REDUCE = ("sum", "prod", "mean", "amax", "amin")
_SCATTER_MODES = {None: "assign", "add": "sum", "multiply": "prod"}


def _prepare(input, dim, index):
    """``(input, dim, index, empty)`` with 0-d ``input``/``index`` seen as one element, as torch does; an empty
    index is not checked further (torch reads nothing from it)."""
    check_tensor(input, "input")
    check_tensor(index, "index")
    dim = normalize_axis(dim, input.dim(), "dim")
    empty = index.numel() == 0
    if not empty:
        check_index(index, "index", input)
    input = input.view(1) if input.dim() == 0 else input
    index = index.view(1) if index.dim() == 0 else index
    return input, dim, index, empty


def _src_region(src: torch.Tensor, index: torch.Tensor, name: str) -> torch.Tensor:
    src = src.view(1) if src.dim() == 0 else src
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
    shape = input.shape if isinstance(input, torch.Tensor) else None
    original = (input, dim, index, src)
    input, dim, index, empty = _prepare(input, dim, index)
    if input.dtype not in SUPPORTED_DTYPES and isinstance(src, torch.Tensor):  # see the module docstring
        return torch.scatter_reduce(*original, reduce, include_self=include_self)
    src = check_updates(src, input, "src")
    if empty:
        return input.clone().view(shape)
    m = XMap.along_dim(index, input.shape, dim, op="scatter_reduce")
    src = _src_region(src, index, "scatter_reduce")
    return planner.scatter(m, input, src, reduce, include_self, torch_ties=True).view(shape)


def scatter(input, dim: int, index, src, *, reduce=None) -> torch.Tensor:
    """``torch.scatter``: ``src`` (a tensor, or a number for every position) written into ``input`` at ``index``
    along ``dim``; ``reduce="add"``/``"multiply"`` combine instead. Duplicates: the last write wins.

    >>> scatter(torch.zeros(3), 0, torch.tensor([2, 0, 2]), torch.tensor([1., 2., 3.]))
    tensor([2., 0., 3.])
    """
    if reduce not in _SCATTER_MODES:
        raise ValueError(f"reduce must be None, 'add' or 'multiply', got {reduce!r}")
    mode = _SCATTER_MODES[reduce]
    shape = input.shape if isinstance(input, torch.Tensor) else None
    original = (input, dim, index, src)
    input, dim, index, empty = _prepare(input, dim, index)
    if mode != "assign" and input.dtype not in SUPPORTED_DTYPES:  # see the module docstring
        return torch.scatter(*original, reduce=reduce)
    if isinstance(src, torch.Tensor):
        src = check_updates(src, input, "src", reduces=mode != "assign")
        if empty:
            return input.clone().view(shape)
        src = _src_region(src, index, "scatter")
    else:
        src = scalar_or_tensor(src, input, "src").expand(index.shape)
        if mode != "assign":
            check_updates(src, input, "src")
        if empty:
            return input.clone().view(shape)
    m = XMap.along_dim(index, input.shape, dim, op="scatter")
    return planner.scatter(m, input, src, mode, include_self=True).view(shape)


def gather(input, dim: int, index, *, sparse_grad: bool = False) -> torch.Tensor:
    """``torch.gather``: ``out[u] = input[u with u[dim] = index[u]]``, of ``index``'s shape (``sparse_grad`` is
    accepted and ignored).

    >>> gather(torch.tensor([[1, 2], [3, 4]]), 1, torch.tensor([[0, 0], [1, 0]]))
    tensor([[1, 1],
            [4, 3]])
    """
    shape = index.shape if isinstance(index, torch.Tensor) else None
    input, dim, index, empty = _prepare(input, dim, index)
    if empty:  # still a view of input, so that autograd connects it (with a zero gradient)
        return input.reshape(-1).narrow(0, 0, 0).view(shape)
    result = planner.gather(XMap.along_dim(index, input.shape, dim, op="gather"), input)
    return result.view(shape)
