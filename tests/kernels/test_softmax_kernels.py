"""kernels/cpu/softmax.py and kernels/gpu/softmax.py called directly, against a plain reference: torch.softmax of
each segment's rows on its own, in float64, cast to the dtype.

Covered: random problems (empty segments, rows gathered through a permutation, every float dtype, chunks of any
split), torch's NaN/inf rules, bit-identical CPU results whatever the chunks and thread count, the backward against
torch.autograd, and the Triton kernels (CUDA, else Triton's interpreter on CPU tensors: small shapes, it runs every
program in Python). Nothing here uses scatterx beyond its kernels.
"""

import os

import numba
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

# Triton reads this when a kernel is defined: without a GPU, run its kernels on CPU tensors (conftest does the same).
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

from scatterx.kernels.cpu._codegen import BF16, F16, NATIVE  # noqa: E402
from scatterx.kernels.cpu.softmax import EXP_SCRATCH_ELEMENTS, segment_softmax, segment_softmax_backward  # noqa: E402

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
INF, NAN = float("inf"), float("nan")
UNSET = 12345  # what output buffers hold before a kernel runs: every row belongs to a segment, so none may remain

# (atol, rtol). The kernels compute in float32 (half types) or the dtype and round once; the reference computes in
# float64 and rounds once, so they may differ by about one unit in the last place of the dtype. (Triton's
# interpreter also truncates float32 -> bfloat16 instead of rounding to nearest: up to one more unit.)
TOLERANCES = {
    torch.float64: (1e-12, 1e-12),
    torch.float32: (1e-6, 1e-5),
    torch.float16: (1e-4, 2e-3),
    torch.bfloat16: (1e-3, 1.6e-2),
}
# the backward, y * (g - dot): its inputs are rounded to the dtype, and the difference may cancel
GRAD_TOLERANCES = {
    torch.float64: (1e-12, 1e-12),
    torch.float32: (1e-5, 1e-4),
    torch.float16: (4e-3, 1e-2),
    torch.bfloat16: (3e-2, 5e-2),
}


# ------------------------------------------------------------------------------------------------ the problems
def make_ptr(sizes):
    return torch.tensor([0] + list(np.cumsum(sizes, dtype=np.int64)), dtype=torch.int64)


def segment_rows(ptr, perm):
    """The row numbers of every segment, in segment order."""
    rows = torch.arange(int(ptr[-1])) if perm is None else perm.long()
    return [rows[int(ptr[s]) : int(ptr[s + 1])] for s in range(len(ptr) - 1)]


def reference(src, ptr, perm):
    """torch.softmax of each segment's rows (dim 1 of the 3-D src), in float64, cast to src's dtype."""
    out = torch.full_like(src, UNSET)
    for rows in segment_rows(ptr, perm):
        if len(rows):
            out[:, rows, :] = torch.softmax(src[:, rows, :].double(), dim=1).to(src.dtype)
    return out


def reference_backward(src, g, ptr, perm):
    """(y, grad): the softmax of each segment of src and the gradient of sum(y * g) with respect to src, through
    torch.autograd in float64, both cast to src's dtype."""
    y = torch.full_like(src, UNSET)
    grad = torch.full_like(src, UNSET)
    for rows in segment_rows(ptr, perm):
        if len(rows):
            x = src[:, rows, :].double().requires_grad_()
            ys = torch.softmax(x, dim=1)
            (ys * g[:, rows, :].double()).sum().backward()
            y[:, rows, :] = ys.detach().to(src.dtype)
            grad[:, rows, :] = x.grad.to(src.dtype)
    return y, grad


def values(gen, shape, dtype, scale, specials):
    """Random values of ``shape``: normal times ``scale`` (a scale of 1000 overflows exp without the maximum
    subtracted), and with ``specials`` some -inf (often), +inf and NaN (rarely)."""
    x = torch.randn(shape, generator=gen, dtype=torch.float64) * scale
    if specials:
        u = torch.rand(shape, generator=gen, dtype=torch.float64)
        x[u < 0.2] = -INF
        x[(u >= 0.2) & (u < 0.23)] = INF
        x[(u >= 0.23) & (u < 0.26)] = NAN
    return x.to(dtype)


