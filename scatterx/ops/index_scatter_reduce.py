"""``index_scatter_reduce``: reduce slices of ``src`` along ``dim`` into the output slices a 1-D index names.

The public function, its argument checks, and the ops ``scatterx::index_scatter_reduce`` (functional: ``base``, the
values of the user's ``out``, is read, never written) and ``scatterx::index_scatter_reduce_backward`` (the kernels
behind the prod/amax/amin gradient), with their fakes and autograd. The formulas are in ``_backward.py``.

Why this module is long: the core op has two public entry points (the 1-D-index call and the ``out=``/``base``
form the frontends use), a fast path for small calls that must agree with the op on every check, and a backward op
of its own; they share one set of checks, kept in one file so that none of them can drift from the others.
"""

from __future__ import annotations

import math
from typing import Optional, Tuple

import torch
from torch import Tensor

from .._reductions import REDUCTIONS_BY_ALIAS, Reduction, resolve
from ..backends import backend_for
from . import _backward
from ._checks import (
    check_allocation,
    check_integer_vector,
    check_out,
    check_size,
    check_src,
    check_tensor,
    forward_ad_active,
    functorch_active,
    normalize_dim,
    traced_size,
)
from ._library import define_op, needs_op, register_autograd


def index_scatter_reduce(
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor,
    reduce: str = "sum",
    sorted: bool = True,
    *,
    dim_size: Optional[int] = None,
    out: Optional[torch.Tensor] = None,
    include_self: bool = True,
) -> torch.Tensor:
    """Reduce the slices of ``src`` along ``dim`` into the output slices that ``index`` names.

    ``dst[index[i]] (+)= src[i]`` along ``dim``, for the first ``index.numel()`` slices of ``src``; for ``dim=0``,
    ``dst[index[i], ...] (+)= src[i, ...]`` -- the scatter of a graph's edge messages into their target nodes. These
    are the semantics of ``torch.Tensor.index_reduce_`` (with ``out``) and of ``torch_scatter.scatter``.

    A 0-d ``index``, ``src`` or ``out`` counts as one slice along dim 0, as in ``torch.index_add``. Integer sums wrap
    and integer means round down as torch's do; amax/amin propagate NaN as torch's do. Differentiable w.r.t.
    ``src`` and ``out``'s values, for every reduction (double backward included): amax/amin split the gradient
    evenly among the members equal to the result (where it is NaN, the NaN members), ``out``'s own value among them
    only with ``include_self=True``.
    Every argument is checked before anything is written: after a failed call ``out`` is exactly as it was.

    Args:
        dim: the dimension of ``src`` that ``index`` runs along (negative counts from the end).
        index: 1-D int32/int64, ``index.numel() <= src.size(dim)``; non-decreasing when ``sorted=True``.
            (A 0-d index is one entry, as in ``torch.index_add``.)
        src: float32/float64/float16/bfloat16/int32/int64 tensor of any shape and strides (a 0-d one is one
            slice along dim 0). Half types are accumulated in float32.
        reduce: ``"sum"``, ``"mean"``, ``"prod"``, ``"amax"``, ``"amin"`` (aliases add, mul, max, min).
        sorted: promise that ``index`` is non-decreasing (checked): contiguous segments, the fastest path.
            ``sorted=False`` accepts any order.
        dim_size: size of the output along ``dim``; default ``out.size(dim)``, else ``index.max() + 1``
            (the last element for a sorted index). Passing it spares a read of the index (a host sync on the GPU,
            a graph break under ``torch.compile``).
        out: reduce into this tensor in place and return it (same dtype and device as ``src``, same shape but
            along ``dim``). Its rows that receive nothing keep their values.
        include_self: with ``out``, whether its values take part (mean counts them); ``False`` reduces ``src``'s
            values only. Ignored without ``out``.

    Returns:
        A new tensor of ``src``'s dtype, device and shape, but ``dim_size`` along ``dim``, whose rows that receive
        nothing are 0 -- or, with ``out``, ``out`` itself, written in place.

    Raises:
        TypeError: ``index``, ``src`` or ``out`` is not a tensor (a list or a NumPy array is not); ``index`` is not
            int32/int64; ``src`` has another dtype (bool, int8, complex, ...); ``out``'s dtype differs from
            ``src``'s; ``dim`` or ``dim_size`` is not an int; ``sorted`` or ``include_self`` is not a bool.
        ValueError: ``reduce`` is unknown; ``index`` is not 1-D or is longer than ``src.size(dim)``; ``sorted=True``
            but ``index`` decreases somewhere (the message says to pass ``sorted=False``); ``dim_size`` is negative,
            beyond 64-bit sizes, or disagrees with ``out.size(dim)``; ``out`` has the wrong shape; ``index`` or
            ``out`` is on another device than ``src``.
        IndexError: ``dim`` is out of range; an entry of ``index`` is negative or not below the output size.
        MemoryError: the output would not fit in the device's free memory (a huge ``dim_size``, or a huge index
            value without ``dim_size``); the message names the size and where it came from.
        NotImplementedError: ``src`` is on a device other than the CPU and CUDA, or on CUDA without Triton.

    Example:
        >>> index = torch.tensor([0, 0, 2])
        >>> src = torch.tensor([1., 2., 3.])
        >>> index_scatter_reduce(0, index, src)
        tensor([3., 0., 3.])
        >>> index_scatter_reduce(0, index, src, "amax", dim_size=4)
        tensor([2., 0., 3., 0.])
        >>> index_scatter_reduce(1, torch.tensor([1, 0, 1]), torch.tensor([[1., 2., 3.]]), "mean", sorted=False)
        tensor([[2., 2.]])
        >>> out = torch.tensor([10., 10., 10.])
        >>> index_scatter_reduce(0, index, src, "amin", out=out, include_self=False)
        tensor([ 1., 10.,  3.])
        >>> out
        tensor([ 1., 10.,  3.])
    """
    if not isinstance(sorted, bool):
        raise TypeError(f"sorted must be a bool, got {type(sorted).__name__}")
    if not isinstance(include_self, bool):
        raise TypeError(f"include_self must be a bool, got {type(include_self).__name__}")
    if out is None and type(src) is Tensor and type(index) is Tensor:
        if src.requires_grad and torch.is_grad_enabled() and not torch.compiler.is_compiling():
            # the eager autograd twin takes the caller's arguments: its forward (``_forward``) checks them, and
            # takes the serial kernel for a small call, as below
            return index_scatter_reduce_differentiable.eager(
                src, index, dim, reduce, sorted, dim_size, None, True, False
            )
        result = _small_call(dim, index, src, reduce, sorted, dim_size)
        if result is not None:
            return result
    call = _Call(dim, index, src, reduce, sorted, dim_size, out)
    if not needs_op(call.src, out) and not (out is not None and not torch.compiler.is_compiling() and out.is_neg()):
        # the kernels, called directly: no copy of out and of the result (the op is functional), and no
        # first-call import of torch._dynamo (~1.5 s) that torch's custom-op machinery does
        result = call.run(out=call.out, include_self=include_self)
        return result if out is None else out
    # the op reads out's values (base) and may save them for backward: give it a copy, since out is then
    # overwritten with the result
    base = None if out is None else call.out.clone()
    result = index_scatter_reduce_differentiable(
        call.src, call.index, call.dim, call.red.name, sorted, call.num_segments, base, include_self, False
    )
    if out is None:
        return result
    call.out.copy_(result)
    return out


