"""The CPU segment-softmax kernels (``kernels/cpu/segment_softmax.py``) called directly, against torch.softmax of
each segment (``softmax_cases.py``): random problems, the backward against torch.autograd, bit-identical results
whatever the chunks and thread count, the recomputed exponentials of long segments, torch's NaN/inf rules."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from softmax_cases import (
    CASES,
    DTYPES,
    GRAD_TOLERANCES,
    TOLERANCES,
    UNSET,
    assert_close,
    backward_problem,
    check_special_case,
    make_ptr,
    problems,
    reference,
    values,
)

from scatterx.kernels.cpu import launch, numpy_view, storage_code
from scatterx.kernels.cpu.segment_softmax import EXP_SCRATCH_ELEMENTS, segment_softmax, segment_softmax_backward

_NO_PERM = np.empty(0, dtype=np.int64)  # what the sorted path passes (never read)


def cpu_softmax(src, ptr, perm, bounds, threads=1):
    out = torch.full_like(src, UNSET)
    launch(
        segment_softmax,
        None,
        src.shape[0] * (len(bounds) - 1),
        threads,
        numpy_view(src),
        _NO_PERM if perm is None else perm.numpy(),
        ptr.numpy(),
        bounds,
        numpy_view(out),
        storage_code(src.dtype),
        perm is not None,
    )
    return out


def cpu_softmax_backward(y, g, ptr, perm, bounds, threads=1):
    grad = torch.full_like(y, UNSET)
    launch(
        segment_softmax_backward,
        None,
        y.shape[0] * (len(bounds) - 1),
        threads,
        numpy_view(y),
        numpy_view(g),
        _NO_PERM if perm is None else perm.numpy(),
        ptr.numpy(),
        bounds,
        numpy_view(grad),
        storage_code(y.dtype),
        perm is not None,
    )
    return grad


def bits(t):
    """The tensor's bytes, for bit-for-bit comparisons (NaN included)."""
    return torch.empty(t.numel(), dtype=t.dtype).copy_(t.reshape(-1)).view(torch.uint8)


def one_chunk(ptr):
    return np.array([0, len(ptr) - 1], dtype=np.int64)


@given(problems())
def test_forward_matches_torch_softmax_per_segment(problem):
    src, ptr, perm, bounds = problem
    assert_close(cpu_softmax(src, ptr, perm, bounds), reference(src, ptr, perm), TOLERANCES)


@given(problems())
def test_backward_matches_autograd(problem):
    src, ptr, perm, bounds = problem
    y, g, want = backward_problem(src, ptr, perm)
    assert_close(cpu_softmax_backward(y, g, ptr, perm, bounds), want, GRAD_TOLERANCES)


@given(problems(), st.lists(st.integers(0, 12), max_size=5), st.integers(1, 3))
def test_results_do_not_depend_on_chunks_or_threads(problem, other_cuts, threads):
    src, ptr, perm, bounds = problem
    num_segments = len(ptr) - 1
    other = np.array([0] + sorted(min(c, num_segments) for c in other_cuts) + [num_segments], dtype=np.int64)
    y, g, _ = backward_problem(src, ptr, perm)
    want = bits(cpu_softmax(src, ptr, perm, one_chunk(ptr)))
    assert torch.equal(bits(cpu_softmax(src, ptr, perm, bounds, threads)), want)
    assert torch.equal(bits(cpu_softmax(src, ptr, perm, other, threads)), want)
    want = bits(cpu_softmax_backward(y, g, ptr, perm, one_chunk(ptr)))
    assert torch.equal(bits(cpu_softmax_backward(y, g, ptr, perm, bounds, threads)), want)
    assert torch.equal(bits(cpu_softmax_backward(y, g, ptr, perm, other, threads)), want)


def test_empty_problems():
    for outer, inner in ((1, 3), (2, 1)):
        src = torch.empty(outer, 0, inner)
        ptr = torch.zeros(4, dtype=torch.int64)  # three empty segments
        assert cpu_softmax(src, ptr, None, np.array([0, 1, 3], dtype=np.int64)).shape == (outer, 0, inner)
        assert cpu_softmax(src, ptr[:1], None, np.array([0], dtype=np.int64)).shape == (outer, 0, inner)


def test_long_segments_recompute_the_same_exponentials():
    """A segment of more elements than the forward's scratch buffer holds computes exp(x - max) twice instead of
    keeping it: the same bits. Features are independent, so each feature alone (1 feature: a segment 4x longer
    fits the buffer) must give the bits of the 4-feature problem (where it does not fit)."""
    gen = torch.Generator().manual_seed(0)
    inner = 4
    fits = EXP_SCRATCH_ELEMENTS // inner  # rows
    sizes = [2, fits + 3, 5, fits]  # over the limit, and exactly at it
    ptr = make_ptr(sizes)
    for dtype in (torch.float32, torch.bfloat16):
        src = values(gen, (1, sum(sizes), inner), dtype, 10.0, False)
        for perm in (None, torch.randperm(sum(sizes), generator=gen)):
            got = cpu_softmax(src, ptr, perm, np.array([0, 2, 4], dtype=np.int64))
            assert_close(got, reference(src, ptr, perm), TOLERANCES)
            for j in range(inner):
                alone = cpu_softmax(src[:, :, j : j + 1].contiguous(), ptr, perm, one_chunk(ptr))
                assert torch.equal(bits(alone), bits(got[:, :, j : j + 1]))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_nan_and_inf_follow_torch(case, dtype):
    check_special_case(case, dtype, lambda rows, ptr, perm: cpu_softmax(rows, ptr, perm, one_chunk(ptr)))