def backward_problem(src, ptr, perm):
    """(y, g, wanted grad) for a problem: src made finite (NaN, +inf -> 0, -inf -> -50), y its softmax, g random."""
    src = torch.nan_to_num(src, nan=0.0, posinf=0.0, neginf=-50.0)
    g = values(torch.Generator().manual_seed(src.numel()), src.shape, src.dtype, 1.0, False)
    y, grad = reference_backward(src, g, ptr, perm)
    return y, g, grad


def assert_close(actual, expected, tolerances):
    atol, rtol = tolerances[expected.dtype]
    torch.testing.assert_close(actual.cpu(), expected.cpu(), atol=atol, rtol=rtol, equal_nan=True)


@st.composite
def problems(draw, max_outer=3, max_inner=5, max_segments=12, max_size=6):
    """(src, ptr, perm or None, chunk bounds): 0..max_segments segments of 0..max_size rows (empty ones included),
    rows in segment order or gathered through a random permutation (int32 or int64)."""
    outer = draw(st.integers(1, max_outer))
    inner = draw(st.integers(1, max_inner))
    sizes = draw(st.lists(st.integers(0, max_size), max_size=max_segments))
    dtype = draw(st.sampled_from(DTYPES))
    gather = draw(st.booleans())
    perm_dtype = draw(st.sampled_from([torch.int32, torch.int64]))
    scale = draw(st.sampled_from([1.0, 30.0, 1000.0]))
    specials = draw(st.booleans())
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    n, num_segments = sum(sizes), len(sizes)
    src = values(gen, (outer, n, inner), dtype, scale, specials)
    perm = torch.randperm(n, generator=gen).to(perm_dtype) if gather else None
    # chunk boundaries over segments: any split, chunks of one segment and empty chunks included
    cuts = sorted(draw(st.lists(st.integers(0, num_segments), max_size=5)))
    bounds = np.array([0] + cuts + [num_segments], dtype=np.int64)
    return src, make_ptr(sizes), perm, bounds


# ------------------------------------------------------------------------------------------------ the CPU kernels
_STORAGE = {torch.float16: F16, torch.bfloat16: BF16}
_NO_PERM = np.empty(0, dtype=np.int32)  # what the sorted path passes (never read)


def as_numpy(t):
    """Zero-copy NumPy view of a contiguous CPU tensor; half types as int16 bits (the kernels' storage)."""
    return (t.view(torch.int16) if t.dtype in _STORAGE else t).numpy()


def cpu_softmax(src, ptr, perm, bounds):
    out = torch.full_like(src, UNSET)
    segment_softmax(
        as_numpy(src), _NO_PERM if perm is None else as_numpy(perm), as_numpy(ptr), bounds, as_numpy(out),
        _STORAGE.get(src.dtype, NATIVE), perm is not None,
    )
    return out


def cpu_softmax_backward(y, g, ptr, perm, bounds):
    grad = torch.full_like(y, UNSET)
    segment_softmax_backward(
        as_numpy(y), as_numpy(g), _NO_PERM if perm is None else as_numpy(perm), as_numpy(ptr), bounds,
        as_numpy(grad), _STORAGE.get(y.dtype, NATIVE), perm is not None,
    )
    return grad


def bits(t):
    """The tensor's bytes, for bit-for-bit comparisons (NaN included)."""
    return torch.empty(t.numel(), dtype=t.dtype).copy_(t.reshape(-1)).view(torch.uint8)


def one_chunk(ptr):
    return np.array([0, len(ptr) - 1], dtype=np.int64)


@given(problems())
def test_cpu_forward_matches_torch_softmax_per_segment(problem):
    src, ptr, perm, bounds = problem
    assert_close(cpu_softmax(src, ptr, perm, bounds), reference(src, ptr, perm), TOLERANCES)


@given(problems())
def test_cpu_backward_matches_autograd(problem):
    src, ptr, perm, bounds = problem
    y, g, want = backward_problem(src, ptr, perm)
    assert_close(cpu_softmax_backward(y, g, ptr, perm, bounds), want, GRAD_TOLERANCES)


