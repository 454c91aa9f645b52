"""ONNX translation of ``scatterx::sddmm``."""

from __future__ import annotations

from onnxscript import opset18 as op

from ._graph import _HALF, _edge_ends, _ints, _widened, translation


@translation
def sddmm(ptr, index, a, b, op_name: str):
    """``scatterx::sddmm``: (E, H, C) for add/mul, (E, H, 1) for dot."""
    if a.dtype in _HALF:  # in float32, rounded once, as eagerly (onnxruntime has no bfloat16 Add or Mul)
        return op.CastLike(sddmm(ptr, index, _widened(a), _widened(b), op_name), a)
    x, y = _edge_ends(ptr, index, a, b)
    if op_name == "add":
        return op.Add(x, y)
    if op_name == "mul":
        return op.Mul(x, y)
    return op.ReduceSum(op.Mul(x, y), _ints([-1]), keepdims=1)
