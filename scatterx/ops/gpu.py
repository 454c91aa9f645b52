"""Where validated arguments meet the Triton kernels (``kernels/gpu``): the GPU twin of ``run_segments`` and
friends in ``segment.py``.

Everything here is made of torch ops and ``wrap_triton`` launches, with no host sync, so that the custom ops in
``library.py`` can be ``triton_op``s that ``torch.compile`` traces into. That shapes two choices:

- **Validation on the device.** The index is checked by two reductions and ``torch._assert_async``: a bad index
  raises when the device reaches the check (on CUDA a device-side assert, reported at the next sync, like torch's
  own index ops), and the kernels never touch memory outside their buffers whatever the index holds. When the
  caller does not give ``dim_size``, the index must be read on the host anyway (its maximum is the output size):
  ``index_scatter.py`` then checks everything in that one read and raises a plain Python exception before any
  kernel runs (``checked=True`` here).
- **Segments from torch.** CSR offsets of a sorted index are ``searchsorted``; the deterministic unsorted path
  sorts the index with ``torch.sort(stable=True)``, then gathers rows through the permutation.

Strategies (``strategy()``): sorted -> segment kernel; unsorted sum/mean -> atomics, unless
``torch.are_deterministic_algorithms_enabled()``; unsorted prod/amax/amin -> stable sort + segment kernel (exact,
NaN-propagating and deterministic, which atomic max/min are not).
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import torch

from .._reductions import Reduction, accumulator_dtype

#: Tests force one unsorted strategy for sum/mean: "auto", "atomic" or "sort".
UNSORTED_STRATEGY = "auto"

# Forced by tests (``use_triton_on_cpu``): run the Triton kernels on CPU tensors, through Triton's interpreter.
_TRITON_ON_CPU = False


def uses_triton(t: torch.Tensor) -> bool:
    """Whether ``t``'s op runs on the Triton kernels: a CUDA tensor, or any tensor while tests force it."""
    return t.device.type == "cuda" or _TRITON_ON_CPU


class use_triton_on_cpu:
    """Context manager for tests: CPU tensors run on the Triton kernels (needs ``TRITON_INTERPRET=1``)."""

    def __enter__(self):
        global _TRITON_ON_CPU
        from ..kernels.gpu import interpreting

        if not interpreting():
            raise RuntimeError("Triton kernels run on CPU tensors only under TRITON_INTERPRET=1")
        self._before, _TRITON_ON_CPU = _TRITON_ON_CPU, True
        return self

    def __exit__(self, *exc):
        global _TRITON_ON_CPU
        _TRITON_ON_CPU = self._before


def _triton():
    from torch.library import wrap_triton

    from ..kernels.gpu import scatter, segment

    return wrap_triton, segment, scatter


def _tl_dtype(dtype: torch.dtype):
    import triton.language as tl

    return {
        torch.float32: tl.float32, torch.float64: tl.float64, torch.float16: tl.float16,
        torch.bfloat16: tl.bfloat16, torch.int32: tl.int32, torch.int64: tl.int64,
    }[dtype]


def _shape3(src: torch.Tensor, dim: int) -> Tuple[int, int, int]:
    shape = src.shape
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])


def check_index_on_device(index: torch.Tensor, num_segments: int, sorted: bool, name: str = "index") -> None:
    """Raise (asynchronously on CUDA) unless ``index`` is in ``[0, num_segments)`` and, if ``sorted``, non-decreasing."""
    if index.numel() == 0:
        return
    bad = (index < 0) | (index >= num_segments)
    message = f"{name} out of range: every entry must be in [0, dim_size={num_segments})"
    torch._assert_async(~bad.any(), message)
    if sorted and index.numel() > 1:
        torch._assert_async(
            ~(index[1:] < index[:-1]).any(), f"{name} is not sorted (non-decreasing); pass sorted=False"
        )


def strategy(red: Reduction, sorted: bool) -> str:
    """"segments" (sorted index), "atomic" or "sort" (unsorted): see the module docstring."""
    if sorted:
        return "segments"
    if red.name not in ("sum", "mean"):
        return "sort"
    if UNSORTED_STRATEGY != "auto":
        return UNSORTED_STRATEGY
    return "sort" if torch.are_deterministic_algorithms_enabled() else "atomic"


