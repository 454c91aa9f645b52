"""Numba CPU kernels for weighted message passing: the weighted gather-segment reduce and SDDMM.

Arrays are C-contiguous views with the heads split out: rows ``(N, H, C)`` (``H`` heads of ``C`` channels; an
unweighted-by-head call has ``H == 1``), per-edge weights ``(E, H)``. Segment ``s`` covers the edges
``ptr[s]:ptr[s+1]``; edge ``k`` reads row ``index[k]``. Over the edges of segment ``s``, for every ``(h, c)``::

    weighted_gather_segment:  out[s, h, c] = reduce(weight[k, h] * src[index[k], h, c])      (0 if empty)
    sddmm:                    out[k, h, c] = a[index[k], h, c] (+ or *) b[s, h, c]
                              out[k, h]    = sum_c a[index[k], h, c] * b[s, h, c]            (dot)

Both are the edge-wise forms of a sparse-dense product: the first never writes the ``edges x features`` message
tensor that ``src[index] * weight`` would be, the second computes attention logits and the weight gradient of the
first (``grad_weight = sddmm(src, grad_out, "dot")``).

The reduce follows the reduction table (``_codegen``): the identity, ``combine`` and ``finalize`` of the segment
kernel, so a weight of 1 gives ``gather_segment_reduce``'s result. Half types (int16 views) are widened to float32
on load, multiplied and accumulated in float32, and rounded once on store; other types multiply and accumulate in
their own type. Each segment is computed by one thread, edges in order, so results do not depend on the thread
count. Work items are chunks of segments of about equal ``edges + segments`` (``backends.cpu.balanced_bounds``).
No bounds checks are made here: the op layer has validated ``ptr``, ``index`` and the shapes.
"""

from __future__ import annotations

from numba import literally, njit, prange

from ..._reductions import BY_NAME
from ._codegen import PRANGE_ONLY, LiteralKernel, acc_buffer, combine, finalize, identity, load, store

SUM = BY_NAME["sum"].code

#: SDDMM's ops, as literal codes: ``a[source] + b[target]``, ``a[source] * b[target]``, and the dot product over
#: the last dim.
SDDMM_OPS = {"add": 0, "mul": 1, "dot": 2}


@njit(parallel=PRANGE_ONLY, cache=True, nogil=True)
def weighted_gather_segment_kernel(src, weight, index, ptr, bounds, out, reduce, storage):
    """out[s, h, c] = reduce(weight[k, h] * src[index[k], h, c] for k in ptr[s]:ptr[s+1]), 0 for empty segments.

    src: (N, H, C); weight: (E, H), src's element type; index: int32/int64 (E,); ptr: int64 (S + 1);
    bounds: int64 chunks of segments; out: (S, H, C). reduce, storage: literal codes.
    """
    literally(reduce)
    literally(storage)
    heads = src.shape[1]
    channels = src.shape[2]
    width = heads * channels
    nchunks = bounds.shape[0] - 1
    for c in prange(nchunks):
        acc = acc_buffer(storage, src, width)
        start = identity(reduce, acc)
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


# reassoc: the dot product's sum may be reordered, so that it vectorises (a chain of dependent adds is 4 cycles a
# channel; measured at arxiv's shape, 1.17M edges x 4 heads x 32 channels: 182 -> see DESIGN.md). NaN and inf
# keep their IEEE meaning (no nnan/ninf), and the order is fixed at compile time: results are reproducible.
@njit(parallel=PRANGE_ONLY, cache=True, nogil=True, fastmath={"reassoc"})
def sddmm_kernel(a, b, index, ptr, bounds, out, op, storage):
    """Per edge k of segment s: out[k] = a[index[k]] op b[s] (add, mul: (E, H, C)) or their dot product over
    the channels (dot: out (E, H, 1)).

    a: (Na, H, C); b: (S, H, C), a's element type; index: int32/int64 (E,); ptr: int64 (S + 1); bounds: int64
    chunks of segments. op, storage: literal codes (``SDDMM_OPS``, ``_codegen``).
    """
    literally(op)
    literally(storage)
    heads = a.shape[1]
    channels = a.shape[2]
    nchunks = bounds.shape[0] - 1
    for c in prange(nchunks):
        one = acc_buffer(storage, a, 1)
        zero = identity(SUM, one)
        for s in range(bounds[c], bounds[c + 1]):
            for k in range(ptr[s], ptr[s + 1]):
                r = index[k]
                for h in range(heads):
                    if op == 2:
                        total = zero
                        for j in range(channels):
                            total += load(storage, a[r, h, j]) * load(storage, b[s, h, j])
                        out[k, h, 0] = store(storage, total)
                    elif op == 1:
                        for j in range(channels):
                            out[k, h, j] = store(storage, load(storage, a[r, h, j]) * load(storage, b[s, h, j]))
                    else:
                        for j in range(channels):
                            out[k, h, j] = store(storage, load(storage, a[r, h, j]) + load(storage, b[s, h, j]))


weighted_gather_segment = LiteralKernel(weighted_gather_segment_kernel, ("reduce", "storage"))
sddmm = LiteralKernel(sddmm_kernel, ("op", "storage"))
