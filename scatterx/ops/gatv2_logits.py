"""``gatv2_logits``: GATv2's attention logits per edge, without the ``edges x heads x channels`` tensor.

GATv2 (Brody et al., "How Attentive are Graph Attention Networks?") scores edge ``j -> i`` per head ``h`` as
``sum_c att[h, c] * leaky_relu(x_l[j, h, c] + x_r[i, h, c])``. The leaky ReLU sits between the sum of the two ends
and the dot with ``att``, so -- unlike GAT's, which splits into one scalar per node and end (``sddmm(...,
"add")``) -- it cannot be taken apart per node: PyG gathers both ends per edge and keeps the ``(E, H, C)`` sum
and its activation for the backward, the largest tensors of a GATv2 step. Here each edge's logit is one pass over
its two rows, and the backward recomputes ``z = x_l[j] + x_r[i]`` instead of storing it.

For a graph in CSR form by target (segment ``s`` of ``ptr`` holds the edges into node ``s``; ``index[k]`` is the
source of edge ``k``), edge ``k`` of segment ``s`` gets ``sum_c att[h, c] * leaky_relu(a[index[k], h, c] + b[s,
h, c])``.

Gradients (``z`` recomputed, ``d = 1 if z > 0 else negative_slope``, ``g`` the logits' gradient):
``grad_b[s] = att * sum_k g[k] d``, ``grad_a[j]`` the same sum over the edges out of ``j`` (the same kernel on the
transposed structure: ``z`` is symmetric in its ends), ``grad_att = sum_k g[k] leaky_relu(z)``. One level of
gradient through the kernels; under ``create_graph`` the backward is made of torch ops (the gathered ends), so
double backward (a gradient penalty) works, at PyG's cost.
"""

from __future__ import annotations

from typing import Tuple

import torch
from torch import Tensor

from ..backends import backend_for
from ._checks import check_integer_vector, check_src, check_tensor
from ._library import define_op, needs_op, register_autograd
from ._message_passing import transpose_with_order
from ._segments import segment_of_entries

FLOATING = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def gatv2_logits(
    ptr: torch.Tensor,
    index: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    att: torch.Tensor,
    negative_slope: float = 0.2,
) -> torch.Tensor:
    """GATv2's attention logits per edge and head, without the ``edges x heads x channels`` tensor.

    For a graph in CSR form by target (segment ``s``, ``ptr[s] <= k < ptr[s+1]``, holds the edges into node
    ``s``; ``index[k]`` is the source of edge ``k``), edge ``k`` gets, per head ``h``,
    ``sum_c att[h, c] * leaky_relu(a[index[k], h, c] + b[s, h, c], negative_slope)`` -- GATv2's score of edge
    ``j -> i`` with ``a = x_l``, ``b = x_r`` (Brody et al., "How Attentive are Graph Attention Networks?").
    Each logit is one pass over its two rows; the backward recomputes the sum instead of storing it.
    Differentiable w.r.t. ``a``, ``b`` and ``att``; double backward (a gradient penalty) works too, through torch
    ops on the gathered ends.

    Args:
        ptr: CSR offsets by target, ``b.size(0) + 1`` non-decreasing entries from 0 to ``index.numel()``.
        index: int32/int64, the source row of each edge, in ``[0, a.size(0))``.
        a: the source rows (GATv2's ``x_l``), ``(rows_a, heads, channels)`` or ``(rows_a, channels)``, of a
            floating dtype.
        b: the target rows (GATv2's ``x_r``): the same dtype, device and shape after the first dim as ``a``.
        att: the attention vector, of shape ``a.shape[1:]``, possibly with leading 1s (PyG's ``(1, heads,
            channels)``), same dtype and device.
        negative_slope: the leaky ReLU's slope for negative inputs.

    Returns:
        A new tensor of ``a``'s dtype and device, of shape ``(E, heads)`` (``(E,)`` for 2-D rows) with
        ``E = index.numel()``, in the order of ``index``.

    Raises:
        TypeError: an argument is not a tensor; ``a``, ``b`` or ``att`` is not floating point, or their dtypes
            differ; ``ptr`` or ``index`` is not int32/int64; ``negative_slope`` is not a number.
        ValueError: ``a`` and ``b`` are not both 2-D or both 3-D, or differ after the first dim; ``att`` has
            another shape; ``ptr`` does not have ``b.size(0) + 1`` entries, does not start at 0, does not end at
            ``index.numel()``, or decreases; ``ptr`` or ``index`` is not 1-D; a tensor is on another device than
            ``a``.
        IndexError: an entry of ``index`` is negative or not below ``a.size(0)``.
        NotImplementedError: ``a`` is on a device other than the CPU and CUDA, or on CUDA without Triton.

    Example:
        >>> ptr, index = torch.tensor([0, 2, 3]), torch.tensor([1, 0, 1])  # edges 1->0, 0->0, 1->1
        >>> a = torch.tensor([[1., -2.], [3., 4.]])
        >>> b = torch.tensor([[0., 0.], [-4., 0.]])
        >>> gatv2_logits(ptr, index, a, b, torch.tensor([1., 1.]))
        tensor([7.0000, 0.6000, 3.8000])
    """
    a3, b3, att2, ptr, index, slope, shape = _checked(ptr, index, a, b, att, negative_slope)
    if needs_op(a3, b3, att2):
        out = gatv2_logits_differentiable(ptr, index, a3, b3, att2, slope)
    else:
        out = gatv2_logits_forward(ptr, index, a3, b3, att2, slope)
    return out.reshape(shape)