def index_scatter_reduce_from(
    dim: int,
    index: torch.Tensor,
    src: torch.Tensor,
    reduce: str,
    sorted: Optional[bool],
    base: Optional[torch.Tensor],
    include_self: bool = True,
    torch_ties: bool = False,
    *,
    dim_size: Optional[int] = None,
) -> torch.Tensor:
    """Functional ``index_scatter_reduce(..., out=base.clone())``: a new tensor, ``base`` untouched, and no copy
    of ``base`` made on the way (the planner's entry point). Differentiable w.r.t. ``src`` and ``base``.
    ``base=None``: ``index_scatter_reduce(..., dim_size=dim_size)``'s new tensor (rows that receive nothing 0),
    with ``sorted`` still allowed to be None -- no zero-filled base to allocate and read.

    ``sorted=None``: not known; the sorted path is taken if the index is sorted (found in the pass that builds
    its segments, so free). ``torch_ties``: amax/amin split their gradient as ``torch.scatter_reduce`` does,
    counting ``base``'s value among the ties even with ``include_self=False``."""
    plain = type(src) is Tensor and type(index) is Tensor and (base is None or type(base) is Tensor)
    if plain and (base is None or dim_size is None):
        # a small call on the serial kernel: any order, the same bits as the sorted path (sorted=False only skips
        # the promise's check); None when not small or not plainly valid (the general path explains it)
        small_order = False if sorted is None else sorted
        result = _small_call(dim, index, src, reduce, small_order, dim_size, base, include_self)
        if result is not None:
            return result
    call = _Call(dim, index, src, reduce, sorted, dim_size if base is None else None, base, out_name="base")
    if not needs_op(src, base):
        return call.run(base=call.out, include_self=include_self)
    if sorted is None:  # (traced, no value is read: the unsorted path, right for any order)
        sorted = not torch.compiler.is_compiling() and (index.numel() < 2 or bool((index[1:] >= index[:-1]).all()))
    return index_scatter_reduce_differentiable(
        call.src, call.index, call.dim, call.red.name, sorted, call.num_segments, call.out, include_self, torch_ties
    )


