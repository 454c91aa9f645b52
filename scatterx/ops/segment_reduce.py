"""``segment_reduce`` over CSR offsets, and the conversions between a sorted index and CSR offsets
(``index_to_ptr``, ``ptr_to_index``). The op ``scatterx::segment_reduce`` runs the very kernel of the sorted path
of ``index_scatter_reduce``; its gradient is that of ``index_scatter_reduce`` with the index ``ptr`` describes."""

from __future__ import annotations

import torch
from torch import Tensor

from .._reductions import resolve
from ..backends import backend_for
from . import _backward
from ._checks import check_index_and_size, check_integer_vector, check_src, check_tensor, normalize_dim
from ._library import define_op, needs_op, register_autograd
from ._segments import segment_of_entries
from .index_scatter_reduce import index_scatter_reduce_backward_op, index_scatter_reduce_op


def segment_reduce(src: torch.Tensor, ptr: torch.Tensor, reduce: str = "sum", dim: int = 0) -> torch.Tensor:
    """Reduce ``src`` along ``dim`` over the CSR segments ``ptr``: segment ``s`` covers ``ptr[s]:ptr[s+1]``.

    The segments are contiguous runs of slices, as a sorted index with an entry per slice gives them
    (:func:`scatterx.index_to_ptr` converts one): ``segment_reduce(src, index_to_ptr(index, n))`` equals
    ``index_scatter_reduce(0, index, src, dim_size=n)`` -- it runs the very kernel of that sorted path.
    Differentiable w.r.t. ``src``, for every reduction (double backward included).

    Args:
        src: float32/float64/float16/bfloat16/int32/int64 tensor of any shape (a 0-d one is one slice).
        ptr: 1-D int32/int64 CSR offsets: ``num_segments + 1`` non-decreasing entries with ``ptr[0] == 0`` and
            ``ptr[-1] == src.size(dim)``.
        reduce: ``"sum"``, ``"mean"``, ``"prod"``, ``"amax"``, ``"amin"`` (aliases add, mul, max, min).
        dim: the dimension of ``src`` the segments run along (negative counts from the end).

    Returns:
        A new tensor of ``src``'s dtype, device and shape, but ``num_segments`` (``ptr.numel() - 1``) along
        ``dim``. Empty segments give 0.

    Raises:
        TypeError: ``src`` or ``ptr`` is not a tensor; ``src`` has another dtype (bool, int8, complex, ...);
            ``ptr`` is not int32/int64; ``dim`` is not an int.
        ValueError: ``reduce`` is unknown; ``ptr`` is not 1-D, is empty, does not start at 0, does not end at
            ``src.size(dim)``, or decreases; ``ptr`` is on another device than ``src``.
        IndexError: ``dim`` is out of range.
        NotImplementedError: ``src`` is on a device other than the CPU and CUDA, or on CUDA without Triton.

    Example:
        >>> segment_reduce(torch.tensor([1., 2., 3.]), torch.tensor([0, 2, 2, 3]))
        tensor([3., 0., 3.])
        >>> segment_reduce(torch.tensor([[1., 2., 3.]]), torch.tensor([0, 1, 3]), "amax", dim=1)
        tensor([[1., 3.]])
    """
    red, src, ptr, dim = _checked(src, ptr, reduce, dim)
    if not needs_op(src):
        return _forward(src, ptr, red.name, dim)
    return segment_reduce_differentiable(src, ptr, red.name, dim)


def _checked(src, ptr, reduce, dim):
    """The checks that read no values: ``(reduction, src, ptr, dim >= 0)``, a 0-d ``src`` seen as one slice."""
    red = resolve(reduce)
    check_src(src)
    check_tensor(ptr, "ptr")
    src = src.view(1) if src.dim() == 0 else src
    dim = normalize_dim(dim, src.dim())
    return red, src, check_integer_vector(ptr, "ptr", src), dim


def _forward(src: Tensor, ptr: Tensor, reduce: str, dim: int) -> Tensor:
    """What ``torch.ops.scatterx.segment_reduce`` runs: every check (``ptr``'s values included), then the kernel."""
    red, src, ptr, dim = _checked(src, ptr, reduce, dim)
    backend = backend_for(src)
    ptr = backend.check_ptr(ptr, src.size(dim), f"src.size({dim})")
    return backend.segment_reduce(src, ptr, dim, red)


def _fake(src, ptr, reduce, dim):
    shape = list(src.shape) or [1]
    shape[dim % len(shape)] = ptr.size(0) - 1
    return src.new_empty(shape)


segment_reduce_op = define_op("segment_reduce", _forward, _fake)


def _setup_context(ctx, inputs, output):
    src, ptr, reduce, dim = inputs
    ctx.given_shape = tuple(src.shape)
    src = src.view(1) if src.dim() == 0 else src
    ctx.dim = dim % src.dim()
    ctx.red = resolve(reduce)
    ctx.src_shape = tuple(src.shape)
    if ctx.red.linear:  # sum/mean need src's shape only
        src, output = src.new_empty(0), output.new_empty(0)
    ctx.save_for_backward(src, ptr, output)


def _autograd_backward(ctx, grad):
    """The gradient of index_scatter_reduce (no out) with the index that ``ptr`` describes."""
    src, ptr, result = ctx.saved_tensors
    index = segment_of_entries(ptr, ctx.src_shape[ctx.dim])
    if ctx.red.linear:
        grad_src, _ = _backward.linear_backward(grad, ctx.src_shape, index, None, ctx.dim, ctx.red.name, False)
    elif torch.is_grad_enabled():  # create_graph=True: differentiable ops (see index_scatter_reduce)
        grad_src, _ = _backward.nonlinear_backward(
            grad,
            src,
            index,
            result,
            None,
            ctx.dim,
            ctx.red.name,
            True,
            False,
            False,
            graph=True,
            reduce_op=index_scatter_reduce_op,
        )
    else:
        grad_src, _ = index_scatter_reduce_backward_op(
            grad, src, index, result, None, ctx.dim, ctx.red.name, True, False, False
        )
    return grad_src.reshape(ctx.given_shape), None, None, None


