"""ONNX translation of ``scatterx::gatv2_logits``."""

from __future__ import annotations

from onnxscript import opset18 as op

from ._graph import _edge_ends, _ints, translation


@translation
def gatv2_logits(ptr, index, a, b, att, negative_slope: float):
    """``scatterx::gatv2_logits``: (E, H)."""
    x, y = _edge_ends(ptr, index, a, b)
    activated = op.LeakyRelu(op.Add(x, y), alpha=float(negative_slope))
    return op.ReduceSum(op.Mul(activated, att), _ints([-1]), keepdims=0)