def _small_call(
    dim, index: Tensor, src: Tensor, reduce, sorted, dim_size, base: Optional[Tensor] = None, include_self=True
) -> Optional[Tensor]:
    """The result of a small, plainly valid call by the backend's cheapest route, or None (then the general
    path runs, with every check). Only checks that cost attribute reads happen here: at a few thousand elements
    the general path's Python bookkeeping costs several times the kernel (see docs/decisions/small-calls.md).
    ``base``: the new tensor starts from it (the planner's scatters into data), of ``src``'s shape but along
    ``dim``, dtype and device."""
    red = REDUCTIONS_BY_ALIAS.get(reduce) if type(reduce) is str else None
    if red is None or type(sorted) is not bool or type(dim) is not int or index.dim() != 1:
        return None
    if dim_size is not None and (type(dim_size) is not int or dim_size < 0):
        return None
    ndim = src.dim()
    if not -ndim <= dim < ndim:
        return None
    dim %= ndim
    grad = torch.is_grad_enabled()
    if index.shape[0] > src.shape[dim] or (src.requires_grad and grad):
        return None
    if base is not None:
        if type(include_self) is not bool or (base.requires_grad and grad) or base.dtype != src.dtype:
            return None
        if base.device != src.device or base.dim() != ndim:
            return None
        if base.shape[:dim] != src.shape[:dim] or base.shape[dim + 1 :] != src.shape[dim + 1 :]:
            return None
        dim_size = base.shape[dim]
    if torch.compiler.is_compiling():
        return None
    # (after the line above: Dynamo cannot trace functorch's query, and torch 2.4's breaks the graph on it)
    if forward_ad_active() or functorch_active():  # (the general path refuses them by name)
        return None
    if src.layout != torch.strided or index.layout != torch.strided or src.is_neg():
        return None  # (sparse: the general path's checks name the argument; a negated view: it resolves it)
    if base is not None and (base.layout != torch.strided or base.is_neg()):
        return None
    return backend_for(src).small_index_scatter_reduce(src, index, dim, red, sorted, dim_size, base, include_self)


