"""The graph arrays the samplers read, checked once per tensor.

A sampler is called once per mini-batch on the same graph: checking ``colptr`` and ``row`` (a pass over every
edge) or converting them to int64 on every call would cost more than the sampling itself on a large graph. So a
tensor's check (and its int64 / float64 copy, where one is needed) is kept while the tensor lives and is not
changed in place (torch's version counter), as the PyG switch keeps its adjacencies. A write that bypasses the
counter (through ``.numpy()`` or ``.data``) is not seen here; the kernels still never read out of bounds: they
guard their offsets and neighbours, and a graph found out of range is checked again (``sampler._rechecked``).
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import numpy as np
import torch
from torch import Tensor

from .._memo import TensorMemo
from ..ops._checks import check_tensor

INDEX_DTYPES = (torch.int32, torch.int64)

#: (tensor, what) -> result; a heterogeneous graph keeps 2-4 entries per edge type: room for large ones
_KEPT = TensorMemo("pyg_lib.graph_checks", 256)


def once(t: Tensor, what: str, compute: Callable[[Tensor], Any]) -> Any:
    """``compute(t)``, remembered while ``t`` lives unchanged (``what`` names the computation)."""
    return _KEPT.once(t, what, compute)


def clear() -> None:
    """Forget every kept check and copy."""
    _KEPT.clear()


def as_numpy(t: Tensor, dtype: torch.dtype) -> np.ndarray:
    """A C-contiguous NumPy array of ``t`` in ``dtype``: a view when it already is one, else a kept copy."""
    if t.dtype == dtype and t.is_contiguous():
        return t.detach().numpy()
    return once(t, f"as {dtype}", lambda x: x.detach().to(dtype).contiguous().numpy())


def check_array(t: Any, name: str, dtypes=INDEX_DTYPES, dim: int = 1) -> Tensor:
    """``t`` must be a CPU tensor of one of ``dtypes`` with ``dim`` dims (TypeError / ValueError otherwise): an
    array a sampler reads."""
    check_tensor(t, f"'{name}'", what="a tensor")
    if dtypes is not None and t.dtype not in dtypes:
        raise TypeError(f"'{name}' must be of dtype {' or '.join(str(d) for d in dtypes)}, got {t.dtype}")
    if t.dim() != dim:
        raise ValueError(f"'{name}' must be {dim}-D, got shape {tuple(t.shape)}")
    if t.device.type != "cpu":
        raise ValueError(f"'{name}' must be on the CPU (pyg-lib samples on the CPU), got {t.device}")
    return t


def check_ptr(ptr: Tensor, entries: int, name: str) -> None:
    """``ptr`` starts at 0, never decreases and ends at ``entries`` (checked once per tensor)."""

    def compute(p: Tensor) -> Optional[str]:
        if p.numel() == 0:
            return f"'{name}' must hold at least one entry (0), got an empty tensor"
        if int(p[0]) != 0:
            return f"'{name}' must start at 0, got {int(p[0])}"
        if p.numel() > 1 and bool((p[1:] < p[:-1]).any()):
            at = int((p[1:] < p[:-1]).nonzero()[0, 0]) + 1
            return f"'{name}' must be non-decreasing, but {name}[{at}] = {int(p[at])} < {int(p[at - 1])} before it"
        return None

    problem = once(ptr, "ptr", compute)
    if problem is not None:
        raise ValueError(problem)
    if int(ptr[-1]) != entries:
        raise ValueError(f"'{name}' must end at the number of edges {entries}, got {int(ptr[-1])}")


def check_range(t: Tensor, bound: Optional[int], name: str, what: str, keep: bool = True) -> None:
    """Every entry of ``t`` in ``[0, bound)`` (``bound`` None: only >= 0); with ``keep``, its extremes are
    kept for the next call (a graph's arrays; not a batch's seeds)."""

    def compute(x: Tensor) -> Tuple[int, int]:
        if x.numel() == 0:
            return 0, -1
        return int(x.min()), int(x.max())

    low, high = once(t, "extremes", compute) if keep else compute(t)
    if keep and (low < 0 or (bound is not None and high >= bound)):
        # a failed check is not kept, and is made again on the tensor as it is now: the kept extremes may be
        # from before a write torch's version counter did not see (a NumPy view's)
        _KEPT.forget(t, "extremes")
        low, high = compute(t)
    if low < 0:
        at = int((t < 0).nonzero()[0, 0])
        raise IndexError(f"'{name}' holds a negative entry: {name}[{at}] = {int(t[at])}")
    if bound is not None and high >= bound:
        at = int((t >= bound).nonzero()[0, 0])
        raise IndexError(f"'{name}[{at}]' = {int(t[at])} is out of range for {bound} {what}")
