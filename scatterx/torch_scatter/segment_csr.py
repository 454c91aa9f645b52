"""torch_scatter's ``segment_csr`` / ``gather_csr`` family on scatterx's segment kernels, with torch_scatter's
semantics:

- ``indptr`` has leading batch dims (broadcast against ``src``'s) and reduces along ``indptr.dim() - 1``; its
  entries need not start at 0 nor end at ``src.size(dim)`` (positions outside are in no segment). A batch whose
  ``indptr`` does not vary is one call with ``outer`` slices; a varying one is flattened into one CSR (with
  spacer segments between the batches, dropped afterwards).
- ``out=`` is only written (its values do not take part), in place, and returned.
- mean: integers truncate toward zero (torch_scatter's C++ division), floats divide; an empty segment is 0.
- min/max: strict selection from the dtype's finite extreme (first tie wins, NaN never selected); an empty segment
  is 0 with argindex ``src.size(dim)``; a non-empty segment where nothing was selected (only NaN, or only the
  infinity at the wrong end) keeps the finite extreme, as torch_scatter's kernel writes it (argindex
  ``src.size(dim)`` there, where torch_scatter leaves a stale value). Half types compare in float32 from
  float32's extreme, as torch_scatter's CSR kernel does: half's own extreme can be selected, and the unselected
  value rounds to an infinity.
- ``src`` with no elements: ``out`` is returned untouched (zeros without ``out``).
"""

from typing import Optional, Tuple

import torch

from ..ops import segment_reduce
from ..ops import segment_arg_reduce
from . import _engine


@torch.jit.ignore
def _structure(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor], name: str):
    """Checks (values too, unless traced) -> ``(src, dim, M, ptr, flat, lead)``: CSR offsets ``ptr`` from 0 to
    the positions' count, with segment ``i`` of the caller at ``i + 1`` (1-D) or at ``1 + b * (M + 1) + i``
    (``flat``: the batch folded into dim 0, of ``lead`` batch sizes)."""
    _engine.check_tensor(src, "src")
    _engine.check_index(indptr, "indptr")
    if indptr.dim() == 0:
        raise ValueError("indptr must have at least one dimension")
    if src.dim() < indptr.dim():
        raise ValueError(f"indptr has {indptr.dim()} dimensions but src only {src.dim()}")
    if indptr.device != src.device:
        raise ValueError(f"indptr is on {indptr.device} but src is on {src.device}")
    dim = indptr.dim() - 1
    lead = list(src.shape[:dim])
    try:
        indptr = indptr.expand(lead + [indptr.size(-1)])
    except RuntimeError as e:
        raise ValueError(f"indptr of shape {tuple(indptr.shape)} does not match src's leading sizes {lead}: {e}") \
            from None
    M = max(indptr.size(-1) - 1, 0)
    N = src.size(dim)
    if indptr.numel() and not torch.compiler.is_compiling():
        low, high = torch.aminmax(indptr)
        if int(low) < 0 or int(high) > N:
            raise IndexError(f"{name}: indptr holds {int(low) if int(low) < 0 else int(high)}, outside "
                             f"[0, src.size({dim})={N}]")
        if indptr.size(-1) > 1 and bool((indptr[..., 1:] < indptr[..., :-1]).any()):
            raise ValueError(f"{name}: indptr must be non-decreasing along its last dimension")
    one = _engine.leading_batch(indptr, lead) if dim > 0 else indptr
    zero = torch.zeros(1, dtype=torch.int64, device=src.device)
    if one is not None:
        if one.numel() == 0:
            one = zero
        ptr = torch.cat([zero, one.to(torch.int64), zero + N])
        return src, dim, M, ptr, False, lead
    B = 1
    for s in lead:
        B *= s
    starts = torch.arange(B, device=src.device, dtype=torch.int64).mul_(N).view(B, 1)
    flat = (indptr.reshape(B, M + 1).to(torch.int64) + starts).reshape(-1)
    ptr = torch.cat([zero, flat, zero + B * N])
    return src.reshape([B * N] + list(src.shape[dim + 1:])), dim, M, ptr, True, lead


