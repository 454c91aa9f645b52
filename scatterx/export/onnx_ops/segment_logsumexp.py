"""ONNX translation of ``scatterx::segment_logsumexp``."""

from __future__ import annotations

import math
from typing import cast

import onnx_ir as ir
import torch
from onnxscript import FLOAT
from onnxscript import opset18 as op

from ._graph import (
    _HALF,
    _from_front,
    _gather_rows,
    _members,
    _rank,
    _rows_shape,
    _scalar_like,
    _scatter,
    _widened,
    translation,
)


@translation
def segment_logsumexp(src, ptr, perm=None, dim: int = 0, eps: float = 1e-12, flavour: str = "logsumexp"):
    """``scatterx::segment_logsumexp``: ``top + log(sum exp(x - top) + eps)`` per segment, with the op's ``top``
    and NaN rules for each flavour."""
    if src.dtype in _HALF:
        return op.CastLike(segment_logsumexp(_widened(src), ptr, perm, dim, eps, flavour), src)
    rank = _rank(src)
    x, _rows, segment, S = _members(src, ptr, perm, dim)
    shape = _rows_shape(x, S)
    minus_inf = _scalar_like(-math.inf, src)
    candidate = op.Where(op.Equal(x, x), x, minus_inf)
    top = _scatter(op.Expand(minus_inf, shape), segment, candidate, "max", rank)
    if flavour == "log_softmax":  # scatter_max's result: 0 where nothing beats the lowest finite value
        lowest = float(torch.finfo(torch.float64 if src.dtype == ir.DataType.DOUBLE else torch.float32).min)
        top = op.Where(op.Greater(top, _scalar_like(lowest, src)), top, _scalar_like(0.0, src))
    shifted = op.Sub(x, _gather_rows(top, segment))
    terms = op.Exp(shifted)
    if flavour == "logsumexp":  # a NaN difference adds nothing
        terms = op.Where(op.Equal(shifted, shifted), terms, _scalar_like(0.0, src))
    total = _scatter(op.Expand(_scalar_like(0.0, src), shape), segment, terms, "add", rank)
    # eps as a 1-element constant: a scalar value_float of 1e-12 did not survive the exporter's optimisation
    eps_value = op.CastLike(cast(FLOAT, op.Constant(value_floats=[float(eps)])), src)
    out = op.Add(top, op.Log(op.Add(total, eps_value)))
    return _from_front(out, dim, rank)
