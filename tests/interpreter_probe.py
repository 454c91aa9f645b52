"""Whether Triton's interpreter runs our kind of kernel right, which the GPU backend's tests on CPU need. Seen
(docs/guide/gpu.md): Triton 3.0's interpreter adds pointers and offsets with NumPy 1's value-based casting (NumPy 2
makes the sum a float: garbage addresses); 3.4 to 3.6 make Python ints of 1-element arrays, which NumPy 2.4
refuses; 3.6 cannot take a bool argument (the kernels' run-time flags). A GPU does not use the interpreter, so
only these tests care: where the probe below comes out wrong they are skipped, with the reason."""

import functools
from typing import Optional

import numpy as np
import torch
import triton
import triton.language as tl


@triton.jit
def _segment_sums(x, ptr, out, negate, BLOCK: tl.constexpr):
    s = tl.program_id(0).to(tl.int64)
    start = tl.load(ptr + s)
    end = tl.load(ptr + s + 1)
    acc = tl.zeros([BLOCK], tl.float32)
    for e0 in range(start, end, BLOCK):  # bounds read from memory: a loop the interpreter runs in Python
        e = e0 + tl.arange(0, BLOCK)
        acc += tl.load(x + e, mask=e < end, other=0.0)
    total = tl.sum(acc, axis=0)
    tl.store(out + s, tl.where(negate, -total, total))  # a run-time flag, as the kernels take theirs


@functools.cache
def problem() -> Optional[str]:
    """None where the interpreter sums three segments right; else why the interpreted tests cannot run."""
    x = torch.arange(10, dtype=torch.float32)
    ptr = torch.tensor([0, 3, 3, 10])
    out = torch.full((3,), -1.0)
    try:
        _segment_sums[(3,)](x, ptr, out, False, BLOCK=4)
        ok = out.tolist() == [3.0, 0.0, 42.0]
        why = f"it summed [0, 1, 2], [] and [3 .. 9] to {out.tolist()}"
    except Exception as e:
        ok, why = False, f"{type(e).__name__}: {e}"
    if ok:
        return None
    return (
        f"Triton {triton.__version__}'s interpreter does not run kernels right with NumPy {np.__version__} "
        f"({why}); the GPU backend's tests on CPU need another Triton or NumPy (docs/guide/gpu.md), or a GPU"
    )
