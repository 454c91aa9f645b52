"""CPU kernels (Numba, parallel). Everything here trusts its inputs: validation happens in ``scatterx.ops``."""

from __future__ import annotations

import numba
import torch

from ._codegen import BF16, F16, NATIVE

_STORAGE = {torch.float16: F16, torch.bfloat16: BF16}


def numpy_view(t: torch.Tensor):
    """Zero-copy NumPy view of a contiguous CPU tensor; half types are viewed as int16 bits."""
    if t.dtype in _STORAGE:
        t = t.view(torch.int16)
    return t.detach().numpy()


def storage_code(dtype: torch.dtype) -> int:
    return _STORAGE.get(dtype, NATIVE)


def use_torch_threads() -> int:
    """Run Numba's parallel regions on as many threads as torch uses (never more: no oversubscription)."""
    n = max(1, min(torch.get_num_threads(), numba.config.NUMBA_NUM_THREADS))
    if numba.get_num_threads() != n:
        numba.set_num_threads(n)
    return n
