"""What both backends share: the 3-D view every kernel takes, memory overlap, the words of an index error (each
backend finds a bad index in its own way; the message is the same), the segment of each CSR entry, and the blocks
that force a route or change a threshold. New outputs are made in ``_outputs.py``."""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import enum
import math
from typing import Iterator, Optional, Tuple, Type

import torch


@contextlib.contextmanager
def tuned_block(var: contextvars.ContextVar, base, changes: dict, what: str) -> Iterator:
    """Within the block, ``var`` holds the thresholds ``base`` (a frozen dataclass) with ``changes``; a TypeError
    naming the valid fields for a field it lacks, or naming the field given a value that is not an int where it
    holds one (else the comparison that reads it fails inside a kernel's route choice, naming nothing). What
    ``tuned`` of the CPU and GPU routes and of the PyG switch share."""
    fields = [f.name for f in dataclasses.fields(base)]
    unknown = sorted(set(changes) - set(fields))
    if unknown:
        raise TypeError(f"unknown {what} {unknown}; {type(base).__name__} has: {', '.join(fields)}")
    for name, value in changes.items():
        if isinstance(getattr(base, name), int) and (not isinstance(value, int) or isinstance(value, bool)):
            raise TypeError(f"{type(base).__name__}.{name} must be an int, got {type(value).__name__}")
    token = var.set(dataclasses.replace(base, **changes))
    try:
        yield var.get()
    finally:
        var.reset(token)


def shape3(t: torch.Tensor, dim: int) -> Tuple[int, int, int]:
    """``(outer, n, inner)``: ``t`` seen as 3-D with ``dim`` in the middle (what every kernel takes)."""
    shape = t.shape
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])


def is_tie(values: torch.Tensor, result: torch.Tensor) -> torch.Tensor:
    """Where ``values`` tie an amax/amin ``result`` (broadcast): equal, or both NaN -- the tie kernels' rule, for the
    gradient's formulas written in torch ops."""
    same = values == result
    if values.is_floating_point():
        same = same | (values.isnan() & result.isnan())
    return same


def _span(t: torch.Tensor) -> Tuple[int, int]:
    """[first byte, last byte + 1) that ``t``'s elements occupy."""
    extent = sum((size - 1) * abs(stride) for size, stride in zip(t.shape, t.stride()))
    start = t.data_ptr()
    return start, start + (extent + 1) * t.element_size()


def overlaps(a: Optional[torch.Tensor], b: Optional[torch.Tensor]) -> bool:
    """Whether the memory of ``a`` and ``b`` may intersect -- judged by address ranges, so views of one buffer
    through different storages (two ``torch.from_numpy`` of one array) count too. Conservative: two interleaved
    views that share no element also count (the caller then works on a copy, which is merely slower)."""
    if a is None or b is None or a.numel() == 0 or b.numel() == 0 or a.device != b.device:
        return False
    a0, a1 = _span(a)
    b0, b1 = _span(b)
    return a0 < b1 and b0 < a1


def explain_bad_index(
    index: torch.Tensor,
    num_segments: int,
    sorted: bool,
    name: str = "index",
    size_name: str = "dim_size",
    unsorted_hint: str = "pass sorted=False for an unsorted index",
) -> Exception:
    """The exception for an index that a kernel rejected (the failure path only, so plain torch ops are fine).

    ``name`` / ``size_name``: the caller's names for the index and for the size it must stay below;
    ``unsorted_hint``: what to do about an unsorted index (when ``sorted``)."""
    index = index.reshape(-1)
    if sorted:
        decreases = torch.nonzero(index[1:] < index[:-1])
        if decreases.numel():
            i = int(decreases[0]) + 1
            return ValueError(
                f"{name} is not sorted: {name}[{i}]={int(index[i])} < {name}[{i - 1}]={int(index[i - 1])}"
                + (f"; {unsorted_hint}" if unsorted_hint else "")
            )
    wrong = torch.nonzero((index < 0) | (index >= num_segments))
    if not wrong.numel():  # cannot happen: the kernel and this check disagree
        raise AssertionError(f"{name} was rejected but no bad entry was found")
    i = int(wrong[0])
    value = int(index[i])
    if value < 0:
        return IndexError(f"{name}[{i}]={value} is negative; indices must be in [0, {num_segments})")
    return IndexError(f"{name}[{i}]={value} is out of range for {size_name}={num_segments} (must be < {num_segments})")


def segment_of_entries(ptr: torch.Tensor, entries: int) -> torch.Tensor:
    """The segment of each of the ``entries`` positions of the CSR offsets ``ptr`` (int64; no host sync:
    ``entries`` is known to the caller as ``index.numel()``)."""
    return torch.repeat_interleave(
        torch.arange(ptr.numel() - 1, device=ptr.device), ptr.diff().to(torch.int64), output_size=entries
    )


@contextlib.contextmanager
def forced_route(variable: contextvars.ContextVar, routes: Type[enum.Enum], route, side: str) -> Iterator:
    """Set ``variable`` to ``routes(route)`` within the block (each backend's ``routes.force``); an unknown route
    raises ``ValueError`` naming the ``side``'s routes."""
    try:
        route = routes(route)
    except ValueError:
        raise ValueError(
            f"unknown {side} route {route!r}; the routes are: {', '.join(r.value for r in routes)}"
        ) from None
    token = variable.set(route)
    try:
        yield route
    finally:
        variable.reset(token)
