"""ONNX translation of ``scatterx::gatv2_logits``."""

from __future__ import annotations

import onnx_ir as ir
from onnxscript import opset18 as op

from ._graph import _HALF, _edge_ends, _ints, _scalar_like, _widened, translation


@translation
def gatv2_logits(ptr, index, a, b, att, negative_slope: float):
    """``scatterx::gatv2_logits``: (E, H)."""
    if a.dtype in _HALF:  # in float32, rounded once, as eagerly (onnxruntime has no bfloat16 Add or Mul)
        return op.CastLike(gatv2_logits(ptr, index, _widened(a), _widened(b), _widened(att), negative_slope), a)
    x, y = _edge_ends(ptr, index, a, b)
    z = op.Add(x, y)
    if a.dtype == ir.DataType.DOUBLE:  # LeakyRelu's alpha is a float32 attribute: float64 takes the slope unrounded
        activated = op.Where(op.Greater(z, _scalar_like(0.0, a)), z, op.Mul(z, _scalar_like(negative_slope, a)))
    else:
        activated = op.LeakyRelu(z, alpha=float(negative_slope))
    return op.ReduceSum(op.Mul(activated, att), _ints([-1]), keepdims=0)