def _take(result: torch.Tensor, dim: int, M: int, flat: bool, lead, rest) -> torch.Tensor:
    """The caller's segments out of the result over ``_structure``'s ``ptr``."""
    if not flat:
        return result.narrow(dim, 1, M)
    B = 1
    for s in lead:
        B *= s
    inner = result.narrow(0, 1, B * (M + 1)).reshape([B, M + 1] + rest)
    return inner.narrow(1, 0, M).reshape(list(lead) + [M] + rest)


def _segment(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor], reduce: str):
    dtype = src.dtype
    src_, dim, M, ptr, flat, lead = _structure(src, indptr, out, f"segment_{reduce}_csr")
    shape = list(src.shape)
    shape[dim] = M
    _engine.check_out(out, src, shape, dim)
    if out is not None and out.size(dim) != M and src.numel():
        raise ValueError(f"out.size({dim}) = {out.size(dim)} but indptr describes {M} segments")
    rest = list(src.shape[dim + 1:])
    if src.numel() == 0 and out is not None:  # torch_scatter returns out untouched
        if reduce in ("amax", "amin"):
            return out, torch.full(out.shape, src.size(dim), dtype=torch.int64, device=src.device)
        return out
    work = _engine.widened(src_)
    if reduce in ("amax", "amin") and work.dtype in (torch.float16, torch.bfloat16):
        work = work.float()  # torch_scatter's CSR compares half types in float32, from float32's extreme
    rdim = 0 if flat else dim
    arg = None
    if reduce in ("amax", "amin"):
        start = None
        if dtype in _engine.SMALL_INT:  # widened to int64, compared from the small dtype's extreme
            shape_ = list(work.shape)
            shape_[rdim] = ptr.numel() - 1
            info = torch.iinfo(dtype)
            start = torch.full(shape_, info.min if reduce == "amax" else info.max, dtype=work.dtype,
                               device=work.device)
        values, arg = segment_arg_reduce(work, ptr, reduce, rdim, base=start, finite_start=True, fill="empty")
        values = _take(values, dim, M, flat, lead, rest)
        arg = _take(arg, dim, M, flat, lead, rest)
        N = src.size(dim)
        if flat:  # flat rows -> positions in the batch's own rows
            Bn = work.size(0)
            arg = torch.where(arg == Bn, torch.full_like(arg, N), arg.remainder(max(N, 1)))
    elif reduce == "mean" and not work.is_floating_point():  # torch_scatter truncates
        total = _take(segment_reduce(work, ptr, "sum", rdim), dim, M, flat, lead, rest)
        count = (ptr[1:] - ptr[:-1]).clamp(min=1)
        if flat:
            count = count.narrow(0, 1, count.numel() - 1).view(-1, M + 1).narrow(1, 0, M)
        else:
            count = count.narrow(0, 1, M)
        values = torch.div(total, count.reshape(lead[: dim if flat else 0] + [M] + [1] * len(rest)),
                           rounding_mode="trunc")
    else:
        values = _take(segment_reduce(work, ptr, reduce, rdim), dim, M, flat, lead, rest)
    values = _engine.finish(values.contiguous(), out, dtype)
    return values if arg is None else (values, arg.contiguous())



@torch.jit.ignore
def _reduced(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor], reduce: str) -> torch.Tensor:
    return _segment(src, indptr, out, reduce)


@torch.jit.ignore
def _selected(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor], reduce: str) -> Tuple[torch.Tensor, torch.Tensor]:
    return _segment(src, indptr, out, reduce)

