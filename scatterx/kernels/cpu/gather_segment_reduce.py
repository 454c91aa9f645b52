"""Numba CPU kernel for the weighted gather-segment reduce (``gather_segment_reduce(..., weight=)``): the
message passing of GCN and GAT without the ``edges x features`` message tensor.

Arrays are C-contiguous views with the heads split out: rows ``(N, H, C)`` (``H`` heads of ``C`` channels; an
unweighted-by-head call has ``H == 1``), per-edge weights ``(E, H)``. Segment ``s`` covers the edges
``ptr[s]:ptr[s+1]``; edge ``k`` reads row ``index[k]``. Over the edges of segment ``s``, for every ``(h, c)``::

    out[s, h, c] = reduce(weight[k, h] * src[index[k], h, c])      (0 if empty)

It never writes the ``edges x features`` tensor that ``src[index] * weight`` would be; its gradients are itself on
the transposed structure (for ``src``) and ``sddmm.py``'s dot product (for ``weight``).

The reduce follows the reduction table (``_codegen``): the identity, ``combine`` and ``finalize`` of the segment
kernel, so a weight of 1 gives ``gather_segment_reduce``'s result. Half types (int16 views) are widened to float32
on load, multiplied and accumulated in float32, and rounded once on store; other types multiply and accumulate in
their own type. Each segment is computed by one thread, edges in order, so results do not depend on the thread
count. Work items are chunks of segments of about equal ``edges + segments`` (``segments.balanced_bounds``).
No bounds checks are made here: the op layer has validated ``ptr``, ``index`` and the shapes.
"""

from __future__ import annotations

from numba import njit

from ._codegen import Kernel, acc_buffer, claim, combine, finalize, identity, load, store


@njit(cache=True, nogil=True, error_model="numpy")
def weighted_gather_segment_reduce_kernel(counter, src, weight, index, ptr, bounds, out, reduce, storage):
    """out[s, h, c] = reduce(weight[k, h] * src[index[k], h, c] for k in ptr[s]:ptr[s+1]), 0 for empty segments.

    src: (N, H, C); weight: (E, H), src's element type; index: int64 (E,); ptr: int64 (S + 1); bounds: int64
    chunks of segments, the work items; out: (S, H, C). reduce, storage: literal codes.
    """
    heads = src.shape[1]
    channels = src.shape[2]
    width = heads * channels
    acc = acc_buffer(storage, src, width)
    start = identity(reduce, acc)
    while True:
        c = claim(counter)
        if c < 0:
            break
        for s in range(bounds[c], bounds[c + 1]):
            lo = ptr[s]
            hi = ptr[s + 1]
            if lo == hi:
                for h in range(heads):
                    for j in range(channels):
                        out[s, h, j] = 0
                continue
            for j in range(width):
                acc[j] = start
            for k in range(lo, hi):
                r = index[k]
                for h in range(heads):
                    w = load(storage, weight[k, h])
                    at = h * channels
                    for j in range(channels):
                        acc[at + j] = combine(reduce, acc[at + j], w * load(storage, src[r, h, j]))
            count = hi - lo
            for h in range(heads):
                at = h * channels
                for j in range(channels):
                    out[s, h, j] = store(storage, finalize(reduce, acc[at + j], count))
    return 0


weighted_gather_segment_reduce = Kernel(weighted_gather_segment_reduce_kernel, literal=("reduce", "storage"))
