"""The Triton segment-softmax kernels (``kernels/gpu/segment_softmax.py``) called directly, against torch.softmax
of each segment (``softmax_cases.py``) -- on CUDA, else through Triton's interpreter on CPU tensors (small shapes:
it runs every program in Python): random problems and tile shapes, the backward against torch.autograd, the
online maximum rescaled across iterations, torch's NaN/inf rules, nothing written past the output."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from softmax_cases import (
    CASES,
    DTYPES,
    GRAD_TOLERANCES,
    INF,
    TOLERANCES,
    UNSET,
    assert_close,
    backward_problem,
    check_special_case,
    make_ptr,
    problems,
    reference,
)

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def _triton():
    pytest.importorskip("triton")
    import triton.language as tl

    from scatterx.kernels.gpu import segment_softmax as softmax_kernels
    from scatterx.kernels.gpu._tiles import launch_config

    acc = {torch.float32: tl.float32, torch.float64: tl.float64, torch.float16: tl.float32, torch.bfloat16: tl.float32}
    return softmax_kernels, launch_config, acc


def _launch(name, tensors, ptr, perm, blocks):
    """Launch kernel ``name`` of kernels/gpu/segment_softmax.py as the GPU backend does: one program per (outer slice,
    segment, feature block). tensors: the kernel's tensor arguments before ``perm``, then its output; blocks:
    (BLOCK_E, BLOCK_F), or None for ``launch_config``'s."""
    softmax_kernels, launch_config, acc = _triton()
    outer, n, inner = tensors[-1].shape
    num_segments = ptr.numel() - 1
    block_e, block_f = blocks or launch_config(inner)
    grid = (outer * num_segments * -(-inner // block_f),)
    if grid[0] == 0:
        return
    getattr(softmax_kernels, name)[grid](
        *tensors[:-1],
        ptr if perm is None else perm,
        ptr,
        tensors[-1],
        n,
        num_segments,
        inner,
        perm is not None,
        ACC=acc[tensors[-1].dtype],
        BLOCK_E=block_e,
        BLOCK_F=block_f,
    )


def _guarded_like(t):
    """(buffer, view): a tensor like ``t`` at the start of a buffer, with 16 guard elements after it."""
    buffer = torch.full((t.numel() + 16,), UNSET, dtype=t.dtype, device=t.device)
    return buffer, buffer[: t.numel()].view(t.shape)


def triton_softmax(src, ptr, perm, blocks=None):
    """The forward on src's device; the guard elements after the output must stay untouched."""
    buffer, out = _guarded_like(src)
    _launch("segment_softmax_kernel", (src.contiguous(), out), ptr, perm, blocks)
    assert (buffer[src.numel() :] == UNSET).all(), "wrote past its buffer"
    return out


def triton_softmax_backward(y, g, ptr, perm, blocks=None):
    buffer, grad = _guarded_like(y)
    _launch("segment_softmax_backward_kernel", (y.contiguous(), g.contiguous(), grad), ptr, perm, blocks)
    assert (buffer[y.numel() :] == UNSET).all(), "wrote past its buffer"
    return grad


def on_device(*tensors):
    return [None if t is None else t.to(DEVICE) for t in tensors]


# the interpreter runs ~5 ms a program: few examples, small problems; block sizes small enough to loop
_TRITON_EXAMPLES = 100 if torch.cuda.is_available() else 60
_SMALL = dict(max_outer=2, max_inner=5, max_segments=5, max_size=5)
_BLOCKS = st.one_of(st.none(), st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([1, 2, 4])))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # Triton's interpreter warns on inf - inf
@settings(max_examples=_TRITON_EXAMPLES)
@given(problems(**_SMALL), _BLOCKS)
def test_forward_matches_torch_softmax_per_segment(problem, blocks):
    src, ptr, perm, _ = problem
    assert_close(triton_softmax(*on_device(src, ptr, perm), blocks), reference(src, ptr, perm), TOLERANCES)


@settings(max_examples=_TRITON_EXAMPLES)
@given(problems(**_SMALL), _BLOCKS)
def test_backward_matches_autograd(problem, blocks):
    src, ptr, perm, _ = problem
    y, g, want = backward_problem(src, ptr, perm)
    assert_close(triton_softmax_backward(*on_device(y, g, ptr, perm), blocks), want, GRAD_TOLERANCES)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_running_maximum_grows_across_iterations():
    """One segment read a few rows at a time, increasing then decreasing, after a -inf prefix: the running sums must
    be rescaled each time their maximum grows, and the -inf rows must not make them NaN."""
    column = [-INF, -INF, -5.0, 0.0, 3.0, 10.0, 40.0, 39.0, -20.0, -INF]
    src = torch.tensor(column, dtype=torch.float32)[None, :, None].repeat(1, 1, 3)
    ptr = make_ptr([len(column)])
    for blocks in ((1, 1), (2, 4), (4, 2), (16, 4)):
        assert_close(triton_softmax(*on_device(src, ptr, None), blocks), reference(src, ptr, None), TOLERANCES)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_nan_and_inf_follow_torch(case, dtype):
    check_special_case(case, dtype, lambda rows, ptr, perm: triton_softmax(*on_device(rows, ptr, perm)).cpu())