class _Call:
    """The checks that need no index values, and what they resolve: the reduction, ``dim >= 0``, the output
    size, and 0-d tensors seen as one slice (``src``, ``out``, ``index`` as torch's index ops take them)."""

    def __init__(self, dim, index, src, reduce, sorted, dim_size, out, out_name: str = "out"):
        self.red: Reduction = resolve(reduce)
        check_src(src)
        check_tensor(index, "index")
        if out is not None:
            check_tensor(out, out_name)
        self.src = src.view(1) if src.dim() == 0 else src
        if not torch.compiler.is_compiling():  # (traced, torch's dispatcher resolves views for the op)
            if self.src.is_neg():  # a negated view (``x.conj().imag``): the kernels read memory, not the view
                self.src = self.src.resolve_neg()
            if out is not None and out_name == "base" and out.is_neg():  # (read only; a user's ``out`` is
                out = out.resolve_neg()  # written through torch's copy_ instead: see index_scatter_reduce)
        self.dim = dim = normalize_dim(dim, self.src.dim())
        self.index = index = check_integer_vector(index, "index", src, allow_scalar=True)
        self.out = out.view(1) if out is not None and out.dim() == 0 else out
        self.sorted = sorted
        if index.numel() > self.src.size(dim):
            raise ValueError(
                f"index has {index.numel()} entries but src.size({dim}) is {self.src.size(dim)}; "
                "index may not be longer than src along dim"
            )
        dim_size = check_size(dim_size, "dim_size")
        self.index_checked = False
        if self.out is not None:
            check_out(self.out, self.src, dim, dim_size)
            self.num_segments = self.out.size(dim)
            return
        if dim_size is not None:
            # (its words are made only for the eager check below: formatting a traced size would specialise it)
            self.num_segments, what = dim_size, ""
        elif index.numel() == 0:
            self.num_segments, what = 0, ""
        elif torch.compiler.is_compiling():
            # read from the index by a torch op: a graph break, or with ``capture_scalar_outputs`` a data-dependent
            # size that fullgraph=True can trace (the backend's own read is NumPy, which Dynamo cannot trace); the
            # kernels check the index's values as they read it. Passing dim_size avoids the read.
            self.num_segments = traced_size(index.max())
            what = ""
        else:
            # reads the index: a host sync; passing dim_size avoids it
            self.num_segments, self.index_checked = backend_for(self.src).output_size(index, sorted)
            what = f"the output size index.max() + 1 = {self.num_segments} (no dim_size given)"
        if not torch.compiler.is_compiling():  # traced sizes may be symbolic; the check is for eager calls
            row = math.prod(self.src.shape[:dim]) * math.prod(self.src.shape[dim + 1 :])
            # an output row, its CSR offset, and its count (the counting sort of an unsorted index)
            row_bytes = row * self.src.element_size() + 16
            check_allocation(self.num_segments, row_bytes, self.src.device, what or f"dim_size={dim_size}")

    def run(self, out=None, base=None, include_self: bool = True) -> torch.Tensor:
        """The backend's kernels on the checked arguments (into ``out``, or a new tensor from ``base``)."""
        return backend_for(self.src).index_scatter_reduce(
            self.src,
            self.index,
            self.dim,
            self.red,
            self.sorted,
            self.num_segments,
            base=base,
            out=out,
            include_self=include_self,
            index_checked=self.index_checked,
        )


# ---------------------------------------------------------------------------------------------------- the ops
def _forward(
    src: Tensor,
    index: Tensor,
    dim: int,
    reduce: str,
    sorted: bool,
    dim_size: int,
    base: Optional[Tensor],
    include_self: bool,
    torch_ties: bool,
) -> Tensor:
    """A new result, ``base`` untouched (validation included: the op may be called directly). ``torch_ties``
    only changes the gradient. A small call takes the serial kernel here too (same bits), so that a small
    graph's training step does not pay the general path's bookkeeping."""
    if base is None and type(src) is Tensor and type(index) is Tensor:
        result = _small_call(dim, index, src, reduce, sorted, dim_size)
        if result is not None:
            return result
    call = _Call(dim, index, src, reduce, sorted, dim_size, base, out_name="base")
    return call.run(base=call.out, include_self=include_self)


