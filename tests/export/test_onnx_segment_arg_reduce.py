"""ONNX export of ``scatterx::segment_arg_reduce`` and ``scatterx::segment_logsumexp`` (the torch_scatter drop-in's
selections and log-sum-exp): ties, start values in the op's own type, fills, a gathered order."""

import pytest
import torch
from onnx_run import Wrap, inf, optimized, run_onnx, values


def test_start_values_in_the_op_s_own_type(tmp_path):
    """The finite starts of the arg-reductions and the log-softmax's lowest value are the op's dtype's, exactly:
    int64's largest (2^63 - 1, not a float rounded past it), float64's (not a float32 inf), float16's (not float32's,
    which the half type's float32 arithmetic would otherwise take); and float64's eps is a float64."""
    from scatterx.ops import segment_arg_reduce, segment_logsumexp

    def every(i64, f64, f16, ptr):
        return (
            *segment_arg_reduce(i64, ptr, "amin", finite_start=True),
            *segment_arg_reduce(f64, ptr, "amax", finite_start=True, fill="none"),
            *segment_arg_reduce(f16, ptr, "amax", finite_start=True),
            segment_logsumexp(f16, ptr, flavour="log_softmax"),
            segment_logsumexp(f64, ptr, flavour="log_softmax"),
        )

    ptr = torch.tensor([0, 2, 3, 3])  # the last segment empty
    inputs = (
        torch.tensor([5, 1, 3]),
        torch.tensor([-inf, -inf, 2.0], dtype=torch.float64),  # nothing beats the start in segment 0
        torch.tensor([-65504.0, -inf, 1.0], dtype=torch.float16),  # float16's lowest does not beat its own start
        ptr,
    )
    got = run_onnx(Wrap(every), inputs, tmp_path / "m.onnx", optimize=False)
    for g, w in zip(got, every(*inputs)):
        assert g.dtype == w.dtype and torch.equal(g, w), (g, w)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_segment_arg_reduce_and_logsumexp(dtype, tmp_path):
    """The selection (ties, start values, fills, a gathered order) and the log-sum-exp normalisers, in
    onnxruntime against eager."""
    from scatterx.ops import segment_arg_reduce, segment_logsumexp

    src = values((9, 3), dtype, 5).round() if dtype.is_floating_point else values((9, 3), dtype, 5)
    if dtype.is_floating_point:
        src[1, 0] = float("nan")
        src[4, 1] = float("-inf")
    ptr = torch.tensor([0, 3, 3, 7, 9])
    perm = torch.tensor([8, 0, 3, 3, 1, 2, 6, 5, 4])
    base = values((4, 3), dtype, 6)

    def every(x, p, q, b):
        out = [
            *segment_arg_reduce(x, p, "amax", finite_start=True),
            *segment_arg_reduce(x, p, "amin", fill="empty", perm=q),
            *segment_arg_reduce(x, p, "amax", base=b, fill="none"),
        ]
        if x.dtype.is_floating_point:
            out += [
                segment_logsumexp(x, p, perm=q),
                segment_logsumexp(x, p, flavour="log_softmax"),
                segment_logsumexp(x.t(), p, 1),
            ]
        return tuple(out)

    inputs = [src, ptr, perm, base]
    got = run_onnx(Wrap(every), inputs, tmp_path / "m.onnx", optimize=optimized(dtype))
    want = every(*inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g.to(w.dtype), w, atol=1e-5, rtol=1e-5, equal_nan=True)
