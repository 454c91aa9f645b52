"""torch_scatter's ``segment_coo`` / ``gather_coo`` family on scatterx's sorted kernels, with torch_scatter's
semantics:

- ``index`` is sorted along its last dim, which is the reduced dim; its leading dims are batch dims (broadcast
  against ``src``'s). A batch whose index does not vary runs as ``outer`` slices of one call; a varying one is
  flattened (batch ``b``'s targets offset by ``b * dim_size``, which keeps the index sorted).
- An unsorted index raises ValueError (torch_scatter's CPU kernel silently reduces runs instead).
- Without ``out`` or ``dim_size``: ``index[..., -1].max() + 1`` rows.
- ``out=``'s values take part (sum adds to them; min/max compare with them; mean is ``(out + sum) / members``),
  it is written in place and returned.
- mean: integers truncate toward zero (torch_scatter's C++ division); min/max: strict selection from the dtype's
  finite extreme, first tie wins, NaN never selected, unselected rows 0 (``out``'s value with ``out``) with
  argindex ``src.size(dim)``.
"""

from typing import Optional, Tuple

import torch

from .. import planner
from ..ops import index_scatter_reduce_from
from . import _engine


@torch.jit.ignore
def _structure(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor], dim_size: Optional[int]):
    """Checks -> ``(src2, idx, dim, size, rdim, flat, shape)``: a 1-D sorted index ``idx`` over ``src2``'s dim
    ``rdim`` into ``size`` rows (flattened batches: ``B * dim_size`` rows along dim 0)."""
    _engine.check_tensor(src, "src")
    _engine.check_index(index)
    if index.dim() == 0:
        index = index.view(1)
    if src.dim() < index.dim():
        raise ValueError(f"index has {index.dim()} dimensions but src only {src.dim()}")
    if index.device != src.device:
        raise ValueError(f"index is on {index.device} but src is on {src.device}")
    dim = index.dim() - 1
    lead = list(src.shape[:dim])
    try:
        index = index.expand(lead + [src.size(dim)])
    except RuntimeError as e:
        raise ValueError(f"index of shape {tuple(index.shape)} does not match src's sizes {list(src.shape)}: {e}") \
            from None
    if out is not None:
        size = out.size(dim) if out.dim() == src.dim() else -1
    elif dim_size is not None:
        size = dim_size
    else:
        size = 0 if index.numel() == 0 else int(index.select(dim, index.size(dim) - 1).max()) + 1
    if size < 0 and out is None:
        raise ValueError(f"dim_size must be >= 0, got {dim_size}")
    shape = list(src.shape)
    shape[dim] = max(size, 0)
    _engine.check_out(out, src, shape, dim)
    one = _engine.leading_batch(index, lead) if dim > 0 else index
    if one is not None:
        return src, one, dim, size, dim, False, shape
    if index.numel() and not torch.compiler.is_compiling():
        low, high = torch.aminmax(index)
        if int(low) < 0 or int(high) >= size:
            bad = int(low) if int(low) < 0 else int(high)
            raise IndexError(f"segment_coo: index holds {bad}, out of range for dim_size={size}")
    B = 1
    for s in lead:
        B *= s
    starts = torch.arange(B, device=src.device, dtype=torch.int64).mul_(size).view(B, 1)
    flat = (index.reshape(B, src.size(dim)).to(torch.int64) + starts).reshape(-1)
    src2 = src.reshape([B * src.size(dim)] + list(src.shape[dim + 1:]))
    return src2, flat, dim, size, 0, True, shape


def _segment(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor], dim_size: Optional[int],
             reduce: str):
    dtype = src.dtype
    src2, idx, dim, size, rdim, flat, shape = _structure(src, index, out, dim_size)
    work = _engine.widened(src2)
    E = src.size(dim)
    base_shape = list(work.shape)
    if flat:  # batch b's rows at b * size
        batches = 1
        for d in range(dim):
            batches *= src.size(d)
        base_shape[0] = batches * size
    else:
        base_shape[rdim] = size
    S = base_shape[rdim]
    base = None if out is None else _engine.base_of(out, src).reshape(base_shape)
    if reduce in ("amax", "amin"):
        outer = 1
        for d in range(rdim):
            outer *= work.size(d)
        inner = 1
        for d in range(rdim + 1, work.dim()):
            inner *= work.size(d)
        n = work.size(rdim)
        base3 = None if base is None else base.reshape(outer, S, inner)
        values, arg = _engine.select(work.reshape(outer, n, inner), idx, S, reduce, base3,
                                     "unselected" if out is None else "none", sorted_rows=True,
                                     dtype=dtype)
        arg = arg.reshape(base_shape)
        if flat:  # flat rows -> positions in the batch's own rows
            arg = torch.where(arg == n, torch.full_like(arg, E), arg.remainder(max(E, 1)))
        return _engine.finish(values.reshape(shape), out, dtype), arg.reshape(shape)
    if base is None and (reduce == "sum" or work.is_floating_point()):
        # the core's sum, and its mean (sum / members), in one pass into a new tensor
        total = index_scatter_reduce_from(rdim, idx, work, reduce, True, None, dim_size=S)
        return _engine.finish(total.reshape(shape), None, dtype)
    total = index_scatter_reduce_from(rdim, idx, work, "sum", True, base, include_self=out is not None,
                                      dim_size=S)
    if reduce == "mean":
        ones = torch.ones(idx.numel(), dtype=total.dtype, device=src.device)
        count = index_scatter_reduce_from(0, idx, ones, "sum", True, torch.zeros(S, dtype=total.dtype,
                                                                                   device=src.device))
        count = count.clamp_(min=1).view([S] + [1] * (work.dim() - rdim - 1))
        total = torch.div(total, count, rounding_mode=None if total.is_floating_point() else "trunc")
    return _engine.finish(total.reshape(shape), out, dtype)



