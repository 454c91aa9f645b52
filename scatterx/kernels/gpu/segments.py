"""Between a sorted index and CSR offsets on the GPU, in one launch each way: the search every sorted route starts
with (``backends/gpu/segments.py``). ``index -> ptr``: ``ptr[s]`` is how many entries of the index are below ``s``;
``ptr -> index``: row ``r`` belongs to the segment of how many ends ``ptr[1:]`` are at most ``r``. Each lane runs
one binary search; a call costs one launch, where ``torch.searchsorted`` against an ``arange`` costs two."""

import triton
import triton.language as tl

from ._codegen import flag


@triton.jit(do_not_specialize=["length", "start", "queries", "steps", "right"])
def searchsorted_kernel(values, length, start, out, queries, steps, right, BLOCK: tl.constexpr):
    """out[q] = how many of values[start : start + length] are below q (``right``: at most q), for each q in
    ``[0, queries)``; ``values`` non-decreasing there. ``steps``: the bit length of ``length``, the most halvings a
    search takes."""
    right = flag(right)
    q = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    active_lanes = q < queries
    lo = tl.zeros([BLOCK], tl.int64)
    hi = tl.zeros([BLOCK], tl.int64) + length
    for _ in range(steps):
        open_ = active_lanes & (lo < hi)
        mid = (lo + hi) // 2
        v = tl.load(values + start + mid, mask=open_, other=0)
        below = (v < q) | ((v == q) & right)
        lo = tl.where(open_ & below, mid + 1, lo)
        hi = tl.where(open_ & ((v > q) | ((v == q) & (right == 0))), mid, hi)  # (no ~: Triton 3.0 interprets none)
    tl.store(out + q, lo, mask=active_lanes)
