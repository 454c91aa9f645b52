"""Numba CPU kernel for SDDMM: a value per edge from its two end rows, the edge-wise form of a sampled
dense-dense product.

Arrays are C-contiguous views with the heads split out: rows ``(N, H, C)``. Segment ``s`` covers the edges
``ptr[s]:ptr[s+1]``; edge ``k`` reads row ``index[k]`` of ``a`` and row ``s`` of ``b``::

    add:  out[k, h, c] = a[index[k], h, c] + b[s, h, c]
    mul:  out[k, h, c] = a[index[k], h, c] * b[s, h, c]
    dot:  out[k, h, 0] = sum_c a[index[k], h, c] * b[s, h, c]

It computes attention logits and the weight gradient of the weighted gather-segment reduce
(``grad_weight = sddmm(src, grad_out, "dot")``). Half types are widened to float32 on load and rounded once on
store. Work items are chunks of segments (``segments.balanced_bounds``); each edge is computed by one thread in a
fixed order, so results do not depend on the thread count. No bounds checks: the op layer validated everything.
"""

from __future__ import annotations

from numba import njit

from ..._reductions import BY_NAME
from ._codegen import Kernel, acc_buffer, claim, identity, load, store

SUM = BY_NAME["sum"].code

#: SDDMM's ops: ``a[source] + b[target]``, ``a[source] * b[target]``, and the dot product over the last dim.
SDDMM_OPS = {"add": 0, "mul": 1, "dot": 2}


# reassoc: the dot product's sum may be reordered, so that it vectorises (a chain of dependent adds is 4 cycles a
# channel: docs/decisions/message-passing.md). NaN and inf keep their IEEE meaning (no nnan/ninf), and the order
# is fixed at compile time: results are reproducible.
@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def sddmm_kernel(counter, a, b, index, ptr, bounds, out, op, storage):
    """Per edge k of segment s: out[k] = a[index[k]] op b[s] (add, mul: (E, H, C)) or their dot product over
    the channels (dot: out (E, H, 1)).

    a: (Na, H, C); b: (S, H, C), a's element type; index: int64 (E,); ptr: int64 (S + 1); bounds: int64 chunks
    of segments, the work items. op: ``SDDMM_OPS``; storage: literal code (``_codegen``).
    """
    heads = a.shape[1]
    channels = a.shape[2]
    zero = identity(SUM, acc_buffer(storage, a, 0))
    while True:
        c = claim(counter)
        if c < 0:
            break
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
    return 0


sddmm = Kernel(sddmm_kernel, literal=("storage",))