def sorted_ptr(sorted_index: torch.Tensor, num_segments: int) -> torch.Tensor:
    """CSR offsets (int64) of a non-decreasing index whose entries are in ``[0, num_segments)``."""
    boundaries = torch.arange(num_segments + 1, device=sorted_index.device, dtype=sorted_index.dtype)
    return torch.searchsorted(sorted_index, boundaries)


def segments(index: torch.Tensor, num_segments: int, sorted: bool):
    """``(ptr, perm)``: CSR offsets and, for an unsorted index, the stable permutation grouping rows by target."""
    if sorted:
        return sorted_ptr(index, num_segments), None
    ordered, perm = torch.sort(index, stable=True)
    return sorted_ptr(ordered, num_segments), perm


def index_scatter_reduce(
    src: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction, sorted: bool, num_segments: int,
    base: Optional[torch.Tensor], include_self: bool, checked: bool = False,
) -> torch.Tensor:
    """A new tensor: ``src``'s first ``index.numel()`` slices along ``dim`` reduced into ``num_segments`` slices
    (empty ones 0, or ``base``'s with a base, which takes part when ``include_self``). ``checked``: the index was
    validated on the host already."""
    if not checked:
        check_index_on_device(index, num_segments, sorted)
    outer, n, inner = _shape3(src, dim)
    shape = list(src.shape)
    shape[dim] = num_segments
    out = torch.empty(shape, dtype=src.dtype, device=src.device)
    if out.numel() == 0:
        return out
    src = src.contiguous()
    base = None if base is None else base.contiguous()
    how = strategy(red, sorted)
    if how == "atomic":
        return _atomic(src, index, red, base, include_self, out, outer, n, inner, num_segments)
    ptr, perm = segments(index, num_segments, sorted)
    run_segments(src, ptr, perm, index.numel(), red, base, include_self, out, (outer, n, inner))
    return out


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def run_segments(src, ptr, perm, m: int, red: Reduction, base, include_self: bool, out, shape3) -> None:
    """Launch the segment kernel: ``out`` (outer, S, inner) from ``src`` (outer, n, inner), all contiguous; ``m``
    rows take part (sizes the tile from the average segment length without reading ``ptr``)."""
    wrap_triton, segment, _ = _triton()
    outer, n, inner = shape3
    num_segments = ptr.numel() - 1
    acc = accumulator_dtype(src.dtype)
    block_e, block_f = segment.launch_config(m, num_segments, inner)
    grid = (outer * num_segments * _cdiv(inner, block_f),)
    wrap_triton(segment.segment_reduce_kernel)[grid](
        src, ptr if perm is None else perm, ptr, out if base is None else base, out,
        n, num_segments, inner,
        REDUCE=red.code,
        IDENTITY=red.identity(acc),
        ACC=_tl_dtype(acc),
        IS_INT=not src.dtype.is_floating_point,
        GATHER=perm is not None,
        HAS_BASE=base is not None,
        INCLUDE_SELF=bool(include_self) and base is not None,
        BLOCK_E=block_e,
        BLOCK_F=block_f,
    )


