"""Hypothesis strategies shared by the tests: random scatter problems small enough for the reference."""

import torch
from hypothesis import strategies as st

from scatterx import SUPPORTED_DTYPES

REDUCES = ["sum", "mean", "prod", "amax", "amin"]
ALIASES = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


def random_values(shape, dtype, generator, reduce):
    """Values that keep every reduction well inside the dtype's range (prod of a dozen values included)."""
    if dtype.is_floating_point:
        scale = 1.5 if reduce in ("prod", "mul") else 4.0
        return (torch.rand(shape, generator=generator, dtype=torch.float64) * 2 - 1).mul(scale).to(dtype)
    high = 4 if reduce in ("prod", "mul") else 1000
    return torch.randint(-high, high + 1, shape, generator=generator, dtype=torch.int64).to(dtype)


OUT_MODES = ["none", "dim_size", "out_self", "out_noself"]


@st.composite
def scatter_problems(draw, dtype=None, reduce=None, sorted=None, out_mode=None):
    """A dict with dim, index, src, reduce, sorted, dim_size, out, include_self, all valid.

    Arguments left as None are drawn too; the tests fix the ones they enumerate."""
    dtype = draw(st.sampled_from(SUPPORTED_DTYPES)) if dtype is None else dtype
    reduce = draw(st.sampled_from(REDUCES + list(ALIASES))) if reduce is None else reduce
    ndim = draw(st.integers(1, 3))
    shape = draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim))
    dim = draw(st.integers(-ndim, ndim - 1))
    shape[dim] = draw(st.integers(0, 14))
    m = draw(st.integers(0, shape[dim]))  # index may be shorter than src along dim
    num_segments = draw(st.integers(1 if m else 0, 9))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    index = torch.randint(0, max(num_segments, 1), (m,), generator=g)
    is_sorted = draw(st.booleans()) if sorted is None else sorted
    if is_sorted:
        index = index.sort().values
    index = index.to(draw(st.sampled_from([torch.int32, torch.int64])))

    src = random_values(shape, dtype, g, reduce)
    if draw(st.booleans()):  # non-contiguous src: same values, transposed storage
        src = src.mT.contiguous().mT if src.dim() >= 2 else src.repeat(2)[::2]

    out_mode = draw(st.sampled_from(OUT_MODES)) if out_mode is None else out_mode
    out_shape = list(shape)
    out_shape[dim] = num_segments
    out = random_values(out_shape, dtype, g, reduce) if out_mode.startswith("out") else None
    return dict(
        dim=dim,
        index=index,
        src=src,
        reduce=reduce,
        sorted=is_sorted,
        dim_size=num_segments if out_mode == "dim_size" else None,
        out=out,
        include_self=out_mode != "out_noself",
    )


@st.composite
def segment_problems(draw, dtypes=SUPPORTED_DTYPES, reduce="sum", max_outer=3, max_inner=5, max_segments=8, max_size=6):
    """``(src (outer, n, inner), ptr, perm or None)``: 0..max_segments segments of 0..max_size rows (empty ones
    included), rows in segment order or gathered through a random permutation (int64), values for ``reduce``."""
    outer = draw(st.integers(1, max_outer))
    inner = draw(st.integers(1, max_inner))
    sizes = draw(st.lists(st.integers(0, max_size), max_size=max_segments))
    dtype = draw(st.sampled_from(dtypes))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    n = sum(sizes)
    src = random_values((outer, n, inner), dtype, g, reduce)
    ptr = torch.tensor([0] + sizes, dtype=torch.int64).cumsum(0)
    perm = torch.randperm(n, generator=g) if draw(st.booleans()) else None
    return src, ptr, perm
