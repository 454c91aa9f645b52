"""Numba CPU kernels for GATv2's attention logits and their gradient, without the ``edges x heads x channels``
tensor that PyG's ``leaky_relu(x_i + x_j)`` builds.

Arrays are C-contiguous: rows ``(N, H, C)``, the attention vector ``att (H, C)``, per-edge values ``(E, H)``.
Segment ``s`` covers the edges ``ptr[s]:ptr[s+1]``; edge ``k`` reads row ``index[k]`` of the other side. With
``z = a[index[k], h, c] + b[s, h, c]`` and ``lrelu(z) = z if z > 0 else slope * z``::

    gatv2_logits:  out[k, h] = sum_c att[h, c] * lrelu(z)
    gatv2_grad:    out[s, h, c] = att[h, c] * sum_k grad[k, h] * lrelu'(z)        (lrelu'(z) = 1 if z > 0 else slope)
                   att_part[chunk, h, c] += grad[k, h] * lrelu(z)                  (when want_att)

``z`` is symmetric in its two ends, so the one gradient kernel gives both ends' gradients: run on the segments by
target (``seg = b``, ``other = a``) it gives ``grad_b``, and on the transposed structure (segments by source, the
edge gradients in that order) ``grad_a``. ``att_part`` holds one partial sum per chunk of segments (accumulator
type), which the caller sums: the chunks follow the thread count, so ``grad_att`` can differ in its last bits
between thread counts (the logits and the row gradients do not: each is one thread's sum in a fixed order).

Half types are widened to float32 on load and rounded once on store; float32/float64 compute in their own type.
The dot product over channels may be reassociated (``fastmath={"reassoc"}``) so that it vectorises; NaN and inf
keep their IEEE meaning. No bounds checks are made here: the op layer has validated ``ptr``, ``index`` and the
shapes.
"""

from __future__ import annotations

from numba import njit

from ..._reductions import BY_NAME
from ._codegen import Kernel, acc_buffer, claim, identity, load, store

SUM = BY_NAME["sum"].code


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def gatv2_logits_kernel(counter, a, b, att, index, ptr, bounds, slope, out, storage):
    """out[k, h] = sum over c of att[h, c] * leaky_relu(a[index[k], h, c] + b[s, h, c], slope), k in segment s.

    a: (Na, H, C); b: (S, H, C); att: (H, C), a's element type; index: int64 (E,); ptr: int64 (S + 1);
    bounds: int64 chunks of segments, the work items; slope: float; out: (E, H). storage: literal code.
    """
    heads = a.shape[1]
    channels = a.shape[2]
    width = heads * channels
    row = acc_buffer(storage, a, width)  # b[s], widened once per segment
    w = acc_buffer(storage, a, width + 1)  # att, then the slope in the accumulator type
    for h in range(heads):
        for j in range(channels):
            w[h * channels + j] = load(storage, att[h, j])
    w[width] = slope
    negative = w[width]
    zero = identity(SUM, w)
    while True:
        c = claim(counter)
        if c < 0:
            break
        for s in range(bounds[c], bounds[c + 1]):
            lo = ptr[s]
            hi = ptr[s + 1]
            if lo == hi:
                continue
            for h in range(heads):
                for j in range(channels):
                    row[h * channels + j] = load(storage, b[s, h, j])
            for k in range(lo, hi):
                r = index[k]
                for h in range(heads):
                    at = h * channels
                    total = zero
                    for j in range(channels):
                        z = load(storage, a[r, h, j]) + row[at + j]
                        total += w[at + j] * (z if z > zero else z * negative)
                    out[k, h] = store(storage, total)
    return 0


@njit(cache=True, nogil=True, error_model="numpy")
def gatv2_grad_kernel(counter, seg, other, att, index, ptr, bounds, grad, slope, out, att_part, want_att, storage):
    """out[s, h, c] = att[h, c] * sum over k in segment s of grad[k, h] * leaky_relu'(z), z = seg[s, h, c] +
    other[index[k], h, c]; with want_att, att_part[chunk, h, c] += grad[k, h] * leaky_relu(z) over the chunk's
    segments.

    seg: (S, H, C); other: (No, H, C); att: (H, C); grad: (E, H), all one element type; index: int64 (E,);
    ptr: int64 (S + 1); bounds: int64 chunks, the work items; out: (S, H, C); att_part: (chunks, H, C) of the
    accumulator type, zeroed by the caller. storage: literal code.
    """
    heads = seg.shape[1]
    channels = seg.shape[2]
    width = heads * channels
    row = acc_buffer(storage, seg, width)
    acc = acc_buffer(storage, seg, width + 1)
    acc[width] = slope
    negative = acc[width]
    zero = identity(SUM, acc)
    while True:
        c = claim(counter)
        if c < 0:
            break
        for s in range(bounds[c], bounds[c + 1]):
            for f in range(width):
                acc[f] = zero
            lo = ptr[s]
            hi = ptr[s + 1]
            if lo < hi:
                for h in range(heads):
                    for j in range(channels):
                        row[h * channels + j] = load(storage, seg[s, h, j])
            for k in range(lo, hi):
                r = index[k]
                for h in range(heads):
                    g = load(storage, grad[k, h])
                    g_negative = g * negative
                    at = h * channels
                    if want_att:
                        for j in range(channels):
                            z = load(storage, other[r, h, j]) + row[at + j]
                            d = g if z > zero else g_negative
                            acc[at + j] += d
                            att_part[c, h, j] += d * z
                    else:
                        for j in range(channels):
                            z = load(storage, other[r, h, j]) + row[at + j]
                            acc[at + j] += g if z > zero else g_negative
            if lo == hi:  # no edge: 0, not 0 * att (NaN for an infinite att)
                for h in range(heads):
                    for j in range(channels):
                        out[s, h, j] = 0
                continue
            for h in range(heads):
                for j in range(channels):
                    out[s, h, j] = store(storage, acc[h * channels + j] * load(storage, att[h, j]))
    return 0


gatv2_logits = Kernel(gatv2_logits_kernel, literal=("storage",))
gatv2_grad = Kernel(gatv2_grad_kernel, literal=("storage",))
