"""The arg-reduce kernel (``kernels/cpu/segment_arg_reduce.py``) through the backend's launch, on one and several
threads with segments split into small chunks, against the reference on random problems: both selecting
reductions, every dtype, gathered rows, a base, the start values and fill rules torch_scatter's functions use."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from kernel_calls import bits, on_threads
from strategies import random_values, segment_problems

from scatterx import reference
from scatterx._reductions import BY_NAME
from scatterx.backends import cpu
from scatterx.kernels.cpu.segment_arg_reduce import FILL_EMPTY, FILL_NONE, FILL_UNSELECTED

FILLS = {"none": FILL_NONE, "unselected": FILL_UNSELECTED, "empty": FILL_EMPTY}


@settings(max_examples=60)
@given(
    segment_problems(reduce="amax"),
    st.sampled_from(["amax", "amin"]),
    st.sampled_from(sorted(FILLS)),
    st.booleans(),
    st.booleans(),
    st.sampled_from([1, 2]),
)
def test_matches_the_reference(problem, reduce, fill, with_base, finite_start, threads):
    src, ptr, perm = problem
    outer, n, inner = src.shape
    base = (
        random_values((outer, ptr.numel() - 1, inner), src.dtype, torch.Generator().manual_seed(n), "amax")
        if with_base
        else None
    )
    dtype = src.dtype
    if finite_start:
        info = torch.finfo(dtype) if dtype.is_floating_point else torch.iinfo(dtype)
        start = info.max if reduce == "amin" else info.min
    else:
        start = BY_NAME[reduce].identity(torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype)
    with on_threads(threads):
        values, arg = cpu.segment_arg_reduce(src, ptr, perm, 1, BY_NAME[reduce], base, start, FILLS[fill], n)
    want_values, want_arg = reference.segment_arg_reduce(src, ptr, reduce, 1, perm, base, finite_start, fill)
    assert torch.equal(bits(values), bits(want_values))
    assert torch.equal(arg, want_arg)
