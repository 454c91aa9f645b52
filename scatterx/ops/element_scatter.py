"""``element_scatter`` / ``element_gather``: the planner's element plans, where the index names a target per element.
Functional and not differentiable: the planner runs them only when no gradient is wanted and nothing is being
traced; otherwise it takes the differentiable op of ``index_scatter_reduce`` (or ``index_select``) on flat views.

Two forms of map, both read from the caller's index as it is (int32 or int64, any strides; no offsets tensor):

- ``dim`` given -- along a dim, as ``torch.scatter``/``gather``: position ``u`` of ``index`` goes to ``u`` with
  coordinate ``dim`` replaced by ``index[u]``;
- ``dim=None`` -- by coordinates, as ONNX ``ScatterND``/``GatherND`` with full coordinates: ``index`` has shape
  ``B + (k,)`` with ``k = data.dim()``, and position ``b`` goes to ``data[index[b]]``.

The CPU backend has kernels of their own for both (``kernels/cpu/element_scatter.py``); the GPU backend turns the index
into flat offsets and runs its segment path (scatter) or torch's indexing (gather)."""

from __future__ import annotations

from typing import Optional

import torch

from .._memo import Memo
from .._reductions import NAMES
from ..backends import backend_for
from ._checks import INDEX_DTYPES, check_src, check_tensor, plain_index


def element_scatter(
    index: torch.Tensor,
    src: torch.Tensor,
    base: torch.Tensor,
    reduce: str,
    include_self: bool,
    dim: Optional[int] = None,
) -> torch.Tensor:
    """A new tensor: ``base`` with ``src[u]`` reduced into its target for every ``u``, in ``u``'s row-major order.

    ``dim`` given: ``index``, ``src`` of one shape, equal to ``base``'s except along ``dim``; the target of ``u`` is
    ``u`` with ``u[dim] = index[u]``. ``dim=None``: ``index`` of shape ``src.shape + (base.dim(),)``, the target of
    ``u`` is ``index[u]``. ``reduce``: ``"assign"`` (the last write wins) or a canonical name of the reduction
    table; ``include_self``: ``base``'s value takes part (mean counts it). Targets that receive nothing keep
    ``base``'s value. IndexError (before anything is written) for an index entry outside its dim."""
    index = plain_index(check_tensor(index, "index"))
    form = _form(index, src, base, dim, reduce)
    if not _CHECKED.get(form):  # the checks below read shapes, dtypes and devices only: once per form
        if reduce != "assign" and reduce not in NAMES:
            raise ValueError(f"reduce must be 'assign' or one of {NAMES}, got {reduce!r}")
        check_src(src)
        check_tensor(base, "base")
        if base.dtype != src.dtype or base.device != src.device:
            raise ValueError(
                f"base must have src's dtype and device; got {base.dtype} on {base.device}, src {src.dtype} on "
                f"{src.device}"
            )
        dim = _check_index(index, base, dim)
        expected = tuple(index.shape) if dim is not None else tuple(index.shape[:-1])
        if tuple(src.shape) != expected:
            raise ValueError(f"src has shape {tuple(src.shape)}, expected {expected} (from index {tuple(index.shape)})")
        _remember(form)
    return backend_for(src).element_scatter(src, index, base, dim, reduce, bool(include_self))


def element_gather(data: torch.Tensor, index: torch.Tensor, dim: Optional[int] = None) -> torch.Tensor:
    """``out[u] = data[t(u)]`` for the map of :func:`element_scatter` (``dim`` given: ``out`` has ``index``'s
    shape; ``dim=None``: ``index.shape[:-1]``). IndexError for an index entry outside its dim."""
    index = plain_index(check_tensor(index, "index"))
    form = _form(index, data, None, dim, None)
    if not _CHECKED.get(form):  # (as in element_scatter)
        check_src(data, "data")
        dim = _check_index(index, data, dim)
        _remember(form)
    return backend_for(data).element_gather(data, index, dim)


# Forms of call already checked (shapes, dtypes, devices, dim, reduce): a repeated call skips its checks, which
# depend on nothing else (docs/decisions/planner.md, "A planner that costs microseconds"). Bounded
# (``scatterx/_memo.py``).
_CHECKED = Memo("ops.element_forms", 512)


def _form(index, src, base, dim, reduce) -> Optional[tuple]:
    """What the op's checks depend on, or None for arguments whose checks must run (not tensors, a dim that is
    not a plain int)."""
    if not isinstance(src, torch.Tensor) or not (base is None or isinstance(base, torch.Tensor)):
        return None
    if dim is not None and type(dim) is not int:
        return None
    form = (index.shape, index.dtype, index.device, src.shape, src.dtype, src.device, dim, reduce)
    return form if base is None else form + (base.shape, base.dtype, base.device)


def _remember(form: Optional[tuple]) -> None:
    """Remember a checked form (None: a form that is not remembered)."""
    if form is not None:
        _CHECKED.put(form, True)


def _check_index(index, data: torch.Tensor, dim: Optional[int]) -> Optional[int]:
    check_tensor(index, "index")
    if index.dtype not in INDEX_DTYPES:
        raise TypeError(f"index must have dtype int32 or int64, got {index.dtype}")
    if index.device != data.device:
        raise ValueError(f"index is on {index.device} but the data is on {data.device}")
    if dim is None:
        if index.dim() == 0 or index.size(-1) != data.dim() or data.dim() == 0:
            raise ValueError(
                f"index of shape {tuple(index.shape)} must end with a coordinate vector of the data's "
                f"rank {data.dim()} (>= 1)"
            )
        return None
    if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < data.dim():
        raise ValueError(f"dim must be an int in [0, {data.dim()}), got {dim!r}")
    if index.dim() != data.dim() or any(index.size(d) != data.size(d) for d in range(data.dim()) if d != dim):
        raise ValueError(
            f"index of shape {tuple(index.shape)} must have the data's shape {tuple(data.shape)} except along dim {dim}"
        )
    return dim
