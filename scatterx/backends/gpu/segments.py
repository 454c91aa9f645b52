"""Index -> segments on the GPU, with no host sync: value checks are ``torch._assert_async`` (a bad value raises when
the device reaches the check, as torch's own index ops do), CSR offsets of a sorted index and the segment of each
row of CSR offsets are one search kernel each (``kernels/gpu/segments.py``), and an unsorted index is grouped by
``torch.sort(stable=True)``. Where the index must be read on the host anyway (no
``dim_size``: its maximum is the output size), ``output_size`` checks everything in that one read and raises a
plain Python exception."""

from __future__ import annotations

from typing import Optional, Tuple

import torch

from ...kernels.gpu import segments as segment_kernels
from .._common import explain_bad_index
from ._launch import FLAG, INT, Variant, cdiv, launch

#: what the op layer calls as ``backend_for(src).<name>`` (the package exports it: ``backends/_interface.py``)
__all__ = ["check_index", "check_ptr", "index_to_ptr", "output_size", "segments"]


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
    assert_index(index, size, False, name, size_name)


def assert_index(index, size: int, sorted: bool, name: str = "index", size_name: str = "dim_size") -> None:
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


def sorted_ptr(sorted_index: torch.Tensor, num_segments: int) -> torch.Tensor:
    """CSR offsets (int64) of a non-decreasing int64 index whose entries are in ``[0, num_segments)``."""
    ptr = torch.empty(num_segments + 1, dtype=torch.int64, device=sorted_index.device)
    _search(sorted_index, 0, sorted_index.numel(), ptr, right=False)
    return ptr


def rows_to_segments(ptr: torch.Tensor, rows: int) -> torch.Tensor:
    """The segment (int64) of each of the first ``rows`` rows of the CSR offsets ``ptr`` (int64): the sorted index
    that ``ptr`` describes."""
    index = torch.empty(rows, dtype=torch.int64, device=ptr.device)
    _search(ptr, 1, ptr.numel() - 1, index, right=True)
    return index


SEARCH_BLOCK = 256


def _search(values: torch.Tensor, start: int, length: int, out: torch.Tensor, right: bool) -> None:
    if out.numel() > 0:
        launch(
            segment_kernels.searchsorted_kernel,
            (cdiv(out.numel(), SEARCH_BLOCK),),
            dict(
                values=values,
                length=length,
                start=start,
                out=out,
                queries=out.numel(),
                steps=max(length, 1).bit_length(),
                right=right,
            ),
            BLOCK=SEARCH_BLOCK,
        )


def index_to_ptr(
    index: torch.Tensor,
    num_segments: int,
    name: str = "index",
    size_name: str = "dim_size",
    unsorted_hint: str = "pass sorted=False for an unsorted index",
) -> torch.Tensor:
    """CSR offsets of a non-decreasing index, its values asserted on the device."""
    assert_index(index, num_segments, True, name, size_name)
    return sorted_ptr(index.to(torch.int64).contiguous(), num_segments)


def segments(
    index: torch.Tensor, num_segments: int, sorted: bool, name: str = "index", size_name: str = "dim_size"
) -> Tuple[torch.Tensor, Optional[torch.Tensor]]:
    """``(ptr, perm)``: CSR offsets and, for an unsorted index, the stable permutation grouping positions by
    target (else None); the values asserted on the device."""
    assert_index(index, num_segments, sorted, name, size_name)
    index = index.to(torch.int64)
    if sorted:
        return sorted_ptr(index.contiguous(), num_segments), None
    ordered, perm = torch.sort(index, stable=True)
    return sorted_ptr(ordered, num_segments), perm


def variants():
    """The search kernel's one variant."""
    params = dict(values="*i64", length=INT, start=INT, out="*i64", queries=INT, steps=INT, right=FLAG)
    yield Variant.of(segment_kernels.searchsorted_kernel, params, dict(BLOCK=SEARCH_BLOCK))
