"""ONNX translation of ``scatterx::segment_logsumexp``."""

from __future__ import annotations

import math
from typing import cast

import numpy as np
import onnx_ir as ir
from onnx import numpy_helper
from onnxscript import FLOAT
from onnxscript import opset18 as op

from ._graph import (
    _HALF,
    _finite_extreme,
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
        return op.CastLike(_logsumexp(_widened(src), ptr, perm, dim, eps, flavour, src.dtype), src)
    return _logsumexp(src, ptr, perm, dim, eps, flavour, src.dtype)


def _logsumexp(src, ptr, perm, dim: int, eps: float, flavour: str, dtype):
    """The translation on ``src`` (a half type's widened to float32); ``dtype``: the op's own value type, whose
    lowest finite value the log-softmax flavour's ``top`` is compared with."""
    rank = _rank(src)
    x, _rows, segment, S = _members(src, ptr, perm, dim)
    shape = _rows_shape(x, S)
    minus_inf = _scalar_like(-math.inf, src)
    candidate = op.Where(op.Equal(x, x), x, minus_inf)
    top = _scatter(op.Expand(minus_inf, shape), segment, candidate, "max", rank)
    if flavour == "log_softmax":  # scatter_max's result: 0 where nothing beats the lowest finite value
        lowest = _finite_extreme(dtype, largest=False)
        top = op.Where(op.Greater(top, _scalar_like(lowest, src)), top, _scalar_like(0.0, src))
    shifted = op.Sub(x, _gather_rows(top, segment))
    terms = op.Exp(shifted)
    if flavour == "logsumexp":  # a NaN difference adds nothing
        terms = op.Where(op.Equal(shifted, shifted), terms, _scalar_like(0.0, src))
    total = _scatter(op.Expand(_scalar_like(0.0, src), shape), segment, terms, "add", rank)
    # eps as a 1-element constant: a scalar value_float of 1e-12 did not survive the exporter's optimisation
    if src.dtype == ir.DataType.DOUBLE:  # (exact: a float32 eps is off by ~4e-9 in a float64 result)
        eps_value = op.Constant(value=numpy_helper.from_array(np.array([float(eps)], dtype=np.float64)))
    else:
        eps_value = op.CastLike(cast(FLOAT, op.Constant(value_floats=[float(eps)])), src)
    out = op.Add(top, op.Log(op.Add(total, eps_value)))
    return _from_front(out, dim, rank)