def _atomic(src, index, red: Reduction, base, include_self: bool, out, outer, n, inner, num_segments):
    """Unsorted sum/mean with atomics into an accumulator (``out`` itself unless half types accumulate in
    float32), then one elementwise pass for mean, base and empty rows."""
    wrap_triton, _, scatter = _triton()
    acc_dtype = accumulator_dtype(src.dtype)
    identity = red.identity(acc_dtype)
    acc = out if acc_dtype == out.dtype else torch.empty(out.shape, dtype=acc_dtype, device=out.device)
    acc.fill_(identity)
    counts = torch.zeros(num_segments, dtype=torch.int32, device=src.device)
    m = index.numel()
    if m > 0:
        block_e, block_f = scatter.launch_config(inner)
        grid = (outer * _cdiv(m, block_e) * _cdiv(inner, block_f),)
        wrap_triton(scatter.atomic_scatter_kernel)[grid](
            src, index, acc, counts, n, m, num_segments, inner, COUNT=True, BLOCK_E=block_e, BLOCK_F=block_f
        )
    block = 1024
    wrap_triton(scatter.finish_kernel)[(_cdiv(out.numel(), block),)](
        acc, counts, out if base is None else base, out,
        num_segments, inner, out.numel(),
        REDUCE=red.code,
        IS_INT=not src.dtype.is_floating_point,
        HAS_BASE=base is not None,
        INCLUDE_SELF=bool(include_self) and base is not None,
        BLOCK=block,
    )
    return out


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, red: Reduction, dim: int) -> torch.Tensor:
    """``segment_reduce`` on the device: ``ptr`` checked by ``torch._assert_async`` (no host sync)."""
    outer, n, inner = _shape3(src, dim)
    if ptr.numel() > 0:
        torch._assert_async(ptr[0] == 0, "ptr must start at 0")
        torch._assert_async(ptr[-1] == n, f"ptr must end at src.size({dim})={n}")
        if ptr.numel() > 1:
            torch._assert_async(~(ptr[1:] < ptr[:-1]).any(), "ptr must be non-decreasing")
    num_segments = ptr.numel() - 1
    shape = list(src.shape)
    shape[dim] = num_segments
    out = torch.empty(shape, dtype=src.dtype, device=src.device)
    if out.numel() > 0:
        run_segments(src.contiguous(), ptr.to(torch.int64), None, n, red, None, False, out, (outer, n, inner))
    return out


def tie_backward(grad, src, index, result, base, dim: int, sorted: bool, include_self: bool):
    """amax/amin backward (the twin of ``segment.tie_backward``): (grad_src, ties), on the segment kernel's
    segments (a stable sort first for an unsorted index)."""
    wrap_triton, segment, _ = _triton()
    num_segments = result.size(dim)
    outer, n, inner = _shape3(src, dim)
    grad_src = torch.empty(src.shape, dtype=src.dtype, device=src.device)
    grad_src.narrow(dim, index.numel(), n - index.numel()).zero_()  # slices that take no part
    ties = torch.zeros(result.shape, dtype=result.dtype, device=result.device)
    if outer * inner * num_segments == 0 or index.numel() == 0:
        grad_src.zero_()
        return grad_src, ties
    ptr, perm = segments(index, num_segments, sorted)
    block_e, block_f = segment.launch_config(index.numel(), num_segments, inner)
    result = result.contiguous()
    wrap_triton(segment.segment_tie_backward_kernel)[(outer * num_segments * _cdiv(inner, block_f),)](
        src.contiguous(), ptr if perm is None else perm, ptr, result, grad.contiguous(),
        result if base is None else base.contiguous(), grad_src, ties,
        n, num_segments, inner,
        ACC=_tl_dtype(accumulator_dtype(src.dtype)),
        GATHER=perm is not None,
        INCLUDE_SELF=base is not None and bool(include_self),
        BLOCK_E=block_e,
        BLOCK_F=block_f,
    )
    return grad_src, ties


def check_ptr_on_device(ptr: torch.Tensor, length: int) -> None:
    """Raise (asynchronously on CUDA) unless ``ptr`` is CSR offsets from 0 to ``length``, non-decreasing."""
    if ptr.numel() == 0:
        raise ValueError("ptr must have at least one entry (ptr[0] == 0)")
    torch._assert_async(ptr[0] == 0, "ptr must start at 0")
    torch._assert_async(ptr[-1] == length, f"ptr must end at index.numel()={length}")
    if ptr.numel() > 1:
        torch._assert_async(~(ptr[1:] < ptr[:-1]).any(), "ptr must be non-decreasing")


def gather_segment_reduce(src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, red: Reduction, dim: int):
    """``gather_segment_reduce`` on the device (arguments validated by the caller): the segment kernel, gathering
    ``src`` rows through ``index``."""
    outer, n, inner = _shape3(src, dim)
    num_segments = ptr.numel() - 1
    shape = list(src.shape)
    shape[dim] = num_segments
    out = torch.empty(shape, dtype=src.dtype, device=src.device)
    if out.numel() > 0:
        run_segments(src.contiguous(), ptr, index.contiguous(), index.numel(), red, None, False, out, (outer, n, inner))
    return out