@torch.jit.ignore
def _reduced(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor], dim_size: Optional[int],
              reduce: str) -> torch.Tensor:
    return _segment(src, index, out, dim_size, reduce)


@torch.jit.ignore
def _selected(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor], dim_size: Optional[int],
              reduce: str) -> Tuple[torch.Tensor, torch.Tensor]:
    return _segment(src, index, out, dim_size, reduce)

def segment_sum_coo(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None,
                    dim_size: Optional[int] = None) -> torch.Tensor:
    """Sum of the runs of equal ``index`` values (sorted) along ``index.dim() - 1``."""
    return _reduced(src, index, out, dim_size, "sum")


def segment_add_coo(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None,
                    dim_size: Optional[int] = None) -> torch.Tensor:
    """``segment_sum_coo``."""
    return _reduced(src, index, out, dim_size, "sum")


def segment_mean_coo(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None,
                     dim_size: Optional[int] = None) -> torch.Tensor:
    """Mean of each run (with ``out``: ``(out + sum) / members``; integers truncate)."""
    return _reduced(src, index, out, dim_size, "mean")


def segment_min_coo(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None,
                    dim_size: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(minimum, argmin)`` of each run."""
    return _selected(src, index, out, dim_size, "amin")


def segment_max_coo(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None,
                    dim_size: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(maximum, argmax)`` of each run."""
    return _selected(src, index, out, dim_size, "amax")


def segment_coo(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None,
                dim_size: Optional[int] = None, reduce: str = "sum") -> torch.Tensor:
    """torch_scatter's ``segment_coo``: ``reduce`` is "sum"/"add", "mean", "min" or "max"."""
    if reduce == "sum" or reduce == "add":
        return segment_sum_coo(src, index, out, dim_size)
    elif reduce == "mean":
        return segment_mean_coo(src, index, out, dim_size)
    elif reduce == "min":
        return segment_min_coo(src, index, out, dim_size)[0]
    elif reduce == "max":
        return segment_max_coo(src, index, out, dim_size)[0]
    else:
        raise ValueError(f"reduce must be 'sum', 'add', 'mean', 'min' or 'max', got '{reduce}'")


@torch.jit.ignore
def _gather(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor]) -> torch.Tensor:
    """out[..., e, ...] = src[..., index[..., e], ...] along ``index.dim() - 1`` (any order accepted)."""
    _engine.check_tensor(src, "src")
    _engine.check_index(index)
    if index.dim() == 0:
        index = index.view(1)
    if src.dim() < index.dim():
        raise ValueError(f"index has {index.dim()} dimensions but src only {src.dim()}")
    dim = index.dim() - 1
    lead = list(src.shape[:dim])
    for d in range(dim):
        if index.size(d) != src.size(d):
            raise ValueError(f"index.size({d}) = {index.size(d)} but src.size({d}) = {src.size(d)}")
    shape = list(src.shape)
    shape[dim] = index.size(dim)
    _engine.check_out(out, src, shape, dim)
    if out is not None and out.size(dim) != index.size(dim):
        raise ValueError(f"out.size({dim}) = {out.size(dim)} but index has {index.size(dim)} entries")
    if index.numel() == 0 or src.numel() == 0:
        if index.numel() and src.size(dim) == 0:
            raise IndexError(f"gather_coo: index names rows of src, which has none along dim {dim}")
        return out if out is not None else _engine.nothing(src, shape)
    full = index.view(lead + [index.size(dim)] + [1] * (src.dim() - dim - 1)).expand(shape)
    result = planner.gather(planner.XMap.along_dim(full, src.shape, dim, op="gather_coo"), src)
    return result if out is None else out.copy_(result)


def gather_coo(src: torch.Tensor, index: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``src`` rows picked by ``index`` along ``index.dim() - 1``: ``out[..., e, ...] = src[..., index[..., e], ...]``."""
    return _gather(src, index, out)
