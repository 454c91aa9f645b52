"""Backends: where checked arguments become kernel launches.

``backends/cpu/`` (Numba) and ``backends/gpu/`` (Triton) have the same functions with the same signatures;
the op layer never asks which one it has, it calls ``backend_for(tensor).<function>``:

=================================  ==============================================================================
``output_size``                    ``index.max() + 1`` read on the host (no ``dim_size`` given), and whether that read
                                   validated the index
``check_index``                    every entry in ``[0, size)``
``check_ptr``                      CSR offsets from 0 to a length, non-decreasing
``index_to_ptr``                   CSR offsets of a sorted index, validated
``segments``                       ``(ptr, perm)`` of any index, validated (``perm``: a stable sort, None if sorted)
``index_scatter_reduce``           the core op: sorted, unsorted (each backend picks its strategy), into ``out`` or new
``small_index_scatter_reduce``     the core op for a small call, by the cheapest route, or None (then the general path)
``segment_reduce``                 reduce over CSR segments
``segment_arg_reduce``             amax/amin over CSR segments with the row of the selected member (torch_scatter's)
``segment_logsumexp``              ``top + log(sum exp(x - top) + eps)`` over CSR segments (torch_scatter's rules)
``gather_segment_reduce``          reduce rows named by a gather list over CSR segments
``weighted_gather_segment_reduce`` the same of rows scaled by per-entry (per-head) weights
``sddmm``                          a value per edge from its two end rows (add, mul, dot)
``gatv2_logits``                   GATv2's attention logit per edge, from its two end rows and ``att``
``gatv2_grad``                     its gradient for one end's rows (and ``att``), by segments of that end
``tie_backward``                   amax/amin gradient split among ties
``csr_transpose``                  a CSR structure read the other way
``element_scatter``                the planner's element plans: along a dim or by coordinates, from the caller's index
``element_gather``                 their gathers (no autograd)
``segment_softmax``                softmax within segments
``segment_softmax_backward``       its gradient
=================================  ==============================================================================

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
