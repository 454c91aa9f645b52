"""The GPU backend: checked arguments in, Triton kernel launches (``kernels/gpu``) out.

The same functions with the same signatures as ``backends/cpu.py``. Everything here is made of torch ops and
``wrap_triton`` launches, with no host sync, so that the ops can be ``triton_op``s that ``torch.compile`` traces
into. That shapes two choices:

- **Validation on the device.** Index and offset values are checked by reductions and ``torch._assert_async``:
  a bad value raises when the device reaches the check (on CUDA a device-side assert, reported at the next sync,
  like torch's own index ops), and every kernel masks its addresses, so nothing outside its buffers is touched
  whatever the index holds. Where the index must be read on the host anyway (no ``dim_size``: its maximum is the
  output size), ``output_size`` checks everything in that one read and raises a plain Python exception.
- **Segments from torch.** CSR offsets of a sorted index are ``searchsorted``; an unsorted index is grouped by
  ``torch.sort(stable=True)``, and rows are gathered through the permutation.

Strategies (``strategy``): sorted -> segment kernel; unsorted -> atomics for the reductions the table marks
``atomic`` (sum, mean), unless ``torch.are_deterministic_algorithms_enabled()``; the others (prod, amax, amin) ->
stable sort + segment kernel (exact, NaN-propagating and deterministic, which atomic max/min are not).

Why this module is long: it is the whole GPU side of the backend interface (``backends/__init__.py`` lists it),
one function per entry, each a thin launch, as ``backends/cpu.py`` is for the CPU.
"""

from __future__ import annotations

from typing import Optional, Tuple

import torch
import triton.language as tl

try:
    from torch.library import wrap_triton
except ImportError:  # torch < 2.6: no triton_op either (ops/_library.py), so a plain launch is what runs

    def wrap_triton(kernel):
        return kernel


from .._reductions import BY_NAME, Reduction, accumulator_dtype
from ..kernels.gpu import arg_reduce as arg_kernels
from ..kernels.gpu import gatv2 as gatv2_kernels
from ..kernels.gpu import logsumexp as logsumexp_kernels
from ..kernels.gpu import scatter as scatter_kernels
from ..kernels.gpu import segment as segment_kernels
from ..kernels.gpu import softmax as softmax_kernels
from ..kernels.gpu import weighted as weighted_kernels
from ._common import explain_bad_index, new_result, segment_of_entries, shape3

NAME = "gpu"

#: Tests force one unsorted strategy for the atomic reductions: "auto", "atomic" or "sort".
UNSORTED_STRATEGY = "auto"

_TL_DTYPE = {
    torch.float32: tl.float32, torch.float64: tl.float64, torch.float16: tl.float16,
    torch.bfloat16: tl.bfloat16, torch.int32: tl.int32, torch.int64: tl.int64,
}


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ------------------------------------------------------------------------------------------ index -> segments
def output_size(index: torch.Tensor, sorted: Optional[bool]) -> Tuple[int, bool]:
    """``(index.max() + 1, validated)``: the index read on the host (a sync the caller chose by not passing
    ``dim_size``), validated in the same read, so the kernels need no device-side check and a bad index raises
    here, before anything runs."""
    stats = [index.min(), index.max()]
    if sorted and index.numel() > 1:
        stats.append((index[1:] < index[:-1]).any().to(index.dtype))
    low, high, *unsorted = torch.stack(stats).tolist()
    if low < 0 or (unsorted and unsorted[0]):
        raise explain_bad_index(index, high + 1, bool(sorted))
    return high + 1, True


def check_index(index: torch.Tensor, size: int, name: str = "index", size_name: str = "size") -> None:
    """Assert on the device (no host sync) that every entry of ``index`` is in ``[0, size)``."""
    _assert_index(index, size, False, name, size_name)


def _assert_index(index, size: int, sorted: bool, name: str = "index", size_name: str = "dim_size") -> None:
    if index.numel() == 0:
        return
    bad = (index < 0) | (index >= size)
    torch._assert_async(~bad.any(), f"{name} out of range: every entry must be in [0, {size_name}={size})")
    if sorted and index.numel() > 1:
        torch._assert_async(~(index[1:] < index[:-1]).any(), f"{name} is not sorted (non-decreasing)")


