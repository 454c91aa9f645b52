"""What the references share: the reduction names restated by hand (never read from the package's table),
the wide type values are reduced in, and a plain reduction of rows."""

from __future__ import annotations

import torch

_NAMES = {
    "sum": "sum",
    "add": "sum",
    "mean": "mean",
    "prod": "prod",
    "mul": "prod",
    "amax": "amax",
    "max": "amax",
    "amin": "amin",
    "min": "amin",
}


def _name(reduce: str) -> str:
    if reduce not in _NAMES:
        raise ValueError(f"unknown reduce {reduce!r}")
    return _NAMES[reduce]


def _wide(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype.is_floating_point else torch.int64


def _reduce_rows(rows: torch.Tensor, name: str, dtype: torch.dtype) -> torch.Tensor:
    """Reduce ``rows`` (already widened) over dim 0."""
    if name == "sum":
        return rows.sum(0)
    if name == "prod":
        return rows.prod(0)
    if name == "amax":
        return rows.amax(0)
    if name == "amin":
        return rows.amin(0)
    if name == "mean":
        if dtype.is_floating_point:
            return rows.sum(0) / rows.size(0)
        # the sum wraps in the values' own type before the divide, as torch's integer mean does
        return torch.div(rows.sum(0).to(dtype).to(rows.dtype), rows.size(0), rounding_mode="floor")
    raise AssertionError(name)
