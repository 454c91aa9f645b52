"""What the ONNX export tests share (``tests/export/test_onnx_*.py``): export a model with scatterx's table, run it
in onnxruntime, compare with the eager result; small inputs with repeated indices and empty rows. Importing it
skips the importing test file where onnxscript or onnxruntime is missing."""

import pytest
import torch

onnxscript = pytest.importorskip("onnxscript", reason="onnxscript is not installed: scatterx.export needs it")
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed: nothing to run the export in")

from scatterx.export import to_onnx  # noqa: E402

REDUCTIONS = ["sum", "mean", "prod", "amax", "amin"]
nan, inf = float("nan"), float("inf")
DTYPES = [torch.float32, torch.float64, torch.int64]
TOLERANCE = {
    torch.float32: (1e-5, 1e-5),
    torch.float64: (1e-12, 1e-12),
    torch.float16: (1e-2, 1e-2),
    torch.int64: (0, 0),
}


class Wrap(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *inputs):
        return self.fn(*inputs)


def optimized(dtype):
    """Whether a grid's export runs onnxscript's optimizer, as users' exports do: on the grid's float32 case only.
    The optimizer is most of an export's time (its pattern rewriter, ~60%); the translations' arithmetic is checked
    on every dtype, and what the optimizer makes of each op on one."""
    return dtype == torch.float32


def run_onnx(model, inputs, path, **kw):
    """Export ``model`` on ``inputs`` with scatterx's table, run it in onnxruntime: the list of outputs."""
    to_onnx(model, tuple(inputs), path, **kw)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    assert len(names) == len(inputs)
    return [torch.from_numpy(o) for o in session.run(None, {n: x.numpy() for n, x in zip(names, inputs)})]


def assert_outputs(got, want):
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        atol, rtol = TOLERANCE.get(w.dtype, (1e-5, 1e-5))
        torch.testing.assert_close(g.to(w.dtype), w.detach(), atol=atol, rtol=rtol)


def values(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, dtype=torch.float64) * 4 - 2).to(dtype)
    return torch.randint(-5, 6, shape, generator=g).to(dtype)


def repeated_index(n, rows, seed):
    """``n`` entries into ``rows`` targets, repeated, the last two targets never named (empty rows)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, max(rows - 2, 1), (n,), generator=g)


PTR = torch.tensor([0, 2, 2, 5, 5, 7])  # empty segments 1 and 3
