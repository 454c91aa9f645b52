"""Direct calls of the CPU kernels for the kernel tests, and the segment kernel as their common oracle: the routes
of ``index_scatter_reduce`` must give its bits (``kernels/cpu/segment_reduce.py``, itself checked against loops)."""

import contextlib

import numpy as np
import pytest
import torch

from scatterx._reductions import BY_NAME
from scatterx.backends.cpu import routes
from scatterx.kernels.cpu import launch, numpy_view, storage_code
from scatterx.kernels.cpu._memory import STREAM_ALIGN
from scatterx.kernels.cpu.segment_reduce import segment_reduce

SENTINEL = 7


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns, so that -0.0 and NaN payloads compare exactly."""
    if t.dtype.is_floating_point:
        return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])
    return t


def ptr_of(index: torch.Tensor, num_targets: int) -> torch.Tensor:
    """CSR offsets of the (sorted) targets in ``index``."""
    ptr = torch.zeros(num_targets + 1, dtype=torch.int64)
    ptr[1:] = torch.bincount(index.long(), minlength=num_targets).cumsum(0)
    return ptr


def guarded(shape, dtype, align: bool = False):
    """``(out, intact)``: an output filled with ``SENTINEL`` inside a larger buffer (64-byte aligned with
    ``align``), and a function telling whether the buffer around it is still untouched."""
    size = int(np.prod(shape))
    itemsize = torch.empty((), dtype=dtype).element_size()
    per_block = STREAM_ALIGN // itemsize
    buffer = torch.full((size + 4 * per_block,), SENTINEL, dtype=dtype)
    skip = per_block
    if align:
        skip = next(
            k for k in range(per_block, 2 * per_block) if (buffer.data_ptr() + k * itemsize) % STREAM_ALIGN == 0
        )
    out = buffer[skip : skip + size].view(shape)
    return out, lambda: bool((buffer[:skip] == SENTINEL).all()) and bool((buffer[skip + size :] == SENTINEL).all())


def segment_kernel(
    src3, index, num_targets, reduce, base=None, include_self=False, gather=False, stream=False, out=None, threads=1
):
    """The segment kernel on a 3-D ``src`` grouped by ``index`` (sorted; or any order with ``gather``: rows then
    read through its stable sort) -- one chunk of segments per outer slice. Empty targets 0 without ``base``."""
    outer, _, inner = src3.shape
    if gather:
        order = torch.sort(index, stable=True)
        ptr, perm = ptr_of(order.values, num_targets), order.indices.numpy()
    else:
        ptr, perm = ptr_of(index, num_targets), np.empty(0, np.int64)
    if out is None:
        out = torch.full((outer, num_targets, inner), SENTINEL, dtype=src3.dtype)
    fill_empty = base is None
    initial = out if base is None else base
    launch(
        segment_reduce,
        None,
        outer,
        threads,
        numpy_view(src3.contiguous()),
        perm,
        ptr.numpy(),
        np.array([0, num_targets]),
        numpy_view(initial),
        numpy_view(out),
        reduce=BY_NAME[reduce].code,
        storage=storage_code(src3.dtype),
        gather=gather,
        include_self=include_self and not fill_empty,
        fill_empty=fill_empty,
        lookahead=8,
        stream=stream,
    )
    return out


@contextlib.contextmanager
def on_threads(threads: int):
    """Within the block the CPU backend runs its kernels on ``threads`` threads even on tiny inputs, its segments
    split into many small chunks (work items): every boundary is exercised on small problems."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with routes.tuned(parallel_min_elements=0, reduce_parallel_min_elements=0, chunks_per_thread=3):
            yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def on_gpu_backend():
    """Within the block, the GPU backend's functions run: on CUDA tensors, or on CPU tensors through Triton's
    interpreter (small shapes there: it runs every program in Python)."""
    from scatterx.backends import gpu, gpu_backend_on_cpu

    if torch.cuda.is_available():
        yield gpu, "cuda"
    else:
        import interpreter_probe

        if interpreter_probe.problem():
            pytest.skip(interpreter_probe.problem())
        with gpu_backend_on_cpu():
            yield gpu, "cpu"


def ties_by_definition(grad, src, index, result, base, count_base):
    """(grad_src, ties) of amax/amin over dim 1 of 3-D tensors, by definition."""
    grad_src = torch.zeros(src.shape, dtype=torch.float64)
    ties = torch.zeros(result.shape, dtype=torch.float64)
    for o in range(src.size(0)):
        for t in range(result.size(1)):
            for j in range(src.size(2)):
                members = [i for i in range(index.numel()) if index[i] == t and src[o, i, j] == result[o, t, j]]
                count = len(members) + int(count_base and base is not None and base[o, t, j] == result[o, t, j])
                ties[o, t, j] = count
                for i in members:
                    grad_src[o, i, j] = grad[o, t, j].double() / count
    return grad_src, ties