def _checked(ptr, index, a, b, att, negative_slope):
    """The checks that read no values: ``(a, b as (rows, heads, channels), att as (heads, channels), ptr, index,
    slope, result shape)``."""
    for name, t in (("a", a), ("b", b), ("att", att)):
        check_src(t, name)
        if t.dtype not in FLOATING:
            raise TypeError(f"{name} has dtype {t.dtype}; gatv2_logits takes floating point rows")
    for name, t in (("b", b), ("att", att)):
        if t.dtype != a.dtype:
            raise TypeError(f"{name} has dtype {t.dtype} but a has dtype {a.dtype}; they must match")
        if t.device != a.device:
            raise ValueError(f"{name} is on {t.device} but a is on {a.device}")
    if a.dim() not in (2, 3) or b.dim() != a.dim():
        raise ValueError(
            "a and b must be (rows, heads, channels) or (rows, channels), "
            f"got a {tuple(a.shape)} and b {tuple(b.shape)}"
        )
    if a.shape[1:] != b.shape[1:]:
        raise ValueError(
            f"a and b must have the same feature shape, got a {tuple(a.shape)} and b {tuple(b.shape)} "
            "(rows may differ, the dims after the first may not)"
        )
    features = tuple(a.shape[1:])
    lead = att.shape[: att.dim() - len(features)]
    if tuple(att.shape[att.dim() - len(features) :]) != features or any(size != 1 for size in lead):
        raise ValueError(f"att must have shape {features} (leading 1s allowed), got {tuple(att.shape)}")
    if isinstance(negative_slope, bool) or not isinstance(negative_slope, (int, float)):
        raise TypeError(f"negative_slope must be a number, got {type(negative_slope).__name__}")
    ptr = check_integer_vector(check_tensor(ptr, "ptr"), "ptr", a)
    index = check_integer_vector(check_tensor(index, "index"), "index", a)
    if ptr.numel() != b.size(0) + 1:
        raise ValueError(f"ptr has {ptr.numel()} entries; b has {b.size(0)} rows, so it needs {b.size(0) + 1}")
    heads, channels = (features[0], features[1]) if len(features) == 2 else (1, features[0])
    shape = (index.numel(), heads) if len(features) == 2 else (index.numel(),)
    return (
        a.reshape(a.size(0), heads, channels),
        b.reshape(b.size(0), heads, channels),
        att.reshape(heads, channels),
        ptr,
        index,
        float(negative_slope),
        shape,
    )