@given(problems(), st.lists(st.integers(0, 12), max_size=5), st.integers(1, 2))
def test_cpu_results_do_not_depend_on_chunks_or_threads(problem, other_cuts, threads):
    src, ptr, perm, bounds = problem
    num_segments = len(ptr) - 1
    other = np.array([0] + sorted(min(c, num_segments) for c in other_cuts) + [num_segments], dtype=np.int64)
    y, g, _ = backward_problem(src, ptr, perm)
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        want = bits(cpu_softmax(src, ptr, perm, one_chunk(ptr)))
        assert torch.equal(bits(cpu_softmax(src, ptr, perm, bounds)), want)
        assert torch.equal(bits(cpu_softmax(src, ptr, perm, other)), want)
        want = bits(cpu_softmax_backward(y, g, ptr, perm, one_chunk(ptr)))
        assert torch.equal(bits(cpu_softmax_backward(y, g, ptr, perm, bounds)), want)
        assert torch.equal(bits(cpu_softmax_backward(y, g, ptr, perm, other)), want)
    finally:
        numba.set_num_threads(before)


def test_cpu_empty_problems():
    for outer, inner in ((1, 3), (2, 1)):
        src = torch.empty(outer, 0, inner)
        ptr = torch.zeros(4, dtype=torch.int64)  # three empty segments
        assert cpu_softmax(src, ptr, None, np.array([0, 1, 3], dtype=np.int64)).shape == (outer, 0, inner)
        assert cpu_softmax(src, ptr[:1], None, np.array([0], dtype=np.int64)).shape == (outer, 0, inner)


def test_cpu_long_segments_recompute_the_same_exponentials():
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


# --------------------------------------------------------------------------------------------- the Triton kernels
def _triton():
    pytest.importorskip("triton")
    import triton.language as tl

    from scatterx.kernels.gpu import segment as segment_kernels
    from scatterx.kernels.gpu import softmax as softmax_kernels

    acc = {torch.float32: tl.float32, torch.float64: tl.float64, torch.float16: tl.float32,
           torch.bfloat16: tl.float32}
    return softmax_kernels, segment_kernels, acc