def _fake(src, index, dim, reduce, sorted, dim_size, base, include_self, torch_ties):
    shape = list(src.shape) or [1]
    shape[dim % len(shape)] = dim_size
    return src.new_empty(shape)


index_scatter_reduce_op = define_op("index_scatter_reduce", _forward, _fake)


def _backward_kernels(
    grad: Tensor,
    src: Tensor,
    index: Tensor,
    result: Tensor,
    base: Optional[Tensor],
    dim: int,
    reduce: str,
    sorted: bool,
    include_self: bool,
    torch_ties: bool,
) -> Tuple[Tensor, Tensor]:
    """prod/amax/amin gradients w.r.t. ``src`` and ``base`` (an empty tensor without a base), on the kernels."""
    return _backward.nonlinear_backward(
        grad, src, index, result, base, dim, reduce, sorted, include_self, count_base=include_self or torch_ties
    )


def _backward_fake(grad, src, index, result, base, dim, reduce, sorted, include_self, torch_ties):
    # contiguous, as the kernels' gradients are (``empty_like`` would keep a transposed src's strides)
    return src.new_empty(src.shape), (base.new_empty(base.shape) if base is not None else grad.new_empty(0))


index_scatter_reduce_backward_op = define_op("index_scatter_reduce_backward", _backward_kernels, _backward_fake)


def _setup_context(ctx, inputs, output):
    src, index, dim, reduce, sorted, _dim_size, base, include_self, torch_ties = inputs
    ctx.dim = dim % max(src.dim(), 1)
    ctx.red = resolve(reduce)
    ctx.sorted, ctx.include_self, ctx.torch_ties = sorted, include_self, torch_ties
    ctx.has_base = base is not None
    # a 0-d src / base (called on the op directly) is one slice: the formulas see it as 1-D
    ctx.given_shapes = tuple(src.shape), (None if base is None else tuple(base.shape))
    src = src.view(1) if src.dim() == 0 else src
    base = base.view(1) if base is not None and base.dim() == 0 else base
    ctx.src_shape = tuple(src.shape)
    if ctx.red.linear:  # sum/mean: the gradient needs no values
        ctx.save_for_backward(index, base)
    else:
        ctx.save_for_backward(index, base, src, output)


def _autograd_backward(ctx, grad):
    saved = ctx.saved_tensors
    index, base = saved[0], saved[1]
    if index.dim() != 1:
        index = index.view(-1)
    if ctx.red.linear:
        grad_src, grad_base = _backward.linear_backward(
            grad, ctx.src_shape, index, base, ctx.dim, ctx.red.name, ctx.include_self
        )
    elif torch.is_grad_enabled():  # create_graph=True: differentiable ops, so that a double backward works
        grad_src, grad_base = _backward.nonlinear_backward(
            grad,
            saved[2],
            index,
            saved[3],
            base,
            ctx.dim,
            ctx.red.name,
            ctx.sorted,
            ctx.include_self,
            count_base=ctx.include_self or ctx.torch_ties,
            graph=True,
            reduce_op=index_scatter_reduce_op,
        )
    else:
        grad_src, grad_base = index_scatter_reduce_backward_op(
            grad, saved[2], index, saved[3], base, ctx.dim, ctx.red.name, ctx.sorted, ctx.include_self, ctx.torch_ties
        )
    src_shape, base_shape = ctx.given_shapes
    if grad_src.shape != src_shape:
        grad_src = grad_src.reshape(src_shape)
    if base_shape is None:
        grad_base = None
    elif grad_base.shape != base_shape:
        grad_base = grad_base.reshape(base_shape)
    return grad_src, None, None, None, None, None, grad_base, None, None


index_scatter_reduce_differentiable = register_autograd(
    index_scatter_reduce_op, _forward, _autograd_backward, _setup_context
)