# ------------------------------------------------------------------------------------------------------ the ops
def gatv2_logits_forward(
    ptr: Tensor, index: Tensor, a: Tensor, b: Tensor, att: Tensor, negative_slope: float
) -> Tensor:
    """What the op runs on ``(rows, heads, channels)`` views: the value checks, then the kernel. ``(E, H)``."""
    backend = backend_for(a)
    ptr = backend.check_ptr(ptr, index.numel(), "index.numel()")
    backend.check_index(index, a.size(0), "index", "a.size(0)")
    return backend.gatv2_logits(ptr, index.contiguous(), a, b, att, negative_slope)


def _logits_fake(ptr, index, a, b, att, negative_slope):
    return a.new_empty((index.size(0), a.size(1)))


gatv2_logits_op = define_op("gatv2_logits", gatv2_logits_forward, _logits_fake)


def gatv2_logits_grad(
    seg: Tensor,
    other: Tensor,
    att: Tensor,
    ptr: Tensor,
    index: Tensor,
    grad: Tensor,
    negative_slope: float,
    want_att: bool,
) -> Tuple[Tensor, Tensor]:
    """``(grad_seg, grad_att)``: the logits' gradient for the rows of the side whose segments ``ptr`` are (each
    entry reading ``other[index[k]]``, with gradient ``grad[k]``), and for ``att`` (zeros unless ``want_att``).
    The structures come from the checked forward (or its transpose); ``ptr`` as the caller gave it (any integer
    dtype and strides), which the backends make contiguous int64."""
    return backend_for(seg).gatv2_grad(seg, other, att, ptr, index, grad, negative_slope, want_att)


def _grad_fake(seg, other, att, ptr, index, grad, negative_slope, want_att):
    return seg.new_empty(seg.shape), att.new_empty(att.shape)


gatv2_logits_grad_op = define_op("gatv2_logits_grad", gatv2_logits_grad, _grad_fake)


def _setup_context(ctx, inputs, output):
    ptr, index, a, b, att, negative_slope = inputs
    ctx.slope = negative_slope
    ctx.save_for_backward(ptr, index, a, b, att)


def _backward(ctx, grad):
    """The target side on the forward's segments (with ``att``'s gradient), the source side on the transposed
    structure (``transpose_with_order``: the sources' segments, each entry's target and its gradient). Under
    ``create_graph`` (a gradient penalty), the same gradients from differentiable torch ops instead: they build
    the ``(E, H, C)`` tensors the kernels avoid, as PyG's code does, and can be differentiated again."""
    ptr, index, a, b, att = ctx.saved_tensors
    want_a, want_b, want_att = ctx.needs_input_grad[2:5]
    if torch.is_grad_enabled():
        return (None, None) + _differentiable_backward(ptr, index, a, b, att, grad, ctx.slope) + (None,)
    grad_a = grad_b = grad_att = None
    grad = grad.contiguous()
    if want_b or want_att:
        grad_b, grad_att = gatv2_logits_grad_op(b, a, att, ptr, index, grad, ctx.slope, want_att)
    if want_a:
        ptr_t, index_t, order = transpose_with_order(ptr, index, a.size(0))
        grad_a, _ = gatv2_logits_grad_op(a, b, att, ptr_t, index_t, grad.index_select(0, order), ctx.slope, False)
    return None, None, grad_a, grad_b if want_b else None, grad_att if want_att else None, None


def _differentiable_backward(ptr, index, a, b, att, grad, slope):
    """``(grad_a, grad_b, grad_att)`` by torch ops on the gathered ends (double backward)."""
    index = index.long()
    targets = segment_of_entries(ptr, index.numel())
    z = a.index_select(0, index) + b.index_select(0, targets)
    g = grad.unsqueeze(-1)
    d = torch.where(z > 0, torch.ones_like(z), torch.full_like(z, slope))
    per_edge = g * d * att
    grad_a = torch.zeros_like(a).index_add(0, index, per_edge)
    grad_b = torch.zeros_like(b).index_add(0, targets, per_edge)
    grad_att = (g * torch.nn.functional.leaky_relu(z, slope)).sum(0)
    return grad_a, grad_b, grad_att


gatv2_logits_differentiable = register_autograd(gatv2_logits_op, gatv2_logits_forward, _backward, _setup_context)
