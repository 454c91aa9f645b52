"""``scatterx bench-gnn --onnx``: the SAGE model exported to ONNX with the switch on (``scatterx.export``), its
inference timed in onnxruntime against scatterx's eager forward on the same graph (a row, no goal)."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..timing import median_seconds


@dataclass
class OnnxRow:
    onnxruntime_ms: float
    eager_ms: float
    max_abs_diff: float


def _median_ms(fn, repeats: int = 5) -> float:
    return median_seconds(fn, 1, repeats) * 1e3


def onnx_inference(model, x, edge_index, threads: int) -> OnnxRow:
    """``model`` (in eval mode) on ``(x, edge_index)``: exported, then timed in onnxruntime and eagerly."""
    import onnxruntime as ort
    import torch

    import scatterx.pyg as sxpyg
    from scatterx.export import to_onnx

    with torch.no_grad(), sxpyg.enabled():
        eager = model(x, edge_index)
        eager_ms = _median_ms(lambda: model(x, edge_index))
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "sage.onnx"
            to_onnx(model, (x, edge_index), path)
            options = ort.SessionOptions()
            options.intra_op_num_threads = threads
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    feeds = {i.name: t.numpy() for i, t in zip(session.get_inputs(), (x, edge_index))}
    (out,) = session.run(None, feeds)
    onnx_ms = _median_ms(lambda: session.run(None, feeds))
    diff = float((torch.from_numpy(out) - eager).abs().max())
    return OnnxRow(onnx_ms, eager_ms, diff)