def check_ptr(ptr: torch.Tensor, length: int, what: str) -> torch.Tensor:
    """Assert on the device that ``ptr`` is CSR offsets from 0 to ``length`` (``what``), non-decreasing."""
    if ptr.numel() == 0:
        raise ValueError("ptr must have at least one entry (ptr[0] == 0)")
    torch._assert_async(ptr[0] == 0, "ptr must start at 0")
    torch._assert_async(ptr[-1] == length, f"ptr must end at {what}={length}")
    if ptr.numel() > 1:
        torch._assert_async(~(ptr[1:] < ptr[:-1]).any(), "ptr must be non-decreasing")
    return ptr.to(torch.int64).contiguous()


def _sorted_ptr(sorted_index: torch.Tensor, num_segments: int) -> torch.Tensor:
    """CSR offsets (int64) of a non-decreasing index whose entries are in ``[0, num_segments)``."""
    boundaries = torch.arange(num_segments + 1, device=sorted_index.device, dtype=sorted_index.dtype)
    return torch.searchsorted(sorted_index, boundaries)


def index_to_ptr(
    index: torch.Tensor, num_segments: int, name: str = "index", size_name: str = "dim_size",
    unsorted_hint: str = "pass sorted=False for an unsorted index",
) -> torch.Tensor:
    """CSR offsets of a non-decreasing index, its values asserted on the device."""
    _assert_index(index, num_segments, True, name, size_name)
    return _sorted_ptr(index.contiguous(), num_segments)


