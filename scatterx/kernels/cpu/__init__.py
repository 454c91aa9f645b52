"""CPU kernels (Numba). Everything here trusts its inputs: validation happens in ``scatterx.ops`` and the backend.

One module per op family (named after the op, as in ``ops/`` and ``backends/cpu/``); ``_codegen.py`` turns the
reduction table into the kernels' steps, ``_memory.py`` holds the memory intrinsics, ``_runs.py`` the loop over a
sorted index's runs that two kernels share, ``launcher.py`` runs a kernel on several threads (on torch's OpenMP
team, ``openmp.py``, or a pool of Python threads); ``launch_probe.py`` holds the two kernels that time a launch.
"""

from __future__ import annotations

import torch

from ._codegen import BF16, F16, NATIVE
from .launcher import launch

_STORAGE = {torch.float16: F16, torch.bfloat16: BF16}


def numpy_view(t: torch.Tensor):
    """Zero-copy NumPy view of a contiguous CPU tensor; half types are viewed as int16 bits. A view with torch's
    negative bit (``x.conj().imag``), whose memory holds its values' negatives, is read through a resolved copy:
    the backends write only into tensors they allocated, or into a user's ``out`` through torch's ``copy_``."""
    if t.is_neg():
        t = t.resolve_neg()
    if t.dtype in _STORAGE:
        t = t.view(torch.int16)
    return (t.detach() if t.requires_grad else t).numpy()  # (detach makes a tensor: docs/decisions/small-calls.md)


def storage_code(dtype: torch.dtype) -> int:
    return _STORAGE.get(dtype, NATIVE)


__all__ = ["BF16", "F16", "NATIVE", "launch", "numpy_view", "storage_code"]