def segment_sum_csr(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Sum over the ranges ``indptr[i]:indptr[i+1]`` along ``indptr.dim() - 1``."""
    return _reduced(src, indptr, out, "sum")


def segment_add_csr(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """``segment_sum_csr``."""
    return _reduced(src, indptr, out, "sum")


def segment_mean_csr(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Mean over each range (integers truncate; empty ranges 0)."""
    return _reduced(src, indptr, out, "mean")


def segment_min_csr(src: torch.Tensor, indptr: torch.Tensor,
                    out: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(minimum, argmin)`` over each range."""
    return _selected(src, indptr, out, "amin")


def segment_max_csr(src: torch.Tensor, indptr: torch.Tensor,
                    out: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(maximum, argmax)`` over each range."""
    return _selected(src, indptr, out, "amax")


def segment_csr(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None,
                reduce: str = "sum") -> torch.Tensor:
    """torch_scatter's ``segment_csr``: ``reduce`` is "sum"/"add", "mean", "min" or "max"."""
    if reduce == "sum" or reduce == "add":
        return segment_sum_csr(src, indptr, out)
    elif reduce == "mean":
        return segment_mean_csr(src, indptr, out)
    elif reduce == "min":
        return segment_min_csr(src, indptr, out)[0]
    elif reduce == "max":
        return segment_max_csr(src, indptr, out)[0]
    else:
        raise ValueError(f"reduce must be 'sum', 'add', 'mean', 'min' or 'max', got '{reduce}'")


@torch.jit.ignore
def _gather(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor]) -> torch.Tensor:
    """out[..., indptr[i]:indptr[i+1], ...] = src[..., i, ...] along ``indptr.dim() - 1``."""
    _engine.check_tensor(src, "src")
    _engine.check_index(indptr, "indptr")
    if indptr.dim() == 0 or src.dim() < indptr.dim():
        raise ValueError(f"indptr must have between 1 and src.dim()={src.dim()} dimensions, got {indptr.dim()}")
    dim = indptr.dim() - 1
    lead = list(src.shape[:dim])
    indptr = indptr.expand(lead + [indptr.size(-1)])
    M = max(indptr.size(-1) - 1, 0)
    if src.size(dim) != 0 and src.size(dim) != M:
        raise ValueError(f"src.size({dim}) = {src.size(dim)} but indptr describes {M} segments")
    if out is not None:
        E = out.size(dim) if out.dim() == src.dim() else -1
    else:
        E = int(indptr.reshape(-1)[-1]) if src.numel() > 0 and indptr.numel() else 0
    shape = list(src.shape)
    shape[dim] = max(E, 0)
    _engine.check_out(out, src, shape, dim)
    if src.numel() == 0 or indptr.numel() == 0:
        return out if out is not None else _engine.nothing(src, shape)
    if not torch.compiler.is_compiling():
        low, high = torch.aminmax(indptr)
        steps = indptr[..., 1:] < indptr[..., :-1]
        if int(low) < 0 or int(high) > E or bool(steps.any()):
            raise ValueError(f"gather_csr: indptr must be non-decreasing within [0, {E}] (the output's size)")
    one = _engine.leading_batch(indptr, lead) if dim > 0 else indptr
    if one is not None:  # one set of offsets: each slice repeated, by index_select
        first, last = (int(one[0]), int(one[-1])) if not torch.compiler.is_compiling() else (0, E)
        counts = (one[1:] - one[:-1]).to(torch.int64)
        seg = torch.repeat_interleave(torch.arange(M, device=src.device), counts, output_size=last - first)
        picked = _engine.select_rows(src, dim, seg)
        if first == 0 and last == E and out is None:
            return picked
        result = src.new_zeros(shape) if out is None else out.clone()
        result.narrow(dim, first, last - first).copy_(picked)
        return result if out is None else out.copy_(result)
    positions = torch.arange(E, device=src.device, dtype=torch.int64)
    # the segment of every output position: searchsorted in each batch's offsets
    seg = torch.searchsorted(indptr.contiguous().to(torch.int64), positions.expand(lead + [E]).contiguous(),
                             right=True) - 1
    inside = (seg >= 0) & (seg < M)
    picked = torch.gather(src, dim, seg.clamp(0, max(M - 1, 0)).view(lead + [E] + [1] * (src.dim() - dim - 1))
                          .expand(shape))
    keep = inside.view(lead + [E] + [1] * (src.dim() - dim - 1))
    if out is None:
        return torch.where(keep, picked, torch.zeros((), dtype=src.dtype, device=src.device))
    return out.copy_(torch.where(keep, picked, out))


def gather_csr(src: torch.Tensor, indptr: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
    """Each ``src`` slice ``i`` repeated over the range ``indptr[i]:indptr[i+1]`` along ``indptr.dim() - 1``."""
    return _gather(src, indptr, out)
