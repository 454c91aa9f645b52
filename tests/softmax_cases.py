"""The segment-softmax kernels' problems and oracle (``test_cpu_segment_softmax.py``, ``test_gpu_segment_softmax.py``):
torch.softmax of each segment's rows on its own, in float64, cast to the dtype; random problems (empty segments,
rows gathered through a permutation, every float dtype, chunks of any split); torch's NaN/inf rules case by case.
"""

import numpy as np
import torch
from hypothesis import strategies as st

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
    rows in segment order or gathered through a random permutation."""
    outer = draw(st.integers(1, max_outer))
    inner = draw(st.integers(1, max_inner))
    sizes = draw(st.lists(st.integers(0, max_size), max_size=max_segments))
    dtype = draw(st.sampled_from(DTYPES))
    gather = draw(st.booleans())
    scale = draw(st.sampled_from([1.0, 30.0, 1000.0]))
    specials = draw(st.booleans())
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    n, num_segments = sum(sizes), len(sizes)
    src = values(gen, (outer, n, inner), dtype, scale, specials)
    perm = torch.randperm(n, generator=gen) if gather else None
    # chunk boundaries over segments: any split, chunks of one segment and empty chunks included
    cuts = sorted(draw(st.lists(st.integers(0, num_segments), max_size=5)))
    bounds = np.array([0] + cuts + [num_segments], dtype=np.int64)
    return src, make_ptr(sizes), perm, bounds


# ------------------------------------------------------------------------------------------------ NaN and inf
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


def special_case_problem(case, dtype):
    """``(src3, ptr, want)``: a case as three features -- the case itself, reversed within each segment, and the
    case again -- and torch's result, checked to be what the case says."""
    _, column, sizes, expected = case
    ptr = make_ptr(sizes)
    src = torch.tensor(column, dtype=torch.float64)
    reversed_ = torch.cat([src[int(ptr[s]) : int(ptr[s + 1])].flip(0) for s in range(len(sizes))])
    src3 = torch.stack([src, reversed_, src], dim=1)[None].to(dtype)
    want = reference(src3, ptr, None)
    expected = torch.tensor(expected, dtype=torch.float64).to(dtype)
    torch.testing.assert_close(want[0, :, 0], expected, equal_nan=True, atol=0, rtol=TOLERANCES[dtype][1])
    return src3, ptr, want


def check_special_case(case, dtype, softmax):
    """``softmax(rows, ptr, perm)`` on the case, sorted and gathered (position i at row ``reverse[i]``), against
    torch; a finite value alone in its segment gives exactly 1."""
    _, column, sizes, _ = case
    src3, ptr, want = special_case_problem(case, dtype)
    reverse = torch.arange(len(column) - 1, -1, -1)
    for perm in (None, reverse):
        if perm is None:
            rows = src3
        else:
            rows = torch.empty_like(src3)
            rows[:, perm, :] = src3
        got = softmax(rows, ptr, perm)
        got = got if perm is None else got[:, perm, :]  # back to position order
        assert_close(got, want, TOLERANCES)
        alone = [int(ptr[i]) for i, size in enumerate(sizes) if size == 1 and abs(column[int(ptr[i])]) < INF]
        assert (got[0, alone, :].double() == 1.0).all(), "a finite value alone must give exactly 1"
