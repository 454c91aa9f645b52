"""Kernels written to fail ``scatterx gpu-report``'s code checks, so that ``test_gpu_static.py`` sees each check
catch what it is for in code Triton really generated (not only in hand-written PTX)."""

import triton
import triton.language as tl


@triton.jit
def careless_kernel(src, index, out, n, inner, BLOCK: tl.constexpr):
    """32-bit offsets (``pid * inner`` in i32), an atomic, and a 64-bit division in a loop."""
    pid = tl.program_id(0)
    offsets = pid * inner + tl.arange(0, BLOCK)
    x = tl.load(src + offsets, mask=offsets < n)
    total = tl.zeros([BLOCK], tl.int64)
    for k in range(n):
        total += tl.load(index + k).to(tl.int64) // (k + inner).to(tl.int64)
    tl.atomic_add(out + offsets, x + total.to(x.dtype), mask=offsets < n)


CARELESS = dict(
    kernel=f"{__name__}.careless_kernel",
    name="careless_kernel",
    params=[["src", "*fp32"], ["index", "*i64"], ["out", "*fp32"], ["n", "i32"], ["inner", "i32"]],
    constexprs=[["BLOCK", 128]],
    aligned=["inner"],
)
