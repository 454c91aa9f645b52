"""ONNX export of ``scatterx::segment_softmax`` and the other translations that reduce with ScatterElements (the
arg-reductions, log-sum-exp) on half types."""

import pytest
import torch
from onnx_run import Wrap, assert_outputs, run_onnx, values

import scatterx


@pytest.mark.parametrize(
    "name",
    ["segment_softmax", "scatter_softmax", "scatter_max", "scatter_logsumexp", "scatter_log_softmax"],
)
def test_softmax_and_selections_of_float16(name, tmp_path):
    """The translations that reduce with ScatterElements (softmax, the arg-reductions, logsumexp) take half types
    in float32, as eagerly: onnxruntime reduces no float16 there, and a cast value's rank is not known to the graph
    builder. (Compared at float16's tolerance: onnxruntime's exp is not torch's; scatter_max's argument
    exactly.)"""
    import scatterx.torch_scatter as ts

    calls = {
        "segment_softmax": lambda index, x: scatterx.segment_softmax(x, index, num_segments=4),
        "scatter_softmax": lambda index, x: ts.scatter_softmax(x, index, 0, dim_size=4),
        "scatter_max": lambda index, x: ts.scatter_max(x, index, 0, dim_size=4),
        "scatter_logsumexp": lambda index, x: ts.scatter_logsumexp(x, index, 0, dim_size=4),
        "scatter_log_softmax": lambda index, x: ts.scatter_log_softmax(x, index, 0, dim_size=4),
    }
    index, x = torch.tensor([0, 0, 2, 1, 2, 0]), values((6, 3), torch.float16, 41)
    model = Wrap(calls[name])
    assert_outputs(run_onnx(model, [index, x], tmp_path / "m.onnx", optimize=False), model(index, x))
