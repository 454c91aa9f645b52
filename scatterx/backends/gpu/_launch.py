"""What the GPU backend's modules share: ``wrap_triton`` (so that the launches trace under ``torch.compile``),
Triton's names for torch dtypes, and ``cdiv``."""

from __future__ import annotations

import torch
import triton.language as tl

try:
    from torch.library import wrap_triton
except ImportError:  # torch < 2.6: no triton_op either (ops/_library.py), so a plain launch is what runs

    def wrap_triton(kernel):
        return kernel


TL_DTYPE = {
    torch.float32: tl.float32, torch.float64: tl.float64, torch.float16: tl.float16,
    torch.bfloat16: tl.bfloat16, torch.int32: tl.int32, torch.int64: tl.int64,
}


def cdiv(a: int, b: int) -> int:
    return -(-a // b)