segment_reduce_differentiable = register_autograd(segment_reduce_op, _forward, _autograd_backward, _setup_context)


# ------------------------------------------------------------------------------------------------ conversions
def index_to_ptr(index: torch.Tensor, dim_size: int) -> torch.Tensor:
    """The CSR offsets of a sorted (non-decreasing) index: ``ptr[s]`` is the number of entries below ``s``.

    Segment ``s`` of the result covers the positions holding ``s``, ``ptr[s]:ptr[s+1]``: what
    :func:`scatterx.segment_reduce` takes. :func:`scatterx.ptr_to_index` is the inverse.

    Args:
        index: 1-D int32/int64, non-decreasing, entries in ``[0, dim_size)``.
        dim_size: the number of segments, an int >= 0 (entries above ``index``'s last are empty segments).

    Returns:
        A new 1-D int64 tensor of ``dim_size + 1`` entries on ``index``'s device, from 0 to ``index.numel()``.

    Raises:
        TypeError: ``index`` is not a tensor or not int32/int64; ``dim_size`` is not an int (None included).
        ValueError: ``index`` is not 1-D or not sorted; ``dim_size`` is negative or beyond 64-bit sizes.
        IndexError: an entry of ``index`` is negative or not below ``dim_size``.
        MemoryError: ``dim_size + 1`` offsets would not fit in the device's free memory.

    Example:
        >>> index_to_ptr(torch.tensor([0, 0, 2]), 4)
        tensor([0, 2, 2, 3, 3])
    """
    if torch.compiler.is_compiling():  # one op in the graph: its checks read the index's values when it runs
        index, dim_size = check_index_and_size(index, dim_size, "dim_size")  # (and these raise while tracing)
        return index_to_ptr_op(index, dim_size)
    return _index_to_ptr(index, dim_size)


def ptr_to_index(ptr: torch.Tensor) -> torch.Tensor:
    """The sorted index that CSR offsets describe: segment ``s`` repeated ``ptr[s+1] - ptr[s]`` times.

    The inverse of :func:`scatterx.index_to_ptr` (``ptr_to_index(index_to_ptr(index, n))`` is ``index``).

    Args:
        ptr: 1-D int32/int64 CSR offsets: non-decreasing, starting at 0.

    Returns:
        A new 1-D int64 tensor of ``ptr[-1]`` entries on ``ptr``'s device, non-decreasing, entries in
        ``[0, ptr.numel() - 1)``.

    Raises:
        TypeError: ``ptr`` is not a tensor or not int32/int64.
        ValueError: ``ptr`` is not 1-D, is empty or does not start at 0, or decreases.

    Example:
        >>> ptr_to_index(torch.tensor([0, 2, 2, 3]))
        tensor([0, 0, 2])
    """
    if torch.compiler.is_compiling():  # one op in the graph, of a length read from ptr when it runs
        return ptr_to_index_op(check_integer_vector(check_tensor(ptr, "ptr"), "ptr", ptr))
    return _ptr_to_index(ptr)


def _index_to_ptr(index: Tensor, dim_size: int) -> Tensor:
    """The conversion with its checks (the op runs it, and may be called directly)."""
    index, dim_size = check_index_and_size(index, dim_size, "dim_size")
    return backend_for(index).index_to_ptr(
        index, dim_size, unsorted_hint="index_to_ptr needs a sorted (non-decreasing) index; sort it first"
    )


def _ptr_to_index(ptr: Tensor) -> Tensor:
    """The conversion with its checks (the op runs it, and may be called directly)."""
    ptr = check_integer_vector(check_tensor(ptr, "ptr"), "ptr", ptr)
    if ptr.numel() == 0 or int(ptr[0]) != 0:
        raise ValueError(f"ptr must start at 0, got {ptr[:1].tolist()}")
    counts = ptr[1:] - ptr[:-1]
    if bool((counts < 0).any()):
        i = int(torch.nonzero(counts < 0)[0]) + 1
        raise ValueError(f"ptr must be non-decreasing: ptr[{i}]={int(ptr[i])} < ptr[{i - 1}]={int(ptr[i - 1])}")
    return torch.repeat_interleave(torch.arange(counts.numel(), device=ptr.device), counts.to(torch.int64))


# The conversions as ops, for ``torch.compile`` and ``torch.export``: their checks read the values, and
# ptr_to_index's length is ptr's last entry, which a traced graph cannot know. Opaque ops on every device (no
# kernel of theirs is worth showing to Inductor); eager calls skip the op's dispatch.
index_to_ptr_op = torch.library.custom_op(
    "scatterx::index_to_ptr", _index_to_ptr, mutates_args=(), schema="(Tensor index, SymInt dim_size) -> Tensor"
)
ptr_to_index_op = torch.library.custom_op(
    "scatterx::ptr_to_index", _ptr_to_index, mutates_args=(), schema="(Tensor ptr) -> Tensor"
)


@index_to_ptr_op.register_fake
def _index_to_ptr_fake(index: Tensor, dim_size: int) -> Tensor:
    return index.new_empty(dim_size + 1, dtype=torch.int64)


@ptr_to_index_op.register_fake
def _ptr_to_index_fake(ptr: Tensor) -> Tensor:
    return ptr.new_empty(torch.library.get_ctx().new_dynamic_size(), dtype=torch.int64)