def segments(
    index: torch.Tensor, num_segments: int, sorted: bool, name: str = "index", size_name: str = "dim_size"
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """``(ptr, perm)``: CSR offsets and, for an unsorted index, the stable permutation grouping positions by
    target (else None); the values asserted on the device."""
    _assert_index(index, num_segments, sorted, name, size_name)
    if sorted:
        return _sorted_ptr(index.contiguous(), num_segments), None
    ordered, perm = torch.sort(index, stable=True)
    return _sorted_ptr(ordered, num_segments), perm


def strategy(red: Reduction, sorted: bool) -> str:
    """"segments" (sorted index), "atomic" or "sort" (unsorted): see the module docstring."""
    if sorted:
        return "segments"
    if not red.atomic:
        return "sort"
    if UNSORTED_STRATEGY != "auto":
        return UNSORTED_STRATEGY
    return "sort" if torch.are_deterministic_algorithms_enabled() else "atomic"


# ------------------------------------------------------------------------------------------------ reductions
def index_scatter_reduce(
    src: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction, sorted: Optional[bool], num_segments: int,
    base: Optional[torch.Tensor] = None, out: Optional[torch.Tensor] = None, include_self: bool = True,
    index_checked: bool = False,
) -> torch.Tensor:
    """As ``backends.cpu.index_scatter_reduce``. The result is computed into a new tensor and then copied into
    ``out`` (so ``out`` may share memory with anything). ``index_checked``: ``output_size`` validated it."""
    if out is not None:  # base=out: out's values as the initial ones
        result = index_scatter_reduce(src, index, dim, red, sorted, num_segments, base=out, include_self=include_self,
                                      index_checked=index_checked)
        return out.copy_(result)
    index = index.contiguous()  # the kernels read it as a flat array (the planner's rows may be a strided view)
    if sorted is None:  # internal callers (the planner), which sync anyway: one read picks the path
        sorted = index.numel() < 2 or bool((index[1:] >= index[:-1]).all())
    if not index_checked:
        _assert_index(index, num_segments, sorted)
    outer, n, inner = shape3(src, dim)
    result = new_result(src, dim, num_segments)
    if result.numel() == 0:
        return result
    src = src.contiguous()
    base = None if base is None else base.contiguous()
    if strategy(red, sorted) == "atomic":
        return _atomic(src, index, red, base, include_self, result, outer, n, inner, num_segments)
    if sorted:
        ptr, perm = _sorted_ptr(index.contiguous(), num_segments), None
    else:
        ordered, perm = torch.sort(index, stable=True)
        ptr = _sorted_ptr(ordered, num_segments)
    _launch_segments(src, ptr, perm, index.numel(), red, base, include_self, result, (outer, n, inner))
    return result


def small_index_scatter_reduce(
    src: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction, sorted: bool, num_segments: Optional[int]
) -> Optional[torch.Tensor]:
    """As ``backends.cpu.small_index_scatter_reduce``: always None here. A kernel launch costs the same at any
    size, and checking the index values on the host (the serial path's validation) would be a sync."""
    return None


def _launch_segments(src, ptr, perm, m: int, red: Reduction, base, include_self: bool, out, shape) -> None:
    """Launch the segment kernel: ``out`` (outer, S, inner) from ``src`` (outer, n, inner), all contiguous; ``m``
    rows take part (sizes the tile from the average segment length without reading ``ptr``)."""
    outer, n, inner = shape
    num_segments = ptr.numel() - 1
    acc = accumulator_dtype(src.dtype)
    block_e, block_f = segment_kernels.launch_config(m, num_segments, inner)
    grid = (outer * num_segments * _cdiv(inner, block_f),)
    wrap_triton(segment_kernels.segment_reduce_kernel)[grid](
        src, ptr if perm is None else perm, ptr, out if base is None else base, out,
        n, num_segments, inner,
        REDUCE=red.code,
        IDENTITY=red.identity(acc),
        ACC=_TL_DTYPE[acc],
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
    acc_dtype = accumulator_dtype(src.dtype)
    acc = out if acc_dtype == out.dtype else torch.empty(out.shape, dtype=acc_dtype, device=out.device)
    acc.fill_(red.identity(acc_dtype))
    counts = torch.zeros(num_segments, dtype=torch.int32, device=src.device)
    m = index.numel()
    if m > 0:
        block_e, block_f = scatter_kernels.launch_config(inner)
        grid = (outer * _cdiv(m, block_e) * _cdiv(inner, block_f),)
        wrap_triton(scatter_kernels.atomic_scatter_kernel)[grid](
            src, index, acc, counts, n, m, num_segments, inner, COUNT=True, BLOCK_E=block_e, BLOCK_F=block_f
        )
    block = 1024
    wrap_triton(scatter_kernels.finish_kernel)[(_cdiv(out.numel(), block),)](
        acc, counts, out if base is None else base, out,
        num_segments, inner, out.numel(),
        REDUCE=red.code,
        IS_INT=not src.dtype.is_floating_point,
        HAS_BASE=base is not None,
        INCLUDE_SELF=bool(include_self) and base is not None,
        BLOCK=block,
    )
    return out


def segment_arg_reduce(
    src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int, red: Reduction,
    base: Optional[torch.Tensor], start: float, fill: int, none: int,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """As ``backends.cpu.segment_arg_reduce``: ``(values, arg)``, new tensors."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    values = new_result(src, dim, num_segments)
    arg = torch.empty(values.shape, dtype=torch.int64, device=src.device)
    if values.numel() > 0:
        acc = accumulator_dtype(src.dtype)
        worst = red.identity(acc)  # amax: -inf (or the integer minimum), amin: +inf: never preferred
        block_e, block_f = segment_kernels.launch_config(n if perm is None else perm.numel(), num_segments, inner)
        grid = (outer * num_segments * _cdiv(inner, block_f),)
        wrap_triton(arg_kernels.segment_arg_reduce_kernel)[grid](
            src.contiguous(), ptr if perm is None else perm, ptr, values if base is None else base.contiguous(),
            torch.full((1,), start, dtype=acc, device=src.device), values, arg,
            n, num_segments, inner, none,
            REDUCE=red.code,
            WORST=worst,
            ACC=_TL_DTYPE[acc],
            GATHER=perm is not None,
            HAS_BASE=base is not None,
            FILL=fill,
            BLOCK_E=block_e,
            BLOCK_F=block_f,
        )
    return values, arg


def segment_logsumexp(
    src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int, flavour: int, eps: float
) -> torch.Tensor:
    """As ``backends.cpu.segment_logsumexp``: a new tensor."""
    outer, n, inner = shape3(src, dim)
    num_segments = ptr.numel() - 1
    out = new_result(src, dim, num_segments)
    if out.numel() > 0:
        acc = accumulator_dtype(src.dtype)
        start = float("-inf") if flavour == 0 else torch.finfo(src.dtype).min
        params = torch.tensor([start, eps], dtype=acc, device=src.device)
        block_e, block_f = segment_kernels.launch_config(n if perm is None else perm.numel(), num_segments, inner)
        grid = (outer * num_segments * _cdiv(inner, block_f),)
        wrap_triton(logsumexp_kernels.segment_logsumexp_kernel)[grid](
            src.contiguous(), ptr if perm is None else perm, ptr, params, out, n, num_segments, inner,
            ACC=_TL_DTYPE[acc], GATHER=perm is not None, FLAVOUR=flavour, BLOCK_E=block_e, BLOCK_F=block_f,
        )
    return out


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, dim: int, red: Reduction) -> torch.Tensor:
    """Reduce ``src`` over the CSR segments ``ptr`` (checked by ``check_ptr``) along ``dim``: a new tensor."""
    outer, n, inner = shape3(src, dim)
    out = new_result(src, dim, ptr.numel() - 1)
    if out.numel() > 0:
        _launch_segments(src.contiguous(), ptr, None, n, red, None, False, out, (outer, n, inner))
    return out


def gather_segment_reduce(src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, dim: int, red: Reduction):
    """Segment ``s`` reduces the rows ``index[ptr[s]:ptr[s+1]]`` of ``src`` (both checked): a new tensor."""
    outer, n, inner = shape3(src, dim)
    out = new_result(src, dim, ptr.numel() - 1)
    if out.numel() > 0:
        _launch_segments(src.contiguous(), ptr, index.contiguous(), index.numel(), red, None, False, out,
                      (outer, n, inner))
    return out


def weighted_gather_segment_reduce(
    src: torch.Tensor, ptr: torch.Tensor, index: torch.Tensor, weight: torch.Tensor, red: Reduction
) -> torch.Tensor:
    """As ``backends.cpu.weighted_gather_segment_reduce``: src ``(N, H, C)``, weight ``(E, H)``; ``(S, H, C)``."""
    _, heads, channels = src.shape
    num_segments = ptr.numel() - 1
    out = torch.empty((num_segments, heads, channels), dtype=src.dtype, device=src.device)
    inner = heads * channels
    if out.numel() > 0:
        acc = accumulator_dtype(src.dtype)
        block_e, block_f = segment_kernels.launch_config(index.numel(), num_segments, inner)
        wrap_triton(weighted_kernels.weighted_segment_kernel)[(num_segments * _cdiv(inner, block_f),)](
            src.contiguous(), index.contiguous(), weight.contiguous(), ptr, out,
            num_segments, heads, channels,
            REDUCE=red.code,
            IDENTITY=red.identity(acc),
            ACC=_TL_DTYPE[acc],
            IS_INT=not src.dtype.is_floating_point,
            BLOCK_E=block_e,
            BLOCK_F=block_f,
        )
    return out


_SDDMM_OPS = {"add": 0, "mul": 1, "dot": 2}


def sddmm(ptr: torch.Tensor, index: torch.Tensor, a: torch.Tensor, b: torch.Tensor, op: str) -> torch.Tensor:
    """As ``backends.cpu.sddmm``: ``(E, H, C)``, or ``(E, H, 1)`` for dot."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = torch.empty((edges, heads, 1 if op == "dot" else channels), dtype=a.dtype, device=a.device)
    if out.numel() > 0:
        targets = segment_of_entries(ptr, edges)
        acc = accumulator_dtype(a.dtype)
        width = channels if op == "dot" else heads * channels
        # programs own blocks of edges, not segments: the tile shape only (up to 64 edges x 128 features)
        block_e, block_f = segment_kernels.launch_config(edges, 1, width)
        per_block = heads if op == "dot" else _cdiv(heads * channels, block_f)
        wrap_triton(weighted_kernels.sddmm_kernel)[(_cdiv(edges, block_e) * per_block,)](
            a.contiguous(), b.contiguous(), index.contiguous(), targets, out,
            edges, heads, channels,
            OP=_SDDMM_OPS[op],
            ACC=_TL_DTYPE[acc],
            BLOCK_E=block_e,
            BLOCK_F=block_f,
        )
    return out


def gatv2_logits(ptr, index, a, b, att, slope: float) -> torch.Tensor:
    """As ``backends.cpu.gatv2_logits``: ``(E, H)``."""
    edges = index.numel()
    _, heads, channels = a.shape
    out = torch.empty((edges, heads), dtype=a.dtype, device=a.device)
    if out.numel() > 0:
        targets = segment_of_entries(ptr, edges)
        block_e, block_c = segment_kernels.launch_config(edges, 1, channels)
        wrap_triton(gatv2_kernels.gatv2_logits_kernel)[(_cdiv(edges, block_e) * heads,)](
            a.contiguous(), b.contiguous(), att.contiguous(), index.contiguous(), targets, out,
            edges, heads, channels,
            torch.full((1,), slope, dtype=accumulator_dtype(a.dtype), device=a.device),
            ACC=_TL_DTYPE[accumulator_dtype(a.dtype)],
            BLOCK_E=block_e,
            BLOCK_C=block_c,
        )
    return out


def gatv2_grad(seg, other, att, ptr, index, grad, slope: float, want_att: bool):
    """As ``backends.cpu.gatv2_grad``: ``(grad_seg (S, H, C), grad_att (H, C))``."""
    num_segments, heads, channels = seg.shape
    out = torch.empty(seg.shape, dtype=seg.dtype, device=seg.device)
    acc = accumulator_dtype(seg.dtype)
    ptr = ptr.to(torch.int64).contiguous()
    parts = torch.zeros(seg.shape if want_att else (1, heads, channels), dtype=acc, device=seg.device)
    if out.numel() > 0:
        block_e, block_f = segment_kernels.launch_config(index.numel(), num_segments, heads * channels)
        wrap_triton(gatv2_kernels.gatv2_grad_kernel)[(num_segments * _cdiv(heads * channels, block_f),)](
            seg.contiguous(), other.contiguous(), att.contiguous(), index.contiguous(), ptr, grad.contiguous(),
            out, parts,
            heads, channels,
            torch.full((1,), slope, dtype=acc, device=seg.device),
            WANT_ATT=bool(want_att),
            ACC=_TL_DTYPE[acc],
            BLOCK_E=block_e,
            BLOCK_F=block_f,
        )
    return out, parts.sum(0).to(seg.dtype)


def tie_backward(grad, src, index, result, base, dim: int, sorted: bool, count_base: bool):
    """As ``backends.cpu.tie_backward``: ``(grad_src, ties)`` on the forward's segments."""
    num_segments = result.size(dim)
    outer, n, inner = shape3(src, dim)
    grad_src = torch.empty(src.shape, dtype=src.dtype, device=src.device)
    grad_src.narrow(dim, index.numel(), n - index.numel()).zero_()  # slices that take no part
    ties = torch.zeros(result.shape, dtype=result.dtype, device=result.device)
    if outer * inner * num_segments == 0 or index.numel() == 0:
        return grad_src.zero_(), ties
    ptr, perm = segments(index, num_segments, sorted)
    block_e, block_f = segment_kernels.launch_config(index.numel(), num_segments, inner)
    result = result.contiguous()
    wrap_triton(segment_kernels.segment_tie_backward_kernel)[(outer * num_segments * _cdiv(inner, block_f),)](
        src.contiguous(), ptr if perm is None else perm, ptr, result, grad.contiguous(),
        result if base is None else base.contiguous(), grad_src, ties,
        n, num_segments, inner,
        ACC=_TL_DTYPE[accumulator_dtype(src.dtype)],
        GATHER=perm is not None,
        INCLUDE_SELF=base is not None and bool(count_base),
        BLOCK_E=block_e,
        BLOCK_F=block_f,
    )
    return grad_src, ties


def csr_transpose(ptr: torch.Tensor, index: torch.Tensor, num_rows: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """As ``backends.cpu.csr_transpose`` (``index`` asserted against ``num_rows`` on the device)."""
    segment_of = segment_of_entries(ptr, index.numel())
    ptr_t, perm = segments(index, num_rows, sorted=False, size_name="num_rows")
    return ptr_t.to(torch.int64), segment_of[perm.long()]


def element_scatter(
    src: torch.Tensor, index: torch.Tensor, base: torch.Tensor, dim: Optional[int], reduce: str, include_self: bool
) -> torch.Tensor:
    """As ``backends.cpu.element_scatter``. There is no element kernel on the GPU: the index becomes flat offsets
    (each coordinate asserted in range on the device), a 1-D index over single elements that the segment path
    takes (assign: the last position per target by amax, then one collision-free copy)."""
    rows = _element_offsets(index, base.shape, dim)
    n, size = rows.numel(), base.numel()
    flat_src, flat_base = src.reshape(-1), base.reshape(-1)
    if reduce == "assign":
        positions = torch.arange(n, dtype=torch.int64, device=src.device)
        initial = torch.full((size,), -1, dtype=torch.int64, device=src.device)
        last = index_scatter_reduce(positions, rows, 0, BY_NAME["amax"], None, size, base=initial)
        targets = torch.nonzero(last >= 0).view(-1)
        result = flat_base.index_copy(0, targets, flat_src.index_select(0, last[targets]))
    else:
        result = index_scatter_reduce(flat_src, rows, 0, BY_NAME[reduce], None, size, base=flat_base,
                                      include_self=include_self)
    return result.view(base.shape)


def element_gather(data: torch.Tensor, index: torch.Tensor, dim: Optional[int]) -> torch.Tensor:
    """As ``backends.cpu.element_gather``: flat offsets (asserted on the device), then ``index_select``."""
    shape = index.shape if dim is not None else index.shape[:-1]
    return data.reshape(-1).index_select(0, _element_offsets(index, data.shape, dim)).view(shape)


def _element_offsets(index: torch.Tensor, shape, dim: Optional[int]) -> torch.Tensor:
    """Flat int64 offsets into a C-contiguous tensor of ``shape`` for an element-plan index (along ``dim``, or
    coordinate vectors), each coordinate asserted in range on the device (no host sync)."""
    strides = [torch.Size(shape[d + 1 :]).numel() for d in range(len(shape))]
    if dim is None:
        sizes = torch.tensor(list(shape), dtype=index.dtype, device=index.device)
        torch._assert_async(~((index < 0) | (index >= sizes)).any(), "index out of range for the data's shape")
        return (index.to(torch.int64) * torch.tensor(strides, device=index.device)).sum(-1).reshape(-1)
    _assert_index(index, shape[dim], False, "index", f"size of dim {dim}")
    rows = index.to(torch.int64) * strides[dim]  # a new tensor: the carried coordinates are added in place
    for d in (d for d in range(len(shape)) if d != dim and index.size(d) > 1):
        rows.add_(torch.arange(index.size(d), device=index.device).view([-1] + [1] * (len(shape) - 1 - d)),
                  alpha=strides[d])
    return rows.reshape(-1)


def segment_softmax(src: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int) -> torch.Tensor:
    """As ``backends.cpu.segment_softmax``."""
    outer, n, inner = shape3(src, dim)
    out = torch.empty(src.shape, dtype=src.dtype, device=src.device)
    num_segments = ptr.numel() - 1
    if out.numel() > 0 and num_segments > 0:
        block_e, block_f = segment_kernels.launch_config(n, num_segments, inner)
        wrap_triton(softmax_kernels.segment_softmax_kernel)[(outer * num_segments * _cdiv(inner, block_f),)](
            src.contiguous(), ptr if perm is None else perm.contiguous(), ptr, out, n, num_segments, inner,
            ACC=_TL_DTYPE[accumulator_dtype(src.dtype)], GATHER=perm is not None, BLOCK_E=block_e, BLOCK_F=block_f,
        )
    return out


def segment_softmax_backward(
    out: torch.Tensor, grad: torch.Tensor, ptr: torch.Tensor, perm: Optional[torch.Tensor], dim: int
) -> torch.Tensor:
    """As ``backends.cpu.segment_softmax_backward``."""
    outer, n, inner = shape3(out, dim)
    grad_src = torch.empty(out.shape, dtype=out.dtype, device=out.device)
    num_segments = ptr.numel() - 1
    if grad_src.numel() > 0 and num_segments > 0:
        block_e, block_f = segment_kernels.launch_config(n, num_segments, inner)
        wrap_triton(softmax_kernels.segment_softmax_backward_kernel)[(outer * num_segments * _cdiv(inner, block_f),)](
            out.contiguous(), grad.contiguous(), ptr if perm is None else perm.contiguous(), ptr, grad_src,
            n, num_segments, inner,
            ACC=_TL_DTYPE[accumulator_dtype(out.dtype)], GATHER=perm is not None, BLOCK_E=block_e, BLOCK_F=block_f,
        )
    return grad_src
