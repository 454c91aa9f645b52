"""ONNX export of ``scatterx::segment_reduce`` and ``scatterx::gather_segment_reduce``, every reduction and dtype, along
dim 0 and -1, with empty segments."""

import pytest
from onnx_run import DTYPES, PTR, REDUCTIONS, Wrap, assert_outputs, optimized, repeated_index, run_onnx, values

import scatterx


@pytest.mark.parametrize("dtype", DTYPES)
def test_segment_and_gather_segment_reduce(dtype, tmp_path):
    src = values((7, 3), dtype, 7)
    wide = values((3, 7), dtype, 8)
    gather = repeated_index(7, 7, 9)

    # optimised, a graph per reduction (onnxscript's optimizer takes time superlinear in a graph's nodes -- the five
    # in one graph took 31-41 s a dtype, these five 17-22 s); without the optimizer, one graph of the five
    groups = [(r,) for r in REDUCTIONS] if optimized(dtype) else [tuple(REDUCTIONS)]
    for group in groups:

        def three(src, wide, ptr, gather, group=group):
            return tuple(
                out
                for r in group
                for out in (
                    scatterx.segment_reduce(src, ptr, r),
                    scatterx.segment_reduce(wide, ptr, r, dim=-1),
                    scatterx.gather_segment_reduce(src, ptr, gather, r),
                )
            )

        inputs = [src, wide, PTR, gather]
        path = tmp_path / f"{group[0]}.onnx"
        assert_outputs(run_onnx(Wrap(three), inputs, path, optimize=optimized(dtype)), three(*inputs))
