"""ONNX export of ``scatterx::gatv2_logits`` in float64: the negative slope is not rounded to float32 (LeakyRelu's
``alpha`` is a float32 attribute). Its float32 case is in ``test_onnx_export.py::test_message_passing_ops``."""

import torch
from onnx_run import PTR, Wrap, repeated_index, run_onnx, values

import scatterx


def test_float64_keeps_the_slope_unrounded(tmp_path):
    a, b = values((6, 2, 3), torch.float64, 30), values((5, 2, 3), torch.float64, 31)
    att = values((2, 3), torch.float64, 32)
    index = repeated_index(7, 8, 33)  # sources 0..5

    def logits(ptr, index, a, b, att):
        return scatterx.gatv2_logits(ptr, index, a, b, att, 0.3)  # 0.3 is not a float32

    inputs = [PTR, index, a, b, att]
    (got,) = run_onnx(Wrap(logits), inputs, tmp_path / "m.onnx", optimize=False)
    want = logits(*inputs)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, want, atol=1e-13, rtol=1e-13)
