"""Backends: where checked arguments become kernel launches.

``backends/cpu/`` (Numba) and ``backends/gpu/`` (Triton) have the same functions with the same signatures;
the op layer never asks which one it has, it calls ``backend_for(tensor).<function>``. Each side is one module per
op family, named after the op (``backends/cpu/segment_softmax.py`` <-> ``backends/gpu/segment_softmax.py``), whose
``__all__`` names the functions it offers: the CSR helpers of ``segments.py`` (``output_size``, ``check_index``,
``check_ptr``, ``index_to_ptr``, ``segments``), an op's forward and the kernels of its gradient. Each package
exports exactly those (``_interface.py``; ``INTERFACE`` lists them).

Value checks raise a Python exception at once on the CPU; on the GPU they are device-side asserts (no host sync),
which the kernels survive (they mask every address) until the assert is reported.
"""

from __future__ import annotations

import contextlib
import types

import torch

from ..kernels.gpu import interpreting
from . import cpu

_GPU_ON_CPU = False  # forced by tests: the GPU backend for CPU tensors, through Triton's interpreter


def backend_for(t: torch.Tensor) -> types.ModuleType:
    """The backend that runs ops on ``t``'s device: ``backends.gpu`` for CUDA tensors, else ``backends.cpu``."""
    if t.is_cuda or _GPU_ON_CPU:
        from . import gpu  # imports triton, an optional dependency

        return gpu
    return cpu


def is_gpu(t: torch.Tensor) -> bool:
    """Whether ``t``'s ops run on the GPU backend (whose ops trace under torch.compile)."""
    return t.is_cuda or _GPU_ON_CPU


@contextlib.contextmanager
def gpu_backend_on_cpu():
    """For tests: CPU tensors run on the GPU backend's Triton kernels (needs ``TRITON_INTERPRET=1``, which makes
    Triton run its kernels in Python on CPU tensors)."""
    global _GPU_ON_CPU  # noqa: PLW0603  # read on every dispatch: a plain module flag is the cheapest read
    if not interpreting():
        raise RuntimeError("Triton kernels run on CPU tensors only under TRITON_INTERPRET=1")
    before, _GPU_ON_CPU = _GPU_ON_CPU, True
    try:
        yield
    finally:
        _GPU_ON_CPU = before