def _launch(name, tensors, ptr, perm, blocks):
    """Launch kernel ``name`` of kernels/gpu/softmax.py as the GPU backend does: one program per (outer slice,
    segment, feature block). tensors: the kernel's tensor arguments before ``perm``, then its output; blocks:
    (BLOCK_E, BLOCK_F), or None for ``launch_config``'s."""
    softmax_kernels, segment_kernels, acc = _triton()
    outer, n, inner = tensors[-1].shape
    num_segments = ptr.numel() - 1
    block_e, block_f = blocks or segment_kernels.launch_config(n, num_segments, inner)
    grid = (outer * num_segments * -(-inner // block_f),)
    if grid[0] == 0:
        return
    getattr(softmax_kernels, name)[grid](
        *tensors[:-1], ptr if perm is None else perm, ptr, tensors[-1], n, num_segments, inner,
        ACC=acc[tensors[-1].dtype], GATHER=perm is not None, BLOCK_E=block_e, BLOCK_F=block_f,
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
def test_triton_forward_matches_torch_softmax_per_segment(problem, blocks):
    src, ptr, perm, _ = problem
    assert_close(triton_softmax(*on_device(src, ptr, perm), blocks), reference(src, ptr, perm), TOLERANCES)


@settings(max_examples=_TRITON_EXAMPLES)
@given(problems(**_SMALL), _BLOCKS)
def test_triton_backward_matches_autograd(problem, blocks):
    src, ptr, perm, _ = problem
    y, g, want = backward_problem(src, ptr, perm)
    assert_close(triton_softmax_backward(*on_device(y, g, ptr, perm), blocks), want, GRAD_TOLERANCES)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_triton_running_maximum_grows_across_iterations():
    """One segment read a few rows at a time, increasing then decreasing, after a -inf prefix: the running sums must
    be rescaled each time their maximum grows, and the -inf rows must not make them NaN."""
    column = [-INF, -INF, -5.0, 0.0, 3.0, 10.0, 40.0, 39.0, -20.0, -INF]
    src = torch.tensor(column, dtype=torch.float32)[None, :, None].repeat(1, 1, 3)
    ptr = make_ptr([len(column)])
    for blocks in ((1, 1), (2, 4), (4, 2), (16, 4)):
        assert_close(triton_softmax(*on_device(src, ptr, None), blocks), reference(src, ptr, None), TOLERANCES)


# --------------------------------------------------------------------------------------------- NaN and inf, both
def special_cases():
    """(name, values of one feature, segment sizes, expected): torch.softmax's NaN/inf rules, segment by segment."""
    third = [0.09003057317038046, 0.24472847105479764, 0.6652409557748219]  # softmax([1, 2, 3])
    half = [0.2689414213699951, 0.7310585786300049]  # softmax([0, 1])
    four = [0.01798620996209156, 0.9820137900379085]  # softmax([0, 4])
    return [
        ("all -inf is NaN", [-INF, -INF, 1.0], [2, 1], [NAN, NAN, 1.0]),
        ("+inf makes the segment NaN", [1.0, INF, 2.0, 3.0], [2, 2], [NAN, NAN] + half),
        ("two +inf", [INF, INF], [2], [NAN, NAN]),
        ("NaN makes the segment NaN", [2.0, NAN, 5.0, 1.0, 2.0, 3.0], [3, 3], [NAN, NAN, NAN] + third),
        ("NaN after +inf", [INF, NAN], [2], [NAN, NAN]),
        ("-inf next to finite values is 0", [-INF, 1.0, 2.0, 3.0, -INF], [5], [0.0] + third + [0.0]),
        ("-inf first, then finite", [-INF, -INF, 4.0], [3], [0.0, 0.0, 1.0]),
        ("one-element segments are 1", [7.0, -3.0, 6e4, -6e4], [1, 1, 1, 1], [1.0, 1.0, 1.0, 1.0]),
        ("-inf, +inf, NaN alone are NaN", [-INF, INF, NAN], [1, 1, 1], [NAN, NAN, NAN]),
        # exp overflows (or underflows to 0/0) without the max subtracted; exact in every dtype
        ("large values need the max subtracted", [1000.0, 1004.0, -1000.0, -996.0], [2, 2], four + four),
        ("equal values, and an empty segment", [3.0, 3.0, 3.0, 3.0], [4, 0], [0.25, 0.25, 0.25, 0.25]),
    ]


CASES = special_cases()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("backend", ["cpu", "triton"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_nan_and_inf_follow_torch(case, dtype, backend):
    _, column, sizes, expected = case
    ptr = make_ptr(sizes)
    # three features: the case itself, reversed within each segment, and the case again
    src = torch.tensor(column, dtype=torch.float64)
    reversed_ = torch.cat([src[int(ptr[s]) : int(ptr[s + 1])].flip(0) for s in range(len(sizes))])
    src3 = torch.stack([src, reversed_, src], dim=1)[None].to(dtype)
    want = reference(src3, ptr, None)
    # the reference is torch itself: check that it says what the case says, then the kernels against it
    expected = torch.tensor(expected, dtype=torch.float64).to(dtype)
    torch.testing.assert_close(want[0, :, 0], expected, equal_nan=True, atol=0, rtol=TOLERANCES[dtype][1])
    reverse = torch.arange(len(column) - 1, -1, -1)
    for perm in (None, reverse):  # sorted, and gathered with position i at row reverse[i]
        if perm is None:
            rows = src3
        else:
            rows = torch.empty_like(src3)
            rows[:, perm, :] = src3
        if backend == "cpu":
            got = cpu_softmax(rows, ptr, perm, one_chunk(ptr))
        else:
            got = triton_softmax(*on_device(rows, ptr, perm)).cpu()
        got = got if perm is None else got[:, perm, :]  # back to position order
        assert_close(got, want, TOLERANCES)
        alone = [int(ptr[i]) for i, size in enumerate(sizes) if size == 1 and abs(column[int(ptr[i])]) < INF]
        assert (got[0, alone, :].double() == 1.0).all(), "a finite value alone must give exactly 1"
